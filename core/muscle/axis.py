"""Muscle axis polyline: construction, arc-length parameters, control normals and frames (paper §5.1).

The axis ``C`` is a polyline ``m0 = P_0, P_1, ..., P_n = m1`` parameterised by normalised arc length ``s in [0, 1]``.
The endpoints follow their bones; the inner points are PBD particles (paper §6).

Control normals (paper §5.1, "Central polyline construction"): the endpoint normals ``n_m0``, ``n_m1`` are slerped
to each control point by its parameter ``s_i``, then projected on the plane through ``P_i`` orthogonal to the axis
there (``T_i``, the normalised chord ``P_{i+1} - P_{i-1}``), our reading of the paper's "plane spanning p_{i-1}, p_i,
p_{i+1}". Where the projection degenerates (the slerped normal is parallel to the axis) the paper's fallback is used:
the normal is interpolated from the two nearest control points where it is defined.

Frames along the axis: at parameter ``s`` on segment ``k`` with local fraction ``beta``, the tangent ``T(s)`` is the
normalised linear interpolation of the vertex tangents ``T_k, T_{k+1}`` and the normal ``n(s)`` is the slerp of the
control normals ``n_k, n_{k+1}`` (paper), made orthogonal to ``T(s)``. Both are continuous in ``s`` across vertices,
so the cross-section angle ``theta`` and thus the field are continuous there too.

Arrays: ``points (n+1, 3) float64 [m]``; ``tangents``, ``normals`` ``(n+1, 3)`` unit vectors.

Plain numpy, one axis at a time. It is the numpy reference of ``kernels/axis.py`` ``axis_geometry``, ``axis_update``
and ``_one_axis`` (:func:`axis_geometry`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation
from ...kernels.constants import DEGENERATE_NORMAL, MIN_SEGMENT_LENGTH, SLERP_SMALL_ANGLE


def straight_axis(origin, insertion, particles: int) -> np.ndarray:
    """Axis points ``(particles + 2, 3)`` evenly spaced on the segment ``[origin, insertion]`` (paper §5.1)."""
    origin = validation.vector3(origin, "origin")
    insertion = validation.vector3(insertion, "insertion")
    if isinstance(particles, bool) or int(particles) != particles or particles < 0:
        raise ValueError(f"particle count must be a whole number of 0 or more, got {particles!r}.")
    if np.linalg.norm(insertion - origin) <= MIN_SEGMENT_LENGTH:
        raise ValueError("origin and insertion are at the same place: a muscle needs a length greater than 0.")
    t = np.linspace(0.0, 1.0, int(particles) + 2)[:, None]
    return (1.0 - t) * origin + t * insertion


def check_axis(points) -> np.ndarray:
    """Validate axis points: ``(n+1, 3)`` finite, ``n+1 >= 2``, total length > 0. Returns a float64 copy."""
    p = validation.points(points, "axis points", min_count=2)
    lengths = np.linalg.norm(np.diff(p, axis=0), axis=1)
    if lengths.sum() <= MIN_SEGMENT_LENGTH:
        raise ValueError("the muscle axis has zero length: origin and insertion are at the same place.")
    return p


def perpendicular_normal(direction) -> np.ndarray:
    """A unit vector orthogonal to ``direction``: the world axis least aligned with it, made orthogonal."""
    d = np.asarray(direction, dtype=np.float64)
    d = d / np.linalg.norm(d)
    ref = np.eye(3)[int(np.argmin(np.abs(d)))]
    n = ref - np.dot(ref, d) * d
    return n / np.linalg.norm(n)


def slerp(a: np.ndarray, b: np.ndarray, t, fallback_axis: np.ndarray | None = None) -> np.ndarray:
    """Spherical linear interpolation between unit vectors ``a`` and ``b`` (3,): ``(3,)`` for a scalar ``t``,
    ``(n, 3)`` for ``t (n,)``.

    For (near-)opposite vectors the great circle is not unique: ``a`` is rotated about ``fallback_axis`` (the muscle
    axis, to which both are orthogonal) by ``t * pi``.
    """
    t = np.asarray(t, dtype=np.float64)[..., None]
    dot = float(np.clip(np.dot(a, b), -1.0, 1.0))
    if dot < -1.0 + 1e-9 and fallback_axis is not None:
        k = fallback_axis / np.linalg.norm(fallback_axis)
        ang = np.pi * t
        return a * np.cos(ang) + np.cross(k, a) * np.sin(ang) + k * np.dot(k, a) * (1.0 - np.cos(ang))
    omega = np.arccos(dot)
    if omega < SLERP_SMALL_ANGLE:
        m = (1.0 - t) * a + t * b
        return m / np.linalg.norm(m, axis=-1, keepdims=True)
    so = np.sin(omega)
    return (np.sin((1.0 - t) * omega) * a + np.sin(t * omega) * b) / so


@dataclass(frozen=True)
class AxisGeometry:
    """Everything the field evaluation needs about one axis, derived from its points and endpoint normals.

    points: (n+1, 3) float64 [m]       axis vertices P_0..P_n
    cumulative: (n+1,) float64 [m]     arc length S_k at each vertex (S_0 = 0)
    length: float [m]                  total arc length l = S_n
    seg_length: (n,) float64 [m]       L_k = |P_{k+1} - P_k|
    seg_tangent: (n, 3) float64        t_k = (P_{k+1} - P_k) / L_k (zero for collapsed segments)
    tangents: (n+1, 3) float64         vertex tangents T_k (chord P_{k+1}-P_{k-1}; end segments at the ends)
    normals: (n+1, 3) float64          control normals n_k, unit, orthogonal to T_k
    seg_angle: (n,) float64 [rad]      angle between n_k and n_{k+1}, for slerp
    """

    points: np.ndarray
    cumulative: np.ndarray
    length: float
    seg_length: np.ndarray
    seg_tangent: np.ndarray
    tangents: np.ndarray
    normals: np.ndarray
    seg_angle: np.ndarray

    @property
    def vertex_parameters(self) -> np.ndarray:
        """``(n+1,)`` normalised arc-length parameter ``s_k = S_k / l`` of each vertex."""
        return self.cumulative / self.length


def axis_geometry(points, origin_normal=None, insertion_normal=None) -> AxisGeometry:
    """Build :class:`AxisGeometry` from axis points and endpoint normals.

    ``origin_normal=None`` picks a direction across the first segment; ``insertion_normal=None`` reuses the origin
    normal. Each is then made orthogonal to the axis at its end.
    """
    p = check_axis(points)
    seg = np.diff(p, axis=0)
    seg_length = np.linalg.norm(seg, axis=1)
    seg_tangent = np.zeros_like(seg)
    ok = seg_length > MIN_SEGMENT_LENGTH
    seg_tangent[ok] = seg[ok] / seg_length[ok, None]
    cumulative = np.concatenate([[0.0], np.cumsum(seg_length)])
    length = float(cumulative[-1])
    tangents = vertex_tangents(p)
    chord = (p[-1] - p[0]) if np.linalg.norm(p[-1] - p[0]) > MIN_SEGMENT_LENGTH else tangents[0]
    raw0 = perpendicular_normal(tangents[0]) if origin_normal is None else origin_normal
    raw1 = raw0 if insertion_normal is None else insertion_normal
    n0 = _endpoint_normal(raw0, tangents[0], "origin normal")
    n1 = _endpoint_normal(raw1, tangents[-1], "insertion normal")
    normals = control_normals(cumulative / length, tangents, n0, n1, chord)
    dots = np.clip(np.einsum("ij,ij->i", normals[:-1], normals[1:]), -1.0, 1.0)
    return AxisGeometry(p, cumulative, length, seg_length, seg_tangent, tangents, normals, np.arccos(dots))


def vertex_tangents(points: np.ndarray) -> np.ndarray:
    """``(n+1, 3)`` unit tangents: the chord ``P_{k+1} - P_{k-1}`` inside, the end segments at the ends.

    A collapsed chord takes the overall direction ``P_n - P_0`` (the longest chord if that collapses too).
    """
    p = np.asarray(points, dtype=np.float64)
    chord = np.empty_like(p)
    chord[0] = p[1] - p[0]
    chord[-1] = p[-1] - p[-2]
    chord[1:-1] = p[2:] - p[:-2]
    norm = np.linalg.norm(chord, axis=1)
    overall = p[-1] - p[0]
    if np.linalg.norm(overall) <= MIN_SEGMENT_LENGTH:
        overall = chord[int(np.argmax(norm))]
    if np.linalg.norm(overall) <= MIN_SEGMENT_LENGTH:
        overall = np.array([0.0, 0.0, 1.0])  # every point coincides: any direction (callers reject the axis)
    overall = overall / np.linalg.norm(overall)
    defined = norm > MIN_SEGMENT_LENGTH
    return np.where(defined[:, None], chord / np.where(defined, norm, 1.0)[:, None], overall)


def _endpoint_normal(normal, tangent: np.ndarray, name: str) -> np.ndarray:
    n = validation.vector3(normal, name)
    m = n - np.dot(n, tangent) * tangent
    if np.linalg.norm(m) <= DEGENERATE_NORMAL * max(np.linalg.norm(n), 1.0):
        raise ValueError(f"the {name} is parallel to the muscle axis; give a direction across the muscle.")
    return m / np.linalg.norm(m)


def control_normals(params: np.ndarray, tangents: np.ndarray, n0: np.ndarray, n1: np.ndarray,
                    chord: np.ndarray) -> np.ndarray:
    """Control normals ``(n+1, 3)``: slerp of the endpoint normals by ``s_i``, projected orthogonal to ``T_i``.

    Where the projection degenerates, the normal is interpolated from the nearest defined neighbours (paper §5.1).
    """
    n = slerp(n0, n1, params, fallback_axis=chord)
    m = n - np.einsum("ij,ij->i", n, tangents)[:, None] * tangents
    norm = np.linalg.norm(m, axis=1)
    defined = norm > DEGENERATE_NORMAL
    normals = np.zeros((len(params), 3))
    normals[defined] = m[defined] / norm[defined, None]
    if not defined.all():
        idx = np.flatnonzero(defined)
        if idx.size == 0:
            raise ValueError("the muscle axis is folded so that no cross-section normal can be defined.")
        for i in np.flatnonzero(~defined):
            lo = idx[idx < i]
            hi = idx[idx > i]
            if lo.size and hi.size:
                a, b = lo[-1], hi[0]
                t = (params[i] - params[a]) / max(params[b] - params[a], 1e-300)
                n = slerp(normals[a], normals[b], float(t), fallback_axis=tangents[i])
            else:
                n = normals[lo[-1] if lo.size else hi[0]]
            m = n - np.dot(n, tangents[i]) * tangents[i]
            normals[i] = m / np.linalg.norm(m) if np.linalg.norm(m) > DEGENERATE_NORMAL else n
    return normals
