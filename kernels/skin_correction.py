"""Numba kernel: the tracked skin's correction limited by trust, capped by edge length, and smoothed
(``core/skin/trust.py`` has the method and the numpy reference).

:func:`limit_correction` takes the positions ``x (V, 3)`` [m] (tracked), the start ``d (V, 3)`` [m] (the
dual-quaternion positions) with its distances to a passed contact surface (the tracking's ``start_gap`` when the
tracking started at ``d``), a :class:`CorrectionMesh`, this frame's skin field (``SkinArrays``, ``MuscleArrays``)
and scratch arrays; it writes ``d + p + smooth(cap(trust * (x - d - p)))`` into ``x``, ``p`` the muscles' push
(below).

* The cap of a vertex whose DQS position has passed a contact surface (``kernels/tracking.beyond_contact``) grows
  by its first-order distance to that surface, ``|h| / |grad h|`` with ``h = f_own - f_other``, and the smoothing
  leaves it alone: it makes the crease.
* The cap of a vertex whose part its fats' change raises at its tracked position grows by how far they pushed it
  out, ``(f_part - f_grid) / |grad f_grid|``, and the smoothing leaves it alone: a fat's bulge is not a fitting
  error.
* A muscle's bulge is not a fitting error either: on a part that muscles move, how far their (and the fats')
  change pushed the vertex out at its tracked position (the same measure along the grid's outward normal,
  :func:`_change_push`) is taken out of the correction before the trust, the cap and the smoothing and added back
  after them. The change is as smooth as the muscles, so the bulge keeps its height and its roundness; holding
  the whole correction instead showed the active biceps' bulge with a crest
  (docs/design-notes.md#the-skin-follows-a-muscles-change).
* A vertex of trust 0 keeps a zero correction through the smoothing (it stays at ``d``: pinned vertices, open
  borders).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .constants import JIT_FAST, JIT_POINT
from .part_grid import sample_packed
from .fat import fats_displacement
from .skin_field import _displaced, evaluate_point
from .tracking import CHUNK, beyond_contact, contact_gap


PUSH_MIN = 1e-5
"""[m] A fat's push shorter than this leaves the vertex to the smoothing (the fats' reach fades to 0)."""


class CorrectionMesh(NamedTuple):
    """Bind data of the limited correction (``V`` vertices, ``P`` parts)."""

    trust: np.ndarray           # (V,) float64 in [0, 1]; 0 keeps the DQS position
    cap: np.ndarray             # (V,) float64 [m] longest correction away from a contact
    ring_start: np.ndarray      # (V+1,) int64 CSR one-rings ...
    ring_neighbour: np.ndarray  # (sum,) int64 ... neighbour indices
    own_leaf: np.ndarray        # (V,) int64 the composition tree's leaf node of each vertex's part
    leaf_nodes: np.ndarray      # (P,) int64 every part's leaf node
    cos_land: float             # two parts' gradients facing by more than acos(cos_land): a contact
    sweeps: int                 # smoothing sweeps


@njit(parallel=True, **JIT_FAST)
def _sweep(src, dst, hold, ring_start, ring_neighbour):
    for i in prange(src.shape[0]):
        a = ring_start[i]
        b = ring_start[i + 1]
        if b == a or hold[i]:
            for c in range(3):
                dst[i, c] = src[i, c]
            continue
        inv = 1.0 / (b - a)
        for c in range(3):
            s = 0.0
            for k in range(a, b):
                s += src[ring_neighbour[k], c]
            dst[i, c] = 0.5 * (src[i, c] + s * inv)


@njit(**JIT_POINT)
def _fat_push(i, x, mesh, field):
    """How far [m] the fats' change has pushed vertex ``i``'s skin part out at its tracked position ``x[i]``: the
    part's displaced value minus its grid value alone, over the grid value's gradient (0 if none). The muscles'
    change is smoothed like the rest (module docstring)."""
    p = field.node_part[mesh.own_leaf[i]]
    if field.part_fat_start[p] >= field.part_fat_start[p + 1]:
        return 0.0
    qx = x[i, 0]
    qy = x[i, 1]
    qz = x[i, 2]
    # the fats' change first: where none reaches (the usual case) the grid is not read
    d, dx, dy, dz = fats_displacement(p, qx, qy, qz, field.part_fat_start, field.part_fat_index, field.fat_center,
                                      field.fat_carried, field.fat_frame, field.fat_axes, field.fat_slope,
                                      field.fat_bounds)
    if d <= 0.0:
        return 0.0
    h, hx, hy, hz = sample_packed(field.grid_values, field.grid_offset, field.grid_dims, field.grid_origin,
                                  field.grid_inv_h, field.grid_binv, p, qx, qy, qz)
    f, _, _, _ = _displaced(h, hx, hy, hz, d, dx, dy, dz)
    g = math.sqrt(hx * hx + hy * hy + hz * hz)
    if f <= h or g < 1e-12:
        return 0.0
    return (f - h) / g


@njit(**JIT_POINT)
def _change_push(i, x, mesh, field, muscles, val, grad, nodes):
    """How far the muscles' and fats' change has pushed vertex ``i``'s skin part out at its tracked position
    ``x[i]``, as a vector [m]: the part's leaf (its grid displaced by that change,
    ``kernels/skin_field.evaluate_point``) minus its grid value alone, over the grid value's gradient, along the
    grid's outward normal ``-grad / |grad|``; 0 where the change lowers the part or the leaf's box leaves the point
    out. ``val, grad, nodes``: the task's scratch."""
    qx = x[i, 0]
    qy = x[i, 1]
    qz = x[i, 2]
    leaf = mesh.own_leaf[i]
    evaluate_point(qx, qy, qz, val, grad, nodes, field, muscles)
    if not nodes[leaf]:
        return 0.0, 0.0, 0.0
    h, hx, hy, hz = sample_packed(field.grid_values, field.grid_offset, field.grid_dims, field.grid_origin,
                                  field.grid_inv_h, field.grid_binv, field.node_part[leaf], qx, qy, qz)
    g = math.sqrt(hx * hx + hy * hy + hz * hz)
    f = val[leaf]
    if f <= h or g < 1e-12:
        return 0.0, 0.0, 0.0
    k = -(f - h) / (g * g)
    return k * hx, k * hy, k * hz


@njit(parallel=True, **JIT_FAST)
def limit_correction(x, start, start_gap, mesh, field, muscles, c0, c1, hold):
    """``x (V, 3)`` <- ``start + p + smooth(cap(trust * (x - start - p)))``, ``p`` the muscles' and fats' push of a
    vertex of a part muscles move (:func:`_change_push`; 0 elsewhere and at trust 0; module docstring); ``start_gap
    (V,)`` [m] each start's first-order distance to the contact surface it has passed
    (``kernels/tracking.contact_gap``), -1 if none, NaN where not known (then evaluated here); ``field``,
    ``muscles`` the frame's ``SkinArrays`` and ``MuscleArrays``; ``c0, c1 (V, 3)`` work arrays; ``hold (V,)`` bool
    out: the vertices the smoothing left alone (trust 0, at a contact, or pushed by a fat)."""
    trust = mesh.trust
    V = x.shape[0]
    T = field.node_kind.shape[0]
    moved = field.cell_muscle.shape[0] > 0
    for chunk in prange((V + CHUNK - 1) // CHUNK):
        val = np.empty(T)
        grad = np.empty((T, 3))
        nodes = np.empty(T, dtype=np.bool_)
        for i in range(chunk * CHUNK, min(V, (chunk + 1) * CHUNK)):
            t = trust[i]
            px = 0.0
            py = 0.0
            pz = 0.0
            if t > 0.0 and moved:
                p = field.node_part[mesh.own_leaf[i]]
                if field.part_muscle_start[p] < field.part_muscle_start[p + 1]:
                    px, py, pz = _change_push(i, x, mesh, field, muscles, val, grad, nodes)
            dx = t * (x[i, 0] - start[i, 0] - px)
            dy = t * (x[i, 1] - start[i, 1] - py)
            dz = t * (x[i, 2] - start[i, 2] - pz)
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            cap = mesh.cap[i]
            hold[i] = t <= 0.0
            if length > 0.0 and field.fat_part.shape[0] > 0:
                push = _fat_push(i, x, mesh, field)
                if push > PUSH_MIN:
                    cap += push
                    hold[i] = True
            if length > 0.0:
                gap = start_gap[i]
                if gap != gap:
                    evaluate_point(start[i, 0], start[i, 1], start[i, 2], val, grad, nodes, field, muscles)
                    o = mesh.own_leaf[i]
                    b = beyond_contact(o, mesh.leaf_nodes, mesh.cos_land, val, grad, nodes)
                    gap = contact_gap(o, b, val, grad) if b >= 0 else -1.0
                if gap >= 0.0:
                    cap += gap
                    hold[i] = True
            scale = 1.0
            if length > cap:
                scale = cap / length
            c0[i, 0] = dx * scale
            c0[i, 1] = dy * scale
            c0[i, 2] = dz * scale
            x[i, 0] = start[i, 0] + px  # x[i] is read no more: it keeps the start and the change's push
            x[i, 1] = start[i, 1] + py
            x[i, 2] = start[i, 2] + pz
    src, dst = c0, c1
    for _ in range(mesh.sweeps):
        _sweep(src, dst, hold, mesh.ring_start, mesh.ring_neighbour)
        src, dst = dst, src
    for i in range(V):
        for c in range(3):
            x[i, c] += src[i, c]
