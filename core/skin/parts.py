"""Skin parts: partition of the mesh by bone, and the HRBF samples of each part (thesis §3.1, Fig. 3.3).

* **Partition**: each vertex belongs to the bone with its highest skinning weight. A vertex with no weight at all
  is an error by default (the message names how many and the first index); ``unweighted="nearest"`` instead gives it
  to the bone whose segment is nearest, the documented fallback for meshes with a few stray vertices.
* **Small parts**: a bone that owns fewer than ``DEFAULT_MIN_PART_VERTICES`` vertices joins its nearest ancestor's
  part (``merge_small_parts``).
* **Samples**: Poisson-disc selection among the part's vertices (greedy dart throwing in a seeded random order, so
  the same seed gives the same samples), with area-weighted vertex normals; radius ``0.75 sqrt(area / count)``.
* **End caps** (thesis Fig. 3.3): at each bone end that is a joint with another part (head with a parent part,
  tail with a child part) the thesis adds one sample on the bone axis at the distance ``r_j`` from that end (the
  smallest distance from the end to the part's vertices), with the bone direction as normal. The cap here is that
  point plus two rings of samples on the hemisphere of radius ``r_j`` around the bone end (30 and 60 degrees from
  the bone direction, normals radial): the part ends in a rounded cap just past the joint, inside the neighbouring
  part. Ends that are not joints (a root's
  head, a leaf's tail) are closed by the mesh itself and get no cap.
* **Support radius** ``R_j`` (thesis §3.1.1): the largest distance from the part's samples to its bone segment.

Arrays: ``vertices (V, 3)`` [m], ``faces (F, 3) int``, ``weights (V, B)``, ``heads/tails (B, 3)`` [m] rest bone ends
in the mesh's space, ``parents (B,) int`` (-1 for a root).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation

DEFAULT_MIN_PART_VERTICES = 24
"""Bones owning fewer vertices than this join their parent's part (``merge_small_parts``)."""
DEFAULT_SAMPLES_PER_PART = 80
"""Target HRBF samples per part (Vaillant et al. used about 50; more follow the mesh better, the fit is O(N^3))."""
POISSON_RADIUS_FACTOR = 0.75


def vertex_normals(vertices, faces) -> np.ndarray:
    """Area-weighted unit vertex normals ``(V, 3)``; vertices on no face (or only zero-area faces) get (0, 0, 0)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    n = np.zeros_like(v)
    if len(f):
        fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        for c in range(3):
            np.add.at(n, f[:, c], fn)
    length = np.linalg.norm(n, axis=1)
    ok = length > 1e-20
    n[ok] /= length[ok, None]
    n[~ok] = 0.0
    return n


def vertex_areas(vertices, faces) -> np.ndarray:
    """One third of the area of each face around each vertex, ``(V,)`` [m^2]."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    area = np.zeros(len(v))
    if len(f):
        fa = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
        for c in range(3):
            np.add.at(area, f[:, c], fa / 3.0)
    return area


def segment_distance(points, head, tail) -> np.ndarray:
    """Distance ``(n,)`` [m] from ``points (n, 3)`` to the segment ``[head, tail]``."""
    p = np.asarray(points, dtype=np.float64)
    e = np.asarray(tail, dtype=np.float64) - head
    e2 = float(e @ e)
    t = np.zeros(len(p)) if e2 <= 0.0 else np.clip((p - head) @ e / e2, 0.0, 1.0)
    return np.linalg.norm(p - (head + t[:, None] * e), axis=1)


def partition_vertices(weights, unweighted: str = "error", vertices=None, heads=None, tails=None,
                       bone_names=None) -> np.ndarray:
    """Part label ``(V,) int64`` of each vertex: its highest-weight bone (ties: the lower bone index).

    ``unweighted``: ``"error"`` raises ``ValueError`` if a vertex has no positive weight; ``"nearest"`` gives such a
    vertex to the bone with the nearest segment (needs ``vertices``, ``heads``, ``tails``).
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] == 0:
        raise ValueError("skinning weights must be a (vertices, bones) table with at least one bone.")
    if not np.all(np.isfinite(w)):
        raise ValueError("skinning weights contain NaN or infinite values.")
    labels = np.argmax(w, axis=1).astype(np.int64)
    none = np.flatnonzero(np.max(w, axis=1) <= 0.0)
    if len(none):
        if unweighted == "error":
            raise ValueError(f"{len(none)} vertices have no skinning weight (the first is vertex {int(none[0])}); "
                             f"weight them to a bone (Weight Paint, or Parent with Automatic Weights) or choose "
                             f"the 'nearest bone' fallback.")
        if unweighted != "nearest":
            raise ValueError(f"unweighted must be 'error' or 'nearest', got {unweighted!r}.")
        if vertices is None or heads is None or tails is None:
            raise ValueError("the 'nearest bone' fallback needs the vertices and the bone ends.")
        v = np.asarray(vertices, dtype=np.float64)[none]
        d = np.stack([segment_distance(v, h, t) for h, t in zip(np.asarray(heads), np.asarray(tails))], axis=1)
        labels[none] = np.argmin(d, axis=1)
    return labels


def merge_small_parts(labels, parents, min_vertices: int) -> np.ndarray:
    """Give the vertices of every bone that owns fewer than ``min_vertices`` to its nearest ancestor that owns
    enough (a cheek or finger bone of a few vertices cannot carry an HRBF; its skin follows the parent part, and the
    bone still deforms it through the skinning weights). A root with too few vertices keeps them. Returns new
    labels ``(V,)``."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    parents = np.asarray(parents, dtype=np.int64)
    count = np.bincount(labels, minlength=len(parents))
    target = np.arange(len(parents))
    for j in range(len(parents)):
        if 0 < count[j] < min_vertices:
            a = parents[j]
            while a >= 0 and count[a] < min_vertices:
                a = parents[a]
            if a >= 0:
                target[j] = a
    return target[labels]


def poisson_indices(points, radius: float, seed: int = 0) -> np.ndarray:
    """Indices of a Poisson-disc subset of ``points (n, 3)``: no two kept points closer than ``radius`` [m].

    Greedy dart throwing in a random order drawn from ``seed`` (deterministic), numba kernel.
    """
    from ...kernels.sampling import poisson_select

    p = np.ascontiguousarray(points, dtype=np.float64)
    order = np.random.default_rng(seed).permutation(len(p)).astype(np.int64)
    keep = np.zeros(len(p), dtype=np.bool_)
    poisson_select(p, order, float(radius), keep)
    return order[keep[order]]


CAP_CUT = 1.25
"""Where a part ends past a capped joint, in cap radii from the joint (``PartSamples.ends``)."""
CAP_RING_ANGLES = (30.0, 60.0)
"""Polar angles [deg] of the cap rings around the bone direction."""
CAP_RING_COUNT = 6


def cap_directions(axis) -> np.ndarray:
    """Unit directions ``(1 + rings * CAP_RING_COUNT, 3)`` of an end cap around the unit ``axis``."""
    axis = np.asarray(axis, dtype=np.float64)
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    u /= np.linalg.norm(u)
    w = np.cross(axis, u)
    dirs = [axis]
    for polar in np.radians(CAP_RING_ANGLES):
        for k in range(CAP_RING_COUNT):
            phi = 2.0 * np.pi * k / CAP_RING_COUNT
            dirs.append(np.cos(polar) * axis + np.sin(polar) * (np.cos(phi) * u + np.sin(phi) * w))
    return np.array(dirs)


@dataclass(frozen=True)
class PartSamples:
    """HRBF samples of one part. points, normals: (N, 3); caps: number of end-cap samples at the end of the arrays;
    vertex_indices: (Vj,) the part's mesh vertices; radius: support ``R_j`` [m]; ends: one ``(point (3,) [m],
    outward unit direction (3,), cut [m])`` per capped end (a joint with a neighbouring part): where the part ends
    past the joint (``core/skin/part_grid.py``), ``CAP_CUT`` cap radii, or the part's furthest vertex that way and
    ``CAP_CUT - 1`` cap radii more."""

    bone: int
    points: np.ndarray
    normals: np.ndarray
    caps: int
    vertex_indices: np.ndarray
    radius: float
    ends: tuple = ()


def sample_parts(vertices, faces, labels, heads, tails, parents, samples_per_part: int = DEFAULT_SAMPLES_PER_PART,
                 seed: int = 0, bone_names=None) -> list:
    """:class:`PartSamples` of every bone that owns vertices, in bone order (see the module docstring)."""
    v = validation.points(vertices, "mesh vertices")
    heads = np.asarray(heads, dtype=np.float64)
    tails = np.asarray(tails, dtype=np.float64)
    parents = np.asarray(parents, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    normals = vertex_normals(v, faces)
    areas = vertex_areas(v, faces)
    owned = [np.flatnonzero(labels == j) for j in range(len(heads))]
    has_part = np.array([len(o) > 0 for o in owned])
    parts = []
    for j, idx in enumerate(owned):
        if not len(idx):
            continue
        name = bone_names[j] if bone_names is not None else f"bone {j}"
        good = idx[np.linalg.norm(normals[idx], axis=1) > 0.5]
        if len(good) < 4:
            raise ValueError(f"the skin part of {name} has only {len(good)} vertices on faces; a part needs at "
                             f"least 4 (give the bone more vertices, or no weight at all).")
        area = float(areas[good].sum())
        radius = POISSON_RADIUS_FACTOR * np.sqrt(max(area, 1e-12) / samples_per_part)
        pick = good[poisson_indices(v[good], radius, seed)]  # not seed + j: a part must not depend on its bone's
        # place in the list (mirrored limbs, a bone added elsewhere)
        pts = [v[pick]]
        nrm = [normals[pick]]
        axis = tails[j] - heads[j]
        length = float(np.linalg.norm(axis))
        caps = 0
        capped = []
        if length > 0.0:
            direction = axis / length
            children = np.flatnonzero(parents == j)
            ends = []
            if parents[j] >= 0 and has_part[parents[j]]:
                ends.append((heads[j], -direction))
            if any(has_part[c] for c in children):
                ends.append((tails[j], direction))
            for end, outward in ends:
                r = float(np.min(np.linalg.norm(v[idx] - end, axis=1)))
                dirs = cap_directions(outward)
                pts.append(end + r * dirs)
                nrm.append(dirs)
                caps += len(dirs)
                furthest = float(np.max((v[idx] - end) @ outward))
                cut = max(CAP_CUT * r, furthest + (CAP_CUT - 1.0) * r)
                capped.append((np.array(end, dtype=np.float64), np.array(outward, dtype=np.float64), cut))
        points = np.concatenate(pts)
        R = float(np.max(segment_distance(points, heads[j], tails[j])))
        parts.append(PartSamples(bone=j, points=points, normals=np.concatenate(nrm), caps=caps,
                                 vertex_indices=idx, radius=max(R, 1e-6), ends=tuple(capped)))
    return parts
