"""Numba kernels: axis geometry of many muscles at once (arc lengths, tangents, control normals, bounds).

The axes' part of paper §5.1 for all muscles of a character after every PBD step (paper §6: each muscle updates
its control normals and its width from the new axis length). Serial over muscles (a few microseconds each); one
scratch array per call.

Muscles come as one :class:`kernels.fusiform.MuscleArrays` ``mu``: the kernels read ``mu.axis_start (M+1,) int64``
and ``mu.axis_points (P, 3) float64 [m]`` and write the other per-point arrays and ``mu.muscle_bounds``.
``end_normals (M, 2, 3) float64``: origin/insertion normals (any length, not parallel to the axis).
``out_length (M,) float64 [m]`` receives the arc lengths, ``out_status (M,) int64`` ``STATUS_OK`` or why the geometry
could not be built (the caller raises).

The numpy reference of ``axis_geometry`` and ``_one_axis`` is ``core/muscle/axis.py`` ``axis_geometry``
(with ``vertex_tangents``, ``control_normals``, ``slerp``).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .fusiform import set_width, volume_width
from .constants import (DEGENERATE_NORMAL, JIT, MIN_SEGMENT_LENGTH, SCALAR_LENGTH, SLERP_SMALL_ANGLE,
                        STATUS_INSERTION_NORMAL_PARALLEL, STATUS_NOT_FINITE, STATUS_NO_NORMAL, STATUS_OK,
                        STATUS_ORIGIN_NORMAL_PARALLEL, STATUS_ZERO_LENGTH)


@njit(**JIT)
def _slerp(ax, ay, az, bx, by, bz, t, kx, ky, kz):
    """``core.muscle.axis.slerp`` on scalars; ``k`` is the fallback rotation axis for opposite vectors."""
    dot = ax * bx + ay * by + az * bz
    dot = min(max(dot, -1.0), 1.0)
    if dot < -1.0 + 1e-9:
        kn = math.sqrt(kx * kx + ky * ky + kz * kz)
        kx /= kn
        ky /= kn
        kz /= kn
        ang = math.pi * t
        c = math.cos(ang)
        s = math.sin(ang)
        ka = kx * ax + ky * ay + kz * az
        cx = ky * az - kz * ay
        cy = kz * ax - kx * az
        cz = kx * ay - ky * ax
        return (ax * c + cx * s + kx * ka * (1.0 - c), ay * c + cy * s + ky * ka * (1.0 - c),
                az * c + cz * s + kz * ka * (1.0 - c))
    omega = math.acos(dot)
    if omega < SLERP_SMALL_ANGLE:
        mx = (1.0 - t) * ax + t * bx
        my = (1.0 - t) * ay + t * by
        mz = (1.0 - t) * az + t * bz
        mn = math.sqrt(mx * mx + my * my + mz * mz)
        return mx / mn, my / mn, mz / mn
    so = math.sin(omega)
    ca = math.sin((1.0 - t) * omega) / so
    cb = math.sin(t * omega) / so
    return ca * ax + cb * bx, ca * ay + cb * by, ca * az + cb * bz


@njit(**JIT)
def _slerp_angle(ax, ay, az, bx, by, bz):
    """The clipped ``cos`` and the angle ``omega`` between two unit vectors, and ``sin(omega)``: what
    :func:`_slerp` computes before ``t`` enters, for slerping many ``t`` between the same two vectors."""
    dot = ax * bx + ay * by + az * bz
    dot = min(max(dot, -1.0), 1.0)
    if dot < -1.0 + 1e-9:
        return dot, math.pi, 0.0
    omega = math.acos(dot)
    return dot, omega, math.sin(omega)


@njit(**JIT)
def _slerp_at(a, b, t, fallback, angle):
    """:func:`_slerp` of the unit 3-tuples ``a``, ``b`` at ``t``, with ``angle = (dot, omega, so)`` from
    :func:`_slerp_angle` (the same arithmetic, so the same bits); ``fallback``: the rotation axis for opposite
    vectors."""
    ax, ay, az = a
    bx, by, bz = b
    dot, omega, so = angle
    if dot < -1.0 + 1e-9 or omega < SLERP_SMALL_ANGLE:
        return _slerp(ax, ay, az, bx, by, bz, t, fallback[0], fallback[1], fallback[2])
    ca = math.sin((1.0 - t) * omega) / so
    cb = math.sin(t * omega) / so
    return ca * ax + cb * bx, ca * ay + cb * by, ca * az + cb * bz


@njit(**JIT)
def _project_out(nx, ny, nz, tx, ty, tz):
    """``n - (n.t) t`` and its length."""
    d = nx * tx + ny * ty + nz * tz
    mx = nx - d * tx
    my = ny - d * ty
    mz = nz - d * tz
    return mx, my, mz, math.sqrt(mx * mx + my * my + mz * mz)


@njit(inline="always", **JIT)
def _segments(a, b, mu):
    """Arc lengths ``mu.axis_cumulative``, segment tangents and lengths of the axis points ``a .. b-1`` (the last
    row's set to 0); returns the axis length [m]."""
    P = mu.axis_points
    cum = mu.axis_cumulative
    seg_t = mu.seg_tangent
    seg_l = mu.seg_length
    cum[a] = 0.0
    for k in range(a, b - 1):
        dx = P[k + 1, 0] - P[k, 0]
        dy = P[k + 1, 1] - P[k, 1]
        dz = P[k + 1, 2] - P[k, 2]
        L = math.sqrt(dx * dx + dy * dy + dz * dz)
        seg_l[k] = L
        if L > MIN_SEGMENT_LENGTH:
            seg_t[k, 0] = dx / L
            seg_t[k, 1] = dy / L
            seg_t[k, 2] = dz / L
        else:
            seg_t[k, 0] = 0.0
            seg_t[k, 1] = 0.0
            seg_t[k, 2] = 0.0
        cum[k + 1] = cum[k] + L
    seg_l[b - 1] = 0.0
    mu.seg_angle[b - 1] = 0.0
    seg_t[b - 1, 0] = 0.0
    seg_t[b - 1, 1] = 0.0
    seg_t[b - 1, 2] = 0.0
    return cum[b - 1]


@njit(inline="always", **JIT)
def _vertex_tangents(a, b, P, T):
    """Vertex tangents ``T`` of the axis points ``P[a:b]`` (``core.muscle.axis.vertex_tangents``): the chord
    between each point's neighbours, or where that collapses the overall direction (itself, where the whole chord
    collapses, the longest neighbour chord)."""
    ox = P[b - 1, 0] - P[a, 0]
    oy = P[b - 1, 1] - P[a, 1]
    oz = P[b - 1, 2] - P[a, 2]
    on = math.sqrt(ox * ox + oy * oy + oz * oz)
    if on <= MIN_SEGMENT_LENGTH:
        best = -1.0
        for k in range(a, b):
            lo = max(k - 1, a)
            hi = min(k + 1, b - 1)
            cx = P[hi, 0] - P[lo, 0]
            cy = P[hi, 1] - P[lo, 1]
            cz = P[hi, 2] - P[lo, 2]
            cn = math.sqrt(cx * cx + cy * cy + cz * cz)
            if cn > best:
                best = cn
                ox = cx
                oy = cy
                oz = cz
        on = best
    ox /= on
    oy /= on
    oz /= on
    for k in range(a, b):
        lo = max(k - 1, a)
        hi = min(k + 1, b - 1)
        cx = P[hi, 0] - P[lo, 0]
        cy = P[hi, 1] - P[lo, 1]
        cz = P[hi, 2] - P[lo, 2]
        cn = math.sqrt(cx * cx + cy * cy + cz * cz)
        if cn > MIN_SEGMENT_LENGTH:
            T[k, 0] = cx / cn
            T[k, 1] = cy / cn
            T[k, 2] = cz / cn
        else:
            T[k, 0] = ox
            T[k, 1] = oy
            T[k, 2] = oz


@njit(inline="always", **JIT)
def _end_normal(end_normals, m, e, T, k):
    """Muscle ``m``'s end normal ``e`` (0 origin, 1 insertion) made orthogonal to the tangent ``T[k]``, unnormalised:
    ``(nx, ny, nz, length, defined)``, not defined where it is (nearly) parallel to the tangent."""
    nx, ny, nz, nn = _project_out(end_normals[m, e, 0], end_normals[m, e, 1], end_normals[m, e, 2],
                                  T[k, 0], T[k, 1], T[k, 2])
    raw = math.sqrt(end_normals[m, e, 0] ** 2 + end_normals[m, e, 1] ** 2 + end_normals[m, e, 2] ** 2)
    return nx, ny, nz, nn, nn > DEGENERATE_NORMAL * max(raw, 1.0)


@njit(inline="always", **JIT)
def _control_normals(a, b, mu, n0, n1, length, defined):
    """Control normals ``mu.axis_normal`` of the axis points ``a .. b-1`` (``core.muscle.axis.control_normals``):
    the unit end normals ``n0``, ``n1`` slerped by arc length, made orthogonal to each vertex tangent;
    ``defined[k]`` says where that leaves one. Returns how many are defined."""
    P = mu.axis_points
    T = mu.axis_tangent
    N = mu.axis_normal
    cum = mu.axis_cumulative
    chx = P[b - 1, 0] - P[a, 0]
    chy = P[b - 1, 1] - P[a, 1]
    chz = P[b - 1, 2] - P[a, 2]
    if math.sqrt(chx * chx + chy * chy + chz * chz) <= MIN_SEGMENT_LENGTH:
        chx = T[a, 0]
        chy = T[a, 1]
        chz = T[a, 2]
    # the endpoint normals' angle once per muscle
    angle = _slerp_angle(n0[0], n0[1], n0[2], n1[0], n1[1], n1[2])
    n_defined = 0
    for k in range(a, b):
        sx, sy, sz = _slerp_at(n0, n1, cum[k] / length, (chx, chy, chz), angle)
        mx, my, mz, mn = _project_out(sx, sy, sz, T[k, 0], T[k, 1], T[k, 2])
        if mn > DEGENERATE_NORMAL:
            N[k, 0] = mx / mn
            N[k, 1] = my / mn
            N[k, 2] = mz / mn
            defined[k] = True
            n_defined += 1
        else:
            defined[k] = False
    return n_defined


@njit(inline="always", **JIT)
def _fill_normals(a, b, mu, defined):
    """The control normals not ``defined`` (parallel to their tangent): slerped between the nearest defined ones
    on each side by arc length (or the one side's), made orthogonal to the tangent where that is possible."""
    T = mu.axis_tangent
    N = mu.axis_normal
    cum = mu.axis_cumulative
    for k in range(a, b):
        if defined[k]:
            continue
        lo = k - 1
        while lo >= a and not defined[lo]:
            lo -= 1
        hi = k + 1
        while hi < b and not defined[hi]:
            hi += 1
        if lo >= a and hi < b:
            t = (cum[k] - cum[lo]) / max(cum[hi] - cum[lo], 1e-300)
            sx, sy, sz = _slerp(N[lo, 0], N[lo, 1], N[lo, 2], N[hi, 0], N[hi, 1], N[hi, 2], t,
                                T[k, 0], T[k, 1], T[k, 2])
        elif lo >= a:
            sx, sy, sz = N[lo, 0], N[lo, 1], N[lo, 2]
        else:
            sx, sy, sz = N[hi, 0], N[hi, 1], N[hi, 2]
        mx, my, mz, mn = _project_out(sx, sy, sz, T[k, 0], T[k, 1], T[k, 2])
        if mn > DEGENERATE_NORMAL:
            N[k, 0] = mx / mn
            N[k, 1] = my / mn
            N[k, 2] = mz / mn
        else:
            N[k, 0] = sx
            N[k, 1] = sy
            N[k, 2] = sz


@njit(inline="always", **JIT)
def _angles_and_bounds(a, b, m, mu):
    """The angles ``mu.seg_angle`` between consecutive control normals and muscle ``m``'s axis box
    ``mu.muscle_bounds[m]`` (min xyz, max xyz)."""
    P = mu.axis_points
    N = mu.axis_normal
    for k in range(a, b - 1):
        d = N[k, 0] * N[k + 1, 0] + N[k, 1] * N[k + 1, 1] + N[k, 2] * N[k + 1, 2]
        mu.seg_angle[k] = math.acos(min(max(d, -1.0), 1.0))
    for c in range(3):
        lo_c = P[a, c]
        hi_c = P[a, c]
        for k in range(a + 1, b):
            lo_c = min(lo_c, P[k, c])
            hi_c = max(hi_c, P[k, c])
        mu.muscle_bounds[m, c] = lo_c
        mu.muscle_bounds[m, 3 + c] = hi_c


@njit(**JIT)
def _one_axis(a, b, mu, end_normals, m, defined):
    """Geometry of muscle ``m`` of ``mu`` (:class:`kernels.fusiform.MuscleArrays`; its axis points
    ``mu.axis_points[a:b]``) into its per-point rows ``a .. b-1`` and ``mu.muscle_bounds[m]``. ``defined (P,)
    bool`` is scratch, rows ``a .. b-1`` used. Returns ``(length [m], status)``."""
    P = mu.axis_points
    T = mu.axis_tangent
    for k in range(a, b):
        for c in range(3):
            if not math.isfinite(P[k, c]):
                return 0.0, STATUS_NOT_FINITE
    length = _segments(a, b, mu)
    if length <= MIN_SEGMENT_LENGTH:
        return length, STATUS_ZERO_LENGTH
    _vertex_tangents(a, b, P, T)
    # endpoint normals, orthogonal to the end tangents
    n0x, n0y, n0z, n0n, ok0 = _end_normal(end_normals, m, 0, T, a)
    if not ok0:
        return length, STATUS_ORIGIN_NORMAL_PARALLEL
    n1x, n1y, n1z, n1n, ok1 = _end_normal(end_normals, m, 1, T, b - 1)
    if not ok1:
        return length, STATUS_INSERTION_NORMAL_PARALLEL
    n0 = (n0x / n0n, n0y / n0n, n0z / n0n)
    n1 = (n1x / n1n, n1y / n1n, n1z / n1n)
    n_defined = _control_normals(a, b, mu, n0, n1, length, defined)
    if n_defined == 0:
        return length, STATUS_NO_NORMAL
    if n_defined < b - a:
        _fill_normals(a, b, mu, defined)
    _angles_and_bounds(a, b, m, mu)
    return length, STATUS_OK


@njit(**JIT)
def axis_geometry(mu, end_normals, out_length, out_status):
    """Geometry of every muscle axis of ``mu`` from ``mu.axis_points`` (see the module docstring). Serial: a few
    microseconds per muscle."""
    axis_start = mu.axis_start
    n_muscles = axis_start.shape[0] - 1
    defined = np.empty(mu.axis_points.shape[0], dtype=np.bool_)
    for m in range(n_muscles):
        a = axis_start[m]
        b = axis_start[m + 1]
        length, status = _one_axis(a, b, mu, end_normals, np.int64(m), defined)
        out_length[m] = length
        out_status[m] = status


@njit(**JIT)
def axis_update(mu, points, end_normals, width_scale, volume, out_length, out_status):
    """After a PBD frame (paper §6): copy ``points (P, 3)`` [m] into ``mu.axis_points``, rebuild every axis's
    geometry as :func:`axis_geometry`, and rescale each muscle's width, support and reach in ``mu.muscle_scalar``
    to its new length ``l`` by the volume law ``w = width_scale sqrt(V / (pi l))`` (``width_scale (M,)``,
    ``volume (M,)`` [m^3]); ``SCALAR_LENGTH`` becomes ``l``. Muscles whose status is not ``STATUS_OK`` keep their
    scalars. One serial pass over muscles."""
    axis_start, out_points, out_scalar = mu.axis_start, mu.axis_points, mu.muscle_scalar
    n_muscles = axis_start.shape[0] - 1
    defined = np.empty(points.shape[0], dtype=np.bool_)
    for m in range(n_muscles):
        a = axis_start[m]
        b = axis_start[m + 1]
        for k in range(a, b):
            for c in range(3):
                out_points[k, c] = points[k, c]
        length, status = _one_axis(a, b, mu, end_normals, np.int64(m), defined)
        out_length[m] = length
        out_status[m] = status
        if status == STATUS_OK:
            set_width(out_scalar, m, volume_width(volume[m], length, width_scale[m]))
            out_scalar[m, SCALAR_LENGTH] = length


@njit(inline="always", **JIT)
def arc_length(P, a, b):
    """Length [m] of the polyline ``P[a:b]`` (an axis: the volume law's ``l``)."""
    total = 0.0
    for k in range(a, b - 1):
        dx = P[k + 1, 0] - P[k, 0]
        dy = P[k + 1, 1] - P[k, 1]
        dz = P[k + 1, 2] - P[k, 2]
        total += math.sqrt(dx * dx + dy * dy + dz * dz)
    return total


@njit(inline="always", **JIT)
def chord_distance(px, py, pz, P, a, b):
    """Distance [m] from ``p`` to the segment ``[P_a, P_b]`` (an axis's chord: with the axis's largest deviation
    from it, a cheap lower bound of the distance to the axis)."""
    ex = P[b, 0] - P[a, 0]
    ey = P[b, 1] - P[a, 1]
    ez = P[b, 2] - P[a, 2]
    dx = px - P[a, 0]
    dy = py - P[a, 1]
    dz = pz - P[a, 2]
    e2 = ex * ex + ey * ey + ez * ez
    t = 0.0
    if e2 > 0.0:
        t = min(max((dx * ex + dy * ey + dz * ez) / e2, 0.0), 1.0)
    dx -= t * ex
    dy -= t * ey
    dz -= t * ez
    return math.sqrt(dx * dx + dy * dy + dz * dz)


@njit(inline="always", **JIT)
def chord_deviation(P, a, b):
    """The largest distance [m] of the polyline ``P[a..b]`` from its chord ``[P_a, P_b]`` (:func:`chord_distance`;
    with it, a lower bound of the distance to the polyline)."""
    dev = 0.0
    for k in range(a + 1, b):
        dev = max(dev, chord_distance(P[k, 0], P[k, 1], P[k, 2], P, a, b))
    return dev
