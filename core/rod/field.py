"""The fusiform field of a rod: the paper's muscle field ``f_M`` (``kernels/fusiform.py``) on the rod's
axis, its width the profile times the rod's scales along the axis and its cross-section turned with the rod's
twist. :func:`rod_batch` allocates a :class:`core.muscle.batch.MuscleBatch` for a rod model; :func:`update_batch`
fills it from a rod state, so the skin and every field consumer read a rod muscle as they read an axis muscle.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...kernels.constants import SCALAR_LENGTH, SCALAR_REACH, SCALAR_SUPPORT
from ..muscle.batch import MuscleBatch, profile_tables
from ..pbd.control import DEFAULT_ACTIVATION, DEFAULT_ECCENTRICITY, DEFAULT_WIDTH_SCALE
from . import frames as _frames
from .model import RodModel


def rod_batch(model: RodModel, muscles: Sequence) -> MuscleBatch:
    """An empty batch laid out as ``model``'s rods, with the shapes and volumes of ``muscles`` (the
    :class:`core.muscle.primitive.FusiformMuscle` the model was built from)."""
    counts = np.diff(model.axis_start)
    exponents = [(m.shape.alpha_rest - 1, m.shape.beta_rest - 1, m.shape.alpha_active - 1, m.shape.beta_active - 1)
                 for m in muscles]
    return MuscleBatch.allocate(counts, exponents, model.volume, model.names)


def vertex_normals(model: RodModel, x, q) -> np.ndarray:
    """``(P, 3)`` cross-section normals at the rod's vertices: the mean of the ``d1`` of the frames on either side
    (anchors at the ends), made perpendicular to the vertex tangent (the mean of the segment directions)."""
    x = np.asarray(x, dtype=np.float64)
    d1 = _frames.directors(q)[:, 0]
    out = np.empty_like(x)
    for m in range(model.muscle_count):  # per muscle, vectorised over its vertices
        a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
        f0 = a + m
        n = d1[f0:f0 + b - a] + d1[f0 + 1:f0 + b - a + 1]
        seg = np.diff(x[a:b], axis=0)
        seg /= np.linalg.norm(seg, axis=1)[:, None]
        t = np.concatenate([seg[:1], seg[:-1] + seg[1:], seg[-1:]])
        t /= np.linalg.norm(t, axis=1)[:, None]
        n -= np.einsum("ij,ij->i", n, t)[:, None] * t
        out[a:b] = n / np.linalg.norm(n, axis=1)[:, None]
    return out


def update_batch(batch: MuscleBatch, model: RodModel, x, s, q, activation=None, eccentricity=None,
                 width_scale=None) -> None:
    """Fill ``batch`` from a rod state: axis ``x (P, 3)`` [m], scales ``s (P,)``, frames ``q (F, 4)``.

    The width is the rest width ``w0 = width_scale sqrt(V / (pi L0))`` (the scales, not the axis length, carry the
    volume), the cross-section normals follow the frames (:func:`vertex_normals`), the support and reach grow with
    the largest scale. ``activation``, ``eccentricity``, ``width_scale``: ``(M,)`` or None (the defaults of
    ``core/pbd/control.py``); the activation mixes the profiles as for the axis (paper §5.2): a rod host leaves it at
    0, the rod's contraction makes the bulge.
    """
    from ...kernels import profile as kp

    M = model.muscle_count
    activation = np.full(M, DEFAULT_ACTIVATION) if activation is None else \
        np.asarray(activation, dtype=np.float64).reshape(M)
    eccentricity = np.full(M, DEFAULT_ECCENTRICITY) if eccentricity is None else \
        np.asarray(eccentricity, dtype=np.float64).reshape(M)
    width_scale = np.full(M, DEFAULT_WIDTH_SCALE) if width_scale is None else \
        np.asarray(width_scale, dtype=np.float64).reshape(M)
    starts = model.axis_start
    x = np.ascontiguousarray(x, dtype=np.float64)
    normals = vertex_normals(model, x, q)
    batch._geometry(x, np.ascontiguousarray(np.stack([normals[starts[:-1]], normals[starts[1:] - 1]], 1)))
    arrays = batch.arrays
    t = arrays.axis_tangent  # the field's vertex tangents (chords): the normals made perpendicular to them
    normals -= np.einsum("ij,ij->i", normals, t)[:, None] * t
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    np.copyto(arrays.axis_normal, normals)
    dots = np.clip(np.einsum("ij,ij->i", normals[:-1], normals[1:]), -1.0, 1.0)
    arrays.seg_angle[:-1] = np.arccos(dots)
    np.copyto(arrays.axis_scale, s)
    kp.profile_scalars(arrays, activation, eccentricity, width_scale, model.volume, model.rest_span,
                       profile_tables())
    arrays.muscle_scalar[:, SCALAR_LENGTH] = batch.length
    peak = np.array([max(1.0, float(np.max(s[a:b]))) for a, b in zip(starts[:-1], starts[1:])])
    arrays.muscle_scalar[:, SCALAR_SUPPORT] *= peak
    arrays.muscle_scalar[:, SCALAR_REACH] *= peak
