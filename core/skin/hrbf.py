"""Hermite radial basis function (HRBF) fit of one skin part (thesis §3.1.1, Vaillant et al. 2013).

    f_H(x) = sum_i a_i phi(|x - p_i|) + b_i . grad phi(x - p_i) + c . x + d,      phi(r) = r^3

with ``grad phi(v) = 3 |v| v`` and ``Hess phi(v) = 3 (|v| I + v v^T / |v|)`` (0 at ``v = 0``). The ``4N + 4`` unknowns
solve ``f_H(p_j) = 0``, ``grad f_H(p_j) = n_j`` (``4N`` rows) and the side conditions of the degree-1 polynomial
``sum a_i = 0``, ``sum a_i p_i + b_i = 0`` (4 rows). Normals point outwards, so ``f_H < 0`` inside: near the samples
``f_H`` behaves like a signed distance [m], which is what ``K`` (thesis eq. 3.1) expects.

Robustness: samples are moved to a unit box before solving (centre ``centre`` [m], ``scale`` [m]; the field in metres
is ``scale * f_unit((x - centre) / scale)``, so gradients stay unit normals), samples closer than ``merge_distance``
are merged (first one kept), and a Tikhonov term ``regularisation`` is added to the value rows; if the system is
still singular a least-squares solve is used and reported in ``HRBF.residual``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation

DEFAULT_REGULARISATION = 1e-9
"""Tikhonov term on the interpolation rows (in unit-box units): invisible on good samples, keeps bad ones solvable."""
DEFAULT_MERGE_FRACTION = 1e-3
"""Samples closer than this fraction of the sample box diagonal are merged."""


@dataclass(frozen=True)
class HRBF:
    """A fitted HRBF, in unit-box coordinates.

    centres: (N, 3) sample positions in the unit box; alpha: (N,); beta: (N, 3); poly: (4,) ``c_x, c_y, c_z, d``;
    centre: (3,) [m] and scale [m]: world ``x`` maps to ``(x - centre) / scale``. residual: largest error of the
    fitted constraints at the samples (unit-box units; value rows and gradient rows).
    """

    centres: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    poly: np.ndarray
    centre: np.ndarray
    scale: float
    residual: float

    def evaluate(self, points):
        """Numpy reference: ``f_H (n,)`` [m] and ``grad f_H (n, 3)`` at world ``points (n, 3)`` [m]."""
        p = (validation.points(points, "query points", min_count=0) - self.centre) / self.scale
        v = p[:, None, :] - self.centres[None, :, :]  # (n, N, 3)
        r = np.linalg.norm(v, axis=2)  # (n, N)
        bv = np.einsum("nkc,kc->nk", v, self.beta)
        value = (r ** 3) @ self.alpha + np.sum(3.0 * r * bv, axis=1) + p @ self.poly[:3] + self.poly[3]
        with np.errstate(divide="ignore", invalid="ignore"):
            bv_over_r = np.where(r > 0.0, bv / np.where(r > 0.0, r, 1.0), 0.0)
        grad = (np.einsum("nk,nkc->nc", 3.0 * r * self.alpha[None, :], v)
                + 3.0 * r @ self.beta
                + np.einsum("nk,nkc->nc", 3.0 * bv_over_r, v)
                + self.poly[:3])
        return value * self.scale, grad

    def kernel_arrays(self) -> tuple:
        """Arguments of ``kernels/hrbf.py`` in order: centres, alpha, beta, poly, centre, scale."""
        return (np.ascontiguousarray(self.centres), np.ascontiguousarray(self.alpha),
                np.ascontiguousarray(self.beta), np.ascontiguousarray(self.poly),
                np.ascontiguousarray(self.centre, dtype=np.float64), float(self.scale))


def merge_close_samples(points, normals, distance: float):
    """Drop samples closer than ``distance`` [m] to an earlier kept one; return the kept points and normals."""
    keep = []
    kept = np.zeros((0, 3))
    for i, p in enumerate(points):
        if len(kept) and np.min(np.sum((kept - p) ** 2, axis=1)) < distance * distance:
            continue
        keep.append(i)
        kept = np.vstack([kept, p])
    return points[keep], normals[keep]


def fit_hrbf(points, normals, regularisation: float = DEFAULT_REGULARISATION,
             merge_fraction: float = DEFAULT_MERGE_FRACTION) -> HRBF:
    """Fit ``f_H`` to ``points (N, 3)`` [m] with outward unit ``normals (N, 3)``; see the module docstring.

    Needs at least 4 samples after merging; ``ValueError`` otherwise or on non-finite input.
    """
    p = validation.points(points, "HRBF samples", min_count=4)
    n = validation.points(normals, "HRBF normals", min_count=4)
    if n.shape != p.shape:
        raise ValueError(f"HRBF samples and normals differ in count ({len(p)} and {len(n)}).")
    lengths = np.linalg.norm(n, axis=1)
    if np.any(lengths < 1e-12):
        raise ValueError("an HRBF sample has a zero-length normal; check the mesh for zero-area faces.")
    n = n / lengths[:, None]
    lo, hi = p.min(axis=0), p.max(axis=0)
    diagonal = float(np.linalg.norm(hi - lo))
    if diagonal <= 0.0:
        raise ValueError("all HRBF samples are at the same place; the part needs a surface, not a point.")
    p, n = merge_close_samples(p, n, merge_fraction * diagonal)
    if len(p) < 4:
        raise ValueError(f"only {len(p)} distinct HRBF samples are left; a part needs at least 4.")
    centre = 0.5 * (lo + hi)
    scale = 0.5 * diagonal
    q = (p - centre) / scale
    N = len(q)
    A = np.zeros((4 * N + 4, 4 * N + 4))
    v = q[:, None, :] - q[None, :, :]  # v[j, i] = q_j - q_i
    r = np.linalg.norm(v, axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_r = np.where(r > 0.0, 1.0 / np.where(r > 0.0, r, 1.0), 0.0)
    # value rows j: [phi(v_ji), grad phi(v_ji)^T]
    A[:N, :N] = r ** 3
    for c in range(3):
        A[:N, N + c:4 * N:3] = 3.0 * r * v[:, :, c]
    # gradient rows (j, c): [grad phi(v_ji)_c, Hess phi(v_ji)_c.]
    for c in range(3):
        rows = slice(N + c, 4 * N, 3)
        A[rows, :N] = 3.0 * r * v[:, :, c]
        for e in range(3):
            H = 3.0 * (v[:, :, c] * v[:, :, e] * inv_r)
            if c == e:
                H = H + 3.0 * r
            A[rows, N + e:4 * N:3] = H
        A[rows, 4 * N + c] = 1.0  # grad of c . x
    A[:N, 4 * N:4 * N + 3] = q
    A[:N, 4 * N + 3] = 1.0
    # side conditions: sum a_i = 0, sum a_i q_i + b_i = 0
    A[4 * N + 3, :N] = 1.0
    for c in range(3):
        A[4 * N + c, :N] = q[:, c]
        A[4 * N + c, N + c:4 * N:3] = 1.0
    A[np.arange(N), np.arange(N)] += regularisation
    rhs = np.zeros(4 * N + 4)
    rhs[N:4 * N] = n.reshape(-1)
    try:
        x = np.linalg.solve(A, rhs)
        if not np.all(np.isfinite(x)):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        x = np.linalg.lstsq(A, rhs, rcond=None)[0]
    residual = float(np.max(np.abs(A[:4 * N] @ x - rhs[:4 * N])))
    return HRBF(centres=q, alpha=x[:N].copy(), beta=x[N:4 * N].reshape(N, 3).copy(), poly=x[4 * N:].copy(),
                centre=centre, scale=scale, residual=residual)


def compact(d, R: float):
    """Thesis eq. (3.1) on arrays: ``K(d)`` and ``K'(d)`` for signed distances ``d`` [m] and radius ``R`` [m]."""
    x = np.clip(np.asarray(d, dtype=np.float64) / R, -1.0, 1.0)
    k = -3.0 / 16.0 * x ** 5 + 5.0 / 8.0 * x ** 3 - 15.0 / 16.0 * x + 0.5
    dk = -15.0 / 16.0 * (1.0 - x * x) ** 2 / R
    return k, dk
