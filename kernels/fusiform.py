"""Numba kernel: fusiform muscle field value and gradient at many points for many muscles (paper §5.1).

Written on scalars; the inner loop allocates nothing. Muscles come packed as one :class:`MuscleArrays` (flat arrays
with CSR offsets, built by ``core/muscle/batch.py``). Outputs ``values (Q, M)`` and ``grads (Q, M, 3)`` are written
in place. Parallel over query points.

The numpy reference of ``muscle_field`` and ``_field_one`` is ``core/muscle/field.py`` ``evaluate`` (with the
equations); that of ``_monomial`` (value and first derivative) is ``core/muscle/profile.py`` ``beta_monomial``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange, types

from .constants import (JIT, JIT_FAST_LIBM, JIT_POINT_LIBM, MIN_DISTANCE, MIN_SEGMENT_LENGTH, SCALAR_C0,
                        SCALAR_C1, SCALAR_LENGTH, SCALAR_REACH, SCALAR_SUPPORT, SCALAR_U, SCALAR_V, SCALAR_WIDTH,
                        SLERP_SMALL_ANGLE)


class MuscleArrays(NamedTuple):
    """``M`` muscles with ``P`` axis points in all, as the kernels read them (CSR offsets: muscle ``m`` owns axis
    points ``axis_start[m] .. axis_start[m+1]-1``)."""

    axis_start: np.ndarray       # (M+1,) int64
    axis_points: np.ndarray      # (P, 3) float64 [m] axis vertices P_k
    axis_cumulative: np.ndarray  # (P,) float64 [m] arc length S_k from the muscle's origin
    axis_tangent: np.ndarray     # (P, 3) float64 vertex tangents T_k
    axis_normal: np.ndarray      # (P, 3) float64 control normals n_k
    seg_tangent: np.ndarray      # (P, 3) float64 t_k of the segment starting at vertex k (last row of a muscle unused)
    seg_length: np.ndarray       # (P,) float64 [m] L_k
    seg_angle: np.ndarray        # (P,) float64 [rad] angle between n_k and n_{k+1}
    muscle_scalar: np.ndarray    # (M, SCALAR_COUNT) float64: length l, c0, c1, width w, u, v, support R, reach
    muscle_exponent: np.ndarray  # (M, 4) int64: alpha0-1, beta0-1, alpha1-1, beta1-1
    muscle_bounds: np.ndarray    # (M, 6) float64 [m] axis bounding box (min xyz, max xyz)
    axis_scale: np.ndarray       # (P,) float64 width factor sigma_k at each vertex (1; a VIPER rod's scales)


ALONG_SLACK = 1e-9
"""[m] Margin of the chord bound in :func:`_closest_segment` (rounding of the chord coordinates)."""
NO_ALONG = np.zeros((0, 4))
"""No chord ranges: :func:`_closest_segment` tries every segment."""
SHAPE_SLACK = 1e-9
"""[m] Margin of the profile bound in :func:`_field_arrays` (an axis point ``h(s)`` off its polyline by rounding)."""


@njit(inline="always", **JIT)
def volume_width(volume, length, width_scale):
    """The volume law (paper eq. 3): width ``w = width_scale sqrt(V / (pi l))`` [m] of a muscle of volume ``V``
    [m^3] whose axis is ``l`` [m] long."""
    return width_scale * math.sqrt(volume / (math.pi * length))


@njit(inline="always", **JIT)
def set_width(scal, m, width):
    """Give muscle ``m`` of ``scal (M, SCALAR_COUNT)`` the width ``width`` [m]; its support and reach scale with it."""
    ratio = width / scal[m, SCALAR_WIDTH]
    scal[m, SCALAR_WIDTH] *= ratio
    scal[m, SCALAR_SUPPORT] *= ratio
    scal[m, SCALAR_REACH] *= ratio

@njit(inline="always", **JIT_FAST_LIBM)
def _monomial(ea, eb, s):
    """``(s^ea (1-s)^eb, its first derivative, its second derivative)`` for ``s`` in [0, 1], integers
    ``ea, eb >= 0``; no negative powers are formed. Inlined."""
    t = 1.0 - s
    value = s ** ea * t ** eb
    d1 = 0.0
    if ea > 0:
        d1 += ea * s ** (ea - 1) * t ** eb
    if eb > 0:
        d1 -= eb * s ** ea * t ** (eb - 1)
    d2 = 0.0
    if ea > 1:
        d2 += ea * (ea - 1) * s ** (ea - 2) * t ** eb
    if ea > 0 and eb > 0:
        d2 -= 2.0 * ea * eb * s ** (ea - 1) * t ** (eb - 1)
    if eb > 1:
        d2 += eb * (eb - 1) * s ** ea * t ** (eb - 2)
    return value, d1, d2


@njit(inline="always", **JIT_FAST_LIBM)
def _segment_distance2(qx, qy, qz, P, L, t, k):
    """``(d2, tau)``: squared distance [m^2] from ``q`` to segment ``k`` and ``q``'s coordinate along it [m]
    (``inf`` for a degenerate segment)."""
    Lk = L[k]
    if Lk <= MIN_SEGMENT_LENGTH:
        return np.inf, 0.0
    dx = qx - P[k, 0]
    dy = qy - P[k, 1]
    dz = qz - P[k, 2]
    tau = dx * t[k, 0] + dy * t[k, 1] + dz * t[k, 2]
    tc = min(max(tau, 0.0), Lk)
    ex = dx - tc * t[k, 0]
    ey = dy - tc * t[k, 1]
    ez = dz - tc * t[k, 2]
    return ex * ex + ey * ey + ez * ez, tau


@njit(inline="always", **JIT_FAST_LIBM)
def _beyond(c, lo, hi, best):
    """Whether every point whose chord coordinate lies in ``[lo, hi]`` is farther than ``sqrt(best)`` from a query
    of chord coordinate ``c`` (by more than ``ALONG_SLACK``)."""
    g = max(lo - c, c - hi) - ALONG_SLACK
    return g > 0.0 and g * g > best


@njit(**JIT_POINT_LIBM)
def _closest_segment(qx, qy, qz, P, L, t, start, end, along, cut2):
    """The segment of the polyline ``P[start:end]`` nearest to ``q``: ``(d2, j, tau_j)`` (squared distance [m^2],
    the first such segment, ``q``'s coordinate along it [m]), where that distance is at most ``sqrt(cut2)``; beyond,
    some ``d2 > cut2``. With ``along`` (per segment, the range of the chord coordinate over the segments up to it
    and from it: :func:`axis_along`) the search starts at the segment facing ``q`` along the chord and stops on
    each side where the rest of the axis is farther along the chord than the nearest segment found or the cut
    (a lower bound of the distance); without (``along`` of 0 rows) it tries every segment. Both give the same
    segment."""
    best = np.inf
    j = -1
    tau_j = 0.0
    if along.shape[0] == 0:
        for k in range(start, end - 1):
            d2, tau = _segment_distance2(qx, qy, qz, P, L, t, k)
            if d2 < best:
                best = d2
                j = k
                tau_j = tau
        return best, j, tau_j
    ex = P[end - 1, 0] - P[start, 0]
    ey = P[end - 1, 1] - P[start, 1]
    ez = P[end - 1, 2] - P[start, 2]
    e = math.sqrt(ex * ex + ey * ey + ez * ez)
    segments = end - 1 - start
    c = 0.0
    k0 = start
    if e > MIN_SEGMENT_LENGTH:
        c = ((qx - P[start, 0]) * ex + (qy - P[start, 1]) * ey + (qz - P[start, 2]) * ez) / e
        k0 = start + int(min(max(c / e * segments, 0.0), segments - 1.0))
    best, tau_j = _segment_distance2(qx, qy, qz, P, L, t, k0)
    j = k0
    for k in range(k0 + 1, end - 1):
        if _beyond(c, along[k, 2], along[k, 3], min(best, cut2)):
            break
        d2, tau = _segment_distance2(qx, qy, qz, P, L, t, k)
        if d2 < best:
            best = d2
            j = k
            tau_j = tau
    for k in range(k0 - 1, start - 1, -1):
        if _beyond(c, along[k, 0], along[k, 1], min(best, cut2)):
            break
        d2, tau = _segment_distance2(qx, qy, qz, P, L, t, k)
        if d2 <= best:  # the first of equally near segments, as the full search
            best = d2
            j = k
            tau_j = tau
    if best == np.inf:
        j = -1
    return best, j, tau_j


@njit(inline="always", **JIT)
def _along(P, k, start, ex, ey, ez, e):
    """Chord coordinate [m] of axis point ``k``: ``(P_k - P_start) . (ex, ey, ez) / e``."""
    return ((P[k, 0] - P[start, 0]) * ex + (P[k, 1] - P[start, 1]) * ey + (P[k, 2] - P[start, 2]) * ez) / e


@njit(**JIT)
def axis_along(P, start, end, out):
    """Per segment ``k`` of the polyline ``P[start:end]``, the range of the chord coordinate (along the unit
    ``P[end-1] - P[start]``, from ``P[start]``) of the segments ``start..k`` into ``out[k, 0:2]`` and of the
    segments ``k..end-2`` into ``out[k, 2:4]`` [m] (``out (P, 4)``; the last row is unused)."""
    ex = P[end - 1, 0] - P[start, 0]
    ey = P[end - 1, 1] - P[start, 1]
    ez = P[end - 1, 2] - P[start, 2]
    e = math.sqrt(ex * ex + ey * ey + ez * ez)
    if e <= MIN_SEGMENT_LENGTH:  # no chord: every coordinate 0, no bound
        e = np.inf
    lo = np.inf
    hi = -np.inf
    for k in range(start, end - 1):
        for c in (_along(P, k, start, ex, ey, ez, e), _along(P, k + 1, start, ex, ey, ez, e)):
            lo = min(lo, c)
            hi = max(hi, c)
        out[k, 0] = lo
        out[k, 1] = hi
    lo = np.inf
    hi = -np.inf
    for k in range(end - 2, start - 1, -1):
        for c in (_along(P, k, start, ex, ey, ez, e), _along(P, k + 1, start, ex, ey, ez, e)):
            lo = min(lo, c)
            hi = max(hi, c)
        out[k, 2] = lo
        out[k, 3] = hi


@njit(**JIT_POINT_LIBM)
def _project(q, P, L, t, S, l, start, end, reparam, cut, along):
    """Algorithm 1 for the point ``q`` (a 3-tuple [m]) on vertices ``start..end-1``. Returns ``(s, gsx, gsy, gsz,
    d2)`` with ``d2`` [m^2] the squared distance to the polyline, or ``s = -1`` when the point is farther than ``cut``
    [m] from it (callers that only need the field near the surface skip the rest). ``along``:
    :func:`_closest_segment`'s chord ranges, or 0 rows."""
    qx, qy, qz = q
    best, j, tau_j = _closest_segment(qx, qy, qz, P, L, t, start, end, along, cut * cut)
    if best > cut * cut:
        return -1.0, 0.0, 0.0, 0.0, best
    Lj = L[j]
    s_j = (S[j] + min(max(tau_j, 0.0), Lj)) / l
    inside_j = tau_j > 0.0 and tau_j < Lj
    if reparam and inside_j:
        # neighbours whose projection is also inside their segment; keep the nearer one
        k = -1
        best_k = np.inf
        for c in (j - 1, j + 1):
            if c < start or c >= end - 1 or L[c] <= MIN_SEGMENT_LENGTH:
                continue
            dx = qx - P[c, 0]
            dy = qy - P[c, 1]
            dz = qz - P[c, 2]
            tau = dx * t[c, 0] + dy * t[c, 1] + dz * t[c, 2]
            if tau > 0.0 and tau < L[c]:
                ex = dx - tau * t[c, 0]
                ey = dy - tau * t[c, 1]
                ez = dz - tau * t[c, 2]
                d2 = ex * ex + ey * ey + ez * ez
                if d2 < best_k:
                    best_k = d2
                    k = c
        if k >= 0:
            i0 = min(j, k)
            i1 = i0 + 1
            dx = qx - P[i1, 0]
            dy = qy - P[i1, 1]
            dz = qz - P[i1, 2]
            d_t0 = dx * t[i0, 0] + dy * t[i0, 1] + dz * t[i0, 2]
            d_t1 = dx * t[i1, 0] + dy * t[i1, 1] + dz * t[i1, 2]
            a0 = -d_t0
            a1 = d_t1
            p0x = dx - d_t0 * t[i0, 0]
            p0y = dy - d_t0 * t[i0, 1]
            p0z = dz - d_t0 * t[i0, 2]
            p1x = dx - d_t1 * t[i1, 0]
            p1y = dy - d_t1 * t[i1, 1]
            p1z = dz - d_t1 * t[i1, 2]
            b0 = math.sqrt(p0x * p0x + p0y * p0y + p0z * p0z)
            b1 = math.sqrt(p1x * p1x + p1y * p1y + p1z * p1z)
            w0 = a0 * b1
            w1 = a1 * b0
            total = w0 + w1
            if total > 0.0:
                s0 = (S[i0] + (L[i0] + d_t0)) / l
                s1 = (S[i1] + d_t1) / l
                s = (w0 * s0 + w1 * s1) / total
                g0x = -t[i0, 0] * b1
                g0y = -t[i0, 1] * b1
                g0z = -t[i0, 2] * b1
                if b1 > 0.0:
                    g0x += a0 * p1x / b1
                    g0y += a0 * p1y / b1
                    g0z += a0 * p1z / b1
                g1x = t[i1, 0] * b0
                g1y = t[i1, 1] * b0
                g1z = t[i1, 2] * b0
                if b0 > 0.0:
                    g1x += a1 * p0x / b0
                    g1y += a1 * p0y / b0
                    g1z += a1 * p0z / b0
                f0 = s0 - s
                f1 = s1 - s
                gsx = (w0 * t[i0, 0] / l + w1 * t[i1, 0] / l + f0 * g0x + f1 * g1x) / total
                gsy = (w0 * t[i0, 1] / l + w1 * t[i1, 1] / l + f0 * g0y + f1 * g1y) / total
                gsz = (w0 * t[i0, 2] / l + w1 * t[i1, 2] / l + f0 * g0z + f1 * g1z) / total
                return s, gsx, gsy, gsz, best
    if inside_j:
        return s_j, t[j, 0] / l, t[j, 1] / l, t[j, 2] / l, best
    return s_j, 0.0, 0.0, 0.0, best


@njit(inline="always", **JIT_FAST_LIBM)
def _field_one(qx, qy, qz, m, mu, reparam, cut, fcut):
    """``f_M`` and its gradient for muscle ``m`` of ``mu`` (:class:`MuscleArrays`) at ``q``: ``(f, gx, gy, gz)``.

    If ``q`` is farther than ``cut`` [m] from the axis, or ``f_M >= fcut`` follows from the profile at its
    projection, returns ``(inf, 0, 0, 0)`` without the rest of the work (pass ``inf, inf`` for the exact field
    everywhere). Inlined: it hands the struct's arrays to :func:`_field_arrays`
    as separate arguments, which the compiled call takes in registers instead of copying the struct.
    """
    return _field_arrays(qx, qy, qz, m, mu.axis_start, mu.axis_points, mu.axis_cumulative, mu.axis_tangent,
                         mu.axis_normal, mu.seg_tangent, mu.seg_length, mu.seg_angle, mu.axis_scale,
                         mu.muscle_scalar, mu.muscle_exponent, reparam, cut, fcut, NO_ALONG)


_F = types.float64
_F1 = types.Array(_F, 1, "C")
_F2 = types.Array(_F, 2, "C")
FIELD_ARRAYS_SIGNATURE = types.UniTuple(_F, 4)(
    _F, _F, _F, types.int64, types.Array(types.int64, 1, "C"), _F2, _F1, _F2, _F2, _F2, _F1, _F1, _F1, _F2,
    types.Array(types.int64, 2, "C"), types.boolean, _F, _F, types.Array(_F, 2, "C", readonly=True))
"""The one signature :func:`_field_arrays` is compiled for: ``reparam`` a plain bool and ``along`` read-only, so
the callers that pass ``True`` (a literal) or the chord ranges of a ``SkinArrays`` (writable) share the compiled
function with those that pass a run-time flag and ``NO_ALONG`` (a read-only global), instead of compiling it and
everything it calls three times."""


@njit(inline="always", **JIT_POINT_LIBM)
def segment_at(S, L, start, end, arc):
    """The segment ``k`` of the axis points ``start .. end-1`` that holds the arc length ``arc`` [m] (cumulative
    lengths ``S``, segment lengths ``L``): the last whose start is at most ``arc``, moved off degenerate
    segments (back while ``arc`` is at their start, then forward)."""
    k = start
    while k < end - 2 and S[k + 1] <= arc:
        k += 1
    while L[k] <= MIN_SEGMENT_LENGTH and k > start and arc <= S[k]:
        k -= 1
    while L[k] <= MIN_SEGMENT_LENGTH and k < end - 2:
        k += 1
    return k


@njit(inline="always", **JIT_POINT_LIBM)
def _profile_at(m, s, l, arc, k, S, L, sc, scal, expo):
    """Muscle ``m``'s profile at ``s`` on segment ``k`` (arc length ``arc`` [m], axis length ``l`` [m]):
    ``(Phi, dPhi/ds, beta, dbeta/ds)``, ``Phi = Phi_a(s) sigma(s)`` (module docstring), ``beta`` the place on the
    segment in [0, 1]."""
    v0, d0, _ = _monomial(expo[m, 0], expo[m, 1], s)
    v1, d1, _ = _monomial(expo[m, 2], expo[m, 3], s)
    c0 = scal[m, SCALAR_C0]
    c1 = scal[m, SCALAR_C1]
    Lk = max(L[k], MIN_SEGMENT_LENGTH)
    beta = min(max((arc - S[k]) / Lk, 0.0), 1.0)
    dbeta = l / Lk
    sigma = (1.0 - beta) * sc[k] + beta * sc[k + 1]
    Phi = (c0 * v0 + c1 * v1) * sigma
    dPhi = (c0 * d0 + c1 * d1) * sigma + (c0 * v0 + c1 * v1) * (sc[k + 1] - sc[k]) * dbeta
    return Phi, dPhi, beta, dbeta


@njit(inline="always", **JIT_POINT_LIBM)
def _tangent_at(T, k, beta, dbeta):
    """The tangent ``T(s)`` at ``beta`` along segment ``k`` (the normalised lerp of its vertex tangents) and its
    derivative along ``s``: ``(Tx, Ty, Tz, dTx, dTy, dTz)``."""
    Mx = (1.0 - beta) * T[k, 0] + beta * T[k + 1, 0]
    My = (1.0 - beta) * T[k, 1] + beta * T[k + 1, 1]
    Mz = (1.0 - beta) * T[k, 2] + beta * T[k + 1, 2]
    Mn = math.sqrt(Mx * Mx + My * My + Mz * Mz)
    Tx = Mx / Mn
    Ty = My / Mn
    Tz = Mz / Mn
    ex = T[k + 1, 0] - T[k, 0]
    ey = T[k + 1, 1] - T[k, 1]
    ez = T[k + 1, 2] - T[k, 2]
    te = Tx * ex + Ty * ey + Tz * ez
    dTx = (ex - Tx * te) / Mn * dbeta
    dTy = (ey - Ty * te) / Mn * dbeta
    dTz = (ez - Tz * te) / Mn * dbeta
    return Tx, Ty, Tz, dTx, dTy, dTz


@njit(inline="always", **JIT_POINT_LIBM)
def _normal_at(N, A, k, beta, dbeta):
    """The normal ``n(s)`` at ``beta`` along segment ``k`` (the slerp of its control normals, ``A[k]`` their
    angle) and its derivative along ``s``: ``(nx, ny, nz, dnx, dny, dnz)``."""
    om = A[k]
    if om < SLERP_SMALL_ANGLE:
        mx = (1.0 - beta) * N[k, 0] + beta * N[k + 1, 0]
        my = (1.0 - beta) * N[k, 1] + beta * N[k + 1, 1]
        mz = (1.0 - beta) * N[k, 2] + beta * N[k + 1, 2]
        mn = math.sqrt(mx * mx + my * my + mz * mz)
        nnx = mx / mn
        nny = my / mn
        nnz = mz / mn
        ex = N[k + 1, 0] - N[k, 0]
        ey = N[k + 1, 1] - N[k, 1]
        ez = N[k + 1, 2] - N[k, 2]
        ne = nnx * ex + nny * ey + nnz * ez
        dnx = (ex - nnx * ne) / mn
        dny = (ey - nny * ne) / mn
        dnz = (ez - nnz * ne) / mn
    else:
        # slerp as a rotation in the plane of n_k, n_{k+1}: n = cos(beta om) n_k + sin(beta om) e,
        # e = (n_{k+1} - cos(om) n_k) / sin(om); two trig calls instead of four
        so = math.sin(om)
        co = math.cos(om)
        ex = (N[k + 1, 0] - co * N[k, 0]) / so
        ey = (N[k + 1, 1] - co * N[k, 1]) / so
        ez = (N[k + 1, 2] - co * N[k, 2]) / so
        cb = math.cos(beta * om)
        sb = math.sin(beta * om)
        nnx = cb * N[k, 0] + sb * ex
        nny = cb * N[k, 1] + sb * ey
        nnz = cb * N[k, 2] + sb * ez
        dnx = om * (cb * ex - sb * N[k, 0])
        dny = om * (cb * ey - sb * N[k, 1])
        dnz = om * (cb * ez - sb * N[k, 2])
    dnx *= dbeta
    dny *= dbeta
    dnz *= dbeta
    return nnx, nny, nnz, dnx, dny, dnz


@njit(inline="always", **JIT_POINT_LIBM)
def _frame_at(tangent, normal):
    """The frame at ``s`` from the tangent and the normal with their derivatives (:func:`_tangent_at`,
    :func:`_normal_at`): the normal made orthogonal to the tangent and the binormal ``T x n``, each with its
    derivative along ``s``: ``(nx, ny, nz, dnx, dny, dnz, bx, by, bz, dbx, dby, dbz)``."""
    Tx, Ty, Tz, dTx, dTy, dTz = tangent
    nnx, nny, nnz, dnx, dny, dnz = normal
    nT = nnx * Tx + nny * Ty + nnz * Tz
    dnT = dnx * Tx + dny * Ty + dnz * Tz
    ndT = nnx * dTx + nny * dTy + nnz * dTz
    mx = nnx - nT * Tx
    my = nny - nT * Ty
    mz = nnz - nT * Tz
    dmx = dnx - dnT * Tx - ndT * Tx - nT * dTx
    dmy = dny - dnT * Ty - ndT * Ty - nT * dTy
    dmz = dnz - dnT * Tz - ndT * Tz - nT * dTz
    mn = math.sqrt(mx * mx + my * my + mz * mz)
    nx = mx / mn
    ny = my / mn
    nz = mz / mn
    ndm = nx * dmx + ny * dmy + nz * dmz
    dpx = (dmx - nx * ndm) / mn
    dpy = (dmy - ny * ndm) / mn
    dpz = (dmz - nz * ndm) / mn
    bx = Ty * nz - Tz * ny
    by = Tz * nx - Tx * nz
    bz = Tx * ny - Ty * nx
    dbx = (dTy * nz - dTz * ny) + (Ty * dpz - Tz * dpy)
    dby = (dTz * nx - dTx * nz) + (Tz * dpx - Tx * dpz)
    dbz = (dTx * ny - dTy * nx) + (Tx * dpy - Ty * dpx)
    return nx, ny, nz, dpx, dpy, dpz, bx, by, bz, dbx, dby, dbz


@njit(inline="always", **JIT_POINT_LIBM)
def _field_at(q, h, tk, gs, l, frame, shape):
    """``(f, gx, gy, gz)``: the field ``f = rho - w Phi r`` at ``q`` and its gradient (paper eq. 4-5), from the axis
    point ``h = h(s)``, the tangent ``tk`` of its segment, ``gs = grad s``, the axis length ``l`` [m], the frame at
    ``s`` (:func:`_frame_at`) and ``shape = (u, v, w, Phi, dPhi/ds)``."""
    qx, qy, qz = q
    hx, hy, hz = h
    tkx, tky, tkz = tk
    gsx, gsy, gsz = gs
    nx, ny, nz, dpx, dpy, dpz, bx, by, bz, dbx, dby, dbz = frame
    u, v, w, Phi, dPhi = shape
    Dx = qx - hx
    Dy = qy - hy
    Dz = qz - hz
    rho = math.sqrt(Dx * Dx + Dy * Dy + Dz * Dz)
    if rho > MIN_DISTANCE:
        Dhx = Dx / rho
        Dhy = Dy / rho
        Dhz = Dz / rho
    else:
        Dhx = 0.0
        Dhy = 0.0
        Dhz = 0.0
    c = l * (tkx * Dhx + tky * Dhy + tkz * Dhz)
    grx = Dhx - gsx * c
    gry = Dhy - gsy * c
    grz = Dhz - gsz * c
    x = Dx * nx + Dy * ny + Dz * nz
    y = Dx * bx + Dy * by + Dz * bz
    rxy2 = x * x + y * y
    if rxy2 > MIN_DISTANCE * MIN_DISTANCE:
        Q = u * u * x * x + v * v * y * y
        rxy = math.sqrt(rxy2)
        sq = math.sqrt(Q)
        r = u * v * rxy / sq
        common = u * v / (rxy * Q * sq)
        r_x = common * x * (v * v - u * u) * y * y
        r_y = common * y * (u * u - v * v) * x * x
    else:
        r = 1.0
        r_x = 0.0
        r_y = 0.0
    cx = -l * (tkx * nx + tky * ny + tkz * nz) + (Dx * dpx + Dy * dpy + Dz * dpz)
    cy = -l * (tkx * bx + tky * by + tkz * bz) + (Dx * dbx + Dy * dby + Dz * dbz)
    gxx = nx + gsx * cx
    gxy = ny + gsy * cx
    gxz = nz + gsz * cx
    gyx = bx + gsx * cy
    gyy = by + gsy * cy
    gyz = bz + gsz * cy
    f = rho - w * Phi * r
    a = w * dPhi * r
    b = w * Phi
    gx = grx - (a * gsx + b * (r_x * gxx + r_y * gyx))
    gy = gry - (a * gsy + b * (r_x * gxy + r_y * gyy))
    gz = grz - (a * gsz + b * (r_x * gxz + r_y * gyz))
    return f, gx, gy, gz


@njit(FIELD_ARRAYS_SIGNATURE, **JIT_POINT_LIBM)
def _field_arrays(qx, qy, qz, m, axis_start, P, S, T, N, t, L, A, sc, scal, expo, reparam, cut, fcut, along):
    """:func:`_field_one` on the arrays of a :class:`MuscleArrays`; ``along``: the axes' chord ranges
    (:func:`axis_along`) or 0 rows. The profile is ``Phi_a(s) sigma(s)``, ``sigma`` the vertex scales ``sc``
    interpolated linearly along each segment (1 for the paper's axis). The arrays travel one by one: the skin
    field's callers hold them in its own struct (``SkinArrays``), not in a :class:`MuscleArrays`."""
    start = axis_start[m]
    end = axis_start[m + 1]
    l = scal[m, SCALAR_LENGTH]
    s, gsx, gsy, gsz, d2 = _project((qx, qy, qz), P, L, t, S, l, start, end, reparam, cut, along)
    if s < 0.0:
        return np.inf, 0.0, 0.0, 0.0
    # the profile at s first: f = rho - w Phi(s) r >= |q - axis| - w max(Phi, 0) v, since h(s) lies on the axis
    # and r <= v (paper eq. 5); where that bound reaches fcut, the frame at s is not needed
    arc = s * l
    k = segment_at(S, L, start, end, arc)
    Phi, dPhi, beta, dbeta = _profile_at(m, s, l, arc, k, S, L, sc, scal, expo)
    w = scal[m, SCALAR_WIDTH]
    v = scal[m, SCALAR_V]
    near = fcut + w * max(Phi, 0.0) * v + SHAPE_SLACK
    if near >= 0.0 and d2 >= near * near:
        return np.inf, 0.0, 0.0, 0.0
    # --- frame at s (core/muscle/field.py: frame_at) ---
    tk = (t[k, 0], t[k, 1], t[k, 2])
    h = (P[k, 0] + (arc - S[k]) * tk[0], P[k, 1] + (arc - S[k]) * tk[1], P[k, 2] + (arc - S[k]) * tk[2])
    frame = _frame_at(_tangent_at(T, k, beta, dbeta), _normal_at(N, A, k, beta, dbeta))
    # --- field (core/muscle/field.py: field) ---
    return _field_at((qx, qy, qz), h, tk, (gsx, gsy, gsz), l, frame, (scal[m, SCALAR_U], v, w, Phi, dPhi))


@njit(inline="always", **JIT_FAST_LIBM)
def _compact(f, gx, gy, gz, R):
    """Thesis eq. (3.1): ``K(f)`` and ``K'(f) grad f``."""
    x = f / R
    if x <= -1.0:
        return 1.0, 0.0, 0.0, 0.0
    if x >= 1.0:
        return 0.0, 0.0, 0.0, 0.0
    x2 = x * x
    k = x * (x2 * (-3.0 / 16.0 * x2 + 5.0 / 8.0) - 15.0 / 16.0) + 0.5
    one = 1.0 - x2
    dk = -15.0 / 16.0 * one * one / R
    return k, dk * gx, dk * gy, dk * gz


@njit(inline="always", **JIT_FAST_LIBM)
def _box_distance2(qx, qy, qz, boxes, m):
    """Squared distance [m^2] from ``q`` to box ``m`` of ``boxes (M, 6)`` (min xyz, max xyz); 0 inside."""
    dx = max(boxes[m, 0] - qx, 0.0, qx - boxes[m, 3])
    dy = max(boxes[m, 1] - qy, 0.0, qy - boxes[m, 4])
    dz = max(boxes[m, 2] - qz, 0.0, qz - boxes[m, 5])
    return dx * dx + dy * dy + dz * dz


@njit(parallel=True, **JIT_FAST_LIBM)
def muscle_field(queries, mu, compact, reparam, out_values, out_grads):
    """Field value and gradient of every muscle of ``mu`` (:class:`MuscleArrays`) at every query point.

    queries: (Q, 3) float64 [m]. compact: bool, apply ``K`` of thesis eq. (3.1) with radius ``R`` (then points
    farther than ``reach + R`` from a muscle's axis box get exactly 0 without evaluation). reparam: bool, use
    Algorithm 1 (``False``: plain orthogonal projection, for comparison only).
    out_values: (Q, M) float64, out_grads: (Q, M, 3) float64. Parallel over the points; the struct's arrays are
    taken out before the loop, which then reads them one by one.
    """
    axis_start = mu.axis_start
    axis_points = mu.axis_points
    axis_cumulative = mu.axis_cumulative
    axis_tangent = mu.axis_tangent
    axis_normal = mu.axis_normal
    seg_tangent = mu.seg_tangent
    seg_length = mu.seg_length
    seg_angle = mu.seg_angle
    axis_scale = mu.axis_scale
    muscle_scalar = mu.muscle_scalar
    muscle_exponent = mu.muscle_exponent
    muscle_bounds = mu.muscle_bounds
    n_muscles = muscle_scalar.shape[0]
    for i in prange(queries.shape[0]):
        qx = queries[i, 0]
        qy = queries[i, 1]
        qz = queries[i, 2]
        for m in range(n_muscles):
            if compact:
                cut = muscle_scalar[m, SCALAR_REACH] + muscle_scalar[m, SCALAR_SUPPORT]
                if _box_distance2(qx, qy, qz, muscle_bounds, m) > cut * cut:
                    out_values[i, m] = 0.0
                    out_grads[i, m, 0] = 0.0
                    out_grads[i, m, 1] = 0.0
                    out_grads[i, m, 2] = 0.0
                    continue
            f, gx, gy, gz = _field_arrays(qx, qy, qz, m, axis_start, axis_points, axis_cumulative,
                                          axis_tangent, axis_normal, seg_tangent, seg_length, seg_angle,
                                          axis_scale, muscle_scalar, muscle_exponent, reparam, np.inf, np.inf,
                                          NO_ALONG)
            if compact:
                f, gx, gy, gz = _compact(f, gx, gy, gz, muscle_scalar[m, SCALAR_SUPPORT])
            out_values[i, m] = f
            out_grads[i, m, 0] = gx
            out_grads[i, m, 1] = gy
            out_grads[i, m, 2] = gz
