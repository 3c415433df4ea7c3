"""Numba kernels: skin part fields baked in grids, value and gradient by trilinear interpolation (thesis §3.1.1).

A part grid is ``values (nx, ny, nz, 4) float32``: channel 0 the compact field ``K(f_H)`` (0..1, 0.5 on the skin),
channels 1-3 its gradient [1/m], at nodes ``origin + (i, j, k) * h`` [m] in the bone's rest space. All four channels
are interpolated trilinearly (the gradient is the interpolated gradient, smooth across cells, not the derivative of
the interpolated value). Outside the grid the field is 0 with gradient 0 (compact support). Per frame the grid moves
rigidly with its bone: ``f_j(p) = f_j(B_j^-1 p)``, ``grad = R_j grad f_j(B_j^-1 p)`` with ``B_j = M_j M_ref_j^-1``
(column vectors). Reference: ``core/skin/part_grid.py``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .constants import JIT_FAST


@njit(inline="always", **JIT_FAST)
def sample_grid(flat, base, nx, ny, nz, ox, oy, oz, inv_h, px, py, pz):
    """Trilinear value and gradient of one part grid at rest-space ``p`` [m]: ``(f, gx, gy, gz)``. The grid is
    ``flat[base:base + nx ny nz 4]``, the ``(nx, ny, nz, 4)`` array in C order: the kernels index the packed
    grids in place, because a view per sample (``reshape``, a row) costs a reference count, which threads
    contend for."""
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
    sj = nz * 4
    si = ny * sj
    o = base + i * si + j * sj + k * 4
    f = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for di in range(2):
        wi = tx if di else sx
        for dj in range(2):
            wij = wi * (ty if dj else sy)
            q = o + di * si + dj * sj
            w0 = wij * sz
            w1 = wij * tz
            f += w0 * flat[q] + w1 * flat[q + 4]
            gx += w0 * flat[q + 1] + w1 * flat[q + 5]
            gy += w0 * flat[q + 2] + w1 * flat[q + 6]
            gz += w0 * flat[q + 3] + w1 * flat[q + 7]
    return f, gx, gy, gz


@njit(inline="always", **JIT_FAST)
def sample_packed(flat, offset, dims, origin, inv_h, binv, p, qx, qy, qz):
    """Part ``p`` of packed grids at world ``q`` [m]: ``flat`` all grids, ``offset (P+1,)`` where each starts,
    ``dims (P, 3)``, ``origin (P, 3)`` [m], ``inv_h (P,)`` [1/m], ``binv (P, 3, 4)`` world -> rest (rigid). The
    gradient is rotated back to world: ``(f, gx, gy, gz)``."""
    lx = binv[p, 0, 0] * qx + binv[p, 0, 1] * qy + binv[p, 0, 2] * qz + binv[p, 0, 3]
    ly = binv[p, 1, 0] * qx + binv[p, 1, 1] * qy + binv[p, 1, 2] * qz + binv[p, 1, 3]
    lz = binv[p, 2, 0] * qx + binv[p, 2, 1] * qy + binv[p, 2, 2] * qz + binv[p, 2, 3]
    f, gx, gy, gz = sample_grid(flat, offset[p], dims[p, 0], dims[p, 1], dims[p, 2], origin[p, 0], origin[p, 1],
                                origin[p, 2], inv_h[p], lx, ly, lz)
    # R = Binv's rotation transposed
    wx = binv[p, 0, 0] * gx + binv[p, 1, 0] * gy + binv[p, 2, 0] * gz
    wy = binv[p, 0, 1] * gx + binv[p, 1, 1] * gy + binv[p, 2, 1] * gz
    wz = binv[p, 0, 2] * gx + binv[p, 1, 2] * gy + binv[p, 2, 2] * gz
    return f, wx, wy, wz


@njit(parallel=True, **JIT_FAST)
def sample_part_many(values, origin, inv_h, Binv, points, out_values, out_grads):
    """One part grid ``values (nx, ny, nz, 4)`` at world ``points (n, 3)`` [m] (``origin (3,)`` [m], ``inv_h``
    [1/m], ``Binv (3, 4)`` world -> rest): ``out_values (n,)``, ``out_grads (n, 3)`` [1/m]."""
    flat = values.reshape(-1)
    offset = np.zeros(2, dtype=np.int64)
    dims = np.empty((1, 3), dtype=np.int64)
    for c in range(3):
        dims[0, c] = values.shape[c]
    org = origin.reshape(1, 3)
    ih = np.full(1, inv_h)
    binv = Binv.reshape(1, 3, 4)
    for n in prange(points.shape[0]):
        f, gx, gy, gz = sample_packed(flat, offset, dims, org, ih, binv, 0, points[n, 0], points[n, 1], points[n, 2])
        out_values[n] = f
        out_grads[n, 0] = gx
        out_grads[n, 1] = gy
        out_grads[n, 2] = gz


@njit(**JIT_FAST)
def compact_field(values, grads, R, out_values, out_grads):
    """Thesis eq. (3.1) applied to ``values (n,)`` [m] with gradients ``grads (n, 3)``: ``K(f)``, ``K'(f) grad f``.
    Serial: it runs once per bind, a few operations per grid point."""
    for n in range(values.shape[0]):
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
