"""Parametric surface mesh of a muscle (rings along the axis) for display and volume measurement; all muscles of a
batch at once for drawing (:func:`batch_surfaces`).

Ring ``j`` sits at parameter ``s_j``; its vertex at angle ``theta`` is ``C(s_j) + w Phi(s_j) r(theta) (cos theta n +
sin theta b)`` in the continuous frame of :mod:`core.muscle.axis` (paper eq. 2 and 5). The angles are spaced
uniformly in the ellipse's parametric angle, so a ring's polygon keeps the same area ratio to its ellipse for every
eccentricity. On a straight axis these vertices lie exactly on the 0-iso of ``f_M``. On a bent axis the
reparameterised projection (Algorithm 1) moves the iso-surface a little on the inner side of each bend;
``snap=True`` (default) moves every vertex along its ray onto ``f_M = 0`` by safeguarded Newton steps (field from the
numba kernel, all vertices at once).
"""
from __future__ import annotations

import functools

import numpy as np

from .field import frame_at

SNAP_TOLERANCE = 1e-10
"""Vertices are snapped until ``|f_M| < SNAP_TOLERANCE`` [m] (or ``SNAP_ITERATIONS`` are used)."""
SNAP_ITERATIONS = 40


def muscle_surface(muscle, rings: int = 96, sides: int = 48, snap: bool = True):
    """Closed triangle mesh of ``muscle``'s surface.

    Returns ``vertices (V, 3) float64 [m]`` and ``faces (F, 3) int64`` (outward, counter-clockwise), with
    ``V = ring_count * sides + 2``: ring vertices, then the origin and insertion apex vertices (axis endpoints).
    ``ring_count = rings``, plus one ring exactly at each end where ``Phi`` is not 0 there (alpha or beta = 1),
    which then closes as a flat cap through the apex.
    """
    if rings < 2 or sides < 3:
        raise ValueError("a muscle surface needs at least 2 rings and 3 sides.")
    geo = muscle.geometry()
    prof = muscle.profile(geo.length)
    # interior rings, plus a ring exactly at an end where the profile is open there (alpha or beta = 1)
    s = np.linspace(0.0, 1.0, rings + 2)[1:-1]
    ends = muscle.profile_at(np.array([0.0, 1.0]))
    if ends[0] > 0.0:
        s = np.concatenate([[0.0], s])
    if ends[1] > 0.0:
        s = np.concatenate([s, [1.0]])
    # uniform in the ellipse's parametric angle: same polygon area ratio as a circle for any eccentricity
    angle = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    ex, ey = prof.v * np.cos(angle), prof.u * np.sin(angle)
    theta = np.arctan2(ey, ex)
    r = np.hypot(ex, ey)
    phi = muscle.profile_at(s)
    centres = np.empty((len(s), 3))
    directions = np.empty((len(s), sides, 3))
    for j, sj in enumerate(s):
        _, h, _, n, b, _, _ = frame_at(geo, float(sj))
        centres[j] = h
        directions[j] = np.cos(theta)[:, None] * n + np.sin(theta)[:, None] * b
    radius = prof.width * phi[:, None] * r[None, :]
    verts = centres[:, None, :] + radius[..., None] * directions
    verts = verts.reshape(-1, 3)
    if snap:
        verts = _snap(muscle, centres, directions.reshape(len(s), sides, 3), radius)
    apex = np.stack([geo.points[0], geo.points[-1]])
    vertices = np.concatenate([verts, apex])
    faces = _ring_faces(len(s), sides)
    return vertices, faces


def batch_surfaces(batch, rings: int = 16, sides: int = 12):
    """Every muscle of a :class:`core.muscle.batch.MuscleBatch` as rings along its axis, for drawing: the sampling
    of :func:`muscle_surface` (``snap=False``) with a ring at each end too, so every muscle has the same layout
    (a closed end's ring has radius 0 and lies on its apex). One numba kernel for all muscles
    (``kernels/muscle_surface.py``).

    Returns ``vertices (M (rings + 2) sides + 2 M, 3) float32 [m]``, ``normals`` (the same shape, unit) and
    ``faces (M F, 3) int32`` (outward, counter-clockwise), muscle ``m``'s block of vertices first to last.
    """
    from ...kernels.muscle_surface import surface_rings

    if rings < 0 or sides < 3:
        raise ValueError("drawn muscles need at least 0 inner rings and 3 sides.")
    M = batch.muscle_count
    s, cos_a, sin_a, faces = _drawn_layout(M, rings, sides)
    block = len(s) * sides + 2
    vertices = np.empty((M * block, 3), dtype=np.float32)
    normals = np.empty((M * block, 3), dtype=np.float32)
    if M:
        surface_rings(batch.kernel_arrays(), s, cos_a, sin_a, vertices, normals)
    return vertices, normals, faces


@functools.lru_cache(maxsize=32)
def _drawn_layout(count: int, rings: int, sides: int):
    """``(s, cos, sin, faces)`` of :func:`batch_surfaces` for ``count`` muscles (read-only arrays, built once)."""
    s = np.linspace(0.0, 1.0, rings + 2)
    angle = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    block = len(s) * sides + 2
    one = _ring_faces(len(s), sides).astype(np.int32)
    faces = (one[None, :, :] + (block * np.arange(count, dtype=np.int32))[:, None, None]).reshape(-1, 3)
    out = (s, np.cos(angle), np.sin(angle), faces)
    for a in out:
        a.flags.writeable = False
    return out


def _ring_faces(rings: int, sides: int) -> np.ndarray:
    idx = np.arange(rings * sides).reshape(rings, sides)
    nxt = np.roll(idx, -1, axis=1)
    a, b, c, d = idx[:-1], nxt[:-1], idx[1:], nxt[1:]
    quads = np.concatenate([np.stack([a, b, d], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)])
    start, end = rings * sides, rings * sides + 1
    cap0 = np.stack([np.full(sides, start), nxt[0], idx[0]], -1)
    cap1 = np.stack([np.full(sides, end), idx[-1], nxt[-1]], -1)
    return np.concatenate([quads, cap0, cap1]).astype(np.int64)


def _snap(muscle, centres, directions, radius):
    """Move each ring vertex along its ray ``c + t d`` onto ``f_M = 0`` (Newton, bisection-safeguarded)."""
    c = np.repeat(centres, directions.shape[1], axis=0)
    d = directions.reshape(-1, 3)
    t = radius.reshape(-1).copy()
    active = t > 0.0
    lo = np.zeros_like(t)
    hi = np.full_like(t, np.inf)
    for _ in range(SNAP_ITERATIONS):
        if not active.any():
            break
        f, g = muscle.field(c[active] + t[active, None] * d[active])
        idx = np.flatnonzero(active)
        inside = f < 0.0
        lo[idx[inside]] = np.maximum(lo[idx[inside]], t[idx[inside]])
        hi[idx[~inside]] = np.minimum(hi[idx[~inside]], t[idx[~inside]])
        slope = np.einsum("ij,ij->i", g, d[idx])
        step = np.where(slope > 1e-3, -f / np.where(slope > 1e-3, slope, 1.0), np.nan)
        new = t[idx] + step
        bad = ~np.isfinite(new) | (new <= lo[idx]) | (new >= hi[idx])
        fallback = np.where(np.isfinite(hi[idx]), 0.5 * (lo[idx] + hi[idx]), 2.0 * t[idx] + 1e-6)
        done = np.abs(f) < SNAP_TOLERANCE
        t[idx] = np.where(done, t[idx], np.where(bad, fallback, new))
        active[idx[done]] = False
    return c + t[:, None] * d


def mesh_volume(vertices, faces) -> float:
    """Enclosed volume of a closed, consistently oriented triangle mesh (divergence theorem) [m^3]."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


FIELD_VOLUME_CELLS = 40
"""Grid points per side of :func:`field_volume`'s box (64,000 field evaluations, a few milliseconds)."""


def field_volume(muscle, cells: int = FIELD_VOLUME_CELLS) -> float:
    """Volume [m^3] of the region ``f_M < 0``, the muscle the skin sees (paper eq. 1), by quadrature on a grid.

    The box is the axis's bounding box grown by the reach ``max(w v Phi)``, the largest surface radius (``v`` the
    long semi-axis; nothing of the muscle lies further out), plus 5 %; ``cells^3`` points at its cell centres each
    count their cell's volume times the smoothed indicator ``clip(1/2 - f_M / h, 0, 1)``, ``h`` the cell's mean
    size: ``f_M`` grows like a distance near its surface, so cut cells count about the part inside (the error is
    second order in ``h``, not first as for a plain count). It holds where the axis bends more tightly than the
    muscle is wide, where the rings of :func:`muscle_surface` cross each other on the inner side. Where a profile
    is open at an end (alpha or beta = 1) the region also holds the rounded end beyond the axis's end, which the
    mesh closes with a flat cap.
    """
    from .batch import pack_muscles

    return batch_field_volume(pack_muscles([muscle]), 0, cells)


def batch_field_volume(batch, m: int, cells: int = FIELD_VOLUME_CELLS) -> float:
    """:func:`field_volume` of muscle ``m`` of a :class:`core.muscle.batch.MuscleBatch` (its reach from the
    batch's scalars)."""
    from ...kernels.constants import SCALAR_REACH
    from .batch import evaluate_muscles

    if cells < 4:
        raise ValueError("field_volume needs at least 4 cells per side.")
    a, b = batch.axis_start[m], batch.axis_start[m + 1]
    axis = np.asarray(batch.axis_points[a:b], dtype=np.float64)
    margin = 1.05 * batch.muscle_scalar[m, SCALAR_REACH] + 1e-9  # the reach w v max(Phi)
    lo, hi = axis.min(axis=0) - margin, axis.max(axis=0) + margin
    size = (hi - lo) / cells
    centres = [lo[c] + size[c] * (np.arange(cells) + 0.5) for c in range(3)]
    points = np.stack(np.meshgrid(*centres, indexing="ij"), axis=-1).reshape(-1, 3)
    values, _ = evaluate_muscles(batch, points)
    h = float(np.cbrt(np.prod(size)))
    return float(np.clip(0.5 - values[:, m] / h, 0.0, 1.0).sum() * np.prod(size))
