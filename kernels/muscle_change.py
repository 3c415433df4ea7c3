"""Numba kernel: a muscle's change as a displacement of its skin part's field
(docs/formulas.md#muscles-and-fats-in-the-skin-field, docs/design-notes.md#the-skin-follows-a-muscles-change).

The skin takes a muscle's change, not the muscle, as it takes a fat's (``kernels/fat.py``): the field ``F_p`` of
every part a muscle moves (``core/skin/field.py``: ``muscle_joins``) becomes ``F_p + sum_k s_k w_k lambda_k(f_k^0)
T_k(f_k^0 - f_k)``, clamped to [0, 1] with the fats' change (``kernels/skin_field._displaced``), where

* ``f_k^0`` is the muscle at bind (rest activation, settled rest axis) laid between this frame's ends
  (``core/skin/field.carried_muscles``), ``f_k`` the muscle as it is this frame (both the muscle's distance-like
  field ``f_M`` [m], ``kernels/fusiform.py``);
* ``w_k`` the fade towards its ends at a bent joint (:func:`end_weight`, 1 at the rest pose);
* ``lambda_k`` the weight of ``f_k^0`` (:func:`reach_weight`, the muscle's support ``R``): 1 up to
  ``MUSCLE_REACH_FULL R`` from the muscle's surface at bind, 0 from ``(MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R``;
* ``T_k`` the change as the skin takes it (:func:`travel`, ``c = MUSCLE_TRAVEL R``): a thinning saturates at ``c``, a
  swelling goes on at a smaller slope;
* ``s_k`` [1/m] the part's slope at its iso-surface over the muscle (measured at bind, one per part and muscle).

At rest (the bind pose, the bind-time muscles) ``f_k = f_k^0`` and the part's field is its own, exactly. The numpy
reference is ``core/skin/field.py``'s ``SkinPlacement.leaf_reference``.

Per point, the skin kernel (``kernels/skin_field._muscles_change``) takes each muscle once, whatever the number of
parts it moves: the muscles of the point's cell (:func:`muscle_cells`, a uniform grid over their reach built per
frame), the box and chord tests (:func:`may_change`), the laid field cut where ``lambda = 0`` (:func:`laid_cut`),
then :func:`muscle_change`, its ``w lambda T`` added to each part it moves with that part's ``s``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .constants import JIT, JIT_FAST, JIT_POINT, SCALAR_LENGTH, SCALAR_REACH, SCALAR_SUPPORT
from .axis import chord_distance
from .fusiform import _box_distance2, _field_arrays

MUSCLE_TRAVEL = 0.32
"""The travel ``c`` of a muscle's change, in support radii ``R``: a thinning passes to the skin up to ``c``, a
swelling fully up to about ``c`` and at ``SWELL_TAIL`` beyond (:func:`travel`)."""
TRAVEL_KNEE = 1.5
"""A thinning of this many travels ``c`` or more passes as ``c`` (:func:`travel`)."""
SWELL_TAIL = 0.5
"""A swelling beyond ``TRAVEL_KNEE c`` passes at this slope (:func:`travel`): the more a muscle bulges (pushed out
by a bone, paper Fig. 15), the more the skin over it does."""
MUSCLE_END_FADE = 0.4
"""At a bent joint, a muscle's change fades towards its ends over this share of its length (:func:`end_weight`)."""
MUSCLE_REACH_FULL = 0.5
"""A muscle's change moves its part's field fully up to this many support radii ``R`` from its surface at bind ..."""
MUSCLE_REACH_FALL = 1.0
"""... and not at all this many ``R`` further out (:func:`reach_weight`): the weight's slope times the travel,
``1.5 c / (MUSCLE_REACH_FALL R)`` at most, is 0.48 of the part's own slope here (a shrunk muscle does not turn the
part's gradient over)."""


@njit(inline="always", **JIT_FAST)
def reach_weight(f0, R):
    """The weight of a muscle's change where the muscle at bind (laid) reads ``f0`` [m], ``R`` its support [m]:
    ``(lambda, dlambda/df0)``, 1 up to ``MUSCLE_REACH_FULL R`` from its surface, falling smoothly (``1 - 3t^2 +
    2t^3``) to 0 over ``MUSCLE_REACH_FALL R`` more (``kernels/fat.reach_weight``'s form)."""
    w = MUSCLE_REACH_FALL * R
    t = (f0 - MUSCLE_REACH_FULL * R) / w
    if t <= 0.0:
        return 1.0, 0.0
    if t >= 1.0:
        return 0.0, 0.0
    return 1.0 - t * t * (3.0 - 2.0 * t), -6.0 * t * (1.0 - t) / w


@njit(inline="always", **JIT_FAST)
def _end_factor(qx, qy, qz, points, k, rho, bend):
    """One end's factor of :func:`end_weight`: ``(s, ds/dr / r, ex, ey, ez)``, ``e = q - points[k]``."""
    ex = qx - points[k, 0]
    ey = qy - points[k, 1]
    ez = qz - points[k, 2]
    r = math.sqrt(ex * ex + ey * ey + ez * ez)
    if r >= rho:
        return 1.0, 0.0, ex, ey, ez
    t = r / rho
    return 1.0 - bend + bend * t * t * (3.0 - 2.0 * t), bend * 6.0 * (1.0 - t) / (rho * rho), ex, ey, ez


@njit(inline="always", **JIT_FAST)
def end_weight(qx, qy, qz, points, a, b, rho, bend):
    """The weight of a muscle's change near its ends at a bent joint: ``(w, dw/dx, dw/dy, dw/dz)``, the product
    over the axis's first and last points ``points[a]``, ``points[b]`` [m] of ``1 - bend (1 - s)``, ``s = 3t^2 -
    2t^3`` at ``t = r / rho`` (``r`` the distance to the end, 1 from ``rho`` [m] on), ``bend`` in [0, 1] the
    joint's bend between the muscle's end bones (0 straight, 1 folded). At the rest pose the weight is 1."""
    if bend <= 0.0:
        return 1.0, 0.0, 0.0, 0.0
    s0, d0, ax, ay, az = _end_factor(qx, qy, qz, points, a, rho, bend)
    s1, d1, bx, by, bz = _end_factor(qx, qy, qz, points, b, rho, bend)
    return (s0 * s1, d0 * ax * s1 + s0 * d1 * bx, d0 * ay * s1 + s0 * d1 * by, d0 * az * s1 + s0 * d1 * bz)


@njit(inline="always", **JIT_FAST)
def travel(D, c):
    """The change ``D`` [m] as the skin takes it: ``(T, dT/dD)``, odd in form with a tail ``g`` per side, ``g = 0``
    for a thinning (``D < 0``) and ``SWELL_TAIL`` for a swelling: ``T = D - k D^3 / c^2``, ``k = (1 - g) / (3
    K^2)`` up to ``|D| = K c`` (``K = TRAVEL_KNEE``; slope 1 at 0, ``g`` at the knee), then ``sign(D) (K c (2 + g)
    / 3 + g (|D| - K c))``. So a thinning saturates at ``c`` [m] (``T = D - 4 D^3 / (27 c^2)``), a swelling goes
    on at slope ``g``: a larger bulge always shows larger. ``T`` is C1 and keeps at least 70 % of ``D`` up to
    ``1.42 c`` inwards and ``(1 - g) / (0.7 - g) c`` outwards (``2.5 c``)."""
    g = SWELL_TAIL if D >= 0.0 else 0.0
    a = abs(D)
    if a >= TRAVEL_KNEE * c:
        return math.copysign(c * (TRAVEL_KNEE * (2.0 + g) / 3.0) + g * (a - TRAVEL_KNEE * c), D), g
    k = (1.0 - g) / (3.0 * TRAVEL_KNEE * TRAVEL_KNEE)
    r = D / c
    return D - k * D * r * r, 1.0 - 3.0 * k * r * r


@njit(inline="always", **JIT_FAST)
def laid_cut(m, c_scalar):
    """``(cut, fcut)`` [m] of muscle ``m``'s laid field: its change is 0 where that field reads ``fcut =
    (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R`` or more, so farther than ``cut = reach + fcut`` from its axis."""
    fcut = (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) * c_scalar[m, SCALAR_SUPPORT]
    return c_scalar[m, SCALAR_REACH] + fcut, fcut


@njit(inline="always", **JIT_FAST)
def may_change(m, qx, qy, qz, c_start, c_points, c_scalar, c_bounds, c_dev):
    """Whether muscle ``m``'s change can reach ``q`` (:func:`muscle_change` is 0 where not): ``q`` within ``cut``
    (:func:`laid_cut`) of the laid muscle's box and of its chord, less the axis's largest distance from the chord
    ``c_dev[m]`` [m]. Inlined: the cheap tests come before any call."""
    cut, _ = laid_cut(m, c_scalar)
    if _box_distance2(qx, qy, qz, c_bounds, m) > cut * cut:
        return False
    return chord_distance(qx, qy, qz, c_points, c_start[m], c_start[m + 1] - 1) - c_dev[m] <= cut


CELLS_PER_AXIS = 32
"""The cells of :func:`muscle_cells` along the longest side of the muscles' reach."""


@njit(**JIT)
def muscle_cells(c_scalar, c_bounds):
    """Which muscles' change may reach each cell of a uniform grid over the laid muscles' reach (their boxes
    ``c_bounds (M, 6)`` [m] widened by :func:`laid_cut`): ``(origin (3,) [m], inv_h [1/m], dims (3,), start (C+1,),
    muscle (E,))``, CSR by cell ``(i * dims[1] + j) * dims[2] + k``, cubic cells of side ``1 / inv_h``, at most
    ``CELLS_PER_AXIS`` along the longest side. A point in a cell can only be reached by that cell's muscles."""
    M = c_scalar.shape[0]
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for m in range(M):
        cut, _ = laid_cut(m, c_scalar)
        for r in range(3):
            lo[r] = min(lo[r], c_bounds[m, r] - cut)
            hi[r] = max(hi[r], c_bounds[m, 3 + r] + cut)
    dims = np.ones(3, dtype=np.int64)
    if M == 0:
        return np.zeros(3), 1.0, dims, np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64)
    h = max(max(hi[0] - lo[0], hi[1] - lo[1]), hi[2] - lo[2]) / CELLS_PER_AXIS
    if not h > 0.0:
        h = 1.0
    for r in range(3):
        dims[r] = max(1, min(CELLS_PER_AXIS, int(math.ceil((hi[r] - lo[r]) / h))))
    inv_h = 1.0 / h
    count = np.zeros(dims[0] * dims[1] * dims[2] + 1, dtype=np.int64)
    out = np.empty(0, dtype=np.int64)
    for sweep in range(2):
        if sweep == 1:
            for c in range(1, count.shape[0]):
                count[c] += count[c - 1]
            out = np.empty(count[-1], dtype=np.int64)
        fill = count[:-1].copy()
        for m in range(M):
            cut, _ = laid_cut(m, c_scalar)
            a0 = _cell_index(c_bounds[m, 0] - cut, lo[0], inv_h, dims[0])
            a1 = _cell_index(c_bounds[m, 3] + cut, lo[0], inv_h, dims[0])
            b0 = _cell_index(c_bounds[m, 1] - cut, lo[1], inv_h, dims[1])
            b1 = _cell_index(c_bounds[m, 4] + cut, lo[1], inv_h, dims[1])
            e0 = _cell_index(c_bounds[m, 2] - cut, lo[2], inv_h, dims[2])
            e1 = _cell_index(c_bounds[m, 5] + cut, lo[2], inv_h, dims[2])
            for i in range(a0, a1 + 1):
                for j in range(b0, b1 + 1):
                    for k in range(e0, e1 + 1):
                        c = (i * dims[1] + j) * dims[2] + k
                        if sweep == 0:
                            count[c + 1] += 1
                        else:
                            out[fill[c]] = m
                            fill[c] += 1
    return lo, inv_h, dims, count, out


@njit(inline="always", **JIT_FAST)
def _cell_index(x, lo, inv_h, n):
    """The cell [0, n) of coordinate ``x`` [m] along one axis, clamped."""
    return min(max(int(math.floor((x - lo) * inv_h)), 0), n - 1)


@njit(inline="always", **JIT_FAST)
def cell_of(qx, qy, qz, origin, inv_h, dims):
    """The cell of :func:`muscle_cells` that holds ``q``, or -1 outside the grid."""
    i = int(math.floor((qx - origin[0]) * inv_h))
    j = int(math.floor((qy - origin[1]) * inv_h))
    k = int(math.floor((qz - origin[2]) * inv_h))
    if i < 0 or j < 0 or k < 0 or i >= dims[0] or j >= dims[1] or k >= dims[2]:
        return -1
    return (i * dims[1] + j) * dims[2] + k


@njit(**JIT_POINT)
def muscle_change(m, qx, qy, qz, f0, ax, ay, az, c_start, c_points, c_scalar, c_bend,
                  axis_start, axis_points, axis_cumulative, axis_tangent, axis_normal, seg_tangent, seg_length,
                  seg_angle, axis_scale, muscle_scalar, muscle_exponent, muscle_bounds, axis_along, axis_dev):
    """Muscle ``m``'s change at one point before its parts' slopes: ``(u, du/dx, du/dy, du/dz)``, ``u = w lambda(f^0)
    T(f^0 - f)`` [m] (module docstring); part ``p`` adds ``s_{p,m} u`` to its field. ``f0, ax, ay, az``: the laid
    muscle's field and gradient there (``kernels/fusiform._field_arrays`` cut at :func:`laid_cut`: callers skip the
    point where ``f0 >= fcut``); ``c_start, c_points, c_scalar, c_bend``: the laid muscles' (``MuscleArrays``
    fields, ``c_bend (M,)`` their joints' bends); the rest: this frame's muscles (``axis_along`` their chord ranges,
    ``axis_dev (M,)`` [m] their axes' largest distances from their chords). The current muscle's field is cut where
    the change is saturated (``f >= f^0 + TRAVEL_KNEE c``; there ``T = -c``). Takes arrays one by one (no struct
    copied per point)."""
    R = c_scalar[m, SCALAR_SUPPORT]
    lam, dlam = reach_weight(f0, R)
    if lam <= 0.0:
        return 0.0, 0.0, 0.0, 0.0
    w, wx, wy, wz = end_weight(qx, qy, qz, c_points, c_start[m], c_start[m + 1] - 1,
                               MUSCLE_END_FADE * c_scalar[m, SCALAR_LENGTH], c_bend[m])
    if w <= 0.0:
        return 0.0, 0.0, 0.0, 0.0
    c = MUSCLE_TRAVEL * R
    fcut1 = f0 + TRAVEL_KNEE * c
    cut1 = muscle_scalar[m, SCALAR_REACH] + fcut1
    f1 = math.inf
    bx = 0.0
    by = 0.0
    bz = 0.0
    if (cut1 > 0.0 and _box_distance2(qx, qy, qz, muscle_bounds, m) <= cut1 * cut1
            and chord_distance(qx, qy, qz, axis_points, axis_start[m], axis_start[m + 1] - 1) - axis_dev[m] <= cut1):
        f1, bx, by, bz = _field_arrays(qx, qy, qz, m, axis_start, axis_points, axis_cumulative, axis_tangent,
                                       axis_normal, seg_tangent, seg_length, seg_angle, axis_scale,
                                       muscle_scalar, muscle_exponent, True, cut1, fcut1, axis_along)
    if f1 - f0 >= TRAVEL_KNEE * c:  # saturated: the current muscle is that far under the point (or not near it)
        t, dt = -c, 0.0
        bx = 0.0
        by = 0.0
        bz = 0.0
    else:
        t, dt = travel(f0 - f1, c)
    return (w * lam * t,
            w * (dlam * t * ax + lam * dt * (ax - bx)) + lam * t * wx,
            w * (dlam * t * ay + lam * dt * (ay - by)) + lam * t * wy,
            w * (dlam * t * az + lam * dt * (az - bz)) + lam * t * wz)
