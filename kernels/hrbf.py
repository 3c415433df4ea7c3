"""Numba kernel: HRBF value and gradient at many points (thesis §3.1.1; reference ``core/skin/hrbf.py``).

Arrays: ``centres (N, 3)`` unit-box sample positions, ``alpha (N,)``, ``beta (N, 3)``, ``poly (4,)``, ``centre (3,)``
[m], ``scale`` [m]; ``points (n, 3)`` [m]; outputs ``values (n,)`` [m] and ``grads (n, 3)`` written in place.
Used at bind time to fill the part grids, so parallel over points.
"""
from __future__ import annotations

import math

from numba import njit, prange

from .constants import JIT_FAST


@njit(parallel=True, **JIT_FAST)
def hrbf_field(points, centres, alpha, beta, poly, centre, scale, out_values, out_grads):
    """``f_H`` [m] and its gradient at world ``points``; see the module docstring."""
    inv = 1.0 / scale
    for n in prange(points.shape[0]):
        px = (points[n, 0] - centre[0]) * inv
        py = (points[n, 1] - centre[1]) * inv
        pz = (points[n, 2] - centre[2]) * inv
        f = poly[0] * px + poly[1] * py + poly[2] * pz + poly[3]
        gx = poly[0]
        gy = poly[1]
        gz = poly[2]
        for i in range(centres.shape[0]):
            vx = px - centres[i, 0]
            vy = py - centres[i, 1]
            vz = pz - centres[i, 2]
            r = math.sqrt(vx * vx + vy * vy + vz * vz)
            bx = beta[i, 0]
            by = beta[i, 1]
            bz = beta[i, 2]
            bv = bx * vx + by * vy + bz * vz
            a = alpha[i]
            f += a * r * r * r + 3.0 * r * bv
            s = 3.0 * a * r
            t = 3.0 * bv / r if r > 0.0 else 0.0
            gx += s * vx + 3.0 * r * bx + t * vx
            gy += s * vy + 3.0 * r * by + t * vy
            gz += s * vz + 3.0 * r * bz + t * vz
        out_values[n] = f * scale
        out_grads[n, 0] = gx
        out_grads[n, 1] = gy
        out_grads[n, 2] = gz
