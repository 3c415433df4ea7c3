"""Numba kernel: the skin that a frame leaves inside the body at a crease, pushed back onto the skin it passed.

The tracking lands a vertex that passes a contact surface of the skin field on that surface, but the field's
contact surface and the other side's *mesh* need not meet: at a deep bend the two sides' patches land apart, or
one side's vertices stop short of it, and skin stays inside the body. :func:`resolve_creases` finds those vertices
on the mesh itself and moves them out, in ``rounds`` rounds:

1. the mesh's triangles are sorted into a uniform grid of cells of ``cell`` [m] (``kernels/ray_cast.py``);
2. each candidate vertex casts a ray along its normal on the mesh, or where the skin is folded over (that normal
   more than 60 degrees from the dual-quaternion normal ``R_i n_i``, the rest normal turned by the vertex's
   skinning rotation) along ``R_i n_i``: when the ray's first hit is
   the back of a triangle of skin apart from its own (another skin part's, or its own part's but further than
   ``apart`` from it at rest: the two sides of a knee's crease may both be the thigh's) the vertex lies inside the
   body (inside skin next to its own it is a fold or a pocket, a face's, not a crease), and a ray the other way
   meets the skin it passed (seen from inside, skin apart from its own too) after ``t`` [m] (at most
   ``max_depth``), and the ray leaves more shells of the mesh than the rest normal's did at rest
   (:func:`rest_crossings`: skin modelled under another layer is nested in it at rest already); it is pushed back by
   ``share t + margin`` against its normal;
3. the pushes spread over ``spread`` rings of neighbours, halving at each ring, so the crease moves as a sheet, not
   as single vertices; vertices that may not move (``CreaseMesh.free`` False: open borders, skin already inside the
   body at rest) keep their place;
4. the skin folded over at the crease (a vertex whose normal on the mesh now faces against its dual-quaternion
   normal: a deep bend's folds, left by the skinning or the pushes) is smoothed flat: it and ``unfold_rings`` rings
   around it move to their ring's weighted mean, ``unfold_sweeps`` times.

Candidates are the vertices the caller names (the tracking's contact vertices) and a ring around them, then in each
round the vertices pushed in the round before and the rings their pushes reached. The
numpy reference is ``core/skin/crease.resolve_creases_reference``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .constants import JIT
from .ray_cast import crossings, first_hit, triangle_cells


MESH_NORMAL_COS = 0.5
"""A vertex's ray follows the mesh's own normal where it lies within 60 degrees of the skinning's, that one
elsewhere (the skin folded over there)."""


class CreaseMesh(NamedTuple):
    """The mesh's bind data for :func:`resolve_creases` (``V`` vertices, ``F`` triangles)."""

    faces: np.ndarray           # (F, 3) int64
    rest_normal: np.ndarray     # (V, 3) float64 unit rest normals
    ring_start: np.ndarray      # (V+1,) int64 CSR one-rings ...
    ring_neighbour: np.ndarray  # (sum,) int64 ...
    ring_weight: np.ndarray     # (sum,) float64 normalised weights
    free: np.ndarray            # (V,) bool the vertices it may move
    vertex_part: np.ndarray     # (V,) int64 each vertex's skin part
    face_part: np.ndarray       # (F,) int64 each triangle's skin part (its first corner's)
    rest: np.ndarray            # (V, 3) float64 [m] rest positions
    rest_crossings: np.ndarray  # (V,) int64 shells the rest normal's ray leaves at rest (:func:`rest_crossings`)


class CreaseParams(NamedTuple):
    """Scalar settings of :func:`resolve_creases` (lengths in metres)."""

    rounds: int         # most rounds of find, push, spread
    spread: int         # rings a push spreads over
    share: float        # share of the depth a round pushes back
    margin: float       # [m] pushed this much further than the depth (off the other side's facets)
    max_depth: float    # [m] deeper than this a vertex is not pushed (its ray went through a limb, not a crease)
    max_ray: float      # [m] the outward ray's reach
    cell: float         # [m] the triangle grid's cell size
    max_cells: int      # most cells of the grid (coarser beyond it)
    apart: float        # [m] a triangle of the vertex's own part this far from it at rest is skin apart from it
    unfold_rings: int   # rings around a folded vertex smoothed with it
    unfold_sweeps: int  # smoothing sweeps of the folded vertices per round


@njit(**JIT)
def _grid(x, faces, cell, max_cells):
    """The triangles of ``faces`` at ``x`` in a uniform grid: ``(origin, inv_cell, dims, cell_start, cell_triangle)``."""
    lo = np.empty(3)
    hi = np.empty(3)
    for k in range(3):
        lo[k] = x[0, k]
        hi[k] = x[0, k]
    for i in range(x.shape[0]):
        for k in range(3):
            lo[k] = min(lo[k], x[i, k])
            hi[k] = max(hi[k], x[i, k])
    dims = np.empty(3, dtype=np.int64)
    while True:
        total = 1
        for k in range(3):
            dims[k] = max(int(math.ceil((hi[k] - lo[k]) / cell)), 1)
            total *= dims[k]
        if total <= max_cells:
            break
        cell *= 1.25
    inv_cell = 1.0 / cell
    cell_start = np.zeros(dims[0] * dims[1] * dims[2] + 1, dtype=np.int64)
    n = triangle_cells(x, faces, lo, inv_cell, dims, cell_start, np.zeros(0, dtype=np.int64))
    cell_triangle = np.empty(n, dtype=np.int64)
    triangle_cells(x, faces, lo, inv_cell, dims, cell_start, cell_triangle)
    return lo, inv_cell, dims, cell_start, cell_triangle


@njit(**JIT)
def _apart(i, face, mesh, prm):
    """Whether triangle ``face`` is skin apart from vertex ``i``'s: another skin part's, or at rest further from it
    than ``prm.apart``."""
    if mesh.face_part[face] != mesh.vertex_part[i]:
        return True
    a = mesh.faces[face, 0]
    d2 = 0.0
    for c in range(3):
        d2 += (mesh.rest[a, c] - mesh.rest[i, c]) ** 2
    return d2 > prm.apart * prm.apart


@njit(parallel=True, **JIT)
def _find(x, rot, mesh, prm, work, n_work, grid, normal, push, inside):
    """Step 2 of the module docstring for the vertices ``work[:n_work]``: ``push (V, 3)`` and ``inside (V,)``;
    ``normal (V, 3)`` the mesh's area-weighted normals at ``x`` (:func:`_normals`)."""
    origin, inv_cell, dims, cell_start, cell_triangle = grid
    n0 = mesh.rest_normal
    for w in prange(n_work):
        i = work[w]
        inside[i] = False
        push[i, 0] = 0.0
        push[i, 1] = 0.0
        push[i, 2] = 0.0
        nx = rot[i, 0, 0] * n0[i, 0] + rot[i, 0, 1] * n0[i, 1] + rot[i, 0, 2] * n0[i, 2]
        ny = rot[i, 1, 0] * n0[i, 0] + rot[i, 1, 1] * n0[i, 1] + rot[i, 1, 2] * n0[i, 2]
        nz = rot[i, 2, 0] * n0[i, 0] + rot[i, 2, 1] * n0[i, 1] + rot[i, 2, 2] * n0[i, 2]
        length = math.sqrt(nx * nx + ny * ny + nz * nz)
        if length < 1e-12 or not mesh.free[i]:
            continue
        nx /= length
        ny /= length
        nz /= length
        # the mesh's own normal where it still faces the way the skinning turned the skin (not folded over)
        mx, my, mz = normal[i, 0], normal[i, 1], normal[i, 2]
        m = math.sqrt(mx * mx + my * my + mz * mz)
        if m > 1e-20 and (mx * nx + my * ny + mz * nz) > MESH_NORMAL_COS * m:
            nx, ny, nz = mx / m, my / m, mz / m
        p = (x[i, 0], x[i, 1], x[i, 2])
        t, back, face = first_hit(i, p, (nx, ny, nz), x, mesh.faces, cell_start, cell_triangle, origin, inv_cell,
                                  dims, prm.max_ray)
        if not back or not _apart(i, face, mesh, prm):
            continue  # outside, or inside skin next to its own (a fold of the face, a pocket): not a crease
        depth, passed, face = first_hit(i, p, (-nx, -ny, -nz), x, mesh.faces, cell_start, cell_triangle, origin,
                                        inv_cell, dims, prm.max_depth)
        if depth > prm.max_depth or not passed or not _apart(i, face, mesh, prm):
            continue  # the skin it passed is its own neighbourhood's, or not seen from inside
        if crossings(i, p, (nx, ny, nz), x, mesh.faces, cell_start, cell_triangle, origin, inv_cell, dims,
                     prm.max_ray) <= mesh.rest_crossings[i]:
            continue  # nested in no more shells than at rest: layered or overlapping shells, not a crease
        s = prm.share * depth + prm.margin
        push[i, 0] = -s * nx
        push[i, 1] = -s * ny
        push[i, 2] = -s * nz
        inside[i] = True


@njit(parallel=True, **JIT)
def _rest_crossings(rest, normal, faces, prm, out):
    """``out (V,)``: :func:`rest_crossings` on the triangle grid of the rest mesh."""
    grid = _grid(rest, faces, prm.cell, prm.max_cells)
    origin, inv_cell, dims, cell_start, cell_triangle = grid
    for i in prange(rest.shape[0]):
        out[i] = crossings(i, (rest[i, 0], rest[i, 1], rest[i, 2]), (normal[i, 0], normal[i, 1], normal[i, 2]),
                           rest, faces, cell_start, cell_triangle, origin, inv_cell, dims, prm.max_ray)


def rest_crossings(rest, normal, faces, params) -> np.ndarray:
    """``(V,)`` int64: for each vertex of the rest mesh ``rest (V, 3)`` [m], the shells its ray along its unit rest
    normal ``normal (V, 3)`` leaves within ``params.max_ray`` (``kernels/ray_cast.crossings``): 0 on skin that
    faces open air or passes through whole limbs, 1 or more under a layer modelled over it (a head's shell over the
    neck, eyes, clothes). Step 2 of the module docstring pushes a vertex only when its ray leaves more shells than
    this."""
    out = np.zeros(len(rest), dtype=np.int64)
    if len(faces):
        _rest_crossings(rest, normal, faces, params, out)
    return out


@njit(parallel=True, **JIT)
def _spread(push, inside, mesh, out):
    """One ring of step 3: a vertex not pushed itself takes half its ring's mean push."""
    for i in prange(push.shape[0]):
        if inside[i]:
            for c in range(3):
                out[i, c] = push[i, c]
            continue
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for k in range(mesh.ring_start[i], mesh.ring_start[i + 1]):
            j = mesh.ring_neighbour[k]
            w = mesh.ring_weight[k]
            s0 += w * push[j, 0]
            s1 += w * push[j, 1]
            s2 += w * push[j, 2]
        out[i, 0] = 0.5 * s0
        out[i, 1] = 0.5 * s1
        out[i, 2] = 0.5 * s2


@njit(**JIT)
def _normals(x, faces, normal):
    """``normal (V, 3)``: the area-weighted (unnormalised) vertex normals at ``x``."""
    normal[:] = 0.0
    for f in range(faces.shape[0]):
        a, b, c = faces[f, 0], faces[f, 1], faces[f, 2]
        e1x, e1y, e1z = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
        e2x, e2y, e2z = x[c, 0] - x[a, 0], x[c, 1] - x[a, 1], x[c, 2] - x[a, 2]
        nx, ny, nz = e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x
        for v in (a, b, c):
            normal[v, 0] += nx
            normal[v, 1] += ny
            normal[v, 2] += nz


@njit(**JIT)
def _folded(x, rot, mesh, normal, out):
    """``out (V,)`` bool: the free vertices whose area-weighted normal at ``x`` faces against ``R_i n_i``; returns
    how many. ``normal (V, 3)``: scratch, left holding the normals."""
    _normals(x, mesh.faces, normal)
    n0 = mesh.rest_normal
    count = 0
    for i in range(x.shape[0]):
        out[i] = False
        if not mesh.free[i]:
            continue
        dot = 0.0
        for r in range(3):
            dot += normal[i, r] * (rot[i, r, 0] * n0[i, 0] + rot[i, r, 1] * n0[i, 1] + rot[i, r, 2] * n0[i, 2])
        if dot < 0.0:
            out[i] = True
            count += 1
    return count


@njit(**JIT)
def _unfold(x, rot, mesh, params, normal, folded, grown, spare):
    """Step 4 of the module docstring; returns the number of folded vertices found."""
    V = x.shape[0]
    count = _folded(x, rot, mesh, normal, folded)
    if count == 0:
        return 0
    for _ in range(params.unfold_rings):
        grown[:] = folded
        for i in range(V):
            if not folded[i] and mesh.free[i]:
                for k in range(mesh.ring_start[i], mesh.ring_start[i + 1]):
                    if folded[mesh.ring_neighbour[k]]:
                        grown[i] = True
                        break
        folded[:] = grown
    for _ in range(params.unfold_sweeps):
        for i in range(V):
            if folded[i]:
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                for k in range(mesh.ring_start[i], mesh.ring_start[i + 1]):
                    j = mesh.ring_neighbour[k]
                    w = mesh.ring_weight[k]
                    s0 += w * x[j, 0]
                    s1 += w * x[j, 1]
                    s2 += w * x[j, 2]
                spare[i, 0] = s0
                spare[i, 1] = s1
                spare[i, 2] = s2
        for i in range(V):
            if folded[i]:
                for c in range(3):
                    x[i, c] = spare[i, c]
    return count


@njit(**JIT)
def _grow(mask, mesh, steps, grown):
    """``mask (V,)`` bool grown in place by ``steps`` rings (``grown``: scratch)."""
    V = mask.shape[0]
    for _ in range(steps):
        grown[:] = mask
        for i in range(V):
            if not mask[i]:
                for k in range(mesh.ring_start[i], mesh.ring_start[i + 1]):
                    if mask[mesh.ring_neighbour[k]]:
                        grown[i] = True
                        break
        mask[:] = grown


@njit(**JIT)
def _list(mask, work):
    """The indices of ``mask`` into ``work``; returns their count."""
    n = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            work[n] = i
            n += 1
    return n


@njit(**JIT)
def resolve_creases(x, rot, seeds, mesh, params, pushed):
    """The module docstring's rounds on ``x (V, 3)`` [m] in place: ``rot (V, 3, 3)`` the vertices' skinning
    rotations, ``seeds (V,)`` bool the vertices that may be inside (the first round's candidates are they and one
    ring around them; each later round's, the vertices found inside in the round before and ``spread + 1`` rings
    around them), ``mesh`` a :class:`CreaseMesh`, ``params`` a :class:`CreaseParams`; ``pushed (V,)`` bool
    is set for every vertex found inside. Returns the number of vertices found inside in the last round run (0: none
    is left)."""
    V = x.shape[0]
    candidates = seeds.copy()
    grown = np.zeros(V, dtype=np.bool_)
    _grow(candidates, mesh, 1, grown)
    work = np.empty(V, dtype=np.int64)
    n_work = _list(candidates, work)
    pushed[:] = False
    push = np.zeros((V, 3))
    spare = np.zeros((V, 3))
    inside = np.zeros(V, dtype=np.bool_)
    folded = np.zeros(V, dtype=np.bool_)
    normal = np.zeros((V, 3))
    found = 0
    for _ in range(params.rounds):
        if params.unfold_sweeps > 0:
            _unfold(x, rot, mesh, params, spare, folded, grown, push)
        grid = _grid(x, mesh.faces, params.cell, params.max_cells)
        _normals(x, mesh.faces, normal)
        push[:] = 0.0
        inside[:] = False
        _find(x, rot, mesh, params, work, n_work, grid, normal, push, inside)
        found = 0
        for w in range(n_work):
            if inside[work[w]]:
                found += 1
                pushed[work[w]] = True
        if found == 0:
            break
        for _s in range(params.spread):
            _spread(push, inside, mesh, spare)
            push, spare = spare, push
        for i in range(V):
            if mesh.free[i]:
                for c in range(3):
                    x[i, c] += push[i, c]
        # the next round looks again where this one pushed
        candidates[:] = inside
        _grow(candidates, mesh, params.spread + 1, grown)
        n_work = _list(candidates, work)
    return found
