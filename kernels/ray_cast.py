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
def _cell_range(a, b, c, origin, inv_cell, dims):
    """The cells ``[lo, hi]`` along one axis that the coordinates ``a, b, c`` of a triangle's corners span."""
    lo = min(max(int(math.floor((min(a, b, c) - origin) * inv_cell)), 0), dims - 1)
    hi = min(max(int(math.floor((max(a, b, c) - origin) * inv_cell)), 0), dims - 1)
    return lo, hi


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
        p, q, r = faces[f, 0], faces[f, 1], faces[f, 2]
        i0, i1 = _cell_range(x[p, 0], x[q, 0], x[r, 0], origin[0], inv_cell, dims[0])
        j0, j1 = _cell_range(x[p, 1], x[q, 1], x[r, 1], origin[1], inv_cell, dims[1])
        k0, k1 = _cell_range(x[p, 2], x[q, 2], x[r, 2], origin[2], inv_cell, dims[2])
        for i in range(i0, i1 + 1):
            for j in range(j0, j1 + 1):
                for k in range(k0, k1 + 1):
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


@njit(**JIT)
def _axis_start(o, d, origin, inv_cell, dims):
    """A ray's start along one axis: ``(cell, step, t_next, t_delta)``, its cell clamped into the grid."""
    cell = 1.0 / inv_cell
    c = min(max(int(math.floor((o - origin) * inv_cell)), 0), dims - 1)
    if d > 0.0:
        return c, 1, (origin + (c + 1) * cell - o) / d, cell / d
    if d < 0.0:
        return c, -1, (origin + c * cell - o) / d, -cell / d
    return c, 0, np.inf, np.inf


@njit(**JIT)
def _walk_start(ox, oy, oz, dx, dy, dz, origin, inv_cell, dims):
    """The start of the walk of the ray ``o + t d`` through the grid's cells (Amanatides and Woo 1987): the 3-tuples
    ``(cell, step, t_next, t_delta)`` of :func:`_axis_start` on each axis."""
    cx, sx, nx, ex = _axis_start(ox, dx, origin[0], inv_cell, dims[0])
    cy, sy, ny, ey = _axis_start(oy, dy, origin[1], inv_cell, dims[1])
    cz, sz, nz, ez = _axis_start(oz, dz, origin[2], inv_cell, dims[2])
    return (cx, cy, cz), (sx, sy, sz), (nx, ny, nz), (ex, ey, ez)


@njit(**JIT)
def _exit_axis(t_next):
    """The axis whose cell plane the walk crosses next: the smallest of ``t_next``, the lower axis on a tie."""
    if t_next[0] <= t_next[1] and t_next[0] <= t_next[2]:
        return 0
    if t_next[1] <= t_next[2]:
        return 1
    return 2


@njit(**JIT)
def _walk_step(k, cell, step, t_next, t_delta):
    """The walk across axis ``k``'s plane: ``(t_cell, cell, t_next)``, the ray's distance where it enters the next
    cell and the walk's tuples there (the cell may lie outside the grid: the walk ends)."""
    if k == 0:
        return t_next[0], (cell[0] + step[0], cell[1], cell[2]), (t_next[0] + t_delta[0], t_next[1], t_next[2])
    if k == 1:
        return t_next[1], (cell[0], cell[1] + step[1], cell[2]), (t_next[0], t_next[1] + t_delta[1], t_next[2])
    return t_next[2], (cell[0], cell[1], cell[2] + step[2]), (t_next[0], t_next[1], t_next[2] + t_delta[2])


@njit(**JIT)
def first_hit(i, o, d, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, max_distance):
    """``(t, back, face)``: the nearest ``t > 0`` at which the ray ``o + t d`` (3-tuples [m]; ``d`` a unit vector,
    not zero) meets a triangle of ``faces (F, 3)`` at ``x (V, 3)`` other than those of vertex ``i`` (``i < 0``: none
    left out), ``inf`` when none within ``max_distance``, whether that triangle is met from its back, and which
    triangle it is (-1: none). The triangles come from the grid of :func:`triangle_cells` (``cell_start``,
    ``cell_triangle``, ``origin``, ``inv_cell``, ``dims``); a ray starting outside the grid starts in its nearest
    cell."""
    ox, oy, oz = o
    dx, dy, dz = d
    cell, step, t_next, t_delta = _walk_start(ox, oy, oz, dx, dy, dz, origin, inv_cell, dims)
    best = np.inf
    back = False
    face = -1
    t_cell = 0.0
    while t_cell <= max_distance and t_cell <= best:
        c = (cell[0] * dims[1] + cell[1]) * dims[2] + cell[2]
        for n in range(cell_start[c], cell_start[c + 1]):
            f = cell_triangle[n]
            if faces[f, 0] == i or faces[f, 1] == i or faces[f, 2] == i:
                continue  # the vertex's own triangle (i < 0 matches none)
            t, b = _hit(x, faces, f, ox, oy, oz, dx, dy, dz)
            if t > 0.0 and t < best:
                best = t
                back = b
                face = f
        k = _exit_axis(t_next)
        t_cell, cell, t_next = _walk_step(k, cell, step, t_next, t_delta)
        if cell[k] < 0 or cell[k] >= dims[k]:
            break
    if best <= max_distance:
        return best, back, face
    return np.inf, False, -1


@njit(**JIT)
def crossings(i, o, d, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, max_distance):
    """The ray ``o + t d`` of :func:`first_hit` (same arguments) up to ``max_distance``: the triangles it meets from
    their back less those it meets from their front, each triangle once (counted in the cell the hit lies in): the
    number of shells the ray leaves, so a point nested in one shell of a closed mesh, with nothing else on the ray,
    counts 1 and a point outside every shell 0."""
    ox, oy, oz = o
    dx, dy, dz = d
    cell, step, t_next, t_delta = _walk_start(ox, oy, oz, dx, dy, dz, origin, inv_cell, dims)
    count = 0
    t_cell = 0.0
    while t_cell <= max_distance:
        # the cell's stretch of the ray: [t_cell, t_exit), closed where the ray leaves the grid
        k = _exit_axis(t_next)
        t_exit = t_next[k]
        last = cell[k] + step[k] < 0 or cell[k] + step[k] >= dims[k]
        c = (cell[0] * dims[1] + cell[1]) * dims[2] + cell[2]
        for n in range(cell_start[c], cell_start[c + 1]):
            f = cell_triangle[n]
            if faces[f, 0] == i or faces[f, 1] == i or faces[f, 2] == i:
                continue
            t, b = _hit(x, faces, f, ox, oy, oz, dx, dy, dz)
            if t > 0.0 and t <= max_distance and t >= t_cell and (t < t_exit or last):
                count += 1 if b else -1
        t_cell, cell, t_next = _walk_step(k, cell, step, t_next, t_delta)
        if last:
            break
    return count


@njit(parallel=True, **JIT)
def first_hits(x, faces, directions, cell_start, cell_triangle, origin, inv_cell, dims, max_distance, out_distance,
               out_back):
    """For every vertex ``i`` of ``x (V, 3)`` [m], the ray ``x[i] + t directions[i]`` (unit rows; a zero row casts
    nothing): ``out_distance[i]``, ``out_back[i]`` of :func:`first_hit` (the vertex's own triangles left out)."""
    for i in prange(x.shape[0]):
        dx, dy, dz = directions[i, 0], directions[i, 1], directions[i, 2]
        out_distance[i] = np.inf
        out_back[i] = False
        if dx == 0.0 and dy == 0.0 and dz == 0.0:
            continue
        t, b, _ = first_hit(i, (x[i, 0], x[i, 1], x[i, 2]), (dx, dy, dz), x, faces, cell_start, cell_triangle, origin,
                            inv_cell, dims, max_distance)
        out_distance[i] = t
        out_back[i] = b
