"""Numba kernel: greedy Poisson-disc selection (dart throwing over given candidates; ``core/skin/parts.py``).

``points (n, 3)`` [m]; ``order (n,) int64`` the visiting order; ``radius`` [m]; ``out_keep (n,) bool`` written in
place. A candidate is kept if no kept point is closer than ``radius``; kept points are looked up in a uniform hash
grid of cell size ``radius`` (27 neighbouring cells), so the cost is linear in ``n``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .constants import JIT


@njit(**JIT)
def poisson_select(points, order, radius, out_keep):
    n = points.shape[0]
    if n == 0:
        return
    lo = np.empty(3)
    dims = np.empty(3, dtype=np.int64)
    for c in range(3):
        lo[c] = points[:, c].min()
        dims[c] = int(math.floor((points[:, c].max() - lo[c]) / radius)) + 1
    # cell -> linked list of kept points
    n_cells = dims[0] * dims[1] * dims[2]
    head = np.full(n_cells, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    r2 = radius * radius
    for oi in range(n):
        i = order[oi]
        ci = np.empty(3, dtype=np.int64)
        for c in range(3):
            ci[c] = min(int((points[i, c] - lo[c]) / radius), dims[c] - 1)
        ok = True
        for dx in range(-1, 2):
            x = ci[0] + dx
            if x < 0 or x >= dims[0] or not ok:
                continue
            for dy in range(-1, 2):
                y = ci[1] + dy
                if y < 0 or y >= dims[1] or not ok:
                    continue
                for dz in range(-1, 2):
                    z = ci[2] + dz
                    if z < 0 or z >= dims[2]:
                        continue
                    k = head[(x * dims[1] + y) * dims[2] + z]
                    while k >= 0:
                        d2 = 0.0
                        for c in range(3):
                            d2 += (points[k, c] - points[i, c]) ** 2
                        if d2 < r2:
                            ok = False
                            break
                        k = nxt[k]
                    if not ok:
                        break
        if ok:
            out_keep[i] = True
            cell = (ci[0] * dims[1] + ci[1]) * dims[2] + ci[2]
            nxt[i] = head[cell]
            head[cell] = i
