"""Numba kernels: skin part fields baked in grids, value and gradient by trilinear interpolation (thesis §3.1.1).

A part grid is ``values (nx, ny, nz, 4) float32``: channel 0 the compact field ``K(f_H)`` (0..1, 0.5 on the skin),
channels 1-3 its gradient [1/m], at nodes ``origin + (i, j, k) * h`` [m] in the bone's rest space. All four channels
are interpolated trilinearly (the gradient is the interpolated gradient, smooth across cells, not the derivative of
the interpolated value). Outside the grid the field is 0 with gradient 0 (compact support). Per frame the grid moves
rigidly with its bone: ``f_j(p) = f_j(B_j^-1 p)``, ``grad = R_j grad f_j(B_j^-1 p)`` with ``B_j = M_j M_ref_j^-1``
(column vectors). Reference: ``core/skin/part_grid.py``.
"""
from __future__ import annotations

from numba import njit, prange

from .constants import JIT_FAST


@njit(inline="always", **JIT_FAST)
def _corners(values, i, j, k, c, w000, w100, w010, w110, w001, w101, w011, w111):
    return (w000 * values[i, j, k, c] + w100 * values[i + 1, j, k, c] + w010 * values[i, j + 1, k, c]
            + w110 * values[i + 1, j + 1, k, c] + w001 * values[i, j, k + 1, c] + w101 * values[i + 1, j, k + 1, c]
            + w011 * values[i, j + 1, k + 1, c] + w111 * values[i + 1, j + 1, k + 1, c])


@njit(inline="always", **JIT_FAST)
def sample_part(values, ox, oy, oz, inv_h, px, py, pz):
    """Trilinear value and gradient of one part grid at rest-space ``p`` [m]: ``(f, gx, gy, gz)``."""
    nx = values.shape[0]
    ny = values.shape[1]
    nz = values.shape[2]
    fx = (px - ox) * inv_h
    fy = (py - oy) * inv_h
    fz = (pz - oz) * inv_h
    if not (fx >= 0.0 and fy >= 0.0 and fz >= 0.0 and fx < nx - 1 and fy < ny - 1 and fz < nz - 1):
        return 0.0, 0.0, 0.0, 0.0
    i = int(fx)
    j = int(fy)
    k = int(fz)
    tx = fx - i
    ty = fy - j
    tz = fz - k
    sx = 1.0 - tx
    sy = 1.0 - ty
    sz = 1.0 - tz
    w000 = sx * sy * sz
    w100 = tx * sy * sz
    w010 = sx * ty * sz
    w110 = tx * ty * sz
    w001 = sx * sy * tz
    w101 = tx * sy * tz
    w011 = sx * ty * tz
    w111 = tx * ty * tz
    return (_corners(values, i, j, k, 0, w000, w100, w010, w110, w001, w101, w011, w111),
            _corners(values, i, j, k, 1, w000, w100, w010, w110, w001, w101, w011, w111),
            _corners(values, i, j, k, 2, w000, w100, w010, w110, w001, w101, w011, w111),
            _corners(values, i, j, k, 3, w000, w100, w010, w110, w001, w101, w011, w111))


@njit(inline="always", **JIT_FAST)
def sample_part_world(values, origin, inv_h, Binv, px, py, pz):
    """Part field at world ``p``: ``Binv (3, 4)`` world -> rest (rigid); gradient rotated back to world."""
    lx = Binv[0, 0] * px + Binv[0, 1] * py + Binv[0, 2] * pz + Binv[0, 3]
    ly = Binv[1, 0] * px + Binv[1, 1] * py + Binv[1, 2] * pz + Binv[1, 3]
    lz = Binv[2, 0] * px + Binv[2, 1] * py + Binv[2, 2] * pz + Binv[2, 3]
    f, gx, gy, gz = sample_part(values, origin[0], origin[1], origin[2], inv_h, lx, ly, lz)
    # R = Binv's rotation transposed
    wx = Binv[0, 0] * gx + Binv[1, 0] * gy + Binv[2, 0] * gz
    wy = Binv[0, 1] * gx + Binv[1, 1] * gy + Binv[2, 1] * gz
    wz = Binv[0, 2] * gx + Binv[1, 2] * gy + Binv[2, 2] * gz
    return f, wx, wy, wz


@njit(parallel=True, **JIT_FAST)
def sample_part_many(values, origin, inv_h, Binv, points, out_values, out_grads):
    """:func:`sample_part_world` at ``points (n, 3)``; ``out_values (n,)``, ``out_grads (n, 3)``."""
    for n in prange(points.shape[0]):
        f, gx, gy, gz = sample_part_world(values, origin, inv_h, Binv, points[n, 0], points[n, 1], points[n, 2])
        out_values[n] = f
        out_grads[n, 0] = gx
        out_grads[n, 1] = gy
        out_grads[n, 2] = gz


@njit(parallel=True, **JIT_FAST)
def compact_field(values, grads, R, out_values, out_grads):
    """Thesis eq. (3.1) applied to ``values (n,)`` [m] with gradients ``grads (n, 3)``: ``K(f)``, ``K'(f) grad f``."""
    for n in prange(values.shape[0]):
        x = values[n] / R
        if x <= -1.0:
            out_values[n] = 1.0
            dk = 0.0
        elif x >= 1.0:
            out_values[n] = 0.0
            dk = 0.0
        else:
            x2 = x * x
            out_values[n] = x * (x2 * (-3.0 / 16.0 * x2 + 5.0 / 8.0) - 15.0 / 16.0) + 0.5
            one = 1.0 - x2
            dk = -15.0 / 16.0 * one * one / R
        for c in range(3):
            out_grads[n, c] = dk * grads[n, c]
