"""Composition operators on compact-support fields (thesis §2.3; Vaillant et al. 2014; Canezin et al. 2013).

Fields are in [0, 1], 0.5 on the surface, larger inside, 0 outside their support. Every operator ``G(f1, f2)``
keeps ``G(f, 0) = G(0, f) = f`` (so a part far from another is unchanged and bounding boxes can prune exactly),
stays in [0, 1] and comes with its partial derivatives; the composed gradient is
``dG/df1 grad f1 + dG/df2 grad f2``.

**Arc unions** (``max``, ``clean``, ``blend``). Each is defined by its iso-curves: the iso-curve of level ``v`` is
the two lines ``f1 = v`` and ``f2 = v`` of the max union, with the corner replaced by a circular arc of radius
``r(v)`` centred on the diagonal at ``c(v) = v - r(v)`` and tangent to both lines (Barthe et al. 2004 build their
operators the same way). The radius profile decides the operator:

* ``max``: ``r = 0``: the 0.5-iso is the union, gradient discontinuous on ``f1 = f2``.
* ``clean`` (clean union): ``r(v) = 2 rho v (1/2 - v)`` below 0.5 and ``rho (v - 1/2)(1 - v)`` above, zero at
  ``v = 0, 1/2, 1``: the 0.5-iso is exactly the union of the two surfaces, every other iso-curve is rounded, so the
  field is C1 everywhere except at the single point ``f1 = f2 = 0.5``; arcs above 0.5 stay in ``f1, f2 >= 0.5``.
* ``blend`` (the detail operator's union): ``r(v) = rho v (1 - v)``: the 0.5-iso itself is rounded, so a muscle
  rising out of its part's HRBF meets it with a smooth fillet instead of a crease.

``G`` is tabulated on a ``(n, n)`` grid of ``(f1, f2)`` with its two partials (found by bisection on the level and
central differences, ``generate_table``; deterministic, 3 x 129 x 129 float64 per operator, generated in well under a
second when first used and kept in memory) and read bilinearly (``kernels/blend.py``).

**Contact operator** (in the spirit of Vaillant et al. 2014). With ``M = max(f1, f2)``, ``m = min(f1, f2)``:

* full contact ``C``: inside the larger field's volume (``M > 0.5``) and close to the other's (``m > CONTACT_LOW
  = 0.3``) ``C = 1/2 + (M - 1/2)(1 - g(s))``, ``s = (m - CONTACT_LOW) / (M - CONTACT_LOW)``, ``g(s) = s^2 (3 - 2 s)``;
  elsewhere ``C`` is the clean union. So ``C = 0.5`` on the diagonal ``f1 = f2 > 0.5``: the contact surface where
  both fields are equal, a crease; ``C`` joins the clean union with matching value and gradient at
  ``m = CONTACT_LOW`` (``g(0) = g'(0) = 0``) and takes its value 0.5 on the union's surface ``M = 0.5``. On the
  surface ``M = 0.5`` the gradient has a kink where ``m > CONTACT_LOW`` (the value is continuous and the 0.5-iso is
  the union there).
* the controller ``alpha = kappa(theta)`` in [0, 1] from the angle ``theta`` between the two gradients:
  0 below ``theta0``, 1 above ``theta1``, smoothstep in ``cos theta`` between (defaults 80 and 110 degrees, around
  pi/2 as in thesis Fig. 2.16): gradients that oppose each other mean two skin sheets pressed together.
* ``G = (1 - beta) U + beta C`` with ``U`` the clean union and ``beta(alpha, m)`` = 1 while the interpenetration
  depth ``tau = 2 (m - 1/2)`` (0 .. 1) is below ``alpha``, smoothstep down to 0 at ``tau = 2 alpha``: small
  ``alpha`` makes a short contact surface that opens into the union, ``alpha = 1`` the full contact. ``G`` stays
  in [0.5, 1] inside either volume and equals the union outside both, so ``G(f, 0) = f``.

Like Gourmel et al. and the published implementations, the gradient treats ``alpha`` as locally constant (its
derivative would need the fields' Hessians): exact where the controller is saturated (0 or 1).

**Detail operator** (Canezin et al. 2013's purpose, our construction; their formula is not in the seeds): muscles
of a part are first clean-unioned, then joined to the part's HRBF with the ``blend`` arc union: monotone in both
fields (``dG/df1, dG/df2 >= 0``, no inward gradient), ``G(h, 0) = h`` (no change where there is no muscle), and the
fillet where a muscle leaves the HRBF is smooth. A critical point of the result needs exactly opposed gradients of
equal weight.
"""
from __future__ import annotations

import numpy as np

from ...kernels.constants import CONTACT_LOW

TABLE_SIZE = 129
"""Nodes per side of the (f1, f2) tables; 129 puts a node on 0.5."""
CLEAN_RHO = 1.0
BLEND_RHO = 1.0
OPERATORS = ("max", "clean", "blend")
CONTACT_THETA0 = np.radians(80.0)
CONTACT_THETA1 = np.radians(110.0)


def arc_radius(op: str, v):
    """``r(v)`` of the arc union ``op`` (module docstring) for levels ``v`` in [0, 1]."""
    v = np.asarray(v, dtype=np.float64)
    if op == "max":
        return np.zeros_like(v)
    if op == "clean":
        return np.where(v <= 0.5, 2.0 * CLEAN_RHO * v * (0.5 - v), CLEAN_RHO * (v - 0.5) * (1.0 - v))
    if op == "blend":
        return BLEND_RHO * v * (1.0 - v)
    raise ValueError(f"unknown union operator {op!r}; use one of {', '.join(OPERATORS)}.")


def _below(op, x, y, v):
    """True where ``(x, y)`` lies in the sublevel set ``{G <= v}`` of the arc union."""
    M = np.maximum(x, y)
    m = np.minimum(x, y)
    r = arc_radius(op, v)
    c = v - r
    in_arc = (M - c) ** 2 + (m - c) ** 2 <= r * r
    return (M <= v) & ((m <= c) | in_arc)


def arc_union(op: str, f1, f2, iterations: int = 60):
    """Exact arc union value by bisection on the level (numpy; used to build the tables and to test them)."""
    x = np.clip(np.asarray(f1, dtype=np.float64), 0.0, 1.0)
    y = np.clip(np.asarray(f2, dtype=np.float64), 0.0, 1.0)
    lo = np.maximum(x, y)
    hi = np.ones_like(lo)
    done = _below(op, x, y, lo)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        inside = _below(op, x, y, mid)
        hi = np.where(inside, mid, hi)
        lo = np.where(inside, lo, mid)
    return np.where(done, np.maximum(x, y), hi)


def generate_table(op: str, size: int = TABLE_SIZE, step: float = 1e-6) -> np.ndarray:
    """``(size, size, 3)`` float64: ``G``, ``dG/df1``, ``dG/df2`` at ``f1 = i/(size-1)``, ``f2 = j/(size-1)``."""
    t = np.linspace(0.0, 1.0, size)
    x, y = np.meshgrid(t, t, indexing="ij")
    G = arc_union(op, x, y)
    xp, xm = np.minimum(x + step, 1.0), np.maximum(x - step, 0.0)
    yp, ym = np.minimum(y + step, 1.0), np.maximum(y - step, 0.0)
    Gx = (arc_union(op, xp, y) - arc_union(op, xm, y)) / (xp - xm)
    Gy = (arc_union(op, x, yp) - arc_union(op, x, ym)) / (yp - ym)
    return np.stack([G, Gx, Gy], axis=-1)


_TABLES: dict = {}


def table(op: str) -> np.ndarray:
    """The tabulated arc union ``op``, generated once per process."""
    if op not in _TABLES:
        _TABLES[op] = np.ascontiguousarray(generate_table(op))
    return _TABLES[op]


def lookup(tab, f1, f2):
    """Numpy reference of the bilinear table read: ``G, dG/df1, dG/df2`` (arrays like ``f1``)."""
    n = tab.shape[0] - 1
    x = np.clip(np.asarray(f1, dtype=np.float64), 0.0, 1.0) * n
    y = np.clip(np.asarray(f2, dtype=np.float64), 0.0, 1.0) * n
    i = np.minimum(np.floor(x).astype(np.int64), n - 1)
    j = np.minimum(np.floor(y).astype(np.int64), n - 1)
    tx = (x - i)[..., None]
    ty = (y - j)[..., None]
    out = ((1 - tx) * (1 - ty) * tab[i, j] + tx * (1 - ty) * tab[i + 1, j] + (1 - tx) * ty * tab[i, j + 1]
           + tx * ty * tab[i + 1, j + 1])
    return out[..., 0], out[..., 1], out[..., 2]


def smoothstep(t):
    t = np.clip(t, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def controller(cos_theta, theta0: float = CONTACT_THETA0, theta1: float = CONTACT_THETA1):
    """``alpha = kappa(theta)`` from ``cos theta`` of the two gradients: 0 (union) .. 1 (contact)."""
    c0, c1 = np.cos(theta0), np.cos(theta1)
    return smoothstep((c0 - np.asarray(cos_theta, dtype=np.float64)) / (c0 - c1))


def contact(f1, f2, alpha, clean_table=None):
    """Numpy reference of the contact operator: ``G, dG/df1, dG/df2`` for fields ``f1, f2`` and ``alpha``."""
    tab = table("clean") if clean_table is None else clean_table
    f1 = np.asarray(f1, dtype=np.float64)
    f2 = np.asarray(f2, dtype=np.float64)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), f1.shape)
    U, Ux, Uy = lookup(tab, f1, f2)
    first = f1 >= f2
    M = np.where(first, f1, f2)
    m = np.where(first, f2, f1)
    both = (M > 0.5) & (m > CONTACT_LOW)
    span = np.where(both, M - CONTACT_LOW, 1.0)
    s = np.where(both, (m - CONTACT_LOW) / span, 0.0)
    g = s * s * (3.0 - 2.0 * s)
    dg = 6.0 * s * (1.0 - s)
    C = np.where(both, 0.5 + (M - 0.5) * (1.0 - g), U)
    # partials of C with respect to M and m (in the contact region)
    C_M = 1.0 - g + (M - 0.5) * dg * s / span
    C_m = -(M - 0.5) * dg / span
    Cx = np.where(both, np.where(first, C_M, C_m), Ux)
    Cy = np.where(both, np.where(first, C_m, C_M), Uy)
    tau = 2.0 * (m - 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(alpha > 0.0, (2.0 * alpha - tau) / np.where(alpha > 0.0, alpha, 1.0), 0.0)
    beta = np.where(alpha > 0.0, smoothstep(u), 0.0)
    dbeta_dm = np.where((alpha > 0.0) & (u > 0.0) & (u < 1.0),
                        -6.0 * u * (1.0 - u) * 2.0 / np.where(alpha > 0.0, alpha, 1.0), 0.0)
    G = (1.0 - beta) * U + beta * C
    Gx = (1.0 - beta) * Ux + beta * Cx + np.where(first, 0.0, (C - U) * dbeta_dm)
    Gy = (1.0 - beta) * Uy + beta * Cy + np.where(first, (C - U) * dbeta_dm, 0.0)
    return G, Gx, Gy
