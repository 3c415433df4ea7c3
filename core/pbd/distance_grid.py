"""Signed distance grids of closed meshes (anatomical bones, paper §6.3 / thesis §5.3.1).

A :class:`DistanceGrid` samples the signed distance to a mesh (negative inside) at the nodes of a regular grid in
the rest space of the bone the mesh belongs to; it moves rigidly with the bone. Built once at bind time by the
numba kernel in ``kernels/distance.py``; sampled with trilinear value and gradient (``kernels/grid.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation

DEFAULT_RESOLUTION = 24
"""Nodes along the longest side of the box."""


@dataclass(frozen=True)
class DistanceGrid:
    """values: (nx, ny, nz) float64 [m]; origin: (3,) [m] first node; spacing: (3,) [m] node step."""

    values: np.ndarray
    origin: np.ndarray
    spacing: np.ndarray

    def sample(self, points):
        """Reference trilinear value and gradient at ``points (n, 3)`` (numpy; kernels use ``kernels/grid.py``).

        Returns ``values (n,)``, ``grads (n, 3)``, ``inside (n,) bool`` (outside points: 0, 0, False).
        """
        p = validation.points(points, "query points", min_count=0)
        shape = np.array(self.values.shape)
        f = (p - self.origin) / self.spacing
        inside = np.all((f >= 0) & (f <= shape - 1), axis=1)
        idx = np.minimum(np.floor(np.clip(f, 0, None)).astype(np.int64), shape - 2)
        t = f - idx
        out_v = np.zeros(len(p))
        out_g = np.zeros((len(p), 3))
        for n in np.flatnonzero(inside):
            i, j, k = idx[n]
            c = self.values[i:i + 2, j:j + 2, k:k + 2]
            tx, ty, tz = t[n]
            wx, wy, wz = np.array([1 - tx, tx]), np.array([1 - ty, ty]), np.array([1 - tz, tz])
            out_v[n] = np.einsum("ijk,i,j,k->", c, wx, wy, wz)
            d = np.array([-1.0, 1.0])
            out_g[n] = [np.einsum("ijk,i,j,k->", c, d, wy, wz) / self.spacing[0],
                        np.einsum("ijk,i,j,k->", c, wx, d, wz) / self.spacing[1],
                        np.einsum("ijk,i,j,k->", c, wx, wy, d) / self.spacing[2]]
        return out_v, out_g, inside


def mesh_distance_grid(vertices, faces, resolution: int = DEFAULT_RESOLUTION, padding: float = 0.0) -> DistanceGrid:
    """Signed distance grid of a closed triangle mesh. ``vertices (V, 3) [m]``, ``faces (F, 3) int``.

    The grid covers the mesh's bounding box grown by ``padding`` [m] (use the largest particle radius, so every
    particle that can touch the bone is inside the grid) plus one cell.
    """
    from ...kernels.distance import signed_distance

    v = validation.points(vertices, "bone mesh vertices", min_count=3)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    if f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
        raise ValueError("the bone mesh needs triangles given as an (F, 3) array of vertex indices.")
    if f.min() < 0 or f.max() >= len(v):
        raise ValueError("the bone mesh has triangle indices outside its vertex list.")
    if int(resolution) < 4:
        raise ValueError(f"a distance grid needs a resolution of at least 4, got {resolution}.")
    lo = v.min(axis=0) - padding
    hi = v.max(axis=0) + padding
    size = hi - lo
    step = size.max() / (int(resolution) - 3)
    counts = np.maximum(np.ceil(size / step).astype(int) + 3, 4)
    origin = lo - step
    axes = [origin[d] + step * np.arange(counts[d]) for d in range(3)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    out = np.empty(len(nodes))
    signed_distance(np.ascontiguousarray(nodes), v, f, out)
    return DistanceGrid(out.reshape(tuple(counts)), origin, np.full(3, step))

