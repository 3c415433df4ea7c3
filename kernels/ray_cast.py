"""Numba kernels: rays from a mesh's own vertices against its triangles, on a uniform grid of cells.

:func:`triangle_cells` sorts the triangles into the cells of a uniform grid their bounding boxes touch (CSR:
``cell_start (C + 1,)``, ``cell_triangle``); :func:`first_hits` casts one ray per vertex, from the vertex along a
given direction, and finds the nearest triangle it meets (Moller and Trumbore 1997), walking the grid's cells in the
ray's order (Amanatides and Woo 1987). The triangles a ray starts on (those of its own vertex) are never hit.

Per vertex it writes the distance to the first hit [m] (``inf`` when nothing is met within ``max_distance``) and
whether that hit is on the **back** of its triangle (the ray leaves the volume the triangle bounds: the vertex lies
inside it). Used by the skin quality's *inside* measure (``core/skin/quality.py``); numpy reference:
``core/skin/quality.first_hits_reference``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .constants import JIT, RAY_EDGE_TOLERANCE as EDGE_TOLERANCE

RAY_EPSILON = 1e-12
"""Determinant below which a ray runs parallel to a triangle's plane (scaled by the triangle's squared area)."""



@njit(**JIT)
def triangle_cells(x, faces, origin, inv_cell, dims, cell_start, out_triangle):
    """Fill the CSR lists of the triangles of ``faces (F, 3)`` at ``x (V, 3)`` per cell of the grid with corner
    ``origin (3,)``, cells of size ``1 / inv_cell`` and ``dims (3,)`` cells: ``cell_start (C + 1,)`` and
    ``out_triangle``; called first with an empty ``out_triangle`` (length 0) to count, it returns the length
    ``out_triangle`` needs (``cell_start[-1]``) and fills ``cell_start``; called again with that array, fills it."""
    C = dims[0] * dims[1] * dims[2]
    counting = out_triangle.shape[0] == 0
    if counting:
        for c in range(C + 1):
            cell_start[c] = 0
    fill = np.zeros(C, dtype=np.int64)
    for f in range(faces.shape[0]):
        lo = np.empty(3, dtype=np.int64)
        hi = np.empty(3, dtype=np.int64)
        for k in range(3):
            a = min(x[faces[f, 0], k], x[faces[f, 1], k], x[faces[f, 2], k])
            b = max(x[faces[f, 0], k], x[faces[f, 1], k], x[faces[f, 2], k])
            lo[k] = min(max(int(math.floor((a - origin[k]) * inv_cell)), 0), dims[k] - 1)
            hi[k] = min(max(int(math.floor((b - origin[k]) * inv_cell)), 0), dims[k] - 1)
        for i in range(lo[0], hi[0] + 1):
            for j in range(lo[1], hi[1] + 1):
                for k in range(lo[2], hi[2] + 1):
                    c = (i * dims[1] + j) * dims[2] + k
                    if counting:
                        cell_start[c + 1] += 1
                    else:
                        out_triangle[cell_start[c] + fill[c]] = f
                        fill[c] += 1
    if counting:
        for c in range(C):
            cell_start[c + 1] += cell_start[c]
    return cell_start[C]


@njit(**JIT)
def _hit(x, faces, f, ox, oy, oz, dx, dy, dz):
    """Distance along the ray ``o + t d`` to triangle ``f`` (Moller-Trumbore), or -1 when it is missed; and
    whether the ray meets the triangle's back (its normal, by the vertex order, along ``d``)."""
    a, b, c = faces[f, 0], faces[f, 1], faces[f, 2]
    e1x, e1y, e1z = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
    e2x, e2y, e2z = x[c, 0] - x[a, 0], x[c, 1] - x[a, 1], x[c, 2] - x[a, 2]
    px, py, pz = dy * e2z - dz * e2y, dz * e2x - dx * e2z, dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    nx, ny, nz = e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x
    if abs(det) <= RAY_EPSILON * (nx * nx + ny * ny + nz * nz):
        return -1.0, False
    inv = 1.0 / det
    tx, ty, tz = ox - x[a, 0], oy - x[a, 1], oz - x[a, 2]
    u = (tx * px + ty * py + tz * pz) * inv
    if u < -EDGE_TOLERANCE or u > 1.0 + EDGE_TOLERANCE:
        return -1.0, False
    qx, qy, qz = ty * e1z - tz * e1y, tz * e1x - tx * e1z, tx * e1y - ty * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv
    if v < -EDGE_TOLERANCE or u + v > 1.0 + EDGE_TOLERANCE:
        return -1.0, False
    t = (e2x * qx + e2y * qy + e2z * qz) * inv
    return t, (nx * dx + ny * dy + nz * dz) > 0.0


@njit(parallel=True, **JIT)
def first_hits(x, faces, directions, vertex_start, vertex_face, cell_start, cell_triangle, origin, inv_cell, dims,
               max_distance, out_distance, out_back):
    """For every vertex ``i`` of ``x (V, 3)`` [m], the ray ``x[i] + t directions[i]`` (unit rows; a zero row casts
    nothing): ``out_distance[i]`` the nearest ``t > 0`` at which it meets a triangle of ``faces (F, 3)`` other than
    the vertex's own (``vertex_face[vertex_start[i]:vertex_start[i + 1]]``), ``inf`` when none within
    ``max_distance``; ``out_back[i]`` whether that triangle is met from its back. The triangles come from the grid
    of :func:`triangle_cells` (``cell_start``, ``cell_triangle``, ``origin``, ``inv_cell``, ``dims``)."""
    cell = 1.0 / inv_cell
    for i in prange(x.shape[0]):
        ox, oy, oz = x[i, 0], x[i, 1], x[i, 2]
        dx, dy, dz = directions[i, 0], directions[i, 1], directions[i, 2]
        out_distance[i] = np.inf
        out_back[i] = False
        if dx == 0.0 and dy == 0.0 and dz == 0.0:
            continue
        o = (ox, oy, oz)
        d = (dx, dy, dz)
        # the cell the ray starts in, clamped into the grid (every vertex lies inside it)
        ci = np.empty(3, dtype=np.int64)
        step = np.empty(3, dtype=np.int64)
        t_next = np.empty(3)
        t_delta = np.empty(3)
        for k in range(3):
            ci[k] = min(max(int(math.floor((o[k] - origin[k]) * inv_cell)), 0), dims[k] - 1)
            if d[k] > 0.0:
                step[k] = 1
                t_next[k] = (origin[k] + (ci[k] + 1) * cell - o[k]) / d[k]
                t_delta[k] = cell / d[k]
            elif d[k] < 0.0:
                step[k] = -1
                t_next[k] = (origin[k] + ci[k] * cell - o[k]) / d[k]
                t_delta[k] = -cell / d[k]
            else:
                step[k] = 0
                t_next[k] = np.inf
                t_delta[k] = np.inf
        best = np.inf
        back = False
        t_cell = 0.0
        while t_cell <= max_distance and t_cell <= best:
            c = (ci[0] * dims[1] + ci[1]) * dims[2] + ci[2]
            for n in range(cell_start[c], cell_start[c + 1]):
                f = cell_triangle[n]
                own = False
                for m in range(vertex_start[i], vertex_start[i + 1]):
                    if vertex_face[m] == f:
                        own = True
                        break
                if own:
                    continue
                t, b = _hit(x, faces, f, ox, oy, oz, dx, dy, dz)
                if t > 0.0 and t < best:
                    best = t
                    back = b
            # the next cell: across the nearest of the three planes
            k = 0
            if t_next[1] < t_next[k]:
                k = 1
            if t_next[2] < t_next[k]:
                k = 2
            t_cell = t_next[k]
            ci[k] += step[k]
            if ci[k] < 0 or ci[k] >= dims[k]:
                break
            t_next[k] += t_delta[k]
        if best <= max_distance:
            out_distance[i] = best
            out_back[i] = back
