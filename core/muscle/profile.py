"""Longitudinal and radial profiles of the fusiform muscle (paper §5.1-5.2, thesis §4.3).

* Beta profile, paper eq. (4): ``phi(alpha, beta; s) = s^(alpha-1) (1-s)^(beta-1) / sqrt(B(2 alpha-1, 2 beta-1))``,
  unit L2 norm on ``[0, 1]`` for integer ``alpha, beta`` in ``1..9`` (the paper's dorsal preset uses ``alpha = 1``).
* Activation, paper §5.2: ``Phi_a = ((1-a) phi(a0,b0) + a phi(a1,b1)) / sqrt(F(a))`` with
  ``F(a) = (1-a)^2 + a^2 + 2 a (1-a) K`` and
  ``K = B(a0+a1-1, b0+b1-1) / sqrt(B(2a0-1, 2b0-1) B(2a1-1, 2b1-1))`` (paper App. B, Beta form; the erratum in the
  appendix's intermediate exponent does not affect this form).
* Cross-section, paper eq. (5): ``r(theta) = u v / sqrt(u^2 cos^2 theta + v^2 sin^2 theta)``, ``u = (1-e^2)^(1/4)``,
  ``v = 1/u``; ``int_0^{2 pi} r^2 / 2 dtheta = pi`` (the paper's "= 1" is an erratum, see SEED-NOTES §5).
* Volume law, paper eq. (3): ``V = pi w^2 l``, so ``w = sqrt(V / (pi l))``, times the artist's width scale.

Everything here is plain numpy; the numba kernels use the coefficient form returned by :func:`profile_coefficients`.
"""
from __future__ import annotations

from math import lgamma, exp, sqrt, pi

import numpy as np

from .. import validation

SHAPE_RANGE = range(validation.SHAPE_MIN, validation.SHAPE_MAX + 1)


def beta_function(x: float, y: float) -> float:
    """Euler Beta function ``B(x, y) = Gamma(x) Gamma(y) / Gamma(x + y)`` for ``x, y > 0``."""
    return exp(lgamma(x) + lgamma(y) - lgamma(x + y))


def _normaliser(alpha: int, beta: int) -> float:
    return sqrt(beta_function(2 * alpha - 1, 2 * beta - 1))


PHI_NORMALISER = np.array(
    [[_normaliser(a, b) for b in SHAPE_RANGE] for a in SHAPE_RANGE], dtype=np.float64
)
"""``(9, 9) float64``: ``||phi_0(alpha, beta)||_2 = sqrt(B(2 alpha - 1, 2 beta - 1))``, row ``alpha-1``, column ``beta-1``."""


def _k_value(a0: int, b0: int, a1: int, b1: int) -> float:
    return beta_function(a0 + a1 - 1, b0 + b1 - 1) / (_normaliser(a0, b0) * _normaliser(a1, b1))


K_TABLE = np.array(
    [[[[_k_value(a0, b0, a1, b1) for b1 in SHAPE_RANGE] for a1 in SHAPE_RANGE] for b0 in SHAPE_RANGE]
     for a0 in SHAPE_RANGE],
    dtype=np.float64,
)
"""``(9, 9, 9, 9) float64``: ``K(a0, a1, b0, b1)`` indexed ``[a0-1, b0-1, a1-1, b1-1]`` (rest pair, active pair)."""


def phi(alpha: int, beta: int, s) -> np.ndarray:
    """Unit-L2-norm beta profile ``phi(alpha, beta; s)`` (paper eq. 4). ``s``: array of parameters in ``[0, 1]``."""
    alpha = validation.shape_exponent(alpha, "alpha")
    beta = validation.shape_exponent(beta, "beta")
    s = np.clip(np.asarray(s, dtype=np.float64), 0.0, 1.0)
    return s ** (alpha - 1) * (1.0 - s) ** (beta - 1) / PHI_NORMALISER[alpha - 1, beta - 1]


def k_constant(a0: int, b0: int, a1: int, b1: int) -> float:
    """Tabulated ``K(a0, a1, b0, b1)`` of paper §5.2 (inner product of the rest and active profiles)."""
    a0, b0, a1, b1 = (validation.shape_exponent(v, n) for v, n in
                      ((a0, "alpha_rest"), (b0, "beta_rest"), (a1, "alpha_active"), (b1, "beta_active")))
    return float(K_TABLE[a0 - 1, b0 - 1, a1 - 1, b1 - 1])


def activation_norm(a0: int, b0: int, a1: int, b1: int, activation: float) -> float:
    """``F(a) = (1-a)^2 + a^2 + 2 a (1-a) K`` (paper §5.2); always >= 1/2 since ``K >= 0``."""
    a = validation.unit_interval(activation, "activation")
    k = k_constant(a0, b0, a1, b1)
    return (1.0 - a) ** 2 + a * a + 2.0 * a * (1.0 - a) * k


def profile_coefficients(a0: int, b0: int, a1: int, b1: int, activation: float) -> tuple[float, float]:
    """Coefficients ``(c0, c1)`` with ``Phi_a(s) = c0 s^(a0-1)(1-s)^(b0-1) + c1 s^(a1-1)(1-s)^(b1-1)``.

    ``c0 = (1-a) / (||phi_0(a0,b0)|| sqrt(F(a)))`` and ``c1 = a / (||phi_0(a1,b1)|| sqrt(F(a)))``.
    This is the form the kernels evaluate: two monomial products, no table look-up per point.
    """
    f = activation_norm(a0, b0, a1, b1, activation)
    a = float(activation)
    root = sqrt(f)
    c0 = (1.0 - a) / (PHI_NORMALISER[int(a0) - 1, int(b0) - 1] * root)
    c1 = a / (PHI_NORMALISER[int(a1) - 1, int(b1) - 1] * root)
    return float(c0), float(c1)


def activation_profile(a0: int, b0: int, a1: int, b1: int, activation: float, s) -> np.ndarray:
    """``Phi_a(s)`` (paper §5.2): unit-L2-norm interpolation between rest and active beta profiles."""
    c0, c1 = profile_coefficients(a0, b0, a1, b1, activation)
    s = np.clip(np.asarray(s, dtype=np.float64), 0.0, 1.0)
    return c0 * s ** (a0 - 1) * (1.0 - s) ** (b0 - 1) + c1 * s ** (a1 - 1) * (1.0 - s) ** (b1 - 1)


def activation_profile_derivative(a0: int, b0: int, a1: int, b1: int, activation: float, s) -> np.ndarray:
    """``dPhi_a/ds`` on ``[0, 1]`` (one-sided at the ends), used by the field gradient."""
    c0, c1 = profile_coefficients(a0, b0, a1, b1, activation)
    s = np.clip(np.asarray(s, dtype=np.float64), 0.0, 1.0)
    return c0 * _mono(a0 - 1, b0 - 1, s)[1] + c1 * _mono(a1 - 1, b1 - 1, s)[1]


PROFILE_MAX_SAMPLES = 33
"""Coarse samples used to bracket ``max_s Phi_a(s)`` before Newton's method refines it."""
PROFILE_MAX_NEWTON = 12
"""Newton steps on ``Phi_a'(s) = 0`` (quadratic convergence: machine precision in 3-5 steps)."""


def profile_max(a0: int, b0: int, a1: int, b1: int, activation: float) -> float:
    """``max_{s in [0,1]} Phi_a(s)``, used for the compact-support radius ``R = max(w u Phi)`` (thesis §6.1).

    The best of ``PROFILE_MAX_SAMPLES`` evenly spaced samples brackets the peak (``Phi_a`` has at most two bumps,
    both far wider than the spacing); Newton's method on ``Phi_a' = 0``, kept inside the bracket, refines it.
    """
    c0, c1 = profile_coefficients(a0, b0, a1, b1, activation)
    e = (a0 - 1, b0 - 1, a1 - 1, b1 - 1)
    n = PROFILE_MAX_SAMPLES
    values = [c0 * _mono(e[0], e[1], i / (n - 1))[0] + c1 * _mono(e[2], e[3], i / (n - 1))[0] for i in range(n)]
    i = int(np.argmax(values))
    best = values[i]
    lo, hi = max(i - 1, 0) / (n - 1), min(i + 1, n - 1) / (n - 1)
    s = i / (n - 1)
    for _ in range(PROFILE_MAX_NEWTON):
        _, d0, dd0 = _mono(e[0], e[1], s)
        _, d1, dd1 = _mono(e[2], e[3], s)
        d, dd = c0 * d0 + c1 * d1, c0 * dd0 + c1 * dd1
        if dd >= 0.0:
            break
        step = -d / dd
        s = min(max(s + step, lo), hi)
        if abs(step) < 1e-15:
            break
    v = c0 * _mono(e[0], e[1], s)[0] + c1 * _mono(e[2], e[3], s)[0]
    return float(max(v, best))


def _mono(ea: int, eb: int, s):
    """``s^ea (1-s)^eb`` with its first and second derivatives, no negative powers (scalars or arrays)."""
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


def ellipse_axes(e: float) -> tuple[float, float]:
    """Semi-axes ``(u, v)`` of the unit-area cross-section ellipse: ``u = (1-e^2)^(1/4)``, ``v = 1/u`` (paper §5.2)."""
    e = validation.eccentricity(e)
    u = (1.0 - e * e) ** 0.25
    return u, 1.0 / u


def cross_section(e: float, theta) -> np.ndarray:
    """``r(theta)`` of paper eq. (5); ``theta`` in radians from the axis normal (the ``v`` = long semi-axis)."""
    u, v = ellipse_axes(e)
    theta = np.asarray(theta, dtype=np.float64)
    return u * v / np.sqrt(u * u * np.cos(theta) ** 2 + v * v * np.sin(theta) ** 2)


def width_from_volume(volume: float, length: float, width_scale: float = 1.0) -> float:
    """Volume law, paper eq. (3): ``w = width_scale * sqrt(V / (pi l))``. ``volume`` [m^3], ``length`` [m] -> [m]."""
    volume = validation.positive(volume, "muscle volume")
    length = validation.positive(length, "muscle axis length")
    width_scale = validation.positive(width_scale, "width scale")
    return width_scale * sqrt(volume / (pi * length))


def volume_from_width(width: float, length: float) -> float:
    """Inverse of the volume law: ``V = pi w^2 l`` (paper eq. 3), [m^3]."""
    width = validation.positive(width, "muscle width")
    length = validation.positive(length, "muscle axis length")
    return pi * width * width * length
