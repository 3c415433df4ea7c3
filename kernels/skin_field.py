"""Numba kernel: the composed skin field ``F`` (value and gradient) at many points (thesis Fig. 6.1, §3.1).

The composition tree is a binary tree stored in **pre-order** (a node's subtree is ``node .. node_end[node]-1``).
Per point, a pre-order pass marks the nodes whose box holds the point (a pruned node skips its whole subtree), the
muscles' change is summed into the active leaves (each muscle once, :func:`_muscles_change`), then a reverse
pre-order pass (children before parents) evaluates: a leaf reads its part grid (``kernels/part_grid.py``) and adds
the change of the muscles and fats that move the part as a displacement (``kernels/muscle_change.py``,
``kernels/fat.py``), clamped to [0, 1]; an operator node combines its children (``kernels/blend.py``; the contact
operator's ``alpha`` comes from the angle between the children's gradients).

The field comes as two structs built by ``core/skin/field.py``: :class:`SkinArrays` (the bind data, and this frame's
placement, with the bind-time muscles laid between this frame's ends) and this frame's muscles, a
``kernels.fusiform.MuscleArrays`` (kept apart: numba's parallel loops take flat tuples only). Other kernels (the
skin tracking) call :func:`evaluate_point` with both. Outputs ``out_values (n,)``, ``out_grads (n, 3)`` [1/m].
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .fat import fats_displacement
from .blend import contact, controller, max_union, table_union
from .fusiform import _field_arrays, axis_along
from .axis import chord_deviation
from .muscle_change import MUSCLE_REACH_FALL, MUSCLE_REACH_FULL, cell_of, laid_cut, may_change, muscle_change
from .part_grid import sample_packed
from .constants import JIT, JIT_FAST, JIT_POINT, NODE_CLEAN, NODE_CONTACT, NODE_PART, SCALAR_REACH, SCALAR_SUPPORT


CHUNK = 64
"""Points per parallel task (each task allocates its per-node scratch once)."""


class SkinArrays(NamedTuple):
    """The composed skin field (``T`` tree nodes, ``P`` parts, ``M`` muscles). Bind data, then this frame's
    placement (``grid_binv``, ``node_bounds``, ``axis_along`` and the ``carried_*`` muscles)."""

    node_kind: np.ndarray          # (T,) int64 NODE_PART (a leaf: one bone's part), NODE_CONTACT, NODE_CLEAN, NODE_MAX
    node_left: np.ndarray          # (T,) int64 left child of an operator node (-1 for a leaf)
    node_right: np.ndarray         # (T,) int64 right child of an operator node (-1 for a leaf)
    node_part: np.ndarray          # (T,) int64 part index of a leaf (-1 for an operator)
    node_end: np.ndarray           # (T,) int64 end of the node's pre-order subtree
    grid_values: np.ndarray        # (sum nx ny nz 4,) float32 packed part grids (value, gradient) in rest space
    grid_offset: np.ndarray        # (P+1,) int64 start of each part's grid in grid_values
    grid_dims: np.ndarray          # (P, 3) int64 grid nodes per axis
    grid_origin: np.ndarray        # (P, 3) float64 [m] rest-space origin of each grid
    grid_inv_h: np.ndarray         # (P,) float64 [1/m] inverse node spacing
    part_muscle_start: np.ndarray  # (P+1,) int64 CSR: the muscles whose change moves each part ...
    part_muscle_index: np.ndarray  # (E_M,) int64 ... as muscle indices
    muscle_leaf_start: np.ndarray  # (M+1,) int64 CSR: the same by muscle: the leaf nodes each muscle moves ...
    muscle_leaf: np.ndarray        # (E_M,) int64 ... as node indices
    muscle_leaf_slope: np.ndarray  # (E_M,) float64 [1/m] the part's slope at its iso-surface over the muscle
    cell_origin: np.ndarray        # (3,) float64 [m] this frame: the muscles' cells (muscle_change.muscle_cells) ...
    cell_inv_h: float              # [1/m] ... their inverse side
    cell_dims: np.ndarray          # (3,) int64 ... cells per axis
    cell_start: np.ndarray         # (C+1,) int64 ... CSR: the muscles whose change may reach each cell ...
    cell_muscle: np.ndarray        # (E_C,) int64 ... as muscle indices
    clean_table: np.ndarray        # clean union's table (kernels/blend.py)
    blend_table: np.ndarray        # detail (blend) operator's table
    cos0: float                    # contact controller: cos theta0
    cos1: float                    # contact controller: cos theta1
    grid_binv: np.ndarray          # (P, 3, 4) float64 this frame: world -> rest rigid transform of each part
    node_bounds: np.ndarray        # (T, 6) float64 [m] this frame: world box (min xyz, max xyz), field 0 outside
    axis_along: np.ndarray         # (P_axis, 4) float64 [m] this frame: each axis's chord ranges (fusiform.axis_along)
    part_fat_start: np.ndarray     # (P+1,) int64 CSR: the fats (core/fat) that move each part ...
    part_fat_index: np.ndarray     # (E,) int64 ... as fat indices
    fat_part: np.ndarray           # (F,) int64 the part of each fat's bone, -1: none
    fat_slope: np.ndarray          # (E,) float64 [1/m] the part's slope at its iso-surface over the fat
    fat_axes: np.ndarray           # (F, 3) float64 [m] semi-axes
    fat_center: np.ndarray         # (F, 3) float64 [m] this frame: the fats' centres
    fat_frame: np.ndarray          # (F, 3, 3) float64 this frame: their semi-axes' directions (columns)
    fat_bounds: np.ndarray         # (F, 6) float64 [m] this frame: beyond this box a fat's change moves nothing
    fat_carried: np.ndarray        # (F, 3) float64 [m] this frame: where each fat's bone carries its centre
    carried_start: np.ndarray      # (M+1,) int64 the bind-time muscles laid between this frame's ends ...
    carried_scale: np.ndarray      # (P_axis,) float64 ... their cross-section scales, as at bind
    carried_scalar: np.ndarray     # (M, SCALAR_COUNT) float64 their shapes and widths as at bind, this frame's length
    carried_exponent: np.ndarray   # (M, 4) int64
    carried_cumulative: np.ndarray  # (P_axis,) float64 [m] this frame: their arc lengths
    carried_seg_length: np.ndarray  # (P_axis,) float64 [m] this frame
    carried_seg_angle: np.ndarray  # (P_axis,) float64 [rad] this frame
    carried_points: np.ndarray     # (P_axis, 3) float64 [m] this frame (core/skin/field.carried_muscles)
    carried_tangent: np.ndarray    # (P_axis, 3) float64 this frame
    carried_normal: np.ndarray     # (P_axis, 3) float64 this frame
    carried_seg_tangent: np.ndarray  # (P_axis, 3) float64 this frame
    carried_bounds: np.ndarray     # (M, 6) float64 [m] this frame: their axes' boxes
    carried_along: np.ndarray      # (P_axis, 4) float64 [m] this frame: their chord ranges (fusiform.axis_along)
    carried_bend: np.ndarray       # (M,) float64 this frame: the bend in [0, 1] between each muscle's end bones
    carried_dev: np.ndarray        # (M,) float64 [m] this frame: each carried axis's largest distance from its chord
    chord_dev: np.ndarray          # (M,) float64 [m] this frame: each muscle axis's largest distance from its chord


@njit(inline="always", **JIT_FAST)
def _displaced(f, gx, gy, gz, d, dx, dy, dz):
    """A part's field ``f`` displaced by its fats' ``d`` (``kernels/fat.fats_displacement``), clamped to [0, 1]
    (no gradient where clamped)."""
    if d == 0.0:
        return f, gx, gy, gz
    f += d
    if f <= 0.0:
        return 0.0, 0.0, 0.0, 0.0
    if f >= 1.0:
        return 1.0, 0.0, 0.0, 0.0
    return f, gx + dx, gy + dy, gz + dz


@njit(inline="always", **JIT_FAST)
def _muscles_change(qx, qy, qz, val, grad, active, skin, muscles):
    """Add each muscle's change ``s_{p,m} u_m`` (``kernels/muscle_change.muscle_change``) at one point into
    ``val, grad`` of the leaves it moves (zeroed by the marking pass; a leaf's box holds the reach of the muscles
    that move it, so they are active wherever the change can be nonzero). The muscles tried are those of the
    point's cell (``kernels/muscle_change.muscle_cells``), each once."""
    cell = cell_of(qx, qy, qz, skin.cell_origin, skin.cell_inv_h, skin.cell_dims)
    if cell < 0:
        return
    for e in range(skin.cell_start[cell], skin.cell_start[cell + 1]):
        m = skin.cell_muscle[e]
        if skin.muscle_leaf_start[m] == skin.muscle_leaf_start[m + 1]:  # it moves no part
            continue
        if not may_change(m, qx, qy, qz, skin.carried_start, skin.carried_points, skin.carried_scalar,
                          skin.carried_bounds, skin.carried_dev):
            continue
        cut, fcut = laid_cut(m, skin.carried_scalar)
        f0, ax, ay, az = _field_arrays(qx, qy, qz, m, skin.carried_start, skin.carried_points,
                                       skin.carried_cumulative, skin.carried_tangent, skin.carried_normal,
                                       skin.carried_seg_tangent, skin.carried_seg_length, skin.carried_seg_angle,
                                       skin.carried_scale, skin.carried_scalar, skin.carried_exponent, True, cut,
                                       fcut, skin.carried_along)
        if not f0 < fcut:
            continue
        u, ux, uy, uz = muscle_change(
            m, qx, qy, qz, f0, ax, ay, az, skin.carried_start, skin.carried_points, skin.carried_scalar,
            skin.carried_bend, muscles.axis_start, muscles.axis_points, muscles.axis_cumulative,
            muscles.axis_tangent, muscles.axis_normal, muscles.seg_tangent, muscles.seg_length,
            muscles.seg_angle, muscles.axis_scale, muscles.muscle_scalar, muscles.muscle_exponent,
            muscles.muscle_bounds, skin.axis_along, skin.chord_dev)
        if u == 0.0 and ux == 0.0 and uy == 0.0 and uz == 0.0:
            continue
        for j in range(skin.muscle_leaf_start[m], skin.muscle_leaf_start[m + 1]):
            leaf = skin.muscle_leaf[j]
            if active[leaf]:
                s = skin.muscle_leaf_slope[j]
                val[leaf] += s * u
                grad[leaf, 0] += s * ux
                grad[leaf, 1] += s * uy
                grad[leaf, 2] += s * uz


@njit(**JIT_POINT)
def evaluate_point(qx, qy, qz, val, grad, active, skin, muscles):
    """Composed field at one point: ``(F, dF/dx, dF/dy, dF/dz)``. ``val (T,)``, ``grad (T, 3)``, ``active (T,)``
    are per-task scratch (each node's value, gradient and whether its box holds the point); a node's ``val`` and
    ``grad`` are this point's only where ``active`` is True (elsewhere the field of that node is 0). ``skin``: the
    :class:`SkinArrays`; ``muscles``: this frame's ``MuscleArrays``."""
    node_kind = skin.node_kind
    node_left = skin.node_left
    node_right = skin.node_right
    node_end = skin.node_end
    node_bounds = skin.node_bounds
    T = node_kind.shape[0]
    i = 0
    while i < T:
        if (node_bounds[i, 0] <= qx <= node_bounds[i, 3] and node_bounds[i, 1] <= qy <= node_bounds[i, 4]
                and node_bounds[i, 2] <= qz <= node_bounds[i, 5]):
            active[i] = True
            if node_kind[i] == NODE_PART:  # a leaf's muscles' change is summed into its val, grad first
                val[i] = 0.0
                grad[i, 0] = 0.0
                grad[i, 1] = 0.0
                grad[i, 2] = 0.0
            i += 1
        else:
            # a pruned subtree: its root reads 0 for its parent; the nodes below it are only marked inactive
            val[i] = 0.0
            grad[i, 0] = 0.0
            grad[i, 1] = 0.0
            grad[i, 2] = 0.0
            for k in range(i, node_end[i]):
                active[k] = False
            i = node_end[i]
    if skin.cell_muscle.shape[0] > 0:
        _muscles_change(qx, qy, qz, val, grad, active, skin, muscles)
    for i in range(T - 1, -1, -1):
        if not active[i]:
            continue
        kind = node_kind[i]
        if kind == NODE_PART:
            # a leaf: the part's grid, displaced by its muscles' and fats' change; written out here, so that no
            # struct is copied per leaf (docs/design-notes.md#per-point-functions-count-no-references)
            p = skin.node_part[i]
            f, gx, gy, gz = sample_packed(skin.grid_values, skin.grid_offset, skin.grid_dims, skin.grid_origin,
                                          skin.grid_inv_h, skin.grid_binv, p, qx, qy, qz)
            # the muscles' change, summed by _muscles_change
            d = val[i]
            dx = grad[i, 0]
            dy = grad[i, 1]
            dz = grad[i, 2]
            if skin.part_fat_start[p] < skin.part_fat_start[p + 1]:
                e, ex, ey, ez = fats_displacement(p, qx, qy, qz, skin.part_fat_start, skin.part_fat_index,
                                                  skin.fat_center, skin.fat_carried, skin.fat_frame, skin.fat_axes,
                                                  skin.fat_slope, skin.fat_bounds)
                d += e
                dx += ex
                dy += ey
                dz += ez
            f, gx, gy, gz = _displaced(f, gx, gy, gz, d, dx, dy, dz)
        else:
            a = node_left[i]
            c = node_right[i]
            f1 = val[a]
            f2 = val[c]
            if f2 <= 0.0:
                f, G1, G2 = f1, 1.0, 0.0
            elif f1 <= 0.0:
                f, G1, G2 = f2, 0.0, 1.0
            elif kind == NODE_CONTACT:
                n1 = math.sqrt(grad[a, 0] ** 2 + grad[a, 1] ** 2 + grad[a, 2] ** 2)
                n2 = math.sqrt(grad[c, 0] ** 2 + grad[c, 1] ** 2 + grad[c, 2] ** 2)
                alpha = 0.0
                if n1 > 1e-12 and n2 > 1e-12:
                    cos_t = (grad[a, 0] * grad[c, 0] + grad[a, 1] * grad[c, 1]
                             + grad[a, 2] * grad[c, 2]) / (n1 * n2)
                    alpha = controller(cos_t, skin.cos0, skin.cos1)
                f, G1, G2 = contact(skin.clean_table, f1, f2, alpha)
            elif kind == NODE_CLEAN:
                f, G1, G2 = table_union(skin.clean_table, f1, f2)
            else:
                f, G1, G2 = max_union(f1, f2)
            gx = G1 * grad[a, 0] + G2 * grad[c, 0]
            gy = G1 * grad[a, 1] + G2 * grad[c, 1]
            gz = G1 * grad[a, 2] + G2 * grad[c, 2]
        val[i] = f
        grad[i, 0] = gx
        grad[i, 1] = gy
        grad[i, 2] = gz
    return val[0], grad[0, 0], grad[0, 1], grad[0, 2]


@njit(**JIT)
def place_nodes(B, part_bone, grid_corners, skin, muscles):
    """This frame's placement, written into ``skin`` (a :class:`SkinArrays` whose ``grid_binv``, ``node_bounds``,
    ``axis_along``, ``carried_along``, ``chord_dev`` and ``carried_dev`` are to be filled): each part grid's world
    -> rest transform ``[R^T | -R^T t]`` from its bone's rigid ``B (B, 4, 4)`` (``part_bone (P,)``), each leaf's
    box from its grid box's 8 rest corners ``grid_corners (P, 8, 3)`` [m] moved by that bone and widened by the
    carried boxes of the muscles that move it by ``reach + (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R``, beyond which
    a muscle's change moves nothing (``kernels/muscle_change.py``), and by the ``fat_bounds`` of the fats that move
    it, the operators' boxes from their children's, and the chord ranges (``kernels/fusiform.axis_along``) and chord
    deviations of this frame's muscle axes (``muscles``, a ``MuscleArrays``) and of the carried ones. The numpy
    reference is ``core/skin/field.place_reference``."""
    binv = skin.grid_binv
    P = part_bone.shape[0]
    leaf = np.empty((P, 6))
    for p in range(P):
        b = part_bone[p]
        for r in range(3):
            for c in range(3):
                binv[p, r, c] = B[b, c, r]
            binv[p, r, 3] = -(B[b, 0, r] * B[b, 0, 3] + B[b, 1, r] * B[b, 1, 3] + B[b, 2, r] * B[b, 2, 3])
            leaf[p, r] = np.inf
            leaf[p, 3 + r] = -np.inf
        for k in range(8):
            for r in range(3):
                w = (B[b, r, 0] * grid_corners[p, k, 0] + B[b, r, 1] * grid_corners[p, k, 1]
                     + B[b, r, 2] * grid_corners[p, k, 2] + B[b, r, 3])
                leaf[p, r] = min(leaf[p, r], w)
                leaf[p, 3 + r] = max(leaf[p, 3 + r], w)
    start = muscles.axis_start
    for m in range(muscles.muscle_scalar.shape[0]):
        axis_along(muscles.axis_points, start[m], start[m + 1], skin.axis_along)
        skin.chord_dev[m] = chord_deviation(muscles.axis_points, start[m], start[m + 1] - 1)
    start = skin.carried_start
    for m in range(skin.carried_scalar.shape[0]):
        axis_along(skin.carried_points, start[m], start[m + 1], skin.carried_along)
        skin.carried_dev[m] = chord_deviation(skin.carried_points, start[m], start[m + 1] - 1)
    scal = skin.carried_scalar
    boxes = skin.carried_bounds
    for p in range(P):  # a leaf's box holds the reach of the muscles that move it
        for j in range(skin.part_muscle_start[p], skin.part_muscle_start[p + 1]):
            m = skin.part_muscle_index[j]
            cut = scal[m, SCALAR_REACH] + (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) * scal[m, SCALAR_SUPPORT]
            for r in range(3):
                leaf[p, r] = min(leaf[p, r], boxes[m, r] - cut)
                leaf[p, 3 + r] = max(leaf[p, 3 + r], boxes[m, 3 + r] + cut)
    for p in range(P):  # a leaf's box holds the boxes of the fats that move it
        for j in range(skin.part_fat_start[p], skin.part_fat_start[p + 1]):
            k = skin.part_fat_index[j]
            for r in range(3):
                leaf[p, r] = min(leaf[p, r], skin.fat_bounds[k, r])
                leaf[p, 3 + r] = max(leaf[p, 3 + r], skin.fat_bounds[k, 3 + r])
    node_boxes(leaf, skin.node_kind, skin.node_part, skin.node_left, skin.node_right, skin.node_bounds)


@njit(**JIT)
def node_boxes(leaf_boxes, node_kind, node_part, node_left, node_right, out):
    """Each node's world box ``out (T, 6)`` [m] (min xyz, max xyz): a leaf's is its part's ``leaf_boxes (P, 6)``,
    an operator's holds its children's."""
    for i in range(node_kind.shape[0] - 1, -1, -1):
        if node_kind[i] == NODE_PART:
            for c in range(6):
                out[i, c] = leaf_boxes[node_part[i], c]
        else:
            a = node_left[i]
            b = node_right[i]
            for c in range(3):
                out[i, c] = min(out[a, c], out[b, c])
                out[i, 3 + c] = max(out[a, 3 + c], out[b, 3 + c])


@njit(parallel=True, **JIT_FAST)
def skin_field(points, skin, muscles, out_values, out_grads):
    """Composed skin field at ``points (n, 3)`` [m]; ``skin``: the :class:`SkinArrays`, ``muscles`` this frame's
    ``MuscleArrays``."""
    n = points.shape[0]
    T = skin.node_kind.shape[0]
    n_chunks = (n + CHUNK - 1) // CHUNK
    for chunk in prange(n_chunks):
        val = np.empty(T)
        grad = np.empty((T, 3))
        active = np.empty(T, dtype=np.bool_)
        for q in range(chunk * CHUNK, min(n, (chunk + 1) * CHUNK)):
            f, gx, gy, gz = evaluate_point(points[q, 0], points[q, 1], points[q, 2], val, grad, active, skin, muscles)
            out_values[q] = f
            out_grads[q, 0] = gx
            out_grads[q, 1] = gy
            out_grads[q, 2] = gz
