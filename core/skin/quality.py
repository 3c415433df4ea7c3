"""Skin quality of a deformed mesh: how far its faces turn against a reference deformation, and how much sharper
its folds are than at rest.

Two numbers per frame, on a triangle mesh ``faces (F, 3)``:

* **turned faces**: the share of faces whose normal turns by more than ``TURN_LIMIT = 45`` degrees between the
  reference result (dual-quaternion skinning, or Blender's Armature modifier) and the result measured;
* **dihedral increase**: the largest increase, against the rest mesh, of the angle between the normals of two
  faces sharing an edge [deg] (0 where the surface is as smooth as at rest, up to 180 for a face folded flat onto
  its neighbour).

Both are reported for all faces and for the faces **outside the contact creases**. A crease is where the reference
result pushes one body part into another (the back of a bent knee, the inside of a bent elbow): there the implicit
skin is meant to differ from the reference, a fold that stops the intersection. A vertex is in a crease when its
reference position lies inside the skin field of a part other than its own (value above the iso ``0.5``) deeper
than its rest position did by ``CREASE_GAIN``; the crease grows by ``CREASE_RINGS`` rings of neighbours, and a face
is a crease face when one of its vertices is a crease vertex. Regions are the skin parts (a face belongs to the part
of its first vertex).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mesh_rings import cotangent_rings

TURN_LIMIT = 45.0
"""A face turned by more than this against the reference [deg] counts as turned."""
CREASE_GAIN = 0.02
"""How much deeper than at rest [field units] a vertex must lie inside another part to be in a crease."""
CREASE_RINGS = 2
"""Rings of neighbours the crease grows by."""


def face_normals(x, faces) -> np.ndarray:
    """``(F, 3)`` unit normals of ``faces (F, 3)`` at positions ``x (V, 3)``; zero for a degenerate face."""
    x = np.asarray(x, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    n = np.cross(x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]])
    length = np.linalg.norm(n, axis=1)
    return n / np.where(length > 0.0, length, 1.0)[:, None]


def _angle(a, b) -> np.ndarray:
    """Angles [deg] between rows of unit vectors; 0 where one of them is zero."""
    return np.degrees(np.arccos(np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0)))


def edge_face_pairs(faces) -> np.ndarray:
    """``(E, 2)`` int64: the two faces of every edge shared by exactly two faces (border and non-manifold edges
    are left out)."""
    f = np.asarray(faces, dtype=np.int64)
    F = len(f)
    a = np.concatenate([f[:, 0], f[:, 1], f[:, 2]])
    b = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    key = np.minimum(a, b) * (int(f.max()) + 1 if F else 1) + np.maximum(a, b)
    face = np.tile(np.arange(F), 3)
    order = np.argsort(key, kind="stable")
    key, face = key[order], face[order]
    uniq, start, count = np.unique(key, return_index=True, return_counts=True)
    two = start[count == 2]
    return np.stack([face[two], face[two + 1]], axis=1)


def grow(mask, rings, steps: int) -> np.ndarray:
    """``mask (V,)`` bool grown by ``steps`` rings of neighbours (``rings``: CSR ``(start, neighbour)``)."""
    start, neighbour = rings
    out = np.asarray(mask, dtype=np.bool_).copy()
    rows = np.repeat(np.arange(len(out)), np.diff(start))
    for _ in range(steps):
        hit = np.zeros_like(out)
        hit[rows[out[neighbour]]] = True
        out |= hit
    return out


def other_part_depth(skin, placement, points, own_part) -> np.ndarray:
    """``(n,)`` the largest value of any part's field but the point's own (``own_part (n,)``) at ``points (n, 3)``
    [m], with the parts placed as in ``placement`` (muscles left out: the bones' skin parts only)."""
    from ...kernels.part_grid import sample_part_many

    pts = np.ascontiguousarray(points, dtype=np.float64)
    n = len(pts)
    best = np.zeros(n)
    values, grads = np.empty(n), np.empty((n, 3))
    for p, grid in enumerate(skin.grids):
        sample_part_many(grid.values, grid.origin, 1.0 / grid.spacing, np.ascontiguousarray(placement.grid_binv[p]),
                         pts, values, grads)
        np.maximum(best, np.where(own_part == p, 0.0, values), out=best)
    return best


@dataclass(frozen=True)
class QualityMesh:
    """What the measure needs of a mesh, built once: the rest positions, faces, face pairs, rings and each face's
    region (its first vertex's part)."""

    rest: np.ndarray  # (V, 3) [m]
    faces: np.ndarray  # (F, 3) int64
    pairs: np.ndarray  # (E, 2) int64 faces sharing an edge
    rings: tuple  # (start, neighbour) CSR one-rings (core/skin/mesh_rings.py)
    rest_dihedral: np.ndarray  # (E,) [deg]
    face_region: np.ndarray  # (F,) int64 region of each face
    region_names: tuple  # names of the regions

    @classmethod
    def build(cls, rest, faces, vertex_region, region_names) -> "QualityMesh":
        rest = np.ascontiguousarray(rest, dtype=np.float64)
        faces = np.ascontiguousarray(faces, dtype=np.int64)
        pairs = edge_face_pairs(faces)
        n = face_normals(rest, faces)
        rings = cotangent_rings(rest, faces)
        return cls(rest=rest, faces=faces, pairs=pairs, rings=(rings.start, rings.neighbour),
                   rest_dihedral=_angle(n[pairs[:, 0]], n[pairs[:, 1]]),
                   face_region=np.asarray(vertex_region, dtype=np.int64)[faces[:, 0]],
                   region_names=tuple(region_names))


@dataclass(frozen=True)
class SkinQuality:
    """One frame's skin quality (module docstring). Shares are fractions (0..1), angles in degrees."""

    turned: float  # share of all faces turned by more than TURN_LIMIT against the reference
    turned_outside_creases: float  # the same share among the faces outside the creases
    crease_share: float  # share of faces in a crease
    turn_p99: float  # 99th percentile of the turn of the faces outside the creases
    dihedral_increase: float  # largest increase of the dihedral angle against rest, outside the creases
    dihedral_increase_all: float  # the same over all edges
    by_region: dict  # region name -> share of its faces outside the creases that turned
    turned_faces: np.ndarray  # (F,) bool turned faces outside the creases
    crease_faces: np.ndarray  # (F,) bool

    def as_dict(self) -> dict:
        """The numbers (no arrays), for JSON."""
        return {"turned": self.turned, "turned_outside_creases": self.turned_outside_creases,
                "crease_share": self.crease_share, "turn_p99": self.turn_p99,
                "dihedral_increase": self.dihedral_increase, "dihedral_increase_all": self.dihedral_increase_all,
                "by_region": dict(self.by_region)}


def measure(mesh: QualityMesh, x, reference, crease_vertices=None) -> SkinQuality:
    """The skin quality of positions ``x (V, 3)`` against ``reference (V, 3)`` (same mesh), with
    ``crease_vertices (V,)`` bool the vertices in a crease before growing (None: no crease)."""
    x = np.asarray(x, dtype=np.float64)
    turn = _angle(face_normals(x, mesh.faces), face_normals(reference, mesh.faces))
    if crease_vertices is None:
        crease = np.zeros(len(mesh.faces), dtype=np.bool_)
    else:
        grown = grow(crease_vertices, mesh.rings, CREASE_RINGS)
        crease = grown[mesh.faces].any(axis=1)
    outside = ~crease
    turned = turn > TURN_LIMIT
    n = face_normals(x, mesh.faces)
    increase = _angle(n[mesh.pairs[:, 0]], n[mesh.pairs[:, 1]]) - mesh.rest_dihedral
    pair_outside = outside[mesh.pairs[:, 0]] & outside[mesh.pairs[:, 1]]
    by_region = {}
    for r, name in enumerate(mesh.region_names):
        faces = outside & (mesh.face_region == r)
        if faces.any():
            by_region[name] = float(np.count_nonzero(turned & faces) / np.count_nonzero(faces))
    return SkinQuality(
        turned=float(np.mean(turned)),
        turned_outside_creases=float(np.count_nonzero(turned & outside) / max(np.count_nonzero(outside), 1)),
        crease_share=float(np.mean(crease)),
        turn_p99=float(np.percentile(turn[outside], 99)) if outside.any() else 0.0,
        dihedral_increase=float(increase[pair_outside].max()) if pair_outside.any() else 0.0,
        dihedral_increase_all=float(increase.max()) if len(increase) else 0.0,
        by_region=by_region, turned_faces=turned & outside, crease_faces=crease)


def crease_vertices(skin, rest_placement, placement, rest, reference, own_part) -> np.ndarray:
    """``(V,)`` bool the vertices whose reference positions ``reference (V, 3)`` lie inside another part (placed as
    in ``placement``) deeper by ``CREASE_GAIN`` than their ``rest (V, 3)`` positions did in ``rest_placement``
    (module docstring)."""
    now = other_part_depth(skin, placement, reference, own_part)
    before = other_part_depth(skin, rest_placement, rest, own_part)
    return (now > 0.5) & (now > before + CREASE_GAIN)
