"""Numba kernel: a muscle's change as a displacement of its skin part's field (issue 20 item 3).

The skin takes a muscle's change, not the muscle, as it takes a fat's (``kernels/fat.py``): the field ``F_p`` of
every part a muscle moves (``core/skin/field.py``: ``muscle_joins``) becomes ``F_p + sum_k s_k w_k lambda_k(f_k^0)
T_k(f_k^0 - f_k)``, clamped to [0, 1] with the fats' change (``kernels/skin_field._displaced``), where

* ``f_k^0`` is the muscle at bind (rest activation, settled rest axis) laid between this frame's ends
  (``core/skin/field.carried_muscles``), ``f_k`` the muscle as it is this frame (both the muscle's distance-like
  field ``f_M`` [m], ``kernels/fusiform``);
* ``w_k`` the fade towards its ends at a bent joint (:func:`end_weight`, 1 at the rest pose);
* ``lambda_k`` the weight of ``f_k^0`` (:func:`reach_weight`, the muscle's support ``R``): 1 up to
  ``MUSCLE_REACH_FULL R`` from the muscle's surface at bind, 0 from ``(MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R``;
* ``T_k`` the muscle's travel, a smooth saturation of the change at ``c = MUSCLE_TRAVEL R`` (:func:`travel`);
* ``s_k`` [1/m] the part's slope at its iso-surface over the muscle (measured at bind).

At rest (the bind pose, the bind-time muscles) ``f_k = f_k^0`` and the part's field is its own, exactly. The numpy
reference is ``core/skin/field.py``'s ``SkinPlacement.leaf_reference``.
"""
from __future__ import annotations

import math

from numba import njit

from .constants import JIT_FAST, JIT_POINT, SCALAR_LENGTH, SCALAR_REACH, SCALAR_SUPPORT
from .fusiform import _box_distance2, _field_arrays

MUSCLE_TRAVEL = 0.32
"""A muscle's change, inwards (a thinning) or outwards (a swelling), passes to the skin up to this many support
radii ``R`` (:func:`travel`)."""
TRAVEL_KNEE = 1.5
"""A change of this many travels ``c`` or more passes as ``c`` (:func:`travel`)."""
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
def end_weight(qx, qy, qz, points, a, b, rho, bend):
    """The weight of a muscle's change near its ends at a bent joint: ``(w, dw/dx, dw/dy, dw/dz)``, the product
    over the axis's first and last points ``points[a]``, ``points[b]`` [m] of ``1 - bend (1 - s)``, ``s = 3t^2 -
    2t^3`` at ``t = r / rho`` (``r`` the distance to the end, 1 from ``rho`` [m] on), ``bend`` in [0, 1] the
    joint's bend between the muscle's end bones (0 straight, 1 folded). At the rest pose the weight is 1."""
    w = 1.0
    wx = 0.0
    wy = 0.0
    wz = 0.0
    if bend <= 0.0:
        return w, wx, wy, wz
    for k in (a, b):
        ex = qx - points[k, 0]
        ey = qy - points[k, 1]
        ez = qz - points[k, 2]
        r = math.sqrt(ex * ex + ey * ey + ez * ez)
        if r >= rho:
            continue
        t = r / rho
        s = 1.0 - bend + bend * t * t * (3.0 - 2.0 * t)
        ds = bend * 6.0 * (1.0 - t) / (rho * rho)  # ds/dr / r
        wx = wx * s + w * ds * ex
        wy = wy * s + w * ds * ey
        wz = wz * s + w * ds * ez
        w *= s
    return w, wx, wy, wz


@njit(inline="always", **JIT_FAST)
def travel(D, c):
    """The change ``D`` [m] as the skin takes it, saturated at ``c`` [m]: ``(T, dT/dD)``, ``T = D - 4 D^3 / (27
    c^2)`` for ``|D| < TRAVEL_KNEE c`` (slope 1 at 0, 0 at the knee) and ``sign(D) c`` beyond, so ``T`` is C1 and
    odd and keeps at least 70 % of ``D`` up to ``1.42 c``."""
    a = abs(D)
    if a >= TRAVEL_KNEE * c:
        return math.copysign(c, D), 0.0
    r = D / c
    return D - (4.0 / 27.0) * D * r * r, 1.0 - (4.0 / 9.0) * r * r


@njit(**JIT_POINT)
def muscles_displacement(p, qx, qy, qz, part_muscle_start, part_muscle_index, muscle_slope,
                         c_start, c_points, c_cumulative, c_tangent, c_normal, c_seg_tangent, c_seg_length,
                         c_seg_angle, c_scale, c_scalar, c_exponent, c_bounds, c_along, c_bend,
                         axis_start, axis_points, axis_cumulative, axis_tangent, axis_normal, seg_tangent,
                         seg_length, seg_angle, axis_scale, muscle_scalar, muscle_exponent, muscle_bounds, axis_along):
    """How much part ``p``'s muscles' change adds to its field at one point: ``(d, dd/dx, dd/dy, dd/dz)`` (module
    docstring). ``c_*``: the bind-time muscles laid between this frame's ends (``MuscleArrays`` fields, ``c_along``
    their chord ranges, ``c_bend (M,)`` their joints' bends); the rest: this frame's muscles. ``muscle_slope[j]``
    [1/m] per CSR entry ``j``. The laid muscle is evaluated only where ``lambda > 0`` (within ``reach +
    (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R`` of its axis), the current one only where the change is not saturated
    (``f < f^0 + TRAVEL_KNEE c``; beyond, ``T = -c``). Takes arrays one by one (no struct copied per point)."""
    d = 0.0
    dx = 0.0
    dy = 0.0
    dz = 0.0
    for j in range(part_muscle_start[p], part_muscle_start[p + 1]):
        m = part_muscle_index[j]
        R = c_scalar[m, SCALAR_SUPPORT]
        fcut = (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) * R
        cut = c_scalar[m, SCALAR_REACH] + fcut
        if _box_distance2(qx, qy, qz, c_bounds, m) > cut * cut:
            continue
        f0, ax, ay, az = _field_arrays(qx, qy, qz, m, c_start, c_points, c_cumulative, c_tangent, c_normal,
                                       c_seg_tangent, c_seg_length, c_seg_angle, c_scale, c_scalar, c_exponent,
                                       True, cut, fcut, c_along)
        if not f0 < fcut:
            continue
        lam, dlam = reach_weight(f0, R)
        if lam <= 0.0:
            continue
        c = MUSCLE_TRAVEL * R
        fcut1 = f0 + TRAVEL_KNEE * c
        cut1 = muscle_scalar[m, SCALAR_REACH] + fcut1
        f1 = math.inf
        bx = 0.0
        by = 0.0
        bz = 0.0
        if cut1 > 0.0 and _box_distance2(qx, qy, qz, muscle_bounds, m) <= cut1 * cut1:
            f1, bx, by, bz = _field_arrays(qx, qy, qz, m, axis_start, axis_points, axis_cumulative, axis_tangent,
                                           axis_normal, seg_tangent, seg_length, seg_angle, axis_scale,
                                           muscle_scalar, muscle_exponent, True, cut1, fcut1, axis_along)
        w, wx, wy, wz = end_weight(qx, qy, qz, c_points, c_start[m], c_start[m + 1] - 1,
                                   MUSCLE_END_FADE * c_scalar[m, SCALAR_LENGTH], c_bend[m])
        if w <= 0.0:
            continue
        s = muscle_slope[j]
        if f1 - f0 >= TRAVEL_KNEE * c:  # saturated: the current muscle is that far under the point (or not near it)
            t, dt = -c, 0.0
            bx = 0.0
            by = 0.0
            bz = 0.0
        else:
            t, dt = travel(f0 - f1, c)
        d += s * w * lam * t
        dx += s * (w * (dlam * t * ax + lam * dt * (ax - bx)) + lam * t * wx)
        dy += s * (w * (dlam * t * ay + lam * dt * (ay - by)) + lam * t * wy)
        dz += s * (w * (dlam * t * az + lam * dt * (az - bz)) + lam * t * wz)
    return d, dx, dy, dz
