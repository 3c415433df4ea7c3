"""What the rods' muscle contacts cost per frame (``kernels/rod.py`` ``_muscle_contacts``), in one
process: the paper's arm playing the biceps curl with all four muscles as rods, with their muscle contacts (the
*Muscles* switch on: rods against rods and the rest) and without (off for all); and a bundle of three rods pressed
together (``tests/core/test_rod_contacts.py``'s scene) with and without its fibres' contacts. Times are the rods'
solve per frame (the rod kernel and its keep-inside; ``RodMuscles.timings``, or the solver step alone for the
bundle), medians over the frames after ``WARMUP``, with the least beside them, on one kernel thread; and the first
rod step in a fresh process with an empty numba cache (the rod kernel's compile time). Nothing is asserted."""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from _common import import_package, table

FRAMES = 48
WARMUP = 3


def _arm(scenes, contacts: bool) -> list:
    from implicit_muscles.core.pbd.collisions import MuscleCollisions

    arm = scenes.arm_character(solvers=["ROD"] * 4, collisions=MuscleCollisions(muscles=[contacts] * 4))
    times = []
    for f in range(FRAMES):
        bones, inputs = scenes.arm_shot_frame("curl", f, FRAMES)
        arm.frame(bones, inputs, dt=1 / 24)
        if f >= WARMUP:
            times.append(arm.model.rods.timings["rod solve"])
    return times


def _bundle(contacts: bool) -> list:
    from implicit_muscles.core.muscle.primitive import FusiformMuscle
    from implicit_muscles.core.pbd.control import PBDControl
    from implicit_muscles.core.rod.contacts import muscle_touches
    from implicit_muscles.core.rod.model import build_rod_model
    from implicit_muscles.core.rod.solver import RodSolver
    from implicit_muscles.core.rod.state import RodState

    xs = (-0.05, 0.0, 0.05)
    muscles = [FusiformMuscle((x, 0, 0), (x, 0, 0.3), width=0.015, particles=14, origin_normal=(1, 0, 0),
                              insertion_normal=(1, 0, 0)) for x in xs]
    touches, chain_rod = muscle_touches([True] * 3, [0] * 3, [1] * 3, [2] * 3 if contacts else None)
    model = build_rod_model(muscles, touches=touches, chain_rod=chain_rod)
    solver = RodSolver(model)
    state = RodState.at_rest(model)
    nxt = state.copy()
    times = []
    for f in range(FRAMES):
        ends = RodState.at_rest(model).endpoints
        ends[0, :, 0] += 0.02 * min(f / 12, 1.0)
        ends[2, :, 0] -= 0.02 * min(f / 12, 1.0)
        t0 = time.perf_counter()
        solver.step(state, nxt, PBDControl(endpoints=ends), 1 / 24)
        if f >= WARMUP:
            times.append(time.perf_counter() - t0)
        state, nxt = nxt, state
    return times


_COMPILE = """
import sys, time
sys.path.insert(0, {tools!r})
from pkgpath import make_importable
make_importable("core-tests")
import numpy as np
from implicit_muscles.core.muscle.primitive import FusiformMuscle
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.rod.model import build_rod_model
from implicit_muscles.core.rod.solver import RodSolver
from implicit_muscles.core.rod.state import RodState
muscles = [FusiformMuscle((x, 0, 0), (x, 0, 0.3), width=0.015, particles=8, origin_normal=(1, 0, 0),
                          insertion_normal=(1, 0, 0)) for x in (0.0, 0.05)]
try:
    from implicit_muscles.core.rod.contacts import muscle_touches
    touches, chain_rod = muscle_touches([True, True], [0, 0])
    model = build_rod_model(muscles, touches=touches, chain_rod=chain_rod)
except ImportError:  # a tree without the rods' muscle contacts
    model = build_rod_model(muscles)
state = RodState.at_rest(model)
t0 = time.perf_counter()
RodSolver(model).step(state, state.copy(), PBDControl(), 1 / 24)
print(time.perf_counter() - t0)
"""


def compile_seconds(root=None) -> float:
    """Seconds of the first rod step (two touching rods) in a fresh process with an empty numba cache: the rod
    kernel's compile time. ``root``: the repository to import (default this one)."""
    import os
    import tempfile
    from pathlib import Path

    root = Path(root or Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", _COMPILE.format(tools=str(root / "tools"))],
                             capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def run() -> dict:
    import numba

    import_package()
    from implicit_muscles.scenes import paper as scenes

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        results, rows = {}, []
        for name, fn in (("arm curl, four rods", lambda c: _arm(scenes, c)), ("bundle of three", _bundle)):
            for contacts in (True, False):
                times = fn(contacts)
                key = f"{name}, {'with' if contacts else 'without'} contacts"
                results[key] = {"median ms": 1e3 * float(np.median(times)), "least ms": 1e3 * float(min(times))}
                rows.append([name, "with" if contacts else "without", f"{results[key]['median ms']:.2f}",
                             f"{results[key]['least ms']:.2f}"])
    finally:
        numba.set_num_threads(threads)
    seconds = compile_seconds()
    results["first rod step (compile), s"] = seconds
    rows.append(["first rod step (compile)", "with", f"{1e3 * seconds:.0f}", ""])
    return {
        "name": "rod_contacts",
        "title": "The rods' muscle contacts per frame: with and without, one thread",
        "results": results,
        "table": table(rows, ["scene", "contacts", "rods' solve ms (median)", "least ms"]),
    }
