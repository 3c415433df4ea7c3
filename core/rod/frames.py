"""Quaternion helpers of the rod model in plain numpy (``(w, x, y, z)``, Hamilton product)."""
from __future__ import annotations

import numpy as np


def qmul(a, b) -> np.ndarray:
    """Hamilton product ``a b`` of quaternions ``(..., 4)``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def conj(q) -> np.ndarray:
    """Conjugate of quaternions ``(..., 4)``."""
    return np.asarray(q, dtype=np.float64) * np.array([1.0, -1.0, -1.0, -1.0])


def rotate(q, v) -> np.ndarray:
    """``v (..., 3)`` rotated by the unit quaternions ``q (..., 4)``."""
    v = np.asarray(v, dtype=np.float64)
    p = np.concatenate([np.zeros(v.shape[:-1] + (1,)), v], axis=-1)
    return qmul(qmul(q, p), conj(q))[..., 1:]


def directors(q) -> np.ndarray:
    """``(..., 3, 3)``: the frame's axes ``d1, d2, d3`` as rows."""
    q = np.asarray(q, dtype=np.float64)
    eye = np.broadcast_to(np.eye(3), q.shape[:-1] + (3, 3))
    return rotate(q[..., None, :], eye)


def frame_quaternion(d1, d3) -> np.ndarray:
    """Unit quaternion ``(4,)`` of the rotation with columns ``(d1, d3 x d1, d3)`` (``d1 ⟂ d3``, unit)."""
    d1 = np.asarray(d1, dtype=np.float64)
    d3 = np.asarray(d3, dtype=np.float64)
    R = np.stack([d1, np.cross(d3, d1), d3], axis=1)
    tr = np.trace(R)
    if tr > 0.0:
        t = np.sqrt(tr + 1.0) * 2.0
        q = [0.25 * t, (R[2, 1] - R[1, 2]) / t, (R[0, 2] - R[2, 0]) / t, (R[1, 0] - R[0, 1]) / t]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        t = np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2.0
        q = [(R[2, 1] - R[1, 2]) / t, 0.25 * t, (R[0, 1] + R[1, 0]) / t, (R[0, 2] + R[2, 0]) / t]
    elif R[1, 1] > R[2, 2]:
        t = np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2.0
        q = [(R[0, 2] - R[2, 0]) / t, (R[0, 1] + R[1, 0]) / t, 0.25 * t, (R[1, 2] + R[2, 1]) / t]
    else:
        t = np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2.0
        q = [(R[1, 0] - R[0, 1]) / t, (R[0, 2] + R[2, 0]) / t, (R[1, 2] + R[2, 1]) / t, 0.25 * t]
    return np.array(q)


def perpendicular(n, t) -> np.ndarray:
    """``n`` made perpendicular to the unit ``t`` and unit (any perpendicular if ``n`` is parallel to ``t``)."""
    a = np.asarray(n, dtype=np.float64) - (np.dot(n, t)) * t
    if np.linalg.norm(a) < 1e-9:
        i = int(np.argmin(np.abs(t)))
        a = np.cross(np.eye(3)[i], t)
    return a / np.linalg.norm(a)


def transported_frames(points, d1_start) -> np.ndarray:
    """``(n-1, 4)`` segment frames of the polyline ``points (n, 3)``: ``d3`` along each segment, ``d1`` parallel
    transported from ``d1_start`` (made perpendicular to the first segment) by the smallest rotation between
    consecutive tangents (no twist)."""
    t = np.diff(np.asarray(points, dtype=np.float64), axis=0)
    t /= np.linalg.norm(t, axis=1)[:, None]
    d1 = perpendicular(d1_start, t[0])
    out = np.zeros((len(t), 4))
    for i in range(len(t)):
        if i:
            axis = np.cross(t[i - 1], t[i])
            sin, cos = np.linalg.norm(axis), float(np.dot(t[i - 1], t[i]))
            if sin > 1e-12:
                axis /= sin
                angle = np.arctan2(sin, cos)
                d1 = (d1 * np.cos(angle) + np.cross(axis, d1) * np.sin(angle)
                      + axis * np.dot(axis, d1) * (1 - np.cos(angle)))
            d1 = perpendicular(d1, t[i])
        out[i] = frame_quaternion(d1, t[i])
    return out


def twist_angle(q, reference) -> np.ndarray:
    """Signed angle [rad] of the frames ``q (..., 4)``'s ``d1`` from ``reference (..., 3)`` about their ``d3``."""
    d = directors(q)
    d1, d2 = d[..., 0, :], d[..., 1, :]
    return -np.arctan2(np.sum(reference * d2, axis=-1), np.sum(reference * d1, axis=-1))
