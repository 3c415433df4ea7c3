"""Numba kernel: a muscle's change as a displacement of its skin part's field (issue 20 item 3).

The skin takes a muscle's change, not the muscle, as it takes a fat's (``kernels/fat.py``): the field ``F_p`` of
every part a muscle moves (``core/skin/field.py``: ``muscle_joins``) becomes ``F_p + sum_k s_k lambda_k(f_k^0)
T_k(f_k^0 - f_k)``, clamped to [0, 1] with the fats' change (``kernels/skin_field._displaced``), where

* ``f_k^0`` is the muscle at bind (rest activation, settled rest axis) carried rigidly by its own skin part's bone,
  ``f_k`` the muscle as it is this frame (both the muscle's distance-like field ``f_M`` [m], ``kernels/fusiform``);
* ``lambda_k`` the weight of ``f_k^0`` (:func:`reach_weight`, the muscle's support ``R``): 1 up to
  ``MUSCLE_REACH_FULL R`` from the muscle's surface at bind, 0 from ``(MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R``;
* ``T_k`` the muscle's travel, a smooth saturation of the change at ``c = MUSCLE_TRAVEL R`` inwards and
  ``MUSCLE_TRAVEL_OUT R`` outwards (:func:`travel`);
* ``s_k`` [1/m] the part's slope at its iso-surface over the muscle (measured at bind).

At rest (the bind pose, the bind-time muscles) ``f_k = f_k^0`` and the part's field is its own, exactly. The numpy
reference is ``core/skin/field.py``'s ``SkinPlacement.leaf_reference``.
"""
from __future__ import annotations

import math

from numba import njit

from .constants import JIT_FAST, JIT_POINT, SCALAR_REACH, SCALAR_SUPPORT
from .fusiform import _box_distance2, _field_arrays

MUSCLE_TRAVEL = 0.25
"""A muscle's change inwards (a thinning) passes to the skin up to this many support radii ``R`` (:func:`travel`) ...
"""
MUSCLE_TRAVEL_OUT = 0.3
"""... and outwards (a swelling) up to this many."""
MUSCLE_REACH_FULL = 0.5
"""A muscle's change moves its part's field fully up to this many support radii ``R`` from its surface at bind ..."""
MUSCLE_REACH_FALL = 3.0
"""... and not at all this many ``R`` further out (:func:`reach_weight`): the weight's slope times the travel,
``1.5 c / (MUSCLE_REACH_FALL R)`` at most, stays well under the part's own slope (a shrunk muscle does not turn the
part's gradient over)."""


@njit(inline="always", **JIT_FAST)
def reach_weight(f0, R):
    """The weight of a muscle's change where the muscle at bind (carried) reads ``f0`` [m], ``R`` its support [m]:
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
def travel(D, c):
    """The change ``D`` [m] as the skin takes it, saturated at ``c`` [m]: ``(T, dT/dD)``, ``T = D - D |D| / (4 c)``
    for ``|D| < 2 c`` (slope 1 at 0, falling linearly to 0) and ``sign(D) c`` beyond, so ``T`` is C1 and odd."""
    a = abs(D)
    if a >= 2.0 * c:
        return math.copysign(c, D), 0.0
    return D - D * a / (4.0 * c), 1.0 - a / (2.0 * c)


@njit(**JIT_POINT)
def muscles_displacement(p, qx, qy, qz, part_muscle_start, part_muscle_index, muscle_slope,
                         c_start, c_points, c_cumulative, c_tangent, c_normal, c_seg_tangent, c_seg_length,
                         c_seg_angle, c_scale, c_scalar, c_exponent, c_bounds, c_along,
                         axis_start, axis_points, axis_cumulative, axis_tangent, axis_normal, seg_tangent,
                         seg_length, seg_angle, axis_scale, muscle_scalar, muscle_exponent, muscle_bounds, axis_along):
    """How much part ``p``'s muscles' change adds to its field at one point: ``(d, dd/dx, dd/dy, dd/dz)`` (module
    docstring). ``c_*``: the bind-time muscles carried by their bones (``MuscleArrays`` fields, ``c_along`` their
    chord ranges); the rest: this frame's muscles. ``muscle_slope[j]`` [1/m] per CSR entry ``j``. The carried
    muscle is evaluated only where ``lambda > 0`` (within ``reach + (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R`` of its axis), the
    current one only where the change is not saturated (``f < f^0 + 2 c``; beyond, ``T = -c``). Takes arrays one by
    one (no struct copied per point)."""
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
        fcut1 = f0 + 2.0 * c
        cut1 = muscle_scalar[m, SCALAR_REACH] + fcut1
        f1 = math.inf
        bx = 0.0
        by = 0.0
        bz = 0.0
        if cut1 > 0.0 and _box_distance2(qx, qy, qz, muscle_bounds, m) <= cut1 * cut1:
            f1, bx, by, bz = _field_arrays(qx, qy, qz, m, axis_start, axis_points, axis_cumulative, axis_tangent,
                                           axis_normal, seg_tangent, seg_length, seg_angle, axis_scale,
                                           muscle_scalar, muscle_exponent, True, cut1, fcut1, axis_along)
        s = muscle_slope[j]
        if f1 - f0 >= 2.0 * c:  # saturated: the current muscle is that far under the point (or not near it)
            t, dt = -c, 0.0
            bx = 0.0
            by = 0.0
            bz = 0.0
        else:
            t, dt = travel(f0 - f1, c if f1 > f0 else MUSCLE_TRAVEL_OUT * R)
        d += s * lam * t
        dx += s * (dlam * t * ax + lam * dt * (ax - bx))
        dy += s * (dlam * t * ay + lam * dt * (ay - by))
        dz += s * (dlam * t * az + lam * dt * (az - bz))
    return d, dx, dy, dz
