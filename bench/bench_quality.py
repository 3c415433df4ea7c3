"""Skin quality on real characters, every frame (target: under 0.5 % of the faces outside the contact
creases turned by more than 45 degrees against DQS, on every frame of every animation), and the time per frame.

Characters (``make character``): the dense human (13,380 vertices, 21 bones) on its three retargeted captures,
every frame (jump 688, climb 1,128, boxing 921 frames at 30 fps); BCN_Epileptic (3,014 vertices, 54 bones) on its
own animation; the paper's arm through a curl with and without its muscles (``scenes/paper.py``). Per frame:
``core/skin/quality.py`` on the Implicit Skinning result (the turned share outside the creases and over all
faces, the largest dihedral increase against rest), and the deformer's time; baseline in the same process: the
same frames' dual-quaternion skinning alone (``core/skin/skinning.dqs``, numba), which is also the reference the
faces are measured against.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from _common import import_package, table

TARGET = 0.005
"""Largest share of faces outside the creases turned by more than 45 degrees, on any frame."""


def _characters():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from characters import CHARACTER_PATH, HUMAN_PATH, load_animation, load_character
    except ImportError:
        return []
    out = []
    if HUMAN_PATH.is_file():
        human = load_character(HUMAN_PATH)
        for action in ("jump", "climb", "boxing"):
            out.append((f"human, {action}", human, load_animation(HUMAN_PATH, action).transforms))
    if CHARACTER_PATH.is_file():
        bcn = load_character(CHARACTER_PATH)
        out.append(("BCN_Epileptic, its animation", bcn, load_animation(CHARACTER_PATH).transforms))
    return out


def _measure(rig, transforms, bound=None, step=None):
    """Per frame: the quality numbers and the deform / DQS times [s]."""
    from implicit_muscles.core.skin import quality as Q
    from implicit_muscles.core.skin.deformer import ImplicitSkinDeformer
    from implicit_muscles.core.skin.field import bind_skin_field
    from implicit_muscles.core.skin.skinning import dqs

    if bound is None:
        skin = bind_skin_field(rig.vertices, rig.faces, rig.weights, rig.heads, rig.tails, rig.parents,
                               bone_names=rig.names)
        d = ImplicitSkinDeformer(skin, rig.vertices, rig.faces, rig.weights, bone_names=rig.names)
    else:
        d = bound
    names = [str(b) for b in d.skin.part_bone] if d.bone_names is None else [d.bone_names[b]
                                                                            for b in d.skin.part_bone]
    mesh = Q.QualityMesh.build(d.rest, d.faces, d.own_part, names)
    rest = d.skin.place()
    V = len(d.rest)
    x_dqs, rot = np.empty((V, 3)), np.empty((V, 3, 3))
    rows = {"turned_outside": [], "turned_all": [], "dihedral": [], "deform_s": [], "dqs_s": []}
    regions = {}
    for B in transforms:
        t0 = time.perf_counter()
        dqs(d.rest, d.influences, B, x_dqs, rot)
        t1 = time.perf_counter()
        x = step(B) if step is not None else d.deform(B)
        t2 = time.perf_counter()
        crease = Q.crease_vertices(d.skin, rest, d.placement, d.rest, d.dqs_positions, d.own_part)
        q = Q.measure(mesh, x, d.dqs_positions, crease)
        rows["turned_outside"].append(q.turned_outside_creases)
        rows["turned_all"].append(q.turned)
        rows["dihedral"].append(q.dihedral_increase)
        rows["dqs_s"].append(t1 - t0)
        rows["deform_s"].append(t2 - t1)
        for name, share in q.by_region.items():
            regions[name] = max(regions.get(name, 0.0), share)
    worst = sorted(regions.items(), key=lambda kv: -kv[1])[:3]
    return rows, worst, V


def run() -> dict:
    import_package()
    from implicit_muscles.core.pbd.control import MuscleInputs
    from implicit_muscles.scenes import paper as scenes

    cases = _characters()
    results, rows = {}, []
    arm_poses = [scenes.arm_pose(a) for a in np.linspace(0.0, 130.0, 27)]
    for muscles in (False, True):
        character = scenes.arm_character()
        curl = [[a / 130.0, 0.0, 0.8 * a / 130.0, 0.3 * a / 130.0] for a in np.linspace(0.0, 130.0, 27)]
        frames = iter(curl)
        step = (lambda B: character.frame(B, MuscleInputs(activation=next(frames)))) if muscles else None
        cases.append((f"paper arm, curl, {'with' if muscles else 'without'} muscles", character.model.rig, arm_poses,
                      character.deformer, step))
    for case in cases:
        label, rig, transforms = case[:3]
        bound, step = (case[3], case[4]) if len(case) > 3 else (None, None)
        data, worst, V = _measure(rig, transforms, bound, step)
        t_out, t_all = np.array(data["turned_outside"]), np.array(data["turned_all"])
        deform, dq = float(np.median(data["deform_s"][1:])), float(np.median(data["dqs_s"][1:]))
        results[label] = {"vertices": V, "frames": len(t_out), "turned_outside_median": float(np.median(t_out)),
                          "turned_outside_worst": float(t_out.max()), "turned_all_median": float(np.median(t_all)),
                          "turned_all_worst": float(t_all.max()),
                          "dihedral_increase_worst": float(max(data["dihedral"])),
                          "worst_regions": worst, "deform_median_s": deform, "dqs_median_s": dq}
        rows.append([label, f"{V} / {len(t_out)}", f"{100 * np.median(t_out):.3f} % / {100 * t_out.max():.3f} %",
                     f"{100 * t_all.max():.2f} %", f"{max(data['dihedral']):.0f} deg",
                     ", ".join(f"{n} {100 * s:.1f} %" for n, s in worst),
                     f"{1e3 * deform:.1f} ms", f"DQS {1e3 * dq:.2f} ms ({deform / max(dq, 1e-12):.0f}x)"])
    worst = max(r["turned_outside_worst"] for r in results.values())
    return {
        "name": "quality",
        "title": "Skin quality on real characters, every frame, against dual quaternions",
        "results": results,
        "targets": {"turned_outside_creases_worst": TARGET},
        "meets_target": bool(worst < TARGET),
        "table": table(rows, ["character, motion", "vertices / frames", "turned > 45 deg outside creases: median / "
                              "worst frame", "all faces: worst", "dihedral increase: worst",
                              "worst parts (outside creases)", "Implicit Skinning per frame (median)",
                              "vs baseline"]),
    }
