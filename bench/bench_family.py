"""The body family (``tests/family.py``: MakeHuman's artist-made weights on its ``default`` and ``game_engine`` rigs on
three body shapes, the held-out ``cmu_mb`` and ``mixamo`` rigs, the project's human, BCN_Epileptic, Testwuson),
every frame of the deep-bend pose set and of the retargeted jump, measured absolutely (``tests/family_measures.py``,
``core/skin/quality.py``):

* **inside**: vertices inside the body deeper than ``INSIDE_DEPTH``, at the creases (elbows, knees, groins,
  armpits, neck) and the deepest there, for Implicit Skinning, dual quaternions and the linear Armature result;
* **smoothness**: faces turned by more than 45 degrees against the linear result outside the contact creases,
  worst frame;
* **rest**: the rest frame against the rest mesh;
* bind time, and the time per frame against dual quaternions alone in the same process (the baseline).

The bend set's frames are all measured; the jump every ``JUMP_STRIDE`` frames (``IMPLICIT_MUSCLES_JUMP_STRIDE``);
``IMPLICIT_MUSCLES_FAMILY`` (member names, comma-separated) measures only those.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from _common import import_package, table

INSIDE_SHARE = 0.10
"""Target: vertices inside at the creases, as a share of the dual-quaternion count."""
DEEPEST = 2e-3
"""Target: the deepest vertex at the creases [m]."""
TURNED = 0.005
"""Target: faces turned outside the creases against the linear result, worst frame."""
JUMP_STRIDE = int(os.environ.get("IMPLICIT_MUSCLES_JUMP_STRIDE", "4"))


def _members():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from family import FAMILY
    chosen = os.environ.get("IMPLICIT_MUSCLES_FAMILY")
    names = set(chosen.split(",")) if chosen else None
    return [m for m in FAMILY if Path(m.path).is_file() and (names is None or m.name in names)]


def _run_member(body) -> dict:
    from family import load_animation, load_character
    from family_measures import BodyMeasures
    from implicit_muscles.core.skin.deformer import ImplicitSkinDeformer
    from implicit_muscles.core.skin.field import bind_skin_field
    from implicit_muscles.core.skin.skinning import dqs, lbs_reference

    c = load_character(body)
    t0 = time.perf_counter()
    skin = bind_skin_field(c.vertices, c.faces, c.weights, c.heads, c.tails, c.parents, bone_names=c.names)
    d = ImplicitSkinDeformer(skin, c.vertices, c.faces, c.weights, bone_names=c.names)
    bind_s = time.perf_counter() - t0
    m = BodyMeasures(body, c, d.own_part, [c.names[b] for b in skin.part_bone])
    rest = skin.place()
    V = len(c.vertices)
    x_dqs, rot = np.empty((V, 3)), np.empty((V, 3, 3))
    out = {"vertices": V, "bones": len(c.names), "bind_s": bind_s, "held_out": bool(body.held_out)}
    B0 = np.tile(np.eye(4), (len(c.names), 1, 1))
    out["rest_mm"] = 1e3 * m.rest_error(d.deform(B0))
    for action, stride in (("bend", 1), ("jump", JUMP_STRIDE)):
        try:
            animation = load_animation(body, action, stride=stride)
        except (KeyError, ValueError, FileNotFoundError):
            continue
        counts = {"ours": 0, "dqs": 0, "lbs": 0}
        deepest = {"ours": 0.0, "dqs": 0.0, "lbs": 0.0}
        by_crease = {}
        turned, ours_s, dqs_s = [], [], []
        for B in animation.transforms:
            t1 = time.perf_counter()
            dqs(c.vertices, d.influences, B, x_dqs, rot)
            t2 = time.perf_counter()
            x = d.deform(B)
            t3 = time.perf_counter()
            dqs_s.append(t2 - t1)
            ours_s.append(t3 - t2)
            lbs = lbs_reference(c.vertices, d.influences, B)
            frame = m.frame(x, lbs, skin, rest, d.placement, d.own_part)
            turned.append(frame.smoothness.turned_outside_creases)
            for name, positions in (("ours", x), ("dqs", x_dqs), ("lbs", lbs)):
                inside = frame.inside if name == "ours" else m.frame(positions, lbs).inside
                n, deep = inside.in_regions()
                counts[name] += int(n)
                deepest[name] = max(deepest[name], float(deep))
                if name == "ours":
                    for region, value in inside.by_region.items():
                        by_crease[region] = by_crease.get(region, 0) + int(value[0] if isinstance(value, tuple)
                                                                           else value)
        out[action] = {"frames": len(animation.transforms), "inside": counts,
                       "deepest_mm": {k: 1e3 * v for k, v in deepest.items()}, "inside_by_crease": by_crease,
                       "turned_outside_worst": float(max(turned)), "turned_outside_median": float(np.median(turned)),
                       "ours_median_s": float(np.median(ours_s[1:] or ours_s)),
                       "dqs_median_s": float(np.median(dqs_s[1:] or dqs_s))}
    return out


def run() -> dict:
    import_package()
    results, rows = {}, []
    for body in _members():
        r = _run_member(body)
        results[body.name] = r
        for action in ("bend", "jump"):
            if action not in r:
                continue
            a = r[action]
            share = a["inside"]["ours"] / max(a["inside"]["dqs"], 1)
            rows.append([f"{body.name}{' (held out)' if r['held_out'] else ''}, {action}",
                         f"{r['vertices']} / {r['bones']} / {a['frames']}",
                         f"{a['inside']['ours']} / {a['inside']['dqs']} / {a['inside']['lbs']} ({100 * share:.0f} %)",
                         f"{a['deepest_mm']['ours']:.0f} / {a['deepest_mm']['dqs']:.0f} mm",
                         f"{100 * a['turned_outside_worst']:.2f} %", f"{r['rest_mm']:.3f} mm", f"{r['bind_s']:.1f} s",
                         f"{1e3 * a['ours_median_s']:.1f} ms",
                         f"DQS {1e3 * a['dqs_median_s']:.2f} ms ({a['ours_median_s'] / max(a['dqs_median_s'], 1e-12):.0f}x)"])
    met = all(r[a]["inside"]["ours"] <= INSIDE_SHARE * max(r[a]["inside"]["dqs"], 1)
              and r[a]["deepest_mm"]["ours"] <= 1e3 * DEEPEST and r[a]["turned_outside_worst"] < TURNED
              for r in results.values() for a in ("bend", "jump") if a in r)
    return {
        "name": "family",
        "title": "The body family on the deep-bend set and the jump: skin inside the body, smoothness, rest",
        "results": results,
        "targets": {"inside_share_of_dqs": INSIDE_SHARE, "deepest_m": DEEPEST, "turned_outside_creases": TURNED,
                    "rest_m": 5e-4},
        "meets_target": bool(met),
        "table": table(rows, ["body, motion", "vertices / bones / frames",
                              "inside at creases: ours / DQS / linear (ours vs DQS)", "deepest: ours / DQS",
                              "turned > 45 deg outside creases (worst frame)", "rest", "bind",
                              "Implicit Skinning per frame (median)", "vs baseline"]),
    }
