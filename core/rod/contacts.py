"""Contacts between a rod and other muscles: who touches whom (:func:`muscle_touches`, the axis solver's
contact sets and overlap groups, and bundles of rods) and a plain-numpy measure of how far two muscles' capsules
are apart (:func:`clearance`, the reference of ``kernels/rod.py`` ``segment_pair``). The contact itself is
``kernels/rod.py`` ``_muscle_contacts``.
"""
from __future__ import annotations

import numpy as np


def muscle_touches(rod, contact_sets=None, overlap_groups=None, bundles=None) -> tuple:
    """Who a rod collides with among a character's ``O`` muscles (``rod (O,)`` bool, True for the rods), as the
    axis solver decides it (``core.pbd.model.build_pbd_model``): another muscle of the same contact set
    (``contact_sets``: per muscle a label or None, None for all: no muscle contacts), except one of the same
    overlap group (``overlap_groups``: per muscle a label or None) unless both are rods of the same bundle
    (``bundles``: per muscle a label or None): the fibres of one broad muscle as rods that slide along each other
    without passing through. Returns ``(touches, chain_rod)``: per rod, in the order of ``rod``, a list of
    ``(chain, bundle)`` pairs (the other muscle's index, whether it is a fibre of the rod's bundle), and ``(O,)``
    int64 the rod index of each muscle, -1 for an axis muscle; :func:`build_rod_model` takes both."""
    rod = np.asarray(rod, dtype=bool).reshape(-1)
    count = len(rod)

    def labels(values, name):
        if values is None:
            return [None] * count
        values = list(values)
        if len(values) != count:
            raise ValueError(f"{name} needs one entry per muscle ({count}), got {len(values)}.")
        return [None if v is None or (not isinstance(v, str) and v < 0) else v for v in values]

    sets = labels(contact_sets, "contact_sets")
    overlap = labels(overlap_groups, "overlap_groups")
    bundle = labels(bundles, "bundles")
    chain_rod = np.full(count, -1, dtype=np.int64)
    chain_rod[rod] = np.arange(int(rod.sum()))
    touches = []
    for m in np.flatnonzero(rod):
        mine = []
        for o in range(count):
            if o == m or sets[m] is None or sets[o] != sets[m]:
                continue
            same_bundle = bool(rod[o] and bundle[m] is not None and bundle[o] == bundle[m])
            if overlap[m] is not None and overlap[o] == overlap[m] and not same_bundle:
                continue
            mine.append((o, same_bundle))
        touches.append(mine)
    return touches, chain_rod


def closest_parameters(a, b, c, d) -> tuple:
    """``(t, u)`` in [0, 1] of the closest points ``a + t (b - a)``, ``c + u (d - c)`` of two segments (``(3,)``
    each), by minimising over the boundary of the unit square and its interior stationary point (a plain
    reference of ``kernels/rod.py`` ``segment_pair``, written another way)."""
    a, b, c, d = (np.asarray(v, dtype=np.float64) for v in (a, b, c, d))
    e1, e2, r = b - a, d - c, a - c

    def dist(t, u):
        return float(np.linalg.norm(r + t * e1 - u * e2))

    def on_first(u):  # best t for a fixed u
        q = c + u * e2
        return 0.0 if e1 @ e1 == 0.0 else float(np.clip((q - a) @ e1 / (e1 @ e1), 0.0, 1.0))

    def on_second(t):
        p = a + t * e1
        return 0.0 if e2 @ e2 == 0.0 else float(np.clip((p - c) @ e2 / (e2 @ e2), 0.0, 1.0))

    candidates = [(on_first(0.0), 0.0), (on_first(1.0), 1.0), (0.0, on_second(0.0)), (1.0, on_second(1.0))]
    A = np.array([[e1 @ e1, -(e1 @ e2)], [-(e1 @ e2), e2 @ e2]])
    if abs(np.linalg.det(A)) > 1e-12 * max(A[0, 0] * A[1, 1], 1e-300):
        t, u = np.linalg.solve(A, [-(e1 @ r), e2 @ r])
        if 0.0 <= t <= 1.0 and 0.0 <= u <= 1.0:
            candidates.append((float(t), float(u)))
    return min(candidates, key=lambda tu: dist(*tu))


def clearance(x, r, y, ry) -> float:
    """[m] The least of ``|p - q| - r_p - r_q`` over the capsules of two chains: ``x (n, 3)`` with radii ``r (n,)``
    and ``y (k, 3)`` with ``ry (k,)``, the radius linear along each segment (a chain of one point is a sphere);
    negative where they overlap."""
    x, r, y, ry = (np.asarray(v, dtype=np.float64) for v in (x, r, y, ry))
    segs_x = [(i, i + 1) for i in range(len(x) - 1)] or [(0, 0)]
    segs_y = [(j, j + 1) for j in range(len(y) - 1)] or [(0, 0)]
    best = np.inf
    for i0, i1 in segs_x:
        for j0, j1 in segs_y:
            t, u = closest_parameters(x[i0], x[i1], y[j0], y[j1])
            gap = np.linalg.norm(x[i0] + t * (x[i1] - x[i0]) - y[j0] - u * (y[j1] - y[j0]))
            best = min(best, gap - (1 - t) * r[i0] - t * r[i1] - (1 - u) * ry[j0] - u * ry[j1])
    return float(best)
