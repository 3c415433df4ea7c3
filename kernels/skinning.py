"""Numba kernel: dual-quaternion skinning (Kavan et al. 2008; reference and conventions ``core/skin/skinning.py``).

``rest (V, 3)`` [m]; influences CSR ``start (V+1,)``, ``bone (nnz,)``, ``value (nnz,)`` (rows sum to 1); bone unit
dual quaternions ``real (B, 4)``, ``dual (B, 4)`` as (w, x, y, z). Writes ``out_x (V, 3)`` posed positions and
``out_R (V, 3, 3)`` the blended rotations. Parallel over vertices.
"""
from __future__ import annotations

import math

from numba import njit, prange

from .constants import JIT_FAST


@njit(parallel=True, **JIT_FAST)
def dual_quaternion_skinning(rest, start, bone, value, real, dual, out_x, out_R):
    for i in prange(rest.shape[0]):
        a = start[i]
        b = start[i + 1]
        pivot = bone[a]
        best = value[a]
        for k in range(a + 1, b):
            if value[k] > best:
                best = value[k]
                pivot = bone[k]
        r0 = r1 = r2 = r3 = 0.0
        d0 = d1 = d2 = d3 = 0.0
        for k in range(a, b):
            j = bone[k]
            w = value[k]
            if real[j, 0] * real[pivot, 0] + real[j, 1] * real[pivot, 1] + real[j, 2] * real[pivot, 2] \
                    + real[j, 3] * real[pivot, 3] < 0.0:
                w = -w
            r0 += w * real[j, 0]
            r1 += w * real[j, 1]
            r2 += w * real[j, 2]
            r3 += w * real[j, 3]
            d0 += w * dual[j, 0]
            d1 += w * dual[j, 1]
            d2 += w * dual[j, 2]
            d3 += w * dual[j, 3]
        inv = 1.0 / math.sqrt(r0 * r0 + r1 * r1 + r2 * r2 + r3 * r3)
        w_, x, y, z = r0 * inv, r1 * inv, r2 * inv, r3 * inv
        e0, e1, e2, e3 = d0 * inv, d1 * inv, d2 * inv, d3 * inv
        # t = 2 (dual * conj(real)).vector
        tx = 2.0 * (-e0 * x + e1 * w_ - e2 * z + e3 * y)
        ty = 2.0 * (-e0 * y + e1 * z + e2 * w_ - e3 * x)
        tz = 2.0 * (-e0 * z - e1 * y + e2 * x + e3 * w_)
        R00 = 1.0 - 2.0 * (y * y + z * z)
        R01 = 2.0 * (x * y - w_ * z)
        R02 = 2.0 * (x * z + w_ * y)
        R10 = 2.0 * (x * y + w_ * z)
        R11 = 1.0 - 2.0 * (x * x + z * z)
        R12 = 2.0 * (y * z - w_ * x)
        R20 = 2.0 * (x * z - w_ * y)
        R21 = 2.0 * (y * z + w_ * x)
        R22 = 1.0 - 2.0 * (x * x + y * y)
        px = rest[i, 0]
        py = rest[i, 1]
        pz = rest[i, 2]
        out_x[i, 0] = R00 * px + R01 * py + R02 * pz + tx
        out_x[i, 1] = R10 * px + R11 * py + R12 * pz + ty
        out_x[i, 2] = R20 * px + R21 * py + R22 * pz + tz
        out_R[i, 0, 0] = R00
        out_R[i, 0, 1] = R01
        out_R[i, 0, 2] = R02
        out_R[i, 1, 0] = R10
        out_R[i, 1, 1] = R11
        out_R[i, 1, 2] = R12
        out_R[i, 2, 0] = R20
        out_R[i, 2, 1] = R21
        out_R[i, 2, 2] = R22
