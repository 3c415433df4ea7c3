"""Longitudinal and radial profiles of the fusiform muscle (paper §5.1-5.2, thesis §4.3).

* Beta profile, paper eq. (4): ``phi(alpha, beta; s) = s^(alpha-1) (1-s)^(beta-1) / sqrt(B(2 alpha-1, 2 beta-1))``,
  unit L2 norm on ``[0, 1]`` for integer ``alpha, beta`` in ``1..9`` (the paper's dorsal preset uses ``alpha = 1``).
* Activation, paper §5.2: ``Phi_a = ((1-a) phi(a0,b0) + a phi(a1,b1)) / sqrt(F(a))`` with
  ``F(a) = (1-a)^2 + a^2 + 2 a (1-a) K`` and
  ``K = B(a0+a1-1, b0+b1-1) / sqrt(B(2a0-1, 2b0-1) B(2a1-1, 2b1-1))`` (paper App. B, Beta form; the erratum in the
  appendix's intermediate exponent does not affect this form).
* Cross-section, paper eq. (5): ``r(theta) = u v / sqrt(u^2 cos^2 theta + v^2 sin^2 theta)``, ``u = (1-e^2)^(1/4)``,
  ``v = 1/u``; ``int_0^{2 pi} r^2 / 2 dtheta = pi`` (the paper's "= 1" is an erratum,
  docs/formulas.md#errata-and-conventions).
* Volume law, paper eq. (3): ``V = pi w^2 l``, so ``w = sqrt(V / (pi l))``, times the artist's width scale.

Everything here is plain numpy, vectorised over ``s``, from these closed forms. It is the numpy reference of
``kernels/profile.py`` ``profile_scalars`` and ``profile_max`` (:func:`profile_coefficients`, :func:`ellipse_axes`,
:func:`width_from_volume`, :func:`profile_max`) and of the value and first derivative of ``kernels/fusiform.py``
``_monomial`` (:func:`beta_monomial`). The tables ``PHI_NORMALISER`` and ``K_TABLE`` are what the kernels read.
"""
from __future__ import annotations

from math import lgamma, exp, sqrt, pi

import numpy as np

from .. import validation

SHAPE_RANGE = range(validation.SHAPE_MIN, validation.SHAPE_MAX + 1)


def beta_function(x: float, y: float) -> float:
    """Euler Beta function ``B(x, y) = Gamma(x) Gamma(y) / Gamma(x + y)`` for ``x, y > 0``."""
    return exp(lgamma(x) + lgamma(y) - lgamma(x + y))


def phi_norm(alpha: int, beta: int) -> float:
    """``||s^(alpha-1) (1-s)^(beta-1)||_2`` on ``[0, 1]`` ``= sqrt(B(2 alpha - 1, 2 beta - 1))`` (paper eq. 4)."""
    return sqrt(beta_function(2 * alpha - 1, 2 * beta - 1))


def _k_value(a0: int, b0: int, a1: int, b1: int) -> float:
    """``K = B(a0+a1-1, b0+b1-1) / sqrt(B(2a0-1, 2b0-1) B(2a1-1, 2b1-1))`` (paper App. B), unvalidated."""
    return beta_function(a0 + a1 - 1, b0 + b1 - 1) / (phi_norm(a0, b0) * phi_norm(a1, b1))


PHI_NORMALISER = np.array(
    [[phi_norm(a, b) for b in SHAPE_RANGE] for a in SHAPE_RANGE], dtype=np.float64
)
"""``(9, 9) float64``: :func:`phi_norm` tabulated, row ``alpha-1``, column ``beta-1`` (read by the kernels)."""

K_TABLE = np.array(
    [[[[_k_value(a0, b0, a1, b1) for b1 in SHAPE_RANGE] for a1 in SHAPE_RANGE] for b0 in SHAPE_RANGE]
     for a0 in SHAPE_RANGE],
    dtype=np.float64,
)
"""``(9, 9, 9, 9) float64``: ``K(a0, a1, b0, b1)`` indexed ``[a0-1, b0-1, a1-1, b1-1]`` (rest pair, active pair),
read by the kernels."""


def beta_monomial(p: int, q: int, s):
    """``(m(s), m'(s))`` of ``m(s) = s^p (1-s)^q`` for integers ``p, q >= 0`` and ``s`` in ``[0, 1]`` (array or scalar),
    with ``m'(s) = s^(p-1) (1-s)^(q-1) (p (1-s) - q s)`` (``-q (1-s)^(q-1)`` for ``p = 0``, ``p s^(p-1)`` for
    ``q = 0``)."""
    s = np.asarray(s, dtype=np.float64)
    t = 1.0 - s
    value = s ** p * t ** q
    if p == 0 and q == 0:
        slope = np.zeros_like(s)
    elif p == 0:
        slope = -q * t ** (q - 1)
    elif q == 0:
        slope = p * s ** (p - 1)
    else:
        slope = s ** (p - 1) * t ** (q - 1) * (p * t - q * s)
    return value, slope


def phi(alpha: int, beta: int, s) -> np.ndarray:
    """Unit-L2-norm beta profile ``phi(alpha, beta; s)`` (paper eq. 4). ``s``: array of parameters in ``[0, 1]``."""
    alpha = validation.shape_exponent(alpha, "alpha")
    beta = validation.shape_exponent(beta, "beta")
    s = np.clip(np.asarray(s, dtype=np.float64), 0.0, 1.0)
    return s ** (alpha - 1) * (1.0 - s) ** (beta - 1) / phi_norm(alpha, beta)


def k_constant(a0: int, b0: int, a1: int, b1: int) -> float:
    """``K(a0, a1, b0, b1)`` of paper §5.2 (inner product of the rest and active profiles), from the Beta function."""
    a0, b0, a1, b1 = (validation.shape_exponent(v, n) for v, n in
                      ((a0, "alpha_rest"), (b0, "beta_rest"), (a1, "alpha_active"), (b1, "beta_active")))
    return _k_value(a0, b0, a1, b1)


def activation_norm(a0: int, b0: int, a1: int, b1: int, activation: float) -> float:
    """``F(a) = (1-a)^2 + a^2 + 2 a (1-a) K`` (paper §5.2); always >= 1/2 since ``K >= 0``."""
    a = validation.unit_interval(activation, "activation")
    k = k_constant(a0, b0, a1, b1)
    return (1.0 - a) ** 2 + a * a + 2.0 * a * (1.0 - a) * k


def profile_coefficients(a0: int, b0: int, a1: int, b1: int, activation: float) -> tuple[float, float]:
    """Coefficients ``(c0, c1)`` with ``Phi_a(s) = c0 s^(a0-1)(1-s)^(b0-1) + c1 s^(a1-1)(1-s)^(b1-1)``:
    ``c0 = (1-a) / (||phi_0(a0,b0)|| sqrt(F(a)))`` and ``c1 = a / (||phi_0(a1,b1)|| sqrt(F(a)))``."""
    f = activation_norm(a0, b0, a1, b1, activation)
    a = float(activation)
    root = sqrt(f)
    c0 = (1.0 - a) / (phi_norm(int(a0), int(b0)) * root)
    c1 = a / (phi_norm(int(a1), int(b1)) * root)
    return float(c0), float(c1)


def activation_profile(a0: int, b0: int, a1: int, b1: int, activation: float, s) -> np.ndarray:
    """``Phi_a(s)`` (paper §5.2): unit-L2-norm interpolation between rest and active beta profiles."""
    c0, c1 = profile_coefficients(a0, b0, a1, b1, activation)
    return _mix(c0, c1, a0, b0, a1, b1, np.clip(np.asarray(s, dtype=np.float64), 0.0, 1.0))


def _mix(c0, c1, a0, b0, a1, b1, s):
    """``c0 s^(a0-1)(1-s)^(b0-1) + c1 s^(a1-1)(1-s)^(b1-1)`` for ``s`` in ``[0, 1]``."""
    return c0 * s ** (a0 - 1) * (1.0 - s) ** (b0 - 1) + c1 * s ** (a1 - 1) * (1.0 - s) ** (b1 - 1)


def activation_profile_derivative(a0: int, b0: int, a1: int, b1: int, activation: float, s) -> np.ndarray:
    """``dPhi_a/ds`` on ``[0, 1]`` (one-sided at the ends), used by the field gradient."""
    c0, c1 = profile_coefficients(a0, b0, a1, b1, activation)
    s = np.clip(np.asarray(s, dtype=np.float64), 0.0, 1.0)
    return c0 * beta_monomial(a0 - 1, b0 - 1, s)[1] + c1 * beta_monomial(a1 - 1, b1 - 1, s)[1]


PROFILE_MAX_SAMPLES = 33
"""``samples`` of ``kernels/profile.py`` ``profile_max``: evenly spaced samples that bracket ``max_s Phi_a(s)``."""
PROFILE_MAX_NEWTON = 12
"""``newton`` of ``kernels/profile.py`` ``profile_max``: at most this many Newton steps on ``Phi_a'(s) = 0``."""
PROFILE_MAX_GRID = 1025
"""Samples per level of :func:`profile_max` (evenly spaced over the current bracket)."""
PROFILE_MAX_LEVELS = 5
"""Levels of :func:`profile_max`: each narrows the bracket to the two sample spacings around the best sample."""


def profile_max(a0: int, b0: int, a1: int, b1: int, activation: float) -> float:
    """``max_{s in [0,1]} Phi_a(s)``, used for the compact-support radius ``R = max(w u Phi)`` (thesis §6.1).

    ``Phi_a`` is sampled at ``PROFILE_MAX_GRID`` points over ``[0, 1]``, then at as many over the bracket of the
    best sample and its two neighbours, ``PROFILE_MAX_LEVELS`` levels in all (last spacing ``(2 / 1024)^4 / 1024``,
    about ``1.4e-14``); the result is the largest value sampled.
    """
    c0, c1 = profile_coefficients(a0, b0, a1, b1, activation)
    lo, hi, best = 0.0, 1.0, -np.inf
    for _ in range(PROFILE_MAX_LEVELS):
        s = np.linspace(lo, hi, PROFILE_MAX_GRID)
        values = _mix(c0, c1, a0, b0, a1, b1, s)
        i = int(np.argmax(values))
        best = max(best, float(values[i]))
        lo, hi = s[max(i - 1, 0)], s[min(i + 1, PROFILE_MAX_GRID - 1)]
    return best


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
