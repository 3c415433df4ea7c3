"""Numba kernels of the composition operators (reference and equations: ``core/skin/blend_operators.py``).

``table (n, n, 3) float64``: an arc union tabulated over ``(f1, f2)`` in [0, 1]^2 with its two partials, read
bilinearly. Every function returns ``(G, dG/df1, dG/df2)``.
"""
from __future__ import annotations

from numba import njit

from .constants import JIT_FAST, CONTACT_LOW


@njit(inline="always", **JIT_FAST)
def table_union(table, f1, f2):
    """Bilinear read of a tabulated arc union."""
    n = table.shape[0] - 1
    x = min(max(f1, 0.0), 1.0) * n
    y = min(max(f2, 0.0), 1.0) * n
    i = min(int(x), n - 1)
    j = min(int(y), n - 1)
    tx = x - i
    ty = y - j
    w00 = (1.0 - tx) * (1.0 - ty)
    w10 = tx * (1.0 - ty)
    w01 = (1.0 - tx) * ty
    w11 = tx * ty
    G = w00 * table[i, j, 0] + w10 * table[i + 1, j, 0] + w01 * table[i, j + 1, 0] + w11 * table[i + 1, j + 1, 0]
    Gx = w00 * table[i, j, 1] + w10 * table[i + 1, j, 1] + w01 * table[i, j + 1, 1] + w11 * table[i + 1, j + 1, 1]
    Gy = w00 * table[i, j, 2] + w10 * table[i + 1, j, 2] + w01 * table[i, j + 1, 2] + w11 * table[i + 1, j + 1, 2]
    return G, Gx, Gy


@njit(inline="always", **JIT_FAST)
def max_union(f1, f2):
    if f1 >= f2:
        return f1, 1.0, 0.0
    return f2, 0.0, 1.0


@njit(inline="always", **JIT_FAST)
def _smoothstep(t):
    t = min(max(t, 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


@njit(inline="always", **JIT_FAST)
def controller(cos_theta, cos0, cos1):
    """``alpha = kappa(theta)``: 0 for ``cos theta >= cos0``, 1 for ``cos theta <= cos1``, smoothstep between."""
    return _smoothstep((cos0 - cos_theta) / (cos0 - cos1))


@njit(inline="always", **JIT_FAST)
def contact(clean_table, f1, f2, alpha):
    """Contact operator ``G = (1 - beta) U + beta C`` (``core/skin/blend_operators.contact``)."""
    U, Ux, Uy = table_union(clean_table, f1, f2)
    first = f1 >= f2
    M = f1 if first else f2
    m = f2 if first else f1
    if M <= 0.5 or m <= CONTACT_LOW or alpha <= 0.0:
        return U, Ux, Uy
    span = M - CONTACT_LOW
    s = (m - CONTACT_LOW) / span
    g = s * s * (3.0 - 2.0 * s)
    dg = 6.0 * s * (1.0 - s)
    dM = M - 0.5
    C = 0.5 + dM * (1.0 - g)
    C_M = 1.0 - g + dM * dg * s / span
    C_m = -dM * dg / span
    u = (2.0 * alpha - 2.0 * (m - 0.5)) / alpha
    beta = _smoothstep(u)
    dbeta_dm = 0.0
    if u > 0.0 and u < 1.0:
        dbeta_dm = -6.0 * u * (1.0 - u) * 2.0 / alpha
    G = (1.0 - beta) * U + beta * C
    if first:
        return G, (1.0 - beta) * Ux + beta * C_M, (1.0 - beta) * Uy + beta * C_m + (C - U) * dbeta_dm
    return G, (1.0 - beta) * Ux + beta * C_m + (C - U) * dbeta_dm, (1.0 - beta) * Uy + beta * C_M
