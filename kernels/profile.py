"""Numba kernel: per-frame profile scalars of many muscles (paper §5.2, eq. 3 and 5; thesis §6.1).

For each muscle, from its shape exponents, activation ``a``, eccentricity ``e``, volume ``V``, width scale and
current axis length ``l``: ``F(a)``, the coefficients ``c0, c1`` of ``Phi_a``, the ellipse semi-axes ``u, v``, the
width ``w = scale sqrt(V / (pi l))``, the support ``R = w u max(Phi_a)`` and the reach ``w v max(Phi_a)``, written
into ``muscle_scalar (M, SCALAR_COUNT)`` of a :class:`kernels.fusiform.MuscleArrays` in the layout of
``kernels/fusiform.py``. The shape constants come as one :class:`ProfileTables`.

The numpy reference of ``profile_scalars`` is ``core/muscle/profile.py`` (``profile_coefficients``,
``ellipse_axes``, ``width_from_volume``, ``profile_max``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .axis import arc_length
from .fusiform import _monomial, volume_width
from .constants import (JIT, SCALAR_C0, SCALAR_C1, SCALAR_LENGTH, SCALAR_REACH, SCALAR_SUPPORT,
                        SCALAR_U, SCALAR_V, SCALAR_WIDTH)


class ProfileTables(NamedTuple):
    """The shape constants the profile kernels read (built once by ``core/muscle/batch.py`` ``profile_tables``)."""

    normaliser: np.ndarray  # (9, 9) float64 ||s^(alpha-1) (1-s)^(beta-1)||_2, row alpha-1, column beta-1
    k_table: np.ndarray     # (9, 9, 9, 9) float64 K, indexed [alpha0-1, beta0-1, alpha1-1, beta1-1]
    samples: int            # evenly spaced samples that bracket max Phi_a
    newton: int             # Newton steps on Phi_a' = 0 inside the bracket


@njit(**JIT)
def profile_max(ea0, eb0, ea1, eb1, c0, c1, samples, newton):
    """``max_{s in [0, 1]} Phi_a(s)`` for ``Phi_a = c0 s^ea0 (1-s)^eb0 + c1 s^ea1 (1-s)^eb1``: the best of
    ``samples`` evenly spaced values, refined by at most ``newton`` Newton steps on ``Phi_a' = 0`` kept inside the
    bracket of the best sample."""
    best = -1.0
    best_i = 0
    for i in range(samples):
        s = i / (samples - 1)
        v0, _, _ = _monomial(ea0, eb0, s)
        v1, _, _ = _monomial(ea1, eb1, s)
        value = c0 * v0 + c1 * v1
        if value > best:
            best = value
            best_i = i
    lo = max(best_i - 1, 0) / (samples - 1)
    hi = min(best_i + 1, samples - 1) / (samples - 1)
    s = best_i / (samples - 1)
    for _ in range(newton):
        _, d0, dd0 = _monomial(ea0, eb0, s)
        _, d1, dd1 = _monomial(ea1, eb1, s)
        d = c0 * d0 + c1 * d1
        dd = c0 * dd0 + c1 * dd1
        if dd >= 0.0:
            break
        step = -d / dd
        s = min(max(s + step, lo), hi)
        if abs(step) < 1e-15:
            break
    v0, _, _ = _monomial(ea0, eb0, s)
    v1, _, _ = _monomial(ea1, eb1, s)
    return max(c0 * v0 + c1 * v1, best)


@njit(**JIT)
def _profile_one(m, exponents, activation, eccentricity, volume, width_scale, length, normaliser, k_table, samples,
                 newton, out_scalar):
    """Row ``m`` of ``out_scalar`` for an axis of length ``length`` [m] (see :func:`profile_scalars`)."""
    ea0 = exponents[m, 0]
    eb0 = exponents[m, 1]
    ea1 = exponents[m, 2]
    eb1 = exponents[m, 3]
    a = activation[m]
    k = k_table[ea0, eb0, ea1, eb1]
    f = (1.0 - a) * (1.0 - a) + a * a + 2.0 * a * (1.0 - a) * k
    root = math.sqrt(f)
    c0 = (1.0 - a) / (normaliser[ea0, eb0] * root)
    c1 = a / (normaliser[ea1, eb1] * root)
    e = eccentricity[m]
    u = (1.0 - e * e) ** 0.25
    v = 1.0 / u
    w = volume_width(volume[m], length, width_scale[m])  # paper eq. 3
    phi_max = profile_max(ea0, eb0, ea1, eb1, c0, c1, samples, newton)
    out_scalar[m, SCALAR_LENGTH] = length
    out_scalar[m, SCALAR_C0] = c0
    out_scalar[m, SCALAR_C1] = c1
    out_scalar[m, SCALAR_WIDTH] = w
    out_scalar[m, SCALAR_U] = u
    out_scalar[m, SCALAR_V] = v
    out_scalar[m, SCALAR_SUPPORT] = w * u * phi_max
    out_scalar[m, SCALAR_REACH] = w * v * phi_max


@njit(parallel=True, **JIT)
def profile_scalars(mu, activation, eccentricity, width_scale, volume, length, tables):
    """Fill ``mu.muscle_scalar (M, SCALAR_COUNT)`` of ``mu`` (:class:`kernels.fusiform.MuscleArrays`), reading
    ``mu.muscle_exponent (M, 4) int64`` (alpha0-1, beta0-1, alpha1-1, beta1-1). ``activation, eccentricity,
    width_scale (M,)``, ``volume (M,)`` [m^3], ``length (M,)`` [m] axis arc lengths, ``tables``
    (:class:`ProfileTables`). Parallel over muscles."""
    exponents = mu.muscle_exponent
    for m in prange(exponents.shape[0]):
        _profile_one(np.int64(m), exponents, activation, eccentricity, volume, width_scale, length[m],
                     tables.normaliser, tables.k_table, tables.samples, tables.newton, mu.muscle_scalar)


@njit(parallel=True, **JIT)
def frame_scalars(mu, points, min_length, activation, eccentricity, width_scale, volume, tables, out_length):
    """:func:`profile_scalars` at the start of a PBD frame into ``mu.muscle_scalar``, with each axis's arc length
    ``l`` taken from ``points (P, 3)`` [m] (CSR ``mu.axis_start (M+1,)``) in the same pass:
    ``out_length[m] = max(l, min_length)``. ``mu``: :class:`kernels.fusiform.MuscleArrays`; ``activation,
    eccentricity, width_scale (M,)``, ``volume (M,)`` [m^3], ``tables``: :class:`ProfileTables`."""
    axis_start = mu.axis_start
    exponents = mu.muscle_exponent
    for m in prange(exponents.shape[0]):
        length = max(arc_length(points, axis_start[m], axis_start[m + 1]), min_length)
        out_length[m] = length
        _profile_one(np.int64(m), exponents, activation, eccentricity, volume, width_scale, length, tables.normaliser,
                     tables.k_table, tables.samples, tables.newton, mu.muscle_scalar)
