"""One skin part's compact field baked in a grid in its bone's rest space (thesis §3.1.1).

``bake_part_grid`` evaluates the HRBF at the grid nodes (``kernels/hrbf.py``), applies ``K`` of thesis eq. (3.1)
with the part's support radius ``R`` and stores value and gradient as ``float32`` (``kernels/part_grid.py`` layout).
The grid is baked over the samples' box grown by ``R`` (where ``f_H < R``, i.e. where ``K > 0``, for a distance-like
``f_H``), cells are cubes, ``resolution`` nodes along the longest side; it is then cut to the box of its nonzero
nodes grown by one node (the same field everywhere, about a third of the nodes).

**Clip to the bone's capsule.** Every part is intersected with a capsule around its bone,
``f = max(f_H, CLIP_SLOPE (d_seg - CLIP_RADIUS R))`` with ``d_seg`` the distance to the bone segment: all samples lie
within ``R`` of the segment, so the skin is untouched, and ``K(f) = 0`` beyond ``d_seg = (CLIP_RADIUS +
1/CLIP_SLOPE) R``. The grid box covers the samples and the bone grown by that distance plus a cell, so the field is
exactly 0 on the grid's faces (no seam where a grid ends; outside a grid the field is 0).

**Clip beyond the joints.** Past each capped end (a joint with a neighbouring part: its point ``J``, outward
direction ``u`` and cut ``c``, ``core/skin/parts.py``) the part ends at a plane ``c`` beyond the joint,
``f = max(f_H, (x - J) . u - c)``: the cap's samples reach a cap radius past it, the cut lies a quarter of one
further (or that far past the part's own furthest vertex), and what the HRBF swells further along the neighbour (a
sheet across the calf below the knee) is cut.

**Clip to the body.** Every part is intersected with the body at rest (``core/skin/rest_body.py``) grown by
``BODY_MARGIN R``: ``f = max(f_H, d - BODY_MARGIN R)``, ``d`` the signed distance to the rest mesh (negative inside).
No part stands out of the rest skin, nor lies deeper under it than the body does, so at rest a vertex lies inside no
other part (its iso-value is its own part's) and the parts' gradients at the skin are the skin's normals.

**Work only where it can matter.** Where the capsule or a cut already reaches ``R``, ``K(f) = 0`` whatever ``f_H``: the
HRBF is evaluated at the other nodes only. The body clip runs where ``f < R``, on the lattice
(``RestBody.lattice_signed_distance``), and searches each node's distance only as far as the clip can still win.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation

DEFAULT_GRID_RESOLUTION = 48
"""Nodes along the longest side of a part's grid (a 0.3 m forearm: 7 mm cells)."""
CLIP_RADIUS = 1.1
CLIP_SLOPE = 2.0
BODY_MARGIN = 0.005
"""How far a part may stand out of the body at rest, in support radii ``R`` (0.3-0.8 mm on a human's limbs)."""
ROUNDING = 1.0 + 1e-9
"""``K(f)`` is computed at the nodes where ``f < ROUNDING R``, not ``f < R``: ``kernels/part_grid.compact_field``
divides by ``R`` through its reciprocal, so at ``f = R`` (a node beyond the body's reach is clipped to it) ``K`` can
round to a tiny positive value, which the grid keeps."""


@dataclass(frozen=True)
class PartGrid:
    """values: (nx, ny, nz, 4) float32 (value, gradient [1/m]); origin: (3,) [m]; spacing h [m]; bone: index."""

    values: np.ndarray
    origin: np.ndarray
    spacing: float
    bone: int

    @property
    def box(self) -> np.ndarray:
        """(2, 3) [m] rest-space corners of the grid."""
        return np.stack([self.origin, self.origin + self.spacing * (np.array(self.values.shape[:3]) - 1)])

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)

    def sample(self, points, transform=None):
        """Numpy reference: value ``(n,)`` and gradient ``(n, 3)`` at world ``points``; ``transform (4, 4)`` is the
        bone's ``B_j`` (rest -> posed, rigid; identity if None)."""
        p = validation.points(points, "query points", min_count=0)
        B = np.eye(4) if transform is None else np.asarray(transform, dtype=np.float64)
        Binv = np.linalg.inv(B)
        local = p @ Binv[:3, :3].T + Binv[:3, 3]
        shape = np.array(self.values.shape[:3])
        f = (local - self.origin) / self.spacing
        inside = np.all((f >= 0) & (f < shape - 1), axis=1)
        idx = np.where(inside[:, None], np.floor(f), 0).astype(np.int64)
        t = np.where(inside[:, None], f - idx, 0.0)
        out = np.zeros((len(p), 4))
        for corner in range(8):
            dx, dy, dz = corner & 1, (corner >> 1) & 1, (corner >> 2) & 1
            w = (np.where(dx, t[:, 0], 1 - t[:, 0]) * np.where(dy, t[:, 1], 1 - t[:, 1])
                 * np.where(dz, t[:, 2], 1 - t[:, 2]))
            out += w[:, None] * self.values[idx[:, 0] + dx, idx[:, 1] + dy, idx[:, 2] + dz].astype(np.float64)
        out[~inside] = 0.0
        grads = out[:, 1:] @ Binv[:3, :3]  # R grad with R = Binv^T rotation
        return out[:, 0], grads


def grid_box(points, R: float, resolution: int):
    """Origin ``(3,)`` [m], spacing ``h`` [m] and node counts ``(3,)`` of the grid around ``points`` grown by ``R``."""
    lo = points.min(axis=0) - R
    hi = points.max(axis=0) + R
    h = float(np.max(hi - lo)) / (resolution - 3)
    dims = np.ceil((hi - lo) / h).astype(np.int64) + 3
    origin = lo - h
    return origin, h, dims


def bake_part_grid(hrbf, R: float, sample_points, head, tail, bone: int,
                   resolution: int = DEFAULT_GRID_RESOLUTION, ends=(), body=None) -> PartGrid:
    """Bake ``K(f)`` and its gradient for the HRBF clipped to the bone's capsule, beyond its capped ``ends`` and to
    the rest ``body`` (module docstring).

    sample_points (N, 3) [m]; head, tail (3,) [m] the bone segment in rest space; R [m] the support radius; ends:
    ``(point, outward direction, cut)`` of each capped end (``PartSamples.ends``); body: the
    :class:`core.skin.rest_body.RestBody` (None: no body clip).
    """
    from ...kernels.hrbf import hrbf_field
    from ...kernels.part_grid import compact_field

    if not isinstance(resolution, (int, np.integer)) or resolution < 8:
        raise ValueError(f"grid resolution must be a whole number of at least 8 nodes, got {resolution!r}.")
    R = validation.positive(R, "support radius")
    head = np.asarray(head, dtype=np.float64)
    tail = np.asarray(tail, dtype=np.float64)
    reach = (CLIP_RADIUS + 1.0 / CLIP_SLOPE) * R
    cover = np.vstack([np.asarray(sample_points, dtype=np.float64), head, tail])
    origin, h, dims = grid_box(cover, reach, int(resolution))
    axes = [origin[c] + h * np.arange(dims[c]) for c in range(3)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    # capsule clip: CLIP_SLOPE (d_seg - CLIP_RADIUS R); the plane of each capped end
    e = tail - head
    e2 = float(e @ e)
    t = np.zeros(len(nodes)) if e2 <= 0.0 else np.clip((nodes - head) @ e / e2, 0.0, 1.0)
    d = nodes - (head + t[:, None] * e)
    dist = np.linalg.norm(d, axis=1)
    capsule = CLIP_SLOPE * (dist - CLIP_RADIUS * R)
    cuts = [((nodes - point) @ np.asarray(u, dtype=np.float64) - cut, np.asarray(u, dtype=np.float64))
            for point, u, cut in ends]
    # f = max(f_H, clips...) >= R where a clip is: K(f) = 0 there whatever f_H; f and its gradient are computed at
    # the other nodes only ("live")
    highest = capsule.copy()
    for c, _ in cuts:
        np.maximum(highest, c, out=highest)
    live = np.flatnonzero(highest < R * ROUNDING)
    f = np.empty(len(live))
    g = np.empty((len(live), 3))
    hrbf_field(np.ascontiguousarray(nodes[live]), *hrbf.kernel_arrays(), f, g)
    f, g = _clip(f, g, capsule[live], CLIP_SLOPE * d[live] / np.maximum(dist[live], 1e-12)[:, None])
    for c, u in cuts:
        f, g = _clip(f, g, c[live], np.broadcast_to(u, (len(live), 3)))
    if body is not None:
        near = np.flatnonzero(f < R)  # where K(f) > 0: elsewhere no clip can change it
        want = np.zeros(len(nodes), dtype=np.bool_)
        want[live[near]] = True
        margin = BODY_MARGIN * R
        # the clip wins only inside the body where |sd| < -(f + margin), outside it where sd > f + margin: no
        # deeper search inside, and outside a point found within f + margin ends it
        distance, gradient = body.lattice_signed_distance(origin, h, want.reshape(*dims), R + margin,
                                                          np.maximum(-(f[near] + margin), 0.0), f[near] + margin)
        # +inf: further out than the support, -inf: deeper inside than it (K = 1 either way)
        clip = np.clip(distance, -R - margin, R + margin) - margin
        f[near], g[near] = _clip(f[near], g[near], clip, gradient)
    support = np.flatnonzero(f < R * ROUNDING)  # K(f) = 0 and K'(f) = 0 at every other node
    k = np.empty(len(support))
    kg = np.empty((len(support), 3))
    compact_field(f[support], g[support], R, k, kg)
    values, first = _crop_to_support(dims, live[support], np.concatenate([k[:, None], kg], axis=1).astype(np.float32))
    return PartGrid(values=values, origin=origin + h * first, spacing=h, bone=bone)


def _clip(f, g, clip, clip_grad):
    """``max(f, clip)`` with the gradient of the larger: the intersection of the part with the clip's volume."""
    use = clip > f
    return np.where(use, clip, f), np.where(use[:, None], clip_grad, g)


def _crop_to_support(dims, index, node_values):
    """The grid of ``dims (3,)`` nodes whose nodes ``index (n,)`` (flat, C order) hold ``node_values (n, 4)``
    float32 and every other node 0, cut to the box of its nonzero nodes grown by one node: ``(values (nx, ny, nz, 4)
    float32, first)``, with ``first (3,)`` the index of the kept box's first node. Every cell with a nonzero corner is
    kept and the faces stay zero, so the sampled field is the same everywhere (0 outside); the box is what a point is
    tested against before any interpolation, and the grid's memory, about a third of the baked one."""
    dims = np.asarray(dims, dtype=np.int64)
    nonzero = np.any(node_values != 0.0, axis=1)
    if not nonzero.any():
        return np.zeros((2, 2, 2, 4), dtype=np.float32), np.zeros(3, dtype=np.int64)
    ijk = np.stack(np.unravel_index(index, tuple(dims)), axis=1)
    first = np.maximum(ijk[nonzero].min(axis=0) - 1, 0)
    last = np.minimum(ijk[nonzero].max(axis=0) + 1, dims - 1)
    values = np.zeros((*(last - first + 1), 4), dtype=np.float32)
    kept = np.all((ijk >= first) & (ijk <= last), axis=1)
    local = ijk[kept] - first
    values[local[:, 0], local[:, 1], local[:, 2]] = node_values[kept]
    return values, first
