"""Numba kernel: the composed skin field ``F`` (value and gradient) at many points (thesis Fig. 6.1, §3.1).

The composition tree is a binary tree stored in **pre-order** (a node's subtree is ``node .. node_end[node]-1``):

    node_kind (T,) int64     NODE_PART (a leaf: one bone's part), NODE_CONTACT, NODE_CLEAN, NODE_MAX
    node_left, node_right (T,) children of an operator node; node_part (T,) part index of a leaf
    node_end (T,)            end of the node's pre-order subtree
    node_bounds (T, 6) [m]   world box (min xyz, max xyz) outside which the node's field is exactly 0

Per point, a pre-order pass marks the nodes whose box holds the point (a pruned node skips its whole subtree), then
a reverse pre-order pass (children before parents) evaluates: a leaf reads its part grid (``kernels/part_grid.py``)
and, if the part has muscles, clean-unions their compact fields (``kernels/fusiform.py``) and joins them to the
part's field with the detail operator (``blend`` arc union); an operator node combines its children
(``kernels/blend.py``; the contact operator's ``alpha`` comes from the angle between the children's gradients).

``field`` is one tuple holding, in order: ``node_kind, node_left, node_right, node_part, node_end, node_bounds``,
the part grids ``grid_values, grid_offset, grid_dims, grid_origin, grid_inv_h, grid_binv``, the part muscles
``part_muscle_start, part_muscle_index``, the operator tables ``clean_table, blend_table``, the contact controller's
``cos0, cos1``, each muscle's largest axis deviation from its chord ``chord_dev (M,)`` [m] (a cheap lower bound on
the distance to the axis skips muscles out of reach), each muscle's skin offset ``skin_offset (M,)`` [m] (the skin
sees ``K((f_M + o) / R)``: ``core/skin/field.py``), then the muscle arrays of ``kernels/fusiform.py``
(``core/skin_field.SkinField.kernel_field``).
Other kernels (the skin tracking) call :func:`evaluate_point` with the same tuple.

Part grids are packed: ``grid_values`` flat float32 (sum of ``nx ny nz 4``), ``grid_offset (P+1,)``, ``grid_dims
(P, 3)``, ``grid_origin (P, 3)`` [m], ``grid_inv_h (P,)`` [1/m], ``grid_binv (P, 3, 4)`` world -> rest this frame.
Muscles of a part: CSR ``part_muscle_start (P+1,)``, ``part_muscle_index``; muscle arrays as in
``kernels/fusiform.py``. Outputs ``out_values (n,)``, ``out_grads (n, 3)`` [1/m].
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .axis import chord_distance
from .blend import contact, controller, max_union, table_union
from .fusiform import MuscleArrays, _box_distance2, _compact, _field_one
from .part_grid import sample_part_world
from .constants import JIT_FAST, NODE_CLEAN, NODE_CONTACT, NODE_MAX, NODE_PART, SCALAR_REACH, SCALAR_SUPPORT


CHUNK = 64
"""Points per parallel task (each task allocates its per-node scratch once)."""


@njit(**JIT_FAST)
def _part_value(p, qx, qy, qz, grid_values, grid_offset, grid_dims, grid_origin, grid_inv_h, grid_binv,
                part_muscle_start, part_muscle_index, clean_table, blend_table, chord_dev, skin_offset,
                axis_start, axis_points, axis_cumulative, axis_tangent, axis_normal, seg_tangent, seg_length,
                seg_angle, muscle_scalar, muscle_exponent, muscle_bounds):
    vals = grid_values[grid_offset[p]:grid_offset[p + 1]].reshape(
        (grid_dims[p, 0], grid_dims[p, 1], grid_dims[p, 2], 4))
    h, hx, hy, hz = sample_part_world(vals, grid_origin[p], grid_inv_h[p], grid_binv[p], qx, qy, qz)
    mu = 0.0
    mx = 0.0
    my = 0.0
    mz = 0.0
    for k in range(part_muscle_start[p], part_muscle_start[p + 1]):
        m = part_muscle_index[k]
        R = muscle_scalar[m, SCALAR_SUPPORT]
        cut = muscle_scalar[m, SCALAR_REACH] + R
        if _box_distance2(qx, qy, qz, muscle_bounds[m]) > cut * cut:
            continue
        # lower bound of the distance to the axis: distance to its chord minus the axis's largest deviation
        if chord_distance(qx, qy, qz, axis_points, axis_start[m], axis_start[m + 1] - 1) - chord_dev[m] > cut:
            continue
        f, gx, gy, gz = _field_one(qx, qy, qz, m, MuscleArrays(axis_start, axis_points, axis_cumulative,
                                                               axis_tangent, axis_normal, seg_tangent, seg_length,
                                                               seg_angle, muscle_scalar, muscle_exponent,
                                                               muscle_bounds), True, cut)
        f, gx, gy, gz = _compact(f + skin_offset[m], gx, gy, gz, R)
        if f <= 0.0:
            continue
        G, G1, G2 = table_union(clean_table, mu, f)
        mx = G1 * mx + G2 * gx
        my = G1 * my + G2 * gy
        mz = G1 * mz + G2 * gz
        mu = G
    if mu <= 0.0:
        return h, hx, hy, hz
    G, G1, G2 = table_union(blend_table, h, mu)
    return G, G1 * hx + G2 * mx, G1 * hy + G2 * my, G1 * hz + G2 * mz


@njit(**JIT_FAST)
def evaluate_point(qx, qy, qz, val, grad, active, field):
    """Composed field at one point: ``(F, dF/dx, dF/dy, dF/dz)``. ``val (T,)``, ``grad (T, 3)``, ``active (T,)``
    are per-task scratch; ``field`` is the tuple of :func:`field_arrays` (module docstring)."""
    (node_kind, node_left, node_right, node_part, node_end, node_bounds, grid_values, grid_offset, grid_dims,
     grid_origin, grid_inv_h, grid_binv, part_muscle_start, part_muscle_index, clean_table, blend_table, cos0, cos1,
     chord_dev, skin_offset, axis_start, axis_points, axis_cumulative, axis_tangent, axis_normal, seg_tangent,
     seg_length, seg_angle, muscle_scalar, muscle_exponent, muscle_bounds) = field
    T = node_kind.shape[0]
    i = 0
    while i < T:
        b = node_bounds[i]
        if b[0] <= qx <= b[3] and b[1] <= qy <= b[4] and b[2] <= qz <= b[5]:
            active[i] = True
            i += 1
        else:
            for k in range(i, node_end[i]):
                active[k] = False
            i = node_end[i]
    for i in range(T - 1, -1, -1):
        if not active[i]:
            val[i] = 0.0
            grad[i, 0] = 0.0
            grad[i, 1] = 0.0
            grad[i, 2] = 0.0
            continue
        kind = node_kind[i]
        if kind == NODE_PART:
            f, gx, gy, gz = _part_value(node_part[i], qx, qy, qz, grid_values, grid_offset, grid_dims,
                                        grid_origin, grid_inv_h, grid_binv, part_muscle_start,
                                        part_muscle_index, clean_table, blend_table, chord_dev, skin_offset,
                                        axis_start, axis_points, axis_cumulative, axis_tangent, axis_normal,
                                        seg_tangent, seg_length, seg_angle, muscle_scalar,
                                        muscle_exponent, muscle_bounds)
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
                    alpha = controller(cos_t, cos0, cos1)
                f, G1, G2 = contact(clean_table, f1, f2, alpha)
            elif kind == NODE_CLEAN:
                f, G1, G2 = table_union(clean_table, f1, f2)
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


@njit(parallel=True, **JIT_FAST)
def skin_field(points, field, out_values, out_grads):
    """Composed skin field at ``points (n, 3)`` [m]; ``field``: the tuple of arrays (module docstring)."""
    n = points.shape[0]
    T = field[0].shape[0]
    n_chunks = (n + CHUNK - 1) // CHUNK
    for chunk in prange(n_chunks):
        val = np.empty(T)
        grad = np.empty((T, 3))
        active = np.empty(T, dtype=np.bool_)
        for q in range(chunk * CHUNK, min(n, (chunk + 1) * CHUNK)):
            f, gx, gy, gz = evaluate_point(points[q, 0], points[q, 1], points[q, 2], val, grad, active, field)
            out_values[q] = f
            out_grads[q, 0] = gx
            out_grads[q, 1] = gy
            out_grads[q, 2] = gz
