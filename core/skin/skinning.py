"""Skinning weights and the classic skinnings: dual-quaternion (Kavan et al. 2008) and linear blend.

Dual-quaternion skinning (DQS) is Implicit Skinning's first guess (thesis §3.2): per vertex, the unit dual
quaternions of its bones are blended with its weights, each flipped to the hemisphere of the vertex's
highest-weight bone first (antipodality: ``q`` and ``-q`` are the same rotation), then normalised; the result gives
the vertex's position and its rotation ``R_i`` (used by the ARAP relaxation). DQS cannot represent scale, so bone
transforms must be rigid; armature scale is handled outside (the Blender side works in the armature's unscaled
space).

Weights are kept as CSR rows of the vertices' non-zero influences, normalised to sum 1: ``start (V+1,)``,
``bone (nnz,) int64``, ``value (nnz,)``. A vertex with no weight follows its part's bone (``labels``), so the
skinning and the skin parts agree.

Bone transforms ``B (B, 4, 4)``: rest -> posed, ``B_j = M_j M_ref_j^-1`` (column vectors, armature space).

The kernel is ``kernels/skinning.py``; :func:`dqs_reference` and :func:`lbs_reference` are vectorised numpy over
the influences (the references' convention in ``core/skin``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RIGID_TOL = 1e-4
"""Largest ``|R^T R - I|`` and ``|det R - 1|`` accepted for a bone transform."""
REACH_FACTOR = 1000.0
"""A pose may move bones up to this many times the character's size (its rest bounding-box diagonal) from the
rig's origin. Further is an animation error (a key typed in centimetres, a runaway curve), and hosts hand over
poses in float32: 1000 sizes of a 2 m character is 2 km, where float32 still resolves 0.1 mm; at 1000 km it
resolves 6 cm and a muscle's ends collapse."""


@dataclass(frozen=True)
class Influences:
    """Normalised non-zero weights as CSR rows: start (V+1,), bone (nnz,), value (nnz,)."""

    start: np.ndarray
    bone: np.ndarray
    value: np.ndarray


def influences(weights, labels=None) -> Influences:
    """CSR influences from a dense ``(V, B)`` weight table; rows with no weight take ``labels[i]`` with weight 1."""
    w = np.asarray(weights, dtype=np.float64)
    w = np.where(w > 0.0, w, 0.0)
    empty = w.sum(axis=1) <= 0.0
    if np.any(empty):
        if labels is None:
            raise ValueError(f"{int(empty.sum())} vertices have no skinning weight.")
        w = w.copy()
        w[np.flatnonzero(empty), np.asarray(labels)[empty]] = 1.0
    w = w / w.sum(axis=1, keepdims=True)
    rows, cols = np.nonzero(w)
    start = np.zeros(len(w) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=len(w)), out=start[1:])
    return Influences(start, cols.astype(np.int64), w[rows, cols].copy())


def check_rigid(transforms, bone_names=None, reach: float | None = None) -> np.ndarray:
    """``transforms (B, 4, 4)`` as float64 after checking each is finite, rigid and, if ``reach`` [m] is given,
    moves no bone further than ``reach`` from where it was at rest (``ValueError`` naming the bone)."""
    from ...kernels.skinning import rigid_status

    B = np.ascontiguousarray(transforms, dtype=np.float64)
    if B.ndim != 3 or B.shape[1:] != (4, 4):
        raise ValueError(f"bone transforms must have shape (bones, 4, 4), got {B.shape}.")
    if rigid_status(B, np.inf if reach is None else float(reach), RIGID_TOL)[0] == 0:
        return B
    # the kernel found a bad bone: the same checks in numpy name it
    bad = ~np.all(np.isfinite(B), axis=(1, 2))
    if np.any(bad):
        raise ValueError(f"the pose of {_first(bad, bone_names)} contains NaN or infinite values; check its "
                         f"animation.")
    far = np.abs(B[:, :3, 3]).max(axis=1) > (np.inf if reach is None else reach)
    if np.any(far):
        j = int(np.flatnonzero(far)[0])
        raise ValueError(f"the pose moves {_first(far, bone_names)} {np.abs(B[j, :3, 3]).max():.3g} m away, more "
                         f"than {reach:.3g} m ({REACH_FACTOR:g} times the character's size); check its animation "
                         f"(move the character with its armature object instead).")
    R = B[:, :3, :3]
    ortho = np.abs(np.einsum("bji,bjk->bik", R, R) - np.eye(3)).max(axis=(1, 2))
    det = np.abs(np.linalg.det(R) - 1.0)
    bad = (ortho > RIGID_TOL) | (det > RIGID_TOL)
    if np.any(bad):
        raise ValueError(f"the transform of {_first(bad, bone_names)} is not a rotation plus a translation (it "
                         f"scales or shears); Implicit Skinning needs rigid bones: apply the armature's scale, or "
                         f"remove pose-bone scale.")
    return B


def _first(mask, bone_names) -> str:
    """The name of the first bone where ``mask (B,)`` is True (``bone j`` without names)."""
    j = int(np.flatnonzero(mask)[0])
    return bone_names[j] if bone_names is not None else f"bone {j}"


def quaternion_from_matrix(R) -> np.ndarray:
    """Unit quaternions ``(n, 4)`` (w, x, y, z) of rotation matrices ``(n, 3, 3)`` (Shepperd's method)."""
    R = np.asarray(R, dtype=np.float64).reshape(-1, 3, 3)
    q = np.empty((len(R), 4))
    tr = np.trace(R, axis1=1, axis2=2)
    for n, (m, t) in enumerate(zip(R, tr)):
        k = int(np.argmax([t, m[0, 0], m[1, 1], m[2, 2]]))
        if k == 0:
            s = 2.0 * np.sqrt(1.0 + t)
            q[n] = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
        elif k == 1:
            s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
            q[n] = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
        elif k == 2:
            s = 2.0 * np.sqrt(1.0 - m[0, 0] + m[1, 1] - m[2, 2])
            q[n] = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
        else:
            s = 2.0 * np.sqrt(1.0 - m[0, 0] - m[1, 1] + m[2, 2])
            q[n] = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _qmul(a, b):
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


def dual_quaternions(transforms) -> tuple:
    """``(real (B, 4), dual (B, 4))`` unit dual quaternions of rigid ``transforms (B, 4, 4)`` (numpy reference of
    ``kernels/skinning.bone_dual_quaternions``)."""
    B = np.asarray(transforms, dtype=np.float64)
    real = quaternion_from_matrix(B[:, :3, :3])
    t = np.concatenate([np.zeros((len(B), 1)), B[:, :3, 3]], axis=1)
    return real, 0.5 * _qmul(t, real)


def matrix_from_quaternion(q) -> np.ndarray:
    """Rotation matrices ``(n, 3, 3)`` of unit quaternions ``(n, 4)``."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def dqs_reference(rest, infl: Influences, transforms):
    """Numpy reference of DQS, vectorised over the influences: posed positions ``(V, 3)`` and rotations
    ``(V, 3, 3)``. Each vertex's quaternions are flipped into the hemisphere of its heaviest bone's."""
    real, dual = dual_quaternions(transforms)
    V = len(rest)
    rows = np.repeat(np.arange(V), np.diff(infl.start))
    w = infl.value
    heaviest = np.lexsort((np.arange(len(w)), -w, rows))[infl.start[:-1]]  # first largest weight of each row
    pivot = real[infl.bone[heaviest]][rows]
    sign = np.where(np.einsum("ij,ij->i", real[infl.bone], pivot) < 0.0, -1.0, 1.0)
    br = np.zeros((V, 4))
    bd = np.zeros((V, 4))
    np.add.at(br, rows, (w * sign)[:, None] * real[infl.bone])
    np.add.at(bd, rows, (w * sign)[:, None] * dual[infl.bone])
    norm = np.linalg.norm(br, axis=1, keepdims=True)
    br, bd = br / norm, bd / norm
    R = matrix_from_quaternion(br)
    t = 2.0 * _qmul(bd, br * np.array([1.0, -1.0, -1.0, -1.0]))[:, 1:]
    return np.einsum("vij,vj->vi", R, rest) + t, R


def lbs_reference(rest, infl: Influences, transforms) -> np.ndarray:
    """Linear blend skinning ``(V, 3)`` (for comparisons): ``sum_j w_ij B_j v_i``."""
    B = np.asarray(transforms, dtype=np.float64)
    out = np.zeros((len(rest), 3))
    rows = np.repeat(np.arange(len(rest)), np.diff(infl.start))
    moved = np.einsum("nij,nj->ni", B[infl.bone, :3, :3], rest[rows]) + B[infl.bone, :3, 3]
    np.add.at(out, rows, infl.value[:, None] * moved)
    return out


def dqs(rest, infl: Influences, transforms, out_x=None, out_R=None):
    """DQS by the numba kernel (``kernels/skinning.py``): positions ``(V, 3)`` and rotations ``(V, 3, 3)``."""
    from ...kernels.skinning import bone_dual_quaternions, dual_quaternion_skinning

    B = np.ascontiguousarray(transforms, dtype=np.float64)
    real, dual = np.empty((len(B), 4)), np.empty((len(B), 4))
    bone_dual_quaternions(B, real, dual)
    V = len(rest)
    out_x = np.empty((V, 3)) if out_x is None else out_x
    out_R = np.empty((V, 3, 3)) if out_R is None else out_R
    dual_quaternion_skinning(rest, infl.start, infl.bone, infl.value, real, dual, out_x, out_R)
    return out_x, out_R
