"""The two muscle solvers side by side, per frame: the paper's arm playing the biceps curl and the arm
shake with every muscle on the paper's axis solver, with the biceps as a VIPER rod, and with all four muscles as
rods (``CharacterSetup.solvers``, ``core/rod/muscles.py``). Per frame: the muscles' stage (``pbd``: both
solvers), of it the rods' kernel and their field fill, and the whole frame; the biceps' field volume against rest
(largest change over the shot). Each time is the median over the shot's frames (after the first ``WARMUP``), on one
kernel thread, with the least beside it (``<key> least``). Nothing is asserted."""
from __future__ import annotations

import numpy as np

from _common import import_package, table

FRAMES = 48
WARMUP = 3
CONFIGS = {"all axis": None, "biceps rod": ["ROD", "AXIS", "AXIS", "AXIS"], "all rods": ["ROD"] * 4}
"""Solver per arm muscle (biceps, triceps, brachialis, brachioradialis)."""


def _shot(arm, name):
    from implicit_muscles.core.pbd.control import MuscleInputs
    from implicit_muscles.scenes import paper as scenes

    arm.frame(scenes.arm_pose(0.0 if name == "biceps curl" else 70.0), dt=1 / 24)
    rest = arm.muscle_volumes()[0]
    arm.reset()
    if name == "arm shake":
        arm.settle(scenes.arm_shake(0), MuscleInputs(stiffness=[0.1] * 4))
        rest = None
    rows, change = [], 0.0
    for f in range(FRAMES):
        bones, inputs = scenes.arm_shot_frame("curl" if name == "biceps curl" else "shake", f, FRAMES)
        arm.frame(bones, inputs, dt=1 / 24)
        volume = arm.muscle_volumes()[0]
        rest = volume if rest is None else rest
        change = max(change, abs(volume / rest - 1.0))
        if f >= WARMUP:
            t = dict(arm.timings)
            if arm.model.rods is not None:
                t.update(arm.model.rods.timings)
            rows.append(t)
    out = {k: 1e3 * float(np.median([r[k] for r in rows])) for k in rows[0]}
    out.update({f"{k} least": 1e3 * min(r[k] for r in rows) for k in rows[0]})
    out["volume change"] = change
    return out


def run() -> dict:
    import numba

    import_package()
    from implicit_muscles.scenes import paper as scenes

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return _run(scenes)
    finally:
        numba.set_num_threads(threads)


def _run(scenes) -> dict:

    results, rows = {}, []
    for config, solvers in CONFIGS.items():
        arm = scenes.arm_character(solvers=solvers)
        for shot in ("biceps curl", "arm shake"):
            r = _shot(arm, shot)
            results[f"{shot}, {config}"] = r
            rows.append([shot, config, f"{r['pbd']:.2f}", f"{r.get('rod solve', 0.0):.2f}",
                         f"{r.get('rod field', 0.0):.2f}", f"{r['total']:.2f} ({r['total least']:.2f})", f"{100 * r['volume change']:.2f}"])
    return {
        "name": "solvers",
        "title": "Axis (paper) and rod (VIPER) muscles per frame, the paper's arm",
        "results": results,
        "table": table(rows, ["shot", "solvers", "muscles ms", "of it rod kernel ms", "of it rod field ms",
                              "frame ms (least)", "biceps field volume, largest change %"]),
    }
