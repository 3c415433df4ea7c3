"""Numba kernels: dual-quaternion skinning (Kavan et al. 2008; reference and conventions ``core/skin/skinning.py``),
the bones' dual quaternions and the pose's rigidity check.

``rest (V, 3)`` [m]; influences CSR ``start (V+1,)``, ``bone (nnz,)``, ``value (nnz,)`` (rows sum to 1); bone unit
dual quaternions ``real (B, 4)``, ``dual (B, 4)`` as (w, x, y, z). Writes ``out_x (V, 3)`` posed positions and
``out_R (V, 3, 3)`` the blended rotations. Parallel over vertices.
"""
from __future__ import annotations

import math

from numba import njit, prange

from .constants import JIT, JIT_FAST


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


@njit(**JIT)
def bone_dual_quaternions(B, real, dual):
    """Unit dual quaternions ``real (B, 4)``, ``dual (B, 4)`` (w, x, y, z) of rigid ``B (B, 4, 4)``: the rotation's
    quaternion by Shepperd's method (the largest of ``w, x, y, z`` is found first), ``dual = 1/2 (0, t) real``.
    The numpy reference is ``core/skin/skinning.dual_quaternions``."""
    for j in range(B.shape[0]):
        m00 = B[j, 0, 0]
        m11 = B[j, 1, 1]
        m22 = B[j, 2, 2]
        t = m00 + m11 + m22
        k = 0
        big = t
        if m00 > big:
            k = 1
            big = m00
        if m11 > big:
            k = 2
            big = m11
        if m22 > big:
            k = 3
        if k == 0:
            s = 2.0 * math.sqrt(1.0 + t)
            w, x, y, z = 0.25 * s, (B[j, 2, 1] - B[j, 1, 2]) / s, (B[j, 0, 2] - B[j, 2, 0]) / s, \
                (B[j, 1, 0] - B[j, 0, 1]) / s
        elif k == 1:
            s = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
            w, x, y, z = (B[j, 2, 1] - B[j, 1, 2]) / s, 0.25 * s, (B[j, 0, 1] + B[j, 1, 0]) / s, \
                (B[j, 0, 2] + B[j, 2, 0]) / s
        elif k == 2:
            s = 2.0 * math.sqrt(1.0 - m00 + m11 - m22)
            w, x, y, z = (B[j, 0, 2] - B[j, 2, 0]) / s, (B[j, 0, 1] + B[j, 1, 0]) / s, 0.25 * s, \
                (B[j, 1, 2] + B[j, 2, 1]) / s
        else:
            s = 2.0 * math.sqrt(1.0 - m00 - m11 + m22)
            w, x, y, z = (B[j, 1, 0] - B[j, 0, 1]) / s, (B[j, 0, 2] + B[j, 2, 0]) / s, \
                (B[j, 1, 2] + B[j, 2, 1]) / s, 0.25 * s
        n = math.sqrt(w * w + x * x + y * y + z * z)
        w /= n
        x /= n
        y /= n
        z /= n
        real[j, 0] = w
        real[j, 1] = x
        real[j, 2] = y
        real[j, 3] = z
        tx = B[j, 0, 3]
        ty = B[j, 1, 3]
        tz = B[j, 2, 3]
        # 1/2 (0, t) * (w, x, y, z)
        dual[j, 0] = 0.5 * (-tx * x - ty * y - tz * z)
        dual[j, 1] = 0.5 * (tx * w + ty * z - tz * y)
        dual[j, 2] = 0.5 * (-tx * z + ty * w + tz * x)
        dual[j, 3] = 0.5 * (tx * y - ty * x + tz * w)


@njit(**JIT)
def rigid_status(B, reach, tol):
    """The first bone of ``B (B, 4, 4)`` that is not a rigid pose, and why: ``(0, -1)`` all rigid; ``(1, j)`` bone
    ``j`` has a NaN or infinite entry; ``(2, j)`` it moves further than ``reach`` [m] (largest ``|t|`` component);
    ``(3, j)`` its ``R^T R`` or ``det R`` is off the identity or 1 by more than ``tol``. The checks run in that order
    over all bones (``core/skin/skinning.check_rigid`` builds the message)."""
    n = B.shape[0]
    for j in range(n):
        for r in range(4):
            for c in range(4):
                if not math.isfinite(B[j, r, c]):
                    return 1, j
    for j in range(n):
        if max(abs(B[j, 0, 3]), abs(B[j, 1, 3]), abs(B[j, 2, 3])) > reach:
            return 2, j
    for j in range(n):
        for a in range(3):
            for b in range(3):
                d = B[j, 0, a] * B[j, 0, b] + B[j, 1, a] * B[j, 1, b] + B[j, 2, a] * B[j, 2, b]
                if abs(d - (1.0 if a == b else 0.0)) > tol:
                    return 3, j
        det = (B[j, 0, 0] * (B[j, 1, 1] * B[j, 2, 2] - B[j, 1, 2] * B[j, 2, 1])
               - B[j, 0, 1] * (B[j, 1, 0] * B[j, 2, 2] - B[j, 1, 2] * B[j, 2, 0])
               + B[j, 0, 2] * (B[j, 1, 0] * B[j, 2, 1] - B[j, 1, 1] * B[j, 2, 0]))
        if abs(det - 1.0) > tol:
            return 3, j
    return 0, -1
