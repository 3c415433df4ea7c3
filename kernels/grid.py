"""Numba kernels for scalar fields baked in regular 3D grids: trilinear value and gradient (thesis §3.1.1).

A grid stores ``values (nx, ny, nz) float64`` at nodes ``origin + (i, j, k) * spacing`` [m], in the rest space of
its bone. The interpolant is trilinear; its gradient is the exact derivative of that interpolant (piecewise
bilinear per component), so value and gradient are consistent for Newton steps. Outside the grid the sample reports
``inside = False`` and the caller decides (a bone distance grid then means "far from the bone").
Reference: ``core/pbd/distance_grid.py`` (``sample``).
"""
from __future__ import annotations

import math

from numba import njit, prange

from .constants import JIT_FAST


@njit(**JIT_FAST)
def sample_trilinear(values, ox, oy, oz, hx, hy, hz, px, py, pz):
    """Trilinear value and gradient at ``p`` (grid-local coordinates [m]). Returns ``(inside, f, gx, gy, gz)``."""
    nx, ny, nz = values.shape
    fx = (px - ox) / hx
    fy = (py - oy) / hy
    fz = (pz - oz) / hz
    if not (fx >= 0.0 and fy >= 0.0 and fz >= 0.0 and fx <= nx - 1 and fy <= ny - 1 and fz <= nz - 1):
        return False, 0.0, 0.0, 0.0, 0.0
    i = min(int(math.floor(fx)), nx - 2)
    j = min(int(math.floor(fy)), ny - 2)
    k = min(int(math.floor(fz)), nz - 2)
    tx = fx - i
    ty = fy - j
    tz = fz - k
    c000 = values[i, j, k]
    c100 = values[i + 1, j, k]
    c010 = values[i, j + 1, k]
    c110 = values[i + 1, j + 1, k]
    c001 = values[i, j, k + 1]
    c101 = values[i + 1, j, k + 1]
    c011 = values[i, j + 1, k + 1]
    c111 = values[i + 1, j + 1, k + 1]
    c00 = c000 + (c100 - c000) * tx
    c10 = c010 + (c110 - c010) * tx
    c01 = c001 + (c101 - c001) * tx
    c11 = c011 + (c111 - c011) * tx
    c0 = c00 + (c10 - c00) * ty
    c1 = c01 + (c11 - c01) * ty
    f = c0 + (c1 - c0) * tz
    # derivatives of the trilinear interpolant
    dx00 = c100 - c000
    dx10 = c110 - c010
    dx01 = c101 - c001
    dx11 = c111 - c011
    dx0 = dx00 + (dx10 - dx00) * ty
    dx1 = dx01 + (dx11 - dx01) * ty
    gx = (dx0 + (dx1 - dx0) * tz) / hx
    dy0 = c10 - c00
    dy1 = c11 - c01
    gy = (dy0 + (dy1 - dy0) * tz) / hy
    gz = (c1 - c0) / hz
    return True, f, gx, gy, gz


@njit(parallel=True, **JIT_FAST)
def sample_many(values, origin, spacing, points, out_values, out_grads, out_inside):
    """``sample_trilinear`` at ``points (n, 3)``; outside points get value 0, gradient 0, ``inside = False``."""
    for n in prange(points.shape[0]):
        inside, f, gx, gy, gz = sample_trilinear(values, origin[0], origin[1], origin[2], spacing[0], spacing[1],
                                                 spacing[2], points[n, 0], points[n, 1], points[n, 2])
        out_inside[n] = inside
        out_values[n] = f
        out_grads[n, 0] = gx
        out_grads[n, 1] = gy
        out_grads[n, 2] = gz
