"""Long runs in full: 10,000 frames of the arm's biceps curl and of the full body's swing, each one
continuous simulation (bench/long_run.py). Reported, not timed: finite, energy growth (last loop's peak kinetic
energy over the peak of loops 2-4), muscle volume drift (second loop to last) and difference from rest, resident
memory growth. The suite runs the same at 480 and 144 frames (tests/core/test_long_run.py)."""
from __future__ import annotations

import os
import time

from _common import import_package, table

FRAMES = int(os.environ.get("IMPLICIT_MUSCLES_LONG_RUN_FRAMES", "10000"))


def run() -> dict:
    import_package()
    import long_run

    results = {}
    for scene in ("arm", "body"):
        character, poses = getattr(long_run, f"{scene}_scene")()
        t0 = time.perf_counter()
        result = long_run.run(character, poses, FRAMES)
        result["seconds"] = time.perf_counter() - t0
        results[scene] = result
    rows = [[scene, r["frames"], "yes" if r["finite"] else "NO", f"{r['energy_growth']:.3f}",
             f"{100 * r['volume_drift']:.2f} %", f"{100 * r['volume_vs_rest_max']:.2f} %",
             f"{r['memory_growth_mb']:.1f} MB", f"{r['seconds']:.0f} s"] for scene, r in results.items()]
    return {
        "name": "long_run",
        "title": f"Long runs: {FRAMES} frames of a looping animation, one continuous simulation",
        "results": {k: {kk: vv for kk, vv in v.items() if kk != "per_loop"} for k, v in results.items()},
        "per_loop": {k: v["per_loop"] for k, v in results.items()},
        "table": table(rows, ["scene", "frames", "finite", "energy growth", "volume drift", "volume vs rest",
                              "memory growth", "time"]),
    }
