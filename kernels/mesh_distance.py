"""Numba kernels: distances from points to a closed triangle mesh, on the uniform grid of cells of
``kernels/ray_cast.triangle_cells``.

Inside or outside: a ray from the point along ``PARITY_DIRECTION`` meets the mesh an odd number of times (its cells
walked in order, Amanatides and Woo 1987; each triangle counted once, in the cell where the ray meets it). The
nearest point: the triangles of the cells in growing shells around the point (Ericson, *Real-Time Collision
Detection*, 5.1.5), given up beyond ``max_distance``.

:func:`signed_distance_gradient` gives the signed distance and its gradient (the skin's part fields are clipped to
the body at rest with it, ``core/skin/part_grid.py``); :func:`mesh_signed_distance` the signed distance alone.
Reference: the brute-force ``kernels/distance.signed_distance`` (winding numbers).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .constants import JIT

PARITY_DIRECTION = (0.2672612419124244, 0.5345224838248488, 0.8017837257372732)
"""Unit direction of the parity rays, (1, 2, 3) / |(1, 2, 3)|: along no axis and no diagonal, so a ray of a grid
node does not run along a mesh edge of an axis-aligned model."""


@njit(**JIT)
def _crossing(x, faces, f, ox, oy, oz, dx, dy, dz):
    """Distance along the ray to triangle ``f`` where it crosses it (strict barycentric test), or -1."""
    a, b, c = faces[f, 0], faces[f, 1], faces[f, 2]
    e1x, e1y, e1z = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
    e2x, e2y, e2z = x[c, 0] - x[a, 0], x[c, 1] - x[a, 1], x[c, 2] - x[a, 2]
    px, py, pz = dy * e2z - dz * e2y, dz * e2x - dx * e2z, dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    if det == 0.0:
        return -1.0
    inv = 1.0 / det
    tx, ty, tz = ox - x[a, 0], oy - x[a, 1], oz - x[a, 2]
    u = (tx * px + ty * py + tz * pz) * inv
    if u < 0.0 or u >= 1.0:
        return -1.0
    qx, qy, qz = ty * e1z - tz * e1y, tz * e1x - tx * e1z, tx * e1y - ty * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv
    if v < 0.0 or u + v >= 1.0:
        return -1.0
    return (e2x * qx + e2y * qy + e2z * qz) * inv


@njit(**JIT)
def _inside(px, py, pz, x, faces, piece, pieces, cell_start, cell_triangle, origin, inv_cell, dims):
    """Whether the point is inside the mesh: inside one of its ``pieces`` closed pieces (``piece (F,)`` each face's),
    the parity of the ray's crossings with that piece odd."""
    cell = 1.0 / inv_cell
    d = PARITY_DIRECTION
    # a point outside the grid's box: its ray enters the box later (every component of d is positive), or never
    t0 = 0.0
    for k in range(3):
        o_k = (px, py, pz)[k]
        if o_k >= origin[k] + dims[k] * cell:
            return False
        if o_k < origin[k]:
            t0 = max(t0, (origin[k] - o_k) / d[k])
    o = (px + t0 * d[0], py + t0 * d[1], pz + t0 * d[2])
    ci = np.empty(3, dtype=np.int64)
    t_next = np.empty(3)
    t_delta = np.empty(3)
    for k in range(3):
        c = min(max(int(math.floor((o[k] - origin[k]) * inv_cell)), 0), dims[k] - 1)
        if o[k] >= origin[k] + dims[k] * cell:
            return False
        ci[k] = c
        t_next[k] = t0 + (origin[k] + (c + 1) * cell - o[k]) / d[k]
        t_delta[k] = cell / d[k]
    count = np.zeros(pieces, dtype=np.int64)
    t_cell = 0.0  # the first cell counts every crossing ahead of the point (one on the box's face too)
    while True:
        k = 0
        if t_next[1] < t_next[k]:
            k = 1
        if t_next[2] < t_next[k]:
            k = 2
        t_exit = t_next[k]
        c = (ci[0] * dims[1] + ci[1]) * dims[2] + ci[2]
        for n in range(cell_start[c], cell_start[c + 1]):
            f = cell_triangle[n]
            t = _crossing(x, faces, f, px, py, pz, d[0], d[1], d[2])
            if t > 0.0 and t >= t_cell and t < t_exit:
                count[piece[f]] += 1
        t_cell = t_exit
        ci[k] += 1
        if ci[k] >= dims[k]:
            break
        t_next[k] += t_delta[k]
    for k in range(pieces):
        if count[k] % 2 == 1:
            return True
    return False


@njit(**JIT)
def _closest_point(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """The point of triangle abc closest to p (Ericson 5.1.5)."""
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az
    bpx, bpy, bpz = px - bx, py - by, pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz)
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w


@njit(**JIT)
def _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, max_distance):
    """The point of the mesh nearest to p within ``max_distance``: ``(distance, qx, qy, qz)``, ``distance = inf``
    when there is none. The cells are searched in shells of growing Chebyshev radius around p's cell, until a
    shell lies further than the nearest point found."""
    cell = 1.0 / inv_cell
    o = (px, py, pz)
    c0 = np.empty(3, dtype=np.int64)
    margin = np.inf  # the point's distance to its own cell's nearest face
    for k in range(3):
        f = (o[k] - origin[k]) * inv_cell
        c = int(math.floor(f))
        c0[k] = c
        if c >= 0 and c < dims[k]:
            margin = min(margin, (f - c) * cell, (c + 1 - f) * cell)
        else:
            margin = 0.0
    best2 = max_distance * max_distance
    qx, qy, qz = px, py, pz
    shells = int(math.ceil(max_distance * inv_cell)) + 1
    for s in range(shells + 1):
        reach = (s - 1) * cell + margin  # every cell of this shell lies at least this far away
        if s > 0 and reach * reach > best2:
            break
        for i in range(c0[0] - s, c0[0] + s + 1):
            if i < 0 or i >= dims[0]:
                continue
            for j in range(c0[1] - s, c0[1] + s + 1):
                if j < 0 or j >= dims[1]:
                    continue
                on_face = abs(i - c0[0]) == s or abs(j - c0[1]) == s
                step = 1 if on_face or s == 0 else 2 * s
                k = c0[2] - s
                while k <= c0[2] + s:
                    if k >= 0 and k < dims[2]:
                        c = (i * dims[1] + j) * dims[2] + k
                        for n in range(cell_start[c], cell_start[c + 1]):
                            f = cell_triangle[n]
                            a, b, e = faces[f, 0], faces[f, 1], faces[f, 2]
                            yx, yy, yz = _closest_point(px, py, pz, x[a, 0], x[a, 1], x[a, 2], x[b, 0], x[b, 1],
                                                        x[b, 2], x[e, 0], x[e, 1], x[e, 2])
                            d2 = (px - yx) ** 2 + (py - yy) ** 2 + (pz - yz) ** 2
                            if d2 < best2:
                                best2 = d2
                                qx, qy, qz = yx, yy, yz
                    k += step
    if best2 >= max_distance * max_distance:
        return np.inf, qx, qy, qz
    return math.sqrt(best2), qx, qy, qz


@njit(parallel=True, **JIT)
def signed_distance_gradient(points, x, faces, piece, pieces, cell_start, cell_triangle, origin, inv_cell, dims,
                             max_distance, inside_reach, out_distance, out_gradient):
    """For each of ``points (n, 3)`` [m]: ``out_distance[n]`` its signed distance to the closed mesh ``x (V, 3)``,
    ``faces (F, 3)`` [m] (negative inside; ``+-inf`` further than ``max_distance``, or for a point inside further
    than ``inside_reach[n]`` [m] if that is less: a caller that needs no deeper distance saves the search) and
    ``out_gradient[n]`` the
    distance's gradient, the unit direction from the nearest point of the mesh, turned outwards (0 where the
    distance is infinite); inside means inside one of its ``pieces`` closed pieces (``piece (F,)`` int64 each
    triangle's). The mesh's triangles are sorted into the grid ``cell_start``, ``cell_triangle``, ``origin``,
    ``inv_cell``, ``dims`` of ``kernels/ray_cast.triangle_cells``."""
    for n in prange(points.shape[0]):
        px, py, pz = points[n, 0], points[n, 1], points[n, 2]
        out_gradient[n, 0] = 0.0
        out_gradient[n, 1] = 0.0
        out_gradient[n, 2] = 0.0
        sign = -1.0 if _inside(px, py, pz, x, faces, piece, pieces, cell_start, cell_triangle, origin, inv_cell,
                               dims) else 1.0
        reach = max_distance if sign > 0.0 else min(max_distance, inside_reach[n])
        d, qx, qy, qz = _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, reach)
        out_distance[n] = sign * d
        if d > 0.0 and d < np.inf:
            out_gradient[n, 0] = sign * (px - qx) / d
            out_gradient[n, 1] = sign * (py - qy) / d
            out_gradient[n, 2] = sign * (pz - qz) / d


@njit(parallel=True, **JIT)
def mesh_signed_distance(points, x, faces, piece, pieces, cell_start, cell_triangle, origin, inv_cell, dims,
                         max_distance, out):
    """``out[n]``: the signed distance [m] from ``points[n]`` to the closed mesh ``x (V, 3)``, ``faces (F, 3)``
    (negative inside; ``+-inf`` further than ``max_distance`` from every triangle), its pieces and grid as in
    :func:`signed_distance_gradient`."""
    for n in prange(points.shape[0]):
        px, py, pz = points[n, 0], points[n, 1], points[n, 2]
        d, _, _, _ = _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, max_distance)
        out[n] = -d if _inside(px, py, pz, x, faces, piece, pieces, cell_start, cell_triangle, origin, inv_cell,
                               dims) else d
