"""Implicit skin fields (targets on this machine: full-body bind under 3 s once kernels are compiled;
grid-part evaluations, value + gradient, above 20 million per second; full-body field data under 150 MB).

Scenes (``scenes/paper.py``): the paper's arm (2172 vertices, 3 bones, 4 muscles) and the full body (19,498
vertices, 14 bones, 50 muscles); the real character BCN_Epileptic (3014 vertices, 54 bones) when the set-up has
fetched it and bpy is importable. Bind = partition, Poisson samples, HRBF fits, grids, the muscles' joins,
tree. Evaluations: one part grid read at random points of its box (``kernels/part_grid.py``), and the composed field
``F`` at points near the skin (vertices + 5 mm noise), with and without the 50 muscles, on all cores and on one.
Baseline in the same run: the plain-numpy reference of the composed field (``SkinPlacement.evaluate_reference``).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from _common import import_package, median_time, table

GRID_POINTS = 2_000_000
SKIN_POINTS = 200_000
REFERENCE_POINTS = 5_000
TARGETS = {"bind_s": 3.0, "grid_evals_per_s": 20e6, "field_bytes": 150e6}


def _bind(rig, muscles=None, owner=None):
    from implicit_muscles.core.muscle.batch import pack_muscles
    from implicit_muscles.core.skin.field import bind_skin_field

    batch = pack_muscles(muscles) if muscles else None
    return bind_skin_field(rig.vertices, rig.faces, rig.weights, rig.heads, rig.tails, rig.parents, muscles=batch,
                           muscle_bones=owner, bone_names=rig.names)


def _character():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from characters import CHARACTER_PATH, load_character
        if not CHARACTER_PATH.is_file():
            return None
        return load_character(CHARACTER_PATH)
    except ImportError:
        return None


def run() -> dict:
    import_package()
    import numba
    from implicit_muscles.scenes import paper as scenes
    from implicit_muscles.kernels.part_grid import sample_part_many

    threads = numba.get_num_threads()
    arm = scenes.arm_rig()
    arm_muscles, arm_bones = scenes.arm_muscles()
    body = scenes.body_rig()
    body_muscles, _, body_owner = scenes.body_muscles()
    _bind(arm, arm_muscles, arm_bones)  # compile or load the kernels outside the timings
    results, rows = {}, []
    cases = [("arm (2172 vertices, 3 bones, 4 muscles)", arm, arm_muscles, arm_bones),
             ("full body (19,498 vertices, 14 bones, 50 muscles)", body, body_muscles, body_owner)]
    character = _character()
    if character is not None:
        cases.append(("BCN_Epileptic (3014 vertices, 54 bones)", character, None, None))
    bound = {}
    for label, rig, muscles, owner in cases:
        timing = median_time(lambda: bound.__setitem__(label, _bind(rig, muscles, owner)), repeats=3, warmup=0)
        field = bound[label]
        results[f"bind: {label}"] = {**timing, "parts": field.part_count, "field_bytes": field.nbytes}
        rows.append([f"bind: {label}", f"{timing['median_s']:.2f} s", f"{field.part_count} parts, "
                     f"{field.nbytes / 1e6:.1f} MB of field data", ""])

    full = bound[cases[1][0]]
    grid = full.grids[0]
    lo, hi = grid.box
    pts = np.random.default_rng(0).uniform(lo, hi, (GRID_POINTS, 3))
    values, grads = np.empty(GRID_POINTS), np.empty((GRID_POINTS, 3))
    binv = np.ascontiguousarray(np.eye(4)[:3])
    for n_threads in (threads, 1):
        numba.set_num_threads(n_threads)
        timing = median_time(lambda: sample_part_many(grid.values, grid.origin, 1.0 / grid.spacing, binv, pts,
                                                      values, grads), repeats=7)
        rate = GRID_POINTS / timing["median_s"]
        results[f"grid part, {n_threads} thread(s)"] = {**timing, "evals_per_s": rate}
        rows.append([f"one part grid {grid.values.shape[:3]}, value + gradient", f"{rate / 1e6:.1f} M/s",
                     f"{n_threads} thread(s)", ""])
    numba.set_num_threads(threads)

    rng = np.random.default_rng(1)
    q = body.vertices[rng.integers(0, len(body.vertices), SKIN_POINTS)] + rng.normal(scale=0.005,
                                                                                      size=(SKIN_POINTS, 3))
    no_muscles = _bind(body)
    out = (np.empty(SKIN_POINTS), np.empty((SKIN_POINTS, 3)))
    reference_rate = None
    for label, model in (("composed F, full body, no muscles", no_muscles),
                         ("composed F, full body, 50 muscles", full)):
        field = model.place()
        field.evaluate(q[:10])
        for n_threads in (threads, 1):
            numba.set_num_threads(n_threads)
            timing = median_time(lambda: field.evaluate(q, out=out), repeats=5)
            rate = SKIN_POINTS / timing["median_s"]
            results[f"{label}, {n_threads} thread(s)"] = {**timing, "evals_per_s": rate}
            rows.append([label, f"{rate / 1e6:.2f} M/s", f"{n_threads} thread(s)", ""])
        numba.set_num_threads(threads)
        qr = q[:REFERENCE_POINTS]
        timing = median_time(lambda: field.evaluate_reference(qr), repeats=3, warmup=0)
        reference_rate = REFERENCE_POINTS / timing["median_s"]
        results[f"{label}, numpy reference"] = {**timing, "evals_per_s": reference_rate}
        ours = results[f"{label}, {threads} thread(s)"]["evals_per_s"]
        rows.append([f"{label}: numpy reference", f"{reference_rate / 1e6:.3f} M/s", "1",
                     f"ours {ours / reference_rate:.0f}x"])

    bind_s = results[f"bind: {cases[1][0]}"]["median_s"]
    grid_rate = results[f"grid part, {threads} thread(s)"]["evals_per_s"]
    field_bytes = results[f"bind: {cases[1][0]}"]["field_bytes"]
    return {
        "name": "skin",
        "title": "Implicit skin fields: bind, grid and composed-field evaluations",
        "results": results,
        "targets": TARGETS,
        "meets_target": bool(bind_s < TARGETS["bind_s"] and grid_rate > TARGETS["grid_evals_per_s"]
                             and field_bytes < TARGETS["field_bytes"]),
        "table": table(rows, ["case", "time or rate (median)", "detail", "vs baseline"]),
    }
