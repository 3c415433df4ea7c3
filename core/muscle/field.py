"""Plain-numpy reference of the fusiform muscle field ``f_M`` and its gradient (paper §5.1, eq. 1-2, Algorithm 1).

``f_M(q) = |q - h(q)| - R(q)``, ``R(q) = w Phi_a(s(q)) r(theta(q))``, where ``h = C(s(q))`` is the reparameterised
projection of Algorithm 1. One query point at a time, vectorised over the axis segments. It is the numpy
reference of ``kernels/fusiform.py`` ``muscle_field`` (:func:`evaluate`) and ``_field_one`` (:func:`field`).

Projection (Algorithm 1): project ``q`` on every segment ``[P_j, P_{j+1}]`` -> ``h_j``, ``s_j``; let ``j*`` be the
nearest. If ``h_{j*}`` is inside its segment and so is the projection on a neighbouring segment, ``q`` lies in the
inner region of the dihedral angle at their shared vertex ``V``, and

    s(q) = (s_i cot(lambda_i) + s_{i+1} cot(lambda_{i+1})) / (cot(lambda_i) + cot(lambda_{i+1}))

with ``lambda_i`` the angle at ``V`` between ``q - V`` and segment ``i`` (towards ``P_i``) and ``lambda_{i+1}`` the
angle between ``q - V`` and segment ``i+1`` (towards ``P_{i+2}``); ``s`` is continuous at both borders of the region.
The cotangents are evaluated as ``cos/sin`` with the common ``sin`` factors cancelled:
``w_i = (d . -t_i) |d x t_{i+1}|``, ``w_{i+1} = (d . t_{i+1}) |d x t_i|``,
``s = (w_i s_i + w_{i+1} s_{i+1}) / (w_i + w_{i+1})``. When two neighbours qualify (``q`` projects inside three
consecutive segments), the nearer one is used.

Cross-section angle: with the continuous frame ``(T(s), n(s), b(s))`` of :mod:`core.muscle.axis` and ``D = q - h``,
``x = D . n``, ``y = D . b``, ``cos^2 theta = x^2 / (x^2 + y^2)``, so eq. (5) becomes
``r = u v sqrt(x^2 + y^2) / sqrt(u^2 x^2 + v^2 y^2)``; ``r = 1`` on the axis itself (direction undefined).

Gradient (chain rule; ``dh/ds = l t_k`` on segment ``k``):
``grad |D| = D^ - grad s (l t_k . D^)``,
``grad x = n - grad s (l t_k . n) + grad s (D . dn/ds)`` (same for ``y`` with ``b``),
``grad f = grad |D| - w (Phi'(s) r grad s + Phi(s) (r_x grad x + r_y grad y))``.
The field is C0 everywhere and smooth inside each branch (segment, reparameterised pair, side of a vertex); its
gradient has kinks where ``s(q)`` crosses a vertex parameter or a region border, as the polyline itself does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .axis import AxisGeometry
from .profile import beta_monomial
from ...kernels.constants import MIN_DISTANCE, MIN_SEGMENT_LENGTH, SLERP_SMALL_ANGLE

BRANCH_VERTEX = 1 << 20
"""Branch code offset: the projection is clamped to a vertex (``grad s = 0``)."""
BRANCH_REPARAM = 2 << 20
"""Branch code offset: the reparameterised projection of Algorithm 1 is used."""


@dataclass(frozen=True)
class MuscleProfile:
    """Per-frame scalar parameters of one muscle, in the coefficient form the kernels use.

    exponents: (4,) int       alpha0-1, beta0-1, alpha1-1, beta1-1 (rest pair, active pair)
    c0, c1: float             Phi_a(s) = c0 s^(a0-1)(1-s)^(b0-1) + c1 s^(a1-1)(1-s)^(b1-1)
    width: float [m]          w of eq. (2), volume law times width scale
    u, v: float               ellipse semi-axes of eq. (5), u v = 1
    support: float [m]        compact-support radius R = max_s(w u Phi_a(s)) (thesis §6.1)
    """

    exponents: tuple
    c0: float
    c1: float
    width: float
    u: float
    v: float
    support: float


def profile_value(p: MuscleProfile, s: float) -> tuple[float, float]:
    """``(Phi_a(s), dPhi_a/ds)``."""
    ea0, eb0, ea1, eb1 = p.exponents
    v0, d0 = beta_monomial(ea0, eb0, s)
    v1, d1 = beta_monomial(ea1, eb1, s)
    return float(p.c0 * v0 + p.c1 * v1), float(p.c0 * d0 + p.c1 * d1)


def project(axis: AxisGeometry, q: np.ndarray, reparameterise: bool = True):
    """Projection of Algorithm 1. Returns ``(s, grad_s (3,), branch)``; ``branch`` identifies the smooth piece.

    With ``reparameterise=False`` this is the plain orthogonal projection on the nearest segment (paper Fig. 4, left).
    """
    P, L, t, S, l = axis.points, axis.seg_length, axis.seg_tangent, axis.cumulative, axis.length
    n = len(L)
    tau = np.einsum("ij,ij->i", q - P[:-1], t)
    valid = L > MIN_SEGMENT_LENGTH
    inside = valid & (tau > 0.0) & (tau < L)
    tau_c = np.clip(tau, 0.0, L)
    h = P[:-1] + tau_c[:, None] * t
    dist2 = np.einsum("ij,ij->i", q - h, q - h)
    dist2[~valid] = np.inf
    j = int(np.argmin(dist2))
    s_seg = (S[:-1] + tau_c) / l
    if reparameterise and inside[j]:
        candidates = [i for i in (j - 1, j + 1) if 0 <= i < n and inside[i]]
        if candidates:
            k = min(candidates, key=lambda i: dist2[i])
            i0 = min(j, k)
            i1 = i0 + 1
            d = q - P[i1]
            a0 = -np.dot(d, t[i0])
            a1 = np.dot(d, t[i1])
            perp0 = d - np.dot(d, t[i0]) * t[i0]
            perp1 = d - np.dot(d, t[i1]) * t[i1]
            b0 = np.linalg.norm(perp0)
            b1 = np.linalg.norm(perp1)
            w0 = a0 * b1
            w1 = a1 * b0
            total = w0 + w1
            if total > 0.0:
                s = (w0 * s_seg[i0] + w1 * s_seg[i1]) / total
                g0 = -t[i0] * b1 + (a0 * perp1 / b1 if b1 > 0.0 else 0.0)
                g1 = t[i1] * b0 + (a1 * perp0 / b0 if b0 > 0.0 else 0.0)
                grad = (w0 * t[i0] / l + w1 * t[i1] / l + (s_seg[i0] - s) * g0 + (s_seg[i1] - s) * g1) / total
                side = 0 if s * l < S[i1] else 1
                return s, grad, BRANCH_REPARAM + 2 * i0 + side
    if inside[j]:
        return s_seg[j], t[j] / l, j
    return s_seg[j], np.zeros(3), BRANCH_VERTEX + int(round(s_seg[j] * 1e6))


def frame_at(axis: AxisGeometry, s: float):
    """Point, tangent and frame at ``s``: ``(k, h, t_k, n, b, dn/ds, db/ds)`` (see the module docstring)."""
    P, L, S, l = axis.points, axis.seg_length, axis.cumulative, axis.length
    arc = s * l
    k = int(np.searchsorted(S, arc, side="right") - 1)
    k = min(max(k, 0), len(L) - 1)
    while L[k] <= MIN_SEGMENT_LENGTH and k > 0 and arc <= S[k]:
        k -= 1
    while L[k] <= MIN_SEGMENT_LENGTH and k < len(L) - 1:
        k += 1
    Lk = max(L[k], MIN_SEGMENT_LENGTH)
    beta = min(max((arc - S[k]) / Lk, 0.0), 1.0)
    dbeta = l / Lk
    tk = axis.seg_tangent[k]
    h = P[k] + (arc - S[k]) * tk
    # tangent: normalised lerp of the vertex tangents
    Ta, Tb = axis.tangents[k], axis.tangents[k + 1]
    M = (1.0 - beta) * Ta + beta * Tb
    Mn = np.linalg.norm(M)
    T = M / Mn
    dT = (Tb - Ta - T * np.dot(T, Tb - Ta)) / Mn * dbeta
    # normal: slerp of the control normals
    na, nb = axis.normals[k], axis.normals[k + 1]
    om = axis.seg_angle[k]
    if om < SLERP_SMALL_ANGLE:
        m = (1.0 - beta) * na + beta * nb
        mn = np.linalg.norm(m)
        nn = m / mn
        dn = (nb - na - nn * np.dot(nn, nb - na)) / mn
    else:
        so = np.sin(om)
        nn = (np.sin((1.0 - beta) * om) * na + np.sin(beta * om) * nb) / so
        dn = om * (-np.cos((1.0 - beta) * om) * na + np.cos(beta * om) * nb) / so
    dn = dn * dbeta
    # make the normal orthogonal to T(s)
    m = nn - np.dot(nn, T) * T
    dm = dn - np.dot(dn, T) * T - np.dot(nn, dT) * T - np.dot(nn, T) * dT
    mn = np.linalg.norm(m)
    n = m / mn
    dn_perp = (dm - n * np.dot(n, dm)) / mn
    b = np.cross(T, n)
    db = np.cross(dT, n) + np.cross(T, dn_perp)
    return k, h, tk, n, b, dn_perp, db


def field(axis: AxisGeometry, profile: MuscleProfile, q, reparameterise: bool = True, scales=None):
    """``(f_M(q), grad f_M(q) (3,), branch)`` for one query point ``q (3,)`` [m] (paper eq. 1).

    scales: ``(n,)`` width factors ``sigma_k`` at the axis vertices (a VIPER rod's scales, ``core/rod``) or None (1):
    the profile is ``Phi_a(s) sigma(s)``, ``sigma`` linear along each segment."""
    q = np.asarray(q, dtype=np.float64)
    s, gs, branch = project(axis, q, reparameterise)
    k, h, tk, n, b, dn, db = frame_at(axis, s)
    l = axis.length
    D = q - h
    rho = np.linalg.norm(D)
    Dhat = D / rho if rho > MIN_DISTANCE else np.zeros(3)
    grad_rho = Dhat - gs * (l * np.dot(tk, Dhat))
    x = np.dot(D, n)
    y = np.dot(D, b)
    u, v = profile.u, profile.v
    rxy2 = x * x + y * y
    Q = u * u * x * x + v * v * y * y
    if rxy2 > MIN_DISTANCE * MIN_DISTANCE:
        rxy = np.sqrt(rxy2)
        r = u * v * rxy / np.sqrt(Q)
        common = u * v / (rxy * Q * np.sqrt(Q))
        r_x = common * x * (v * v - u * u) * y * y
        r_y = common * y * (u * u - v * v) * x * x
    else:
        r, r_x, r_y = 1.0, 0.0, 0.0
    grad_x = n - gs * (l * np.dot(tk, n)) + gs * np.dot(D, dn)
    grad_y = b - gs * (l * np.dot(tk, b)) + gs * np.dot(D, db)
    Phi, dPhi = profile_value(profile, s)
    if scales is not None:
        Lk = max(axis.seg_length[k], MIN_SEGMENT_LENGTH)
        beta = min(max((s * l - axis.cumulative[k]) / Lk, 0.0), 1.0)
        sigma = (1.0 - beta) * scales[k] + beta * scales[k + 1]
        Phi, dPhi = Phi * sigma, dPhi * sigma + Phi * (scales[k + 1] - scales[k]) * l / Lk
    w = profile.width
    value = rho - w * Phi * r
    grad = grad_rho - w * (dPhi * r * gs + Phi * (r_x * grad_x + r_y * grad_y))
    return value, grad, branch


def compact(value: float, grad: np.ndarray, support: float):
    """Compact-support fall-off of thesis eq. (3.1): ``K(f)`` and ``K'(f) grad f``; 0.5 on the surface, 1 inside."""
    x = value / support
    if x <= -1.0:
        return 1.0, np.zeros(3)
    if x >= 1.0:
        return 0.0, np.zeros(3)
    k = -3.0 / 16.0 * x ** 5 + 5.0 / 8.0 * x ** 3 - 15.0 / 16.0 * x + 0.5
    dk = -15.0 / 16.0 * (1.0 - x * x) ** 2 / support
    return k, dk * grad


def evaluate(axis: AxisGeometry, profile: MuscleProfile, points, compact_support: bool = False,
             reparameterise: bool = True, scales=None):
    """Reference batch evaluation: ``values (n,)``, ``grads (n, 3)``, ``branches (n,)`` for ``points (n, 3)`` [m];
    ``scales`` as :func:`field`."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    values = np.empty(len(pts))
    grads = np.empty((len(pts), 3))
    branches = np.empty(len(pts), dtype=np.int64)
    for i, q in enumerate(pts):
        f, g, br = field(axis, profile, q, reparameterise, scales)
        if compact_support:
            f, g = compact(f, g, profile.support)
        values[i], grads[i], branches[i] = f, g, br
    return values, grads, branches
