"""Numba kernel: the surfaces of many muscles as rings along their axes, for drawing (paper eq. 2 and 5).

Ring ``j`` of muscle ``m`` sits at the axis parameter ``s[j]``; its vertex ``k`` at the ellipse's parametric angle
``a_k = 2 pi k / sides`` is ``h(s) + w Phi(s) (v cos(a_k) n(s) + u sin(a_k) b(s))``: the axis point, the slerped
control normal made orthogonal to the tangent and the binormal of ``core/muscle/field.py`` ``frame_at``, the width,
the profile and the cross-section's half-axes of ``MuscleArrays.muscle_scalar``. Each muscle's block of
``len(s) * sides + 2`` vertices ends with the axis's two end points (the caps' apexes). The normal written beside
each ring vertex is the ellipse's outward normal in the ring's plane, ``(u cos(a_k) n + v sin(a_k) b)`` normalised.

The numpy reference of ``surface_rings`` is ``core/muscle/surface.py`` ``muscle_surface`` (``snap=False``).
"""
from __future__ import annotations

import math

from numba import njit

from .constants import (JIT, MIN_SEGMENT_LENGTH, SCALAR_C0, SCALAR_C1, SCALAR_LENGTH, SCALAR_U, SCALAR_V,
                        SCALAR_WIDTH, SLERP_SMALL_ANGLE)
from .fusiform import _monomial, segment_at


@njit(inline="always", **JIT)
def _ring_frame(mu, m, sj):
    """Muscle ``m``'s axis point ``h(s)``, normal ``n(s)`` (the slerped control normal made orthogonal to the
    tangent) and binormal ``b(s)`` at ``sj`` (module docstring): three 3-tuples."""
    P, S_cum, T, N, t, L, A = (mu.axis_points, mu.axis_cumulative, mu.axis_tangent, mu.axis_normal, mu.seg_tangent,
                               mu.seg_length, mu.seg_angle)
    arc = sj * mu.muscle_scalar[m, SCALAR_LENGTH]
    k = segment_at(S_cum, L, mu.axis_start[m], mu.axis_start[m + 1], arc)
    Lk = max(L[k], MIN_SEGMENT_LENGTH)
    beta = min(max((arc - S_cum[k]) / Lk, 0.0), 1.0)
    hx = P[k, 0] + (arc - S_cum[k]) * t[k, 0]
    hy = P[k, 1] + (arc - S_cum[k]) * t[k, 1]
    hz = P[k, 2] + (arc - S_cum[k]) * t[k, 2]
    Mx = (1.0 - beta) * T[k, 0] + beta * T[k + 1, 0]
    My = (1.0 - beta) * T[k, 1] + beta * T[k + 1, 1]
    Mz = (1.0 - beta) * T[k, 2] + beta * T[k + 1, 2]
    Mn = math.sqrt(Mx * Mx + My * My + Mz * Mz)
    Tx, Ty, Tz = Mx / Mn, My / Mn, Mz / Mn
    om = A[k]
    if om < SLERP_SMALL_ANGLE:
        nx = (1.0 - beta) * N[k, 0] + beta * N[k + 1, 0]
        ny = (1.0 - beta) * N[k, 1] + beta * N[k + 1, 1]
        nz = (1.0 - beta) * N[k, 2] + beta * N[k + 1, 2]
    else:
        so = math.sin(om)
        fa = math.sin((1.0 - beta) * om) / so
        fb = math.sin(beta * om) / so
        nx = fa * N[k, 0] + fb * N[k + 1, 0]
        ny = fa * N[k, 1] + fb * N[k + 1, 1]
        nz = fa * N[k, 2] + fb * N[k + 1, 2]
    nT = nx * Tx + ny * Ty + nz * Tz
    nx -= nT * Tx
    ny -= nT * Ty
    nz -= nT * Tz
    nn = math.sqrt(nx * nx + ny * ny + nz * nz)
    nx /= nn
    ny /= nn
    nz /= nn
    bx = Ty * nz - Tz * ny
    by = Tz * nx - Tx * nz
    bz = Tx * ny - Ty * nx
    return (hx, hy, hz), (nx, ny, nz), (bx, by, bz)


@njit(inline="always", **JIT)
def _write_ring(out_vertices, out_normals, first, frame, radius, u, v, cos_a, sin_a):
    """One ring's vertices and normals from row ``first`` on: ``frame = (h, n, b)`` (:func:`_ring_frame`), the
    surface's ``radius = w max(Phi, 0)`` [m] there and the cross-section's half-axes ``u``, ``v``."""
    (hx, hy, hz), (nx, ny, nz), (bx, by, bz) = frame
    for q in range(cos_a.shape[0]):
        ex = v * cos_a[q]
        ey = u * sin_a[q]
        i = first + q
        out_vertices[i, 0] = hx + radius * (ex * nx + ey * bx)
        out_vertices[i, 1] = hy + radius * (ex * ny + ey * by)
        out_vertices[i, 2] = hz + radius * (ex * nz + ey * bz)
        gx = u * cos_a[q] * nx + v * sin_a[q] * bx
        gy = u * cos_a[q] * ny + v * sin_a[q] * by
        gz = u * cos_a[q] * nz + v * sin_a[q] * bz
        g = math.sqrt(gx * gx + gy * gy + gz * gz)
        out_normals[i, 0] = gx / g
        out_normals[i, 1] = gy / g
        out_normals[i, 2] = gz / g


@njit(**JIT)
def surface_rings(mu, s, cos_a, sin_a, out_vertices, out_normals):
    """Write every muscle's ring vertices and apexes (module docstring).

    mu: ``kernels.fusiform.MuscleArrays`` (``M`` muscles); s: ``(R,)`` float64 ring parameters in [0, 1];
    cos_a, sin_a: ``(S,)`` float64 of the ring angles; out_vertices, out_normals: ``(M (R S + 2), 3)`` float32
    [m] and unit (an apex gets the axis direction away from the muscle).
    """
    R = s.shape[0]
    S = cos_a.shape[0]
    block = R * S + 2
    P, T = mu.axis_points, mu.axis_tangent
    scal, expo = mu.muscle_scalar, mu.muscle_exponent
    for m in range(scal.shape[0]):
        start = mu.axis_start[m]
        end = mu.axis_start[m + 1]
        w = scal[m, SCALAR_WIDTH]
        u = scal[m, SCALAR_U]
        v = scal[m, SCALAR_V]
        c0 = scal[m, SCALAR_C0]
        c1 = scal[m, SCALAR_C1]
        base = m * block
        for j in range(R):
            sj = s[j]
            frame = _ring_frame(mu, m, sj)
            Phi = c0 * _monomial(expo[m, 0], expo[m, 1], sj)[0] + c1 * _monomial(expo[m, 2], expo[m, 3], sj)[0]
            _write_ring(out_vertices, out_normals, base + j * S, frame, w * max(Phi, 0.0), u, v, cos_a, sin_a)
        for e in range(2):
            p = start if e == 0 else end - 1
            sign = -1.0 if e == 0 else 1.0
            i = base + R * S + e
            for c in range(3):
                out_vertices[i, c] = P[p, c]
                out_normals[i, c] = sign * T[p, c]
