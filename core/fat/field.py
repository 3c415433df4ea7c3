"""Numpy reference of the fat field (``kernels/fat.py`` is the numba kernel), vectorised over query points.

The thesis's ellipsoid ``rho(q)^2 - 1`` with ``rho = |D^-1 R^T (q - c)|`` (centre ``c`` [m], frame ``R`` whose columns
are the semi-axes' directions, ``D = diag(a, b, c)`` the semi-axes [m]) is made distance-like as the muscle field
is: ``f = (rho - 1) / |grad rho|``, 0 on the ellipsoid, negative inside, in metres, with a unit gradient on the
surface (the first-order distance). The skin sees ``K((f + o) / R)`` (thesis eq. 3.1) with the support ``R`` the
smallest semi-axis and ``o`` the skin offset (``core/skin/field.py``).
"""
from __future__ import annotations

import numpy as np


def fat_field_reference(points, center, frame, axes):
    """Raw field ``f (n,)`` [m] and gradient ``(n, 3)`` of one ellipsoid at ``points (n, 3)`` [m] (module
    docstring): ``center (3,)`` [m], ``frame (3, 3)`` (columns: the semi-axes' unit directions), ``axes (3,)`` [m]."""
    q = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    R = np.asarray(frame, dtype=np.float64)
    a = np.asarray(axes, dtype=np.float64)
    y = (q - np.asarray(center, dtype=np.float64)) @ R          # coordinates along the semi-axes
    rho = np.sqrt(np.sum((y / a) ** 2, axis=1))
    safe = np.maximum(rho, 1e-300)
    g = y / (a * a) / safe[:, None]                               # grad rho (frame coordinates)
    n = np.linalg.norm(g, axis=1)
    n_safe = np.where(n > 0, n, 1.0)
    f = (rho - 1.0) / n_safe
    # grad n = (D^-2 g - n^2 g) / (rho n); grad f = g / n - (rho - 1) grad n / n^2
    dn = (g / (a * a) - (n * n)[:, None] * g) / (safe * n_safe)[:, None]
    grad_y = g / n_safe[:, None] - ((rho - 1.0) / n_safe ** 2)[:, None] * dn
    centre = rho < 1e-12
    f = np.where(centre, -a.min(), f)
    grad_y[centre] = 0.0
    return f, grad_y @ R.T


def compact_fat_reference(points, center, frame, axes, offset=0.0):
    """The fat as the skin sees it, ``K((f + o) / R)`` with ``R`` the smallest semi-axis, and its gradient, at
    ``points (n, 3)`` [m]: ``(values (n,), grads (n, 3))``."""
    from ..skin.hrbf import compact

    f, g = fat_field_reference(points, center, frame, axes)
    k, dk = compact(f + offset, float(np.min(axes)))
    return k, dk[:, None] * g


def reach_weight_reference(f0, R):
    """The weight of a fat's change where the fat carried by its bone reads ``f0 (n,)`` [m], ``R`` its smallest
    semi-axis [m]: ``(lambda (n,), dlambda/df0 (n,))`` (``kernels/fat.reach_weight``)."""
    from ...kernels.fat import REACH_FALL, REACH_FULL

    t = np.clip((np.asarray(f0, dtype=np.float64) - REACH_FULL * R) / (REACH_FALL * R), 0.0, 1.0)
    return 1.0 - t * t * (3.0 - 2.0 * t), -6.0 * t * (1.0 - t) / (REACH_FALL * R)


def fat_displacement_reference(points, center, carried, frame, axes, slope):
    """One fat's change as a displacement of its part's field at ``points (n, 3)`` [m]: ``s lambda(f^0) (f^0 - f)``
    and its gradient, ``(d (n,), grad (n, 3))``, ``f^0`` the ellipsoid centred at ``carried (3,)`` (where its bone
    carries it), ``f`` at ``center (3,)``, ``slope`` ``s`` [1/m] (``kernels/fat.py``'s module docstring)."""
    f0, g0 = fat_field_reference(points, carried, frame, axes)
    f1, g1 = fat_field_reference(points, center, frame, axes)
    lam, dlam = reach_weight_reference(f0, float(np.min(axes)))
    D = f0 - f1
    return slope * lam * D, slope * ((dlam * D)[:, None] * g0 + lam[:, None] * (g0 - g1))
