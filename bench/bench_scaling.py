"""How the per-frame cost grows: Implicit Skinning with muscles per frame against the vertex count, the
muscle count and the bone count, with the exponent of a power law fitted through the points.

Scenes (``scenes/paper.py``): the full body in its run-like swing (``body_swing``), its mesh at three densities
(about 4,900, 19,500 and 78,000 vertices, 50 muscles); at 19,500 vertices with 0, 10, 25, 50 and 100 muscles (a
subset spread over the bones, or two rings around each bone); at 19,500 vertices without muscles with its 14 bones
each cut into 1, 2 and 4 pieces (14, 28, 56 bones and skin parts; the same swing, the other pieces following the
first). Per point: the median frame [ms] of the core (PBD, pose, field, tracking), its tracking alone, and the
tracked (active) vertices. Writes ``scaling.png`` beside the JSON. Baseline in the same run: plain DQS on the same
mesh (``core/skin/skinning.dqs``).
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from _common import OUT, import_package, table

FRAMES = 15
WARMUP = 3
DENSITIES = (0.25, 1.0, 4.0)
MUSCLE_COUNTS = (0, 10, 25, 50, 100)
SPLITS = (1, 2, 4)


def _frame_times(character, rig, frames=FRAMES, warmup=WARMUP) -> dict:
    from implicit_muscles.core.skin.skinning import dqs
    from implicit_muscles.scenes.paper import body_swing

    character.reset()
    rows, dqs_s, active = [], [], []
    d = character.deformer
    for f in range(frames):
        B = body_swing(rig, f / 24)
        character.frame(B, dt=1 / 24)
        t0 = time.perf_counter()
        dqs(d.rest, d.influences, B, d.dqs_positions, d._rot)
        t1 = time.perf_counter()
        if f >= warmup:
            rows.append(dict(character.timings))
            dqs_s.append(t1 - t0)
            active.append(int(d.active.sum()))
    return {"total_ms": 1e3 * statistics.median(r["total"] for r in rows),
            "tracking_ms": 1e3 * statistics.median(r["tracking"] for r in rows),
            "dqs_ms": 1e3 * statistics.median(dqs_s), "active": int(statistics.median(active)),
            "vertices": int(len(d.rest))}


def _exponent(xs, ys) -> float:
    """Slope of ``log y`` against ``log x`` (least squares): the power law's exponent."""
    x, y = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    return float(np.polyfit(x, y, 1)[0])


def _plot(by_vertices, by_muscles, by_bones, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    v = [r["vertices"] for r in by_vertices]
    for key, label in (("total_ms", "frame (core)"), ("tracking_ms", "tracking"), ("dqs_ms", "plain DQS")):
        axes[0].loglog(v, [r[key] for r in by_vertices], "o-", label=label)
    axes[0].set_xticks(v, [f"{n:,}" for n in v])
    axes[0].minorticks_off()
    axes[0].set_xlabel("vertices (full body, 50 muscles)")
    axes[0].set_ylabel("ms per frame")
    axes[0].legend()
    m = [r["muscles"] for r in by_muscles]
    for key, label in (("total_ms", "frame (core)"), ("tracking_ms", "tracking")):
        axes[1].plot(m, [r[key] for r in by_muscles], "o-", label=label)
    axes[1].set_xlabel("muscles (full body, 19,498 vertices)")
    axes[1].set_ylabel("ms per frame")
    axes[1].legend()
    b = [r["bones"] for r in by_bones]
    for key, label in (("total_ms", "frame (core)"), ("tracking_ms", "tracking"), ("dqs_ms", "plain DQS")):
        axes[2].plot(b, [r[key] for r in by_bones], "o-", label=label)
    axes[2].set_xlabel("bones (full body, 19,498 vertices, no muscles)")
    axes[2].set_ylabel("ms per frame")
    axes[2].legend()
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Implicit Skinning with muscles: cost per frame, 2 cores")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run() -> dict:
    import_package()
    from implicit_muscles.core.character import CharacterSetup, MuscledCharacter
    from implicit_muscles.scenes import paper as scenes

    def bind(rig, muscles, bones):
        return MuscledCharacter.bind(CharacterSetup(rig, tuple(muscles), bones, bones, bones))

    muscles, _, owner = scenes.body_muscles()
    by_vertices = []
    for density in DENSITIES:
        rig = scenes.body_rig(density)
        r = _frame_times(bind(rig, muscles, owner), rig)
        by_vertices.append({"density": density, "muscles": len(muscles), **r})
    rig = scenes.body_rig()
    by_muscles = []
    for count in MUSCLE_COUNTS:
        if count <= len(muscles):
            pick = np.unique(np.linspace(0, len(muscles) - 1, count).round().astype(int)) if count else []
            chosen, bones = [muscles[i] for i in pick], owner[pick] if count else owner[:0]
        else:
            chosen, _, bones = scenes.body_muscles(rings=count // len(muscles))
        r = _frame_times(bind(rig, chosen, bones), rig)
        by_muscles.append({"muscles": len(chosen), **r})
    by_bones = []
    for split in SPLITS:
        rig = scenes.body_rig(split=split)
        none = np.zeros(0, dtype=np.int64)
        r = _frame_times(bind(rig, [], none), rig)
        by_bones.append({"bones": len(rig.names), "muscles": 0, **r})
    k_vertices = _exponent([r["vertices"] for r in by_vertices], [r["total_ms"] for r in by_vertices])
    with_muscles = [r for r in by_muscles if r["muscles"] > 0]
    k_muscles = _exponent([r["muscles"] for r in with_muscles], [r["total_ms"] for r in with_muscles])
    per_muscle = (by_muscles[-1]["total_ms"] - by_muscles[0]["total_ms"]) / max(by_muscles[-1]["muscles"], 1)
    k_bones = _exponent([r["bones"] for r in by_bones], [r["total_ms"] for r in by_bones])
    plot = OUT / "scaling.png"
    _plot(by_vertices, by_muscles, by_bones, plot)
    rows = [[f"{r['vertices']:,} vertices, {r.get('bones', 14)} bones, {r['muscles']} muscles", f"{r['total_ms']:.1f}",
             f"{r['tracking_ms']:.1f}", f"{r['active']:,}", f"{r['dqs_ms']:.2f}"]
            for r in by_vertices + by_muscles + by_bones]
    return {
        "name": "scaling",
        "title": "How the cost per frame grows with vertices, muscles and bones (full body, run swing)",
        "by_vertices": by_vertices,
        "by_muscles": by_muscles,
        "by_bones": by_bones,
        "exponent_vertices": k_vertices,
        "exponent_muscles": k_muscles,
        "exponent_bones": k_bones,
        "ms_per_muscle": per_muscle,
        "plot": str(plot.relative_to(OUT.parents[1])),
        "table": table(rows, ["scene", "frame ms (core)", "tracking ms", "tracked vertices", "plain DQS ms"])
        + f"\n\nFrame time ~ vertices^{k_vertices:.2f} (50 muscles), ~ muscles^{k_muscles:.2f} (19,498 vertices, "
          f"10 to 100 muscles; each muscle adds {per_muscle:.2f} ms) and ~ bones^{k_bones:.2f} (no muscles). Plot: "
          f"`{plot.relative_to(OUT.parents[1])}`.",
    }
