"""Fusiform field value + gradient evaluations per second (target: >= 5 million/s).

A 30-particle biceps bent by 60 degrees (eccentric cross-section, half activated), query points spread around it
as skin vertices would be (mostly within a few widths of the surface). Ours: the numba kernel (reparameterised
projection of Algorithm 1, slerped normals, ellipse, analytic gradient), on all cores and on one. Baseline in the
same run: the plain-numpy reference of the same computation (core/muscle/field.py).
"""
from __future__ import annotations

import numpy as np

from _common import import_package, median_time, table

POINTS = 1_000_000
REFERENCE_POINTS = 2_000
TARGET_PER_SECOND = 5e6


def run() -> dict:
    import_package()
    import numba
    from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape
    from implicit_muscles.core.muscle.batch import evaluate_muscles, pack_muscles

    length, width, particles = 0.3, 0.03, 30
    m = FusiformMuscle((0, 0, 0), (0, 0, length), width=width, particles=particles,
                       shape=MuscleShape(3, 3, 4, 7, 0.3, 0.7), activation=0.5)
    angle = np.radians(60.0)
    t = np.linspace(0, angle, particles + 2)
    m.set_axis(np.stack([length / angle * (1 - np.cos(t)), np.zeros_like(t), length / angle * np.sin(t)], 1))

    rng = np.random.default_rng(0)
    axis = m.axis
    base = axis[rng.integers(0, len(axis), POINTS)]
    q = base + rng.normal(scale=1.5 * width, size=(POINTS, 3))
    batch = pack_muscles([m])
    values = np.empty((POINTS, 1))
    grads = np.empty((POINTS, 1, 3))
    evaluate_muscles(batch, q[:10], compact=False)  # compile / load from cache outside the timing

    results = {}
    threads = numba.get_num_threads()
    for label, n_threads in (("numba, all cores", threads), ("numba, 1 thread", 1)):
        numba.set_num_threads(n_threads)
        timing = median_time(lambda: evaluate_muscles(batch, q, out=(values, grads)), repeats=7)
        results[label] = {"threads": n_threads, **timing, "evals_per_s": POINTS / timing["median_s"]}
    numba.set_num_threads(threads)
    timing = median_time(lambda: evaluate_muscles(batch, q, compact=True, out=(values, grads)), repeats=7)
    results["numba, compact K(f_M)"] = {"threads": threads, **timing, "evals_per_s": POINTS / timing["median_s"]}
    qr = q[:REFERENCE_POINTS]
    timing = median_time(lambda: m.field_reference(qr), repeats=3, warmup=0)
    results["numpy reference"] = {"threads": 1, **timing, "evals_per_s": REFERENCE_POINTS / timing["median_s"]}

    ref_rate = results["numpy reference"]["evals_per_s"]
    rows = [[k, v["threads"], f"{v['evals_per_s'] / 1e6:.2f} M/s", f"{v['evals_per_s'] / ref_rate:.0f}x"]
            for k, v in results.items()]
    best = results["numba, all cores"]["evals_per_s"]
    return {
        "name": "muscle_field",
        "title": "Muscle field value + gradient, 30-particle bent biceps",
        "points": POINTS,
        "results": results,
        "target_evals_per_s": TARGET_PER_SECOND,
        "meets_target": bool(best >= TARGET_PER_SECOND),
        "table": table(rows, ["implementation", "threads", "evaluations", "vs numpy reference"]),
    }
