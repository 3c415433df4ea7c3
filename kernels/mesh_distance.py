"""Numba kernels: distances from points to a closed triangle mesh, on the uniform grid of cells of
``kernels/ray_cast.triangle_cells``.

Inside or outside: a ray from the point along ``PARITY_DIRECTION`` meets the mesh an odd number of times (its cells
walked in order, Amanatides and Woo 1987; each triangle counted once, in the cell where the ray meets it). The
nearest point: the triangles of the cells in growing shells around the point (Ericson, *Real-Time Collision
Detection*, 5.1.5), given up beyond ``max_distance``.

:func:`signed_distance_gradient` gives the signed distance and its gradient; :func:`mesh_signed_distance` the signed
distance alone. The skin's part fields are clipped to the body at rest on their grids' lattices
(``core/skin/part_grid.py``): :func:`lattice_inside` gives the side of every node of a lattice from one parity ray per
line of nodes along the parity direction, :func:`sided_distance_gradient` the distance of points whose side is known.
Each takes the mesh and its grid as one :class:`DistanceMesh` and takes its arrays out of it before its parallel loop,
whose per-point functions take them one by one. Reference: the brute-force ``kernels/distance.signed_distance``
(winding numbers), and each node's own ray and search for the lattice.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .constants import JIT

PARITY_DIRECTION = (0.2672612419124244, 0.5345224838248488, 0.8017837257372732)
"""Unit direction of the parity rays, (1, 2, 3) / |(1, 2, 3)|: along no axis and no diagonal, so a ray of a grid
node does not run along a mesh edge of an axis-aligned model."""
BOX_SLACK = 1e-6
"""How far [cells] the nearest search grows each cell's box before it skips the cell as no nearer than the best
point found: more than the rounding of the cells' bounds, so a skipped cell never held a nearer point."""


class DistanceMesh(NamedTuple):
    """A closed triangle mesh and its triangles sorted into the grid of ``kernels/ray_cast.triangle_cells``, as the
    kernels read it (``V`` vertices, ``F`` triangles, ``C`` cells); built with these dtypes, so one signature is
    compiled per kernel."""

    x: np.ndarray              # (V, 3) float64 [m] vertices
    faces: np.ndarray          # (F, 3) int64 triangles
    piece: np.ndarray          # (F,) int64 the closed piece of each triangle
    pieces: int                # how many pieces
    cell_start: np.ndarray     # (C+1,) int64 CSR: the triangles whose boxes touch each cell ...
    cell_triangle: np.ndarray  # (E,) int64 ... as triangle indices
    origin: np.ndarray         # (3,) float64 [m] the grid's corner
    inv_cell: float            # [1/m] inverse cell size
    dims: np.ndarray           # (3,) int64 cells per axis


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
def _box_gap2(o, origin, cell, i, j, k):
    """Squared distance [m^2] from the point ``o`` to cell ``(i, j, k)``'s box grown by ``BOX_SLACK`` cells: no
    point of the cell lies nearer, so a cell whose gap is no less than the best distance found holds no nearer
    triangle point (a triangle is listed in every cell its box touches, its point nearest to ``o`` among them)."""
    gap2 = 0.0
    for a in range(3):
        lo = origin[a] + ((i, j, k)[a] - BOX_SLACK) * cell
        hi = origin[a] + ((i, j, k)[a] + 1 + BOX_SLACK) * cell
        if o[a] < lo:
            gap2 += (lo - o[a]) ** 2
        elif o[a] > hi:
            gap2 += (o[a] - hi) ** 2
    return gap2


@njit(**JIT)
def _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, max_distance, enough=-1.0):
    """The point of the mesh nearest to p within ``max_distance``: ``(distance, qx, qy, qz)``, ``distance = inf``
    when there is none; if ``enough > 0`` [m], the first point found within ``enough`` ends the search (a point no
    further than it, not always the nearest). The cells are searched in shells of growing Chebyshev radius around
    p's cell, until a shell lies further than the nearest point found; within a shell, a cell whose box lies no
    nearer than that point is skipped (:func:`_box_gap2`)."""
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
    enough2 = enough * enough if enough > 0.0 else -1.0
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
                    if k >= 0 and k < dims[2] and _box_gap2(o, origin, cell, i, j, k) < best2:
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
                                if d2 <= enough2:
                                    return math.sqrt(best2), qx, qy, qz
                    k += step
    if best2 >= max_distance * max_distance:
        return np.inf, qx, qy, qz
    return math.sqrt(best2), qx, qy, qz


@njit(**JIT)
def _ray_crossings(px, py, pz, x, faces, piece, cell_start, cell_triangle, origin, inv_cell, dims):
    """``(t (m,), piece (m,))``: the crossings ahead of the point of the ray along ``PARITY_DIRECTION``, the
    distances along it sorted, each with its triangle's piece; the same walk and tests as :func:`_inside`."""
    cell = 1.0 / inv_cell
    d = PARITY_DIRECTION
    found_t = np.empty(64)
    found_piece = np.empty(64, dtype=np.int64)
    m = 0
    t0 = 0.0
    for k in range(3):
        o_k = (px, py, pz)[k]
        if o_k >= origin[k] + dims[k] * cell:
            return found_t[:0], found_piece[:0]
        if o_k < origin[k]:
            t0 = max(t0, (origin[k] - o_k) / d[k])
    o = (px + t0 * d[0], py + t0 * d[1], pz + t0 * d[2])
    ci = np.empty(3, dtype=np.int64)
    t_next = np.empty(3)
    t_delta = np.empty(3)
    for k in range(3):
        c = min(max(int(math.floor((o[k] - origin[k]) * inv_cell)), 0), dims[k] - 1)
        if o[k] >= origin[k] + dims[k] * cell:
            return found_t[:0], found_piece[:0]
        ci[k] = c
        t_next[k] = t0 + (origin[k] + (c + 1) * cell - o[k]) / d[k]
        t_delta[k] = cell / d[k]
    t_cell = 0.0
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
                if m == len(found_t):
                    found_t = np.concatenate((found_t, np.empty(m)))
                    found_piece = np.concatenate((found_piece, np.empty(m, dtype=np.int64)))
                found_t[m] = t
                found_piece[m] = piece[f]
                m += 1
        t_cell = t_exit
        ci[k] += 1
        if ci[k] >= dims[k]:
            break
        t_next[k] += t_delta[k]
    order = np.argsort(found_t[:m])
    return found_t[:m][order], found_piece[:m][order]


@njit(parallel=True, **JIT)
def lattice_inside(lattice, want, mesh, out):
    """``out[i, j, k]``: whether the lattice node ``lattice[:3] + lattice[3] (i, j, k)`` [m] is inside the closed
    ``mesh`` (:class:`DistanceMesh`, inside as in :func:`signed_distance_gradient`), for the nodes where ``want (nx,
    ny, nz)`` is true (the others are left as they are).

    The parity rays of nodes ``(i, j, k) + m (1, 2, 3)`` run along one line (``PARITY_DIRECTION`` is ``(1, 2, 3)``
    made unit): one ray from the line's first wanted node collects its crossings (:func:`_ray_crossings`), and a
    node further along is inside when, for some piece, an odd number of them lies beyond it; the same crossings
    :func:`_inside` counts from the node itself (its ray is the same half-line from there on)."""
    x, faces, piece, pieces = mesh.x, mesh.faces, mesh.piece, mesh.pieces
    cell_start, cell_triangle, origin, inv_cell, dims = (mesh.cell_start, mesh.cell_triangle, mesh.origin,
                                                         mesh.inv_cell, mesh.dims)
    nx, ny, nz = want.shape
    h = lattice[3]
    d = PARITY_DIRECTION
    for n in prange(nx * ny * nz):
        i0, j0, k0 = n // (ny * nz), (n // nz) % ny, n % nz
        if i0 >= 1 and j0 >= 2 and k0 >= 3:  # not the first node of its line
            continue
        length = min(nx - i0, (ny - j0 + 1) // 2, (nz - k0 + 2) // 3)
        first = -1
        for m in range(length):
            if want[i0 + m, j0 + 2 * m, k0 + 3 * m]:
                first = m
                break
        if first < 0:
            continue
        ox = lattice[0] + h * (i0 + first)
        oy = lattice[1] + h * (j0 + 2 * first)
        oz = lattice[2] + h * (k0 + 3 * first)
        t, t_piece = _ray_crossings(ox, oy, oz, x, faces, piece, cell_start, cell_triangle, origin, inv_cell, dims)
        parity = np.zeros(pieces, dtype=np.int64)
        odd = 0
        c = len(t) - 1  # crossings beyond the current node counted: those after index c
        for m in range(length - 1, first - 1, -1):
            i, j, k = i0 + m, j0 + 2 * m, k0 + 3 * m
            # the node's distance along the ray from its origin
            s = ((lattice[0] + h * i - ox) * d[0] + (lattice[1] + h * j - oy) * d[1]
                 + (lattice[2] + h * k - oz) * d[2])
            while c >= 0 and t[c] > s:
                p = t_piece[c]
                parity[p] ^= 1
                odd += 1 if parity[p] == 1 else -1
                c -= 1
            if want[i, j, k]:
                out[i, j, k] = odd > 0
    return


@njit(**JIT)
def _signed(px, py, pz, sign, d, qx, qy, qz):
    """``(sign d, gradient)``: the signed distance of p whose side is ``sign`` (-1 inside, +1 outside) and whose
    nearest mesh point ``q`` lies ``d`` [m] away, and its gradient, the unit direction from ``q`` turned outwards
    (0 where ``d`` is 0 or infinite)."""
    if d > 0.0 and d < np.inf:
        return sign * d, sign * (px - qx) / d, sign * (py - qy) / d, sign * (pz - qz) / d
    return sign * d, 0.0, 0.0, 0.0


@njit(parallel=True, **JIT)
def sided_distance_gradient(points, inside, mesh, max_distance, limit, out):
    """:func:`signed_distance_gradient` for ``points (n, 3)`` [m] whose side is known, ``inside (n,)`` bool (from
    :func:`lattice_inside`), to ``mesh`` (:class:`DistanceMesh`): ``out[n, 0]`` the signed distance, ``out[n, 1:]``
    its gradient. ``limit (n,)`` [m]: for a point inside, its ``inside_reach``; for a point outside, a distance at
    which to stop: the first mesh point found within ``limit[n] > 0`` gives the distance, which is then that
    point's, no more than ``limit[n]`` but not always the nearest (a caller to which every distance that short
    means the same saves the search)."""
    x, faces = mesh.x, mesh.faces
    cell_start, cell_triangle, origin, inv_cell, dims = (mesh.cell_start, mesh.cell_triangle, mesh.origin,
                                                         mesh.inv_cell, mesh.dims)
    for n in prange(points.shape[0]):
        px, py, pz = points[n, 0], points[n, 1], points[n, 2]
        if inside[n]:
            d, qx, qy, qz = _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims,
                                     min(max_distance, limit[n]))
            out[n, 0], out[n, 1], out[n, 2], out[n, 3] = _signed(px, py, pz, -1.0, d, qx, qy, qz)
        else:
            d, qx, qy, qz = _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims,
                                     max_distance, limit[n])
            out[n, 0], out[n, 1], out[n, 2], out[n, 3] = _signed(px, py, pz, 1.0, d, qx, qy, qz)


@njit(parallel=True, **JIT)
def signed_distance_gradient(points, mesh, max_distance, inside_reach, out_distance, out_gradient):
    """For each of ``points (n, 3)`` [m]: ``out_distance[n]`` its signed distance to the closed ``mesh``
    (:class:`DistanceMesh`; negative inside; ``+-inf`` further than ``max_distance``, or for a point inside
    further than ``inside_reach[n]`` [m] if that is less: a caller that needs no deeper distance saves the search)
    and ``out_gradient[n]`` the distance's gradient, the unit direction from the nearest point of the mesh, turned
    outwards (0 where the distance is infinite); inside means inside one of its ``pieces`` closed pieces."""
    x, faces, piece, pieces = mesh.x, mesh.faces, mesh.piece, mesh.pieces
    cell_start, cell_triangle, origin, inv_cell, dims = (mesh.cell_start, mesh.cell_triangle, mesh.origin,
                                                         mesh.inv_cell, mesh.dims)
    for n in prange(points.shape[0]):
        sign = -1.0 if _inside(points[n, 0], points[n, 1], points[n, 2], x, faces, piece, pieces, cell_start,
                               cell_triangle, origin, inv_cell, dims) else 1.0
        reach = max_distance if sign > 0.0 else min(max_distance, inside_reach[n])
        px, py, pz = points[n, 0], points[n, 1], points[n, 2]
        d, qx, qy, qz = _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, reach)
        out_distance[n], out_gradient[n, 0], out_gradient[n, 1], out_gradient[n, 2] = _signed(px, py, pz, sign, d,
                                                                                              qx, qy, qz)


@njit(parallel=True, **JIT)
def mesh_signed_distance(points, mesh, max_distance, out):
    """``out[n]``: the signed distance [m] from ``points[n]`` to the closed ``mesh`` (:class:`DistanceMesh`;
    negative inside; ``+-inf`` further than ``max_distance`` from every triangle, inside as in
    :func:`signed_distance_gradient`)."""
    x, faces, piece, pieces = mesh.x, mesh.faces, mesh.piece, mesh.pieces
    cell_start, cell_triangle, origin, inv_cell, dims = (mesh.cell_start, mesh.cell_triangle, mesh.origin,
                                                         mesh.inv_cell, mesh.dims)
    for n in prange(points.shape[0]):
        px, py, pz = points[n, 0], points[n, 1], points[n, 2]
        d, _, _, _ = _nearest(px, py, pz, x, faces, cell_start, cell_triangle, origin, inv_cell, dims, max_distance)
        out[n] = -d if _inside(px, py, pz, x, faces, piece, pieces, cell_start, cell_triangle, origin, inv_cell,
                               dims) else d
