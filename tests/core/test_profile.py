"""Closed forms of the longitudinal and radial profiles (paper §5.2, docs/formulas.md#muscle-field)."""
import itertools
from fractions import Fraction
from math import factorial, sqrt

import numpy as np
import pytest

from implicit_muscles.core.muscle import profile as P

NORM_TOL = 1e-9
"""Absolute tolerance on int_0^1 Phi_a^2 = 1 over every shape pair and activation."""
TABLE_TOL = 1e-14
"""Relative tolerance of the tabulated normalisers and K against exact rational Beta functions (a few ulp)."""
PROFILE_MAX_TOL = 1e-13
"""Relative tolerance of ``profile_max`` against the closed-form maximum of a single beta profile."""

SHAPES = list(P.SHAPE_RANGE)


def _gauss_legendre(n=64):
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1.0), 0.5 * w


S_GL, W_GL = _gauss_legendre(64)
"""64-point Gauss-Legendre on [0, 1]: exact for polynomials of degree <= 127 (Phi_a^2 has degree <= 32)."""


def test_normaliser_table_matches_quadrature():
    for a, b in itertools.product(SHAPES, SHAPES):
        phi0 = S_GL ** (a - 1) * (1 - S_GL) ** (b - 1)
        assert P.PHI_NORMALISER[a - 1, b - 1] == pytest.approx(np.sqrt(np.sum(W_GL * phi0 ** 2)), rel=1e-13)


def _beta_exact(m: int, n: int) -> Fraction:
    """``B(m, n) = (m-1)! (n-1)! / (m+n-1)!`` for whole ``m, n >= 1``, exact."""
    return Fraction(factorial(m - 1) * factorial(n - 1), factorial(m + n - 1))


def test_tables_match_exact_beta_functions():
    # ||s^(a-1)(1-s)^(b-1)||^2 = B(2a-1, 2b-1); K = B(a0+a1-1, b0+b1-1) / sqrt(B(2a0-1, 2b0-1) B(2a1-1, 2b1-1))
    for a, b in itertools.product(SHAPES, SHAPES):
        exact = sqrt(_beta_exact(2 * a - 1, 2 * b - 1))
        assert P.PHI_NORMALISER[a - 1, b - 1] == pytest.approx(exact, rel=TABLE_TOL)
    for a0, b0, a1, b1 in itertools.product(SHAPES, repeat=4):
        ratio = _beta_exact(a0 + a1 - 1, b0 + b1 - 1) ** 2 / (_beta_exact(2 * a0 - 1, 2 * b0 - 1)
                                                               * _beta_exact(2 * a1 - 1, 2 * b1 - 1))
        assert P.K_TABLE[a0 - 1, b0 - 1, a1 - 1, b1 - 1] == pytest.approx(sqrt(ratio), rel=TABLE_TOL)


def test_k_table_matches_quadrature():
    for a0, b0, a1, b1 in itertools.product(SHAPES, repeat=4):
        quad = np.sum(W_GL * P.phi(a0, b0, S_GL) * P.phi(a1, b1, S_GL))
        assert P.K_TABLE[a0 - 1, b0 - 1, a1 - 1, b1 - 1] == pytest.approx(quad, rel=1e-11, abs=1e-14)


@pytest.mark.parametrize("a", [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
def test_activation_profile_has_unit_norm_for_every_pair(a):
    worst = 0.0
    for a0, b0, a1, b1 in itertools.product(SHAPES, repeat=4):
        values = P.activation_profile(a0, b0, a1, b1, a, S_GL)
        worst = max(worst, abs(np.sum(W_GL * values ** 2) - 1.0))
    assert worst < NORM_TOL


def test_activation_norm_formula_equals_integral():
    # F(a) = (1-a)^2 + a^2 + 2a(1-a)K equals the integral of the unnormalised interpolation (paper §5.2)
    for a0, b0, a1, b1 in [(3, 3, 4, 7), (1, 3, 9, 2), (2, 3, 4, 8)]:
        for a in np.linspace(0, 1, 11):
            mix = (1 - a) * P.phi(a0, b0, S_GL) + a * P.phi(a1, b1, S_GL)
            assert P.activation_norm(a0, b0, a1, b1, a) == pytest.approx(np.sum(W_GL * mix ** 2), rel=1e-12)


def test_profile_derivative_matches_finite_differences():
    s = np.linspace(0.01, 0.99, 97)
    h = 1e-6
    for a0, b0, a1, b1, a in [(3, 3, 4, 7, 0.3), (1, 2, 9, 9, 0.8), (2, 1, 5, 3, 0.5)]:
        fd = (P.activation_profile(a0, b0, a1, b1, a, s + h) - P.activation_profile(a0, b0, a1, b1, a, s - h)) / (2 * h)
        np.testing.assert_allclose(P.activation_profile_derivative(a0, b0, a1, b1, a, s), fd, rtol=1e-6, atol=1e-6)


def test_profile_max_matches_dense_sampling():
    for a0, b0, a1, b1, a in [(3, 3, 4, 7, 0.0), (3, 3, 4, 7, 0.6), (1, 3, 1, 3, 1.0), (9, 9, 2, 2, 0.5)]:
        dense = P.activation_profile(a0, b0, a1, b1, a, np.linspace(0, 1, 200001)).max()
        assert P.profile_max(a0, b0, a1, b1, a) == pytest.approx(dense, rel=1e-9)
        assert P.profile_max(a0, b0, a1, b1, a) >= dense - 1e-15  # the true maximum, not a sample below it


def test_profile_max_of_a_single_profile_is_its_closed_form():
    # at a = 0 (a = 1) Phi_a is phi(alpha, beta), whose maximum is at s* = (alpha-1) / (alpha+beta-2)
    for alpha, beta in itertools.product(SHAPES, SHAPES):
        s_star = (alpha - 1) / (alpha + beta - 2) if alpha + beta > 2 else 0.0
        exact = s_star ** (alpha - 1) * (1 - s_star) ** (beta - 1) / sqrt(_beta_exact(2 * alpha - 1, 2 * beta - 1))
        assert P.profile_max(alpha, beta, 5, 5, 0.0) == pytest.approx(exact, rel=PROFILE_MAX_TOL)
        assert P.profile_max(5, 5, alpha, beta, 1.0) == pytest.approx(exact, rel=PROFILE_MAX_TOL)


def test_beta_monomial_derivative_matches_finite_differences():
    s = np.linspace(0.0, 1.0, 101)
    h = 1e-6
    for p, q in itertools.product(range(9), repeat=2):
        value, slope = P.beta_monomial(p, q, s)
        np.testing.assert_array_equal(value, s ** p * (1 - s) ** q)
        inner = s[1:-1]
        fd = ((inner + h) ** p * (1 - inner - h) ** q - (inner - h) ** p * (1 - inner + h) ** q) / (2 * h)
        np.testing.assert_allclose(slope[1:-1], fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("e", [0.0, 0.3, 0.8, 0.95, 0.99])
def test_cross_section_area_is_pi(e):
    # int_0^{2pi} r^2 / 2 dtheta = pi u v = pi; the paper's "= 1" is an erratum
    # (docs/formulas.md#errata-and-conventions)
    theta = np.linspace(0, 2 * np.pi, 200001)
    r = P.cross_section(e, theta)
    area = np.trapz(r ** 2 / 2, theta)
    assert area == pytest.approx(np.pi, rel=1e-9)
    u, v = P.ellipse_axes(e)
    assert u * v == pytest.approx(1.0, rel=1e-15)
    assert P.cross_section(e, 0.0) == pytest.approx(v)  # long semi-axis along the axis normal


def test_volume_law_round_trip():
    w = P.width_from_volume(P.volume_from_width(0.03, 0.3), 0.3)
    assert w == pytest.approx(0.03, rel=1e-15)
    # shortening by half inflates the width by sqrt(2) (paper §5.2, thesis eq. 4.3)
    assert P.width_from_volume(P.volume_from_width(0.03, 0.3), 0.15) == pytest.approx(0.03 * np.sqrt(2))
    assert P.width_from_volume(P.volume_from_width(0.03, 0.3), 0.3, 1.3) == pytest.approx(0.039)
