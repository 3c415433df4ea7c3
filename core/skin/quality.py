"""Skin quality of a deformed mesh: how much of its skin lies inside the body, how far its faces turn against a
reference deformation, and how much sharper its folds are than at rest.

**Inside** (:func:`measure_inside`, absolute: no reference result) counts the vertices that lie inside the body: a
vertex whose outward ray (from the vertex along its normal, on the deformed mesh) first meets the *back* of a face
has left the volume that face bounds. Its **depth** is the distance along its normal, outwards or inwards, to the
nearest face it meets: for a skin vertex pushed into another body part, the inward ray crosses that part's skin
where the vertex passed it, at the penetration depth. A vertex counts as inside deeper than ``INSIDE_DEPTH``; each
count is kept per region (the creases of :func:`joint_regions`: elbow, knee, groin, armpit, neck), with the
deepest vertex. Rays are cast by ``kernels/ray_cast.py`` over all faces of the mesh, its own vertex's faces left out.

Two numbers per frame against a reference, on a triangle mesh ``faces (F, 3)``:

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

from ...kernels.constants import RAY_EDGE_TOLERANCE as EDGE_TOLERANCE
from .mesh_rings import cotangent_rings
from .triangle_grid import TriangleGrid

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


# --- inside: skin that lies inside the body ----------------------------------------------------------------------

INSIDE_DEPTH = 0.5e-3
"""[m] A vertex inside the body deeper than this counts as inside (below it: a vertex on a contact surface, a
triangle's width off the other side's facets)."""
INSIDE_LIMIT = 2e-3
"""[m] The deepest a vertex may lie inside the body (the target of the skin at the creases)."""
@dataclass(frozen=True)
class InsideMesh:
    """What the inside measure needs of a mesh, built once: its faces, each vertex's region (``-1``: none) with the
    region names, and its mean edge length."""

    faces: np.ndarray  # (F, 3) int64
    vertex_region: np.ndarray  # (V,) int64, -1: in no region
    region_names: tuple
    edge_length: float  # [m] mean edge length at rest

    @classmethod
    def build(cls, rest, faces, vertex_region=None, region_names=()) -> "InsideMesh":
        rest = np.asarray(rest, dtype=np.float64)
        f = np.ascontiguousarray(faces, dtype=np.int64).reshape(-1, 3)
        V = len(rest)
        region = np.full(V, -1, dtype=np.int64) if vertex_region is None else np.asarray(vertex_region,
                                                                                          dtype=np.int64)
        edges = np.linalg.norm(rest[f[:, [1, 2, 0]]] - rest[f], axis=2)
        return cls(faces=f, vertex_region=region, region_names=tuple(region_names),
                   edge_length=float(edges.mean()) if len(f) else 0.0)


@dataclass(frozen=True)
class InsideSkin:
    """One frame's skin inside the body (module docstring). Depths in metres."""

    depth: np.ndarray  # (V,) depth of each vertex inside the body, NaN where it is not inside
    count: int  # vertices inside deeper than INSIDE_DEPTH
    deepest: float  # the deepest vertex's depth (0 when none is inside)
    by_region: dict  # region name -> (count, deepest), every region of the mesh

    def count_deeper(self, depth: float) -> int:
        """Vertices inside deeper than ``depth`` [m]."""
        return int(np.count_nonzero(np.nan_to_num(self.depth, nan=-1.0) > depth))

    def in_regions(self) -> tuple:
        """``(count, deepest)`` over all regions together."""
        counts = [c for c, _ in self.by_region.values()]
        depths = [d for _, d in self.by_region.values()]
        return int(sum(counts)), float(max(depths, default=0.0))

    def as_dict(self) -> dict:
        """The numbers (no arrays), for JSON; depths in millimetres."""
        return {"inside": self.count, "deepest_mm": 1e3 * self.deepest,
                "inside_2mm": self.count_deeper(INSIDE_LIMIT),
                "by_region": {name: {"inside": c, "deepest_mm": 1e3 * d} for name, (c, d) in self.by_region.items()}}


def first_hits(mesh: InsideMesh, x, directions) -> tuple:
    """``(distance (V,), back (V,))``: the first face other than its own that the ray from each vertex of ``x
    (V, 3)`` along ``directions (V, 3)`` meets (``inf``: none), and whether it meets that face's back
    (``kernels/ray_cast.first_hits``)."""
    from ...kernels.ray_cast import first_hits as cast

    x = np.ascontiguousarray(x, dtype=np.float64)
    d = np.ascontiguousarray(directions, dtype=np.float64)
    grid = TriangleGrid.build(x, mesh.faces, mesh.edge_length)
    distance, back = np.empty(len(x)), np.empty(len(x), dtype=np.bool_)
    reach = float(np.linalg.norm(np.ptp(x, axis=0)))
    cast(x, mesh.faces, d, *grid.kernel_args(), reach, distance, back)
    return distance, back


def _hits_reference(x, faces, directions):
    """Every ray ``x[i] + t directions[i]`` against every face (Moller-Trumbore, vectorised over the faces), the
    vertex's own faces left out: per ray ``(t (H,), back (H,), face (H,))`` of the faces it meets at ``t > 0``
    (zero direction: none)."""
    x = np.asarray(x, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    a, b, c = x[f[:, 0]], x[f[:, 1]], x[f[:, 2]]
    e1, e2 = b - a, c - a
    normal = np.cross(e1, e2)
    for i, (o, d) in enumerate(zip(x, np.asarray(directions, dtype=np.float64))):
        if not d.any():
            yield np.zeros(0), np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int64)
            continue
        p = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, p)
        ok = np.abs(det) > 1e-12 * np.einsum("ij,ij->i", normal, normal)
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        t_vec = o - a
        u = np.einsum("ij,ij->i", t_vec, p) * inv
        q = np.cross(t_vec, e1)
        v = (q @ d) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        slack = EDGE_TOLERANCE
        hit = ok & (u >= -slack) & (u <= 1 + slack) & (v >= -slack) & (u + v <= 1 + slack) & (t > 0) \
            & ~(f == i).any(axis=1)
        k = np.flatnonzero(hit)
        yield t[k], normal[k] @ d > 0.0, k


def first_hits_reference(x, faces, directions) -> tuple:
    """Numpy reference of :func:`first_hits`, with the face each ray meets (-1: none): ``(distance, back, face)``,
    every ray against every face; for small meshes."""
    V = len(x)
    distance, back = np.full(V, np.inf), np.zeros(V, dtype=np.bool_)
    face = np.full(V, -1, dtype=np.int64)
    for i, (t, b, k) in enumerate(_hits_reference(x, faces, directions)):
        if len(t):
            j = np.argmin(t)
            distance[i], back[i], face[i] = t[j], b[j], k[j]
    return distance, back, face


def crossings_reference(x, faces, directions, max_distance) -> np.ndarray:
    """Numpy reference of ``kernels/ray_cast.crossings`` for every vertex of ``x (V, 3)``: ``(V,)`` int64 the faces
    each ray meets from their back less those from their front, within ``max_distance`` [m]."""
    return np.array([int(np.sum(np.where(b[t <= max_distance], 1, -1)))
                     for t, b, _ in _hits_reference(x, faces, directions)], dtype=np.int64)


def measure_inside(mesh: InsideMesh, x) -> InsideSkin:
    """The skin of positions ``x (V, 3)`` [m] inside the body (module docstring)."""
    from .parts import vertex_normals

    x = np.ascontiguousarray(x, dtype=np.float64)
    n = vertex_normals(x, mesh.faces)
    out_distance, out_back = first_hits(mesh, x, n)
    in_distance, _ = first_hits(mesh, x, -n)
    inside = out_back & np.isfinite(out_distance)
    depth = np.where(inside, np.minimum(out_distance, in_distance), np.nan)
    deep = np.nan_to_num(depth, nan=-1.0) > INSIDE_DEPTH
    by_region = {}
    for r, name in enumerate(mesh.region_names):
        mine = deep & (mesh.vertex_region == r)
        by_region[name] = (int(np.count_nonzero(mine)), float(depth[mine].max()) if mine.any() else 0.0)
    return InsideSkin(depth=depth, count=int(np.count_nonzero(deep)),
                      deepest=float(np.nanmax(depth)) if inside.any() else 0.0, by_region=by_region)


def joint_regions(rest, weights, heads, joints) -> np.ndarray:
    """``(V,)`` int64 each vertex's crease region (``-1``: none), for ``joints``: a sequence of ``(bones, centre,
    radius)`` per region (bone indices, ``(3,)`` [m], [m]), in the order of the region names. A vertex is in a
    region when its highest-weight bone is one of the region's bones and it lies within ``radius`` of its centre;
    in the nearest such region when there are several. ``heads (B, 3)`` is unused but checks the bone count."""
    rest = np.asarray(rest, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape[1] != len(heads):
        raise ValueError(f"weights name {w.shape[1]} bones, the rig has {len(heads)}.")
    owner = np.argmax(w, axis=1)
    region = np.full(len(rest), -1, dtype=np.int64)
    best = np.full(len(rest), np.inf)
    for r, (bones, centre, radius) in enumerate(joints):
        d = np.linalg.norm(rest - np.asarray(centre, dtype=np.float64), axis=1)
        mine = np.isin(owner, np.asarray(list(bones), dtype=np.int64)) & (d < radius) & (d < best)
        region[mine] = r
        best[mine] = d[mine]
    return region
