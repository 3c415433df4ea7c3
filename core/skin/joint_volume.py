"""Joint volume: give back the volume Implicit Skinning's union of rigid parts loses at a bent joint.

* **Region** (per joint ``j``, bind time): the joint is bone ``j``'s head ``c_j`` between its part and the part
  of its nearest ancestor ``a`` that has one. ``r_j`` is the limb's radius there (``joint_radius``: the median
  distance to the bone's axis of its part's vertices over the first ``RADIUS_SPAN`` of its length),
  ``D_j = region r_j`` (at most the bone's length). The region's vertices are those of the two parts within ``D_j``
  of ``c_j`` that carry at least ``OWN_WEIGHT`` of their weight on the two bones, each in the region of the joint
  it is relatively nearest to (``|v - c| / D``).
* **Measure**: over the faces ``S_j`` that touch the region, the cone sum ``V_j(x) = 1/6 sum_{f in S_j}
  det(a - c_f, b - c_f, e - c_f)``, ``c_f = B_{part(f)} c_j`` the joint centre moved by the bone of the face's
  part. ``S_j`` and the cones from ``c_j`` to its border loops close a solid, so ``V_j`` is that solid's volume,
  the tissue between the loops; a part moved rigidly leaves it unchanged (on a closed surface it is the enclosed
  volume, tested).
* **Restore** (per frame, after tracking): the joint's loss ``V0_j - V_j`` is given back, in full once the joint
  is bent ``FULL_BEND`` or more and in part below (``bend_share``). The region's vertices move along their
  area-weighted normals by ``t w_v``, ``w_v = (1 - (|v_ref - c_j| / D_j)^2)^2`` (1 at the joint, 0 with zero slope
  at ``D_j``) times a taper that is 0 on the vertices stopped at a contact and their first ``gap`` rings and rises
  as ``s^2`` to 1 at ``rings`` rings from them. ``t`` is found by Newton's method on ``V_j(x + t w n) = target``
  with the exact gradient ``dV/da = 1/6 (b - c) x (e - c)``, and is at most ``MAX_BULGE r_j``. Pinned vertices
  (open borders) do not move. Joints are done one after the other in bone order, each measured after the previous
  ones.
* Only a **loss** is given back. At rest and under a rigid motion of the whole rig nothing moves.

Defaults (``core/skin/tracking.TrackingSettings``): ``volume_region = 2.5`` joint radii, ``volume_gap = 2`` and
``volume_rings = 5``.

Arrays (``JointRegions``, ``J`` joints): ``centres (J, 3)`` [m] rest; ``radii (J,)`` [m]; ``rest_volume (J,)``
[m^3]; ``face_start (J+1,)``, ``faces (sum,) int64`` CSR of ``S_j`` (face indices); ``vertex_start (J+1,)``,
``vertices (sum,) int64``, ``profile (sum,)`` the region's vertices and ``w`` before the taper; ``face_part (F,)
int64`` the bone of each face's part (its first vertex's). The kernel is ``kernels/joint_volume.py``.

References (the convention of ``core/skin``): :func:`restore_reference` is vectorised numpy over a region's faces
and vertices (``np.add.at`` sums, ``np.cross`` cones), independent of the kernel's serial loops.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VOLUME_TOL = 1e-6
"""A deficit below this fraction of the rest volume is left alone."""
NEWTON_STEPS = 3
"""Newton steps on ``t`` (the volume is a cubic in ``t``)."""
NEWTON_TOL = 1e-5
"""Newton stops when the remaining deficit is below this fraction of the rest volume."""
MAX_BULGE = 0.15
"""The largest move is at most this many joint radii ``r_j``; a region whose deficit needs more gets back what
this allows."""
OWN_WEIGHT = 0.99
"""A region keeps the vertices that carry at least this share of their weight on the joint's two bones."""
FULL_BEND = np.radians(20.0)
"""A joint bent this much [rad] or more gets its whole deficit back; less bent, the share ``bend_share``."""
RADIUS_SPAN = 0.3
"""``r_j`` is measured over this fraction of the bone's length from its head."""


@dataclass(frozen=True)
class JointRegions:
    """Bind data of the joints' volume regions (module docstring for the arrays)."""

    bones: np.ndarray
    parent_bones: np.ndarray
    centres: np.ndarray
    radii: np.ndarray
    rest_volume: np.ndarray
    face_start: np.ndarray
    faces: np.ndarray
    vertex_start: np.ndarray
    vertices: np.ndarray
    profile: np.ndarray
    face_part: np.ndarray

    @property
    def count(self) -> int:
        return len(self.bones)

    def kernel_arrays(self):
        """The regions as the kernel's ``kernels.joint_volume.VolumeRegions`` (largest move ``MAX_BULGE r_j``)."""
        from ...kernels.joint_volume import VolumeRegions

        return VolumeRegions(bones=self.bones, parent_bones=self.parent_bones, face_part=self.face_part,
                             centres=self.centres, rest_volume=self.rest_volume, max_move=MAX_BULGE * self.radii,
                             face_start=self.face_start, faces=self.faces, vertex_start=self.vertex_start,
                             vertices=self.vertices, profile=self.profile)


def _part_parent(bone: int, parents, has_part) -> int:
    a = int(parents[bone])
    while a >= 0 and not has_part[a]:
        a = int(parents[a])
    return a


def joint_radius(vertices, labels, bone: int, head, tail) -> float:
    """``r_j`` [m]: the median distance to the bone's axis of its part's vertices over the first 30 % of its length
    (the limb's radius at the joint); the smallest distance from the head to the part if none lies there."""
    own = np.asarray(vertices, dtype=np.float64)[np.asarray(labels) == bone] - head
    axis = np.asarray(tail, dtype=np.float64) - head
    length = float(np.linalg.norm(axis))
    if length > 0.0:
        t = own @ (axis / length)
        near = (t >= 0.0) & (t <= RADIUS_SPAN * length)
        if np.any(near):
            return float(np.median(np.linalg.norm(own[near] - np.outer(t[near], axis / length), axis=1)))
    return float(np.min(np.linalg.norm(own, axis=1)))


def bind_joint_regions(rest_vertices, faces, weights, labels, heads, tails, parents,
                       region: float = 2.5) -> JointRegions:
    """Regions and rest volumes of every joint between two skin parts (module docstring). ``weights (V, B)``;
    ``labels (V,)``: each vertex's part bone; ``heads, tails (B, 3)`` [m]; ``parents (B,)``; ``region``:
    ``D_j / r_j``."""
    v = np.asarray(rest_vertices, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    total = np.maximum(weights.sum(axis=1), 1e-300)
    f = np.asarray(faces, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    heads = np.asarray(heads, dtype=np.float64)
    tails = np.asarray(tails, dtype=np.float64)
    parents = np.asarray(parents, dtype=np.int64)
    has_part = np.zeros(len(heads), dtype=bool)
    has_part[np.unique(labels)] = True
    bones, radii, reach = [], [], []
    for j in np.flatnonzero(has_part):
        a = _part_parent(j, parents, has_part)
        r = joint_radius(v, labels, j, heads[j], tails[j]) if a >= 0 else 0.0
        if r > 0.0:
            bones.append((j, a))
            radii.append(r)
            reach.append(min(region * r, float(np.linalg.norm(tails[j] - heads[j])) or region * r))
    # each vertex joins the region of the joint it is relatively nearest to (d / D_j), among the joints whose two
    # parts it belongs to: a hip's pelvis skin is the hip's, not the spine's
    scaled = np.full((len(bones), len(v)), np.inf)
    for k, ((j, a), D) in enumerate(zip(bones, reach)):
        own = ((labels == j) | (labels == a)) & ((weights[:, j] + weights[:, a]) >= OWN_WEIGHT * total)
        scaled[k, own] = np.linalg.norm(v[own] - heads[j], axis=1) / D
    owner = np.argmin(scaled, axis=0) if len(bones) else np.zeros(len(v), dtype=np.int64)
    kept, fstart, flist, vstart, vlist, plist = [], [0], [], [0], [], []
    for k in range(len(bones)):
        inside = (owner == k) & (scaled[k] < 1.0)
        idx = np.flatnonzero(inside)
        touch = np.flatnonzero(inside[f].any(axis=1))
        if not len(idx) or not len(touch):
            continue
        kept.append(k)
        vlist.append(idx)
        plist.append((1.0 - scaled[k, idx] ** 2) ** 2)
        vstart.append(vstart[-1] + len(idx))
        flist.append(touch)
        fstart.append(fstart[-1] + len(touch))
    cat = (lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype))
    regions = JointRegions(
        bones=np.array([bones[k][0] for k in kept], dtype=np.int64),
        parent_bones=np.array([bones[k][1] for k in kept], dtype=np.int64),
        centres=np.array([heads[bones[k][0]] for k in kept], dtype=np.float64).reshape(-1, 3),
        radii=np.array([radii[k] for k in kept], dtype=np.float64), rest_volume=np.zeros(len(kept)),
        face_start=np.array(fstart, dtype=np.int64), faces=cat(flist, np.int64),
        vertex_start=np.array(vstart, dtype=np.int64), vertices=cat(vlist, np.int64),
        profile=cat(plist, np.float64), face_part=labels[f[:, 0]] if len(f) else np.zeros(0, dtype=np.int64))
    identity = np.broadcast_to(np.eye(4), (len(heads), 4, 4))
    for k in range(regions.count):
        regions.rest_volume[k] = region_volume(v, f, regions, k, identity)
    return regions


def no_joint_regions() -> JointRegions:
    """No joints (``keep_volume`` off, or a skin field bound without its bones)."""
    empty = np.zeros(0, dtype=np.int64)
    return JointRegions(bones=empty, parent_bones=empty, centres=np.zeros((0, 3)), radii=np.zeros(0),
                        rest_volume=np.zeros(0), face_start=np.zeros(1, dtype=np.int64), faces=empty,
                        vertex_start=np.zeros(1, dtype=np.int64), vertices=empty, profile=np.zeros(0),
                        face_part=empty)


def _region_triangles(faces, regions: JointRegions, k: int):
    """Face indices ``(n,)`` and corner vertices ``(n, 3)`` of joint ``k``'s faces."""
    fid = regions.faces[regions.face_start[k]:regions.face_start[k + 1]]
    return fid, np.asarray(faces, dtype=np.int64)[fid]


def _cone_edges(x, faces, regions: JointRegions, k: int, bone_transforms):
    """Corner indices ``(n, 3)`` of joint ``k``'s faces and their corners minus each face's moved centre
    ``a, b, e (n, 3)`` [m]."""
    fid, tri = _region_triangles(faces, regions, k)
    B = np.asarray(bone_transforms, dtype=np.float64)[regions.face_part[fid]]
    c = np.einsum("fij,j->fi", B[:, :3, :3], regions.centres[k]) + B[:, :3, 3]
    return tri, x[tri[:, 0]] - c, x[tri[:, 1]] - c, x[tri[:, 2]] - c


def region_volume(x, faces, regions: JointRegions, k: int, bone_transforms) -> float:
    """``V_k(x)`` [m^3] (module docstring) of joint ``k`` for positions ``x (V, 3)`` and ``B (B, 4, 4)``."""
    _, a, b, e = _cone_edges(x, faces, regions, k, bone_transforms)
    return float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, e)))) / 6.0


def region_volume_gradient(x, faces, regions: JointRegions, k: int, bone_transforms) -> np.ndarray:
    """``dV_k/dx (V, 3)`` [m^2]: ``1/6 (b - c) x (e - c)`` summed over the region's faces at each corner."""
    tri, a, b, e = _cone_edges(x, faces, regions, k, bone_transforms)
    g = np.zeros_like(np.asarray(x, dtype=np.float64))
    np.add.at(g, tri[:, 0], np.cross(b, e) / 6.0)
    np.add.at(g, tri[:, 1], np.cross(e, a) / 6.0)
    np.add.at(g, tri[:, 2], np.cross(a, b) / 6.0)
    return g


def contact_rings(contact, rings_start, rings_neighbour, limit: int) -> np.ndarray:
    """``(V,) int64`` rings from the nearest contact vertex (``contact (V,) bool``), ``limit + 1`` beyond ``limit``."""
    V = len(contact)
    rows = np.repeat(np.arange(V), np.diff(rings_start))
    dist = np.where(contact, 0, limit + 1)
    for k in range(1, limit + 1):
        near = np.zeros(V, dtype=bool)
        np.logical_or.at(near, rows, dist[rings_neighbour] == k - 1)
        dist = np.where(near & (dist > k), k, dist)
    return dist


def taper(ring_distance, gap: int, rings: int) -> np.ndarray:
    """0 up to ``gap`` rings from a contact, ``s^2`` with ``s = (d - gap) / (rings - gap)`` up to 1 at ``rings``."""
    s = np.clip((np.asarray(ring_distance, dtype=np.float64) - gap) / (rings - gap), 0.0, 1.0)
    return s * s


def vertex_normals_on(x, faces, regions: JointRegions, k: int) -> np.ndarray:
    """Unit area-weighted normals ``(V, 3)`` from the region's faces (zero off the region)."""
    _, tri = _region_triangles(faces, regions, k)
    n = np.cross(x[tri[:, 1]] - x[tri[:, 0]], x[tri[:, 2]] - x[tri[:, 0]])
    N = np.zeros_like(np.asarray(x, dtype=np.float64))
    for corner in range(3):
        np.add.at(N, tri[:, corner], n)
    length = np.linalg.norm(N, axis=1)
    return np.where(length[:, None] > 0.0, N / np.where(length > 0.0, length, 1.0)[:, None], 0.0)


def bend_share(bone_transforms, bone: int, parent: int) -> float:
    """``s^2 (3 - 2 s)``, ``s = min(1, theta / FULL_BEND)``, ``theta`` [rad] the rotation between the two bones."""
    B = np.asarray(bone_transforms, dtype=np.float64)
    cos_t = (np.trace(B[parent, :3, :3].T @ B[bone, :3, :3]) - 1.0) / 2.0
    s = min(1.0, float(np.arccos(np.clip(cos_t, -1.0, 1.0))) / FULL_BEND)
    return s * s * (3.0 - 2.0 * s)


def restore_reference(x, faces, regions: JointRegions, bone_transforms, contact, rings_start, rings_neighbour,
                      pinned, gap: int, rings: int) -> tuple:
    """Numpy reference of ``kernels/joint_volume.restore``: positions ``(V, 3)`` after the restore (a copy) and
    ``(J,)`` each joint's deficit [m^3] before it (0 where nothing was lost)."""
    y = np.array(x, dtype=np.float64)
    dist = contact_rings(np.asarray(contact, dtype=bool), rings_start, rings_neighbour, rings)
    free = taper(dist, gap, rings) * ~np.asarray(pinned, dtype=bool)
    deficits = np.zeros(regions.count)
    for k in range(regions.count):
        share = bend_share(bone_transforms, regions.bones[k], regions.parent_bones[k])
        rest = regions.rest_volume[k]
        lost = rest - region_volume(y, faces, regions, k, bone_transforms)
        if not share * lost > VOLUME_TOL * abs(rest):
            continue
        deficits[k] = lost
        V0 = rest - (1.0 - share) * lost  # the volume to reach
        deficit = share * lost
        idx = regions.vertices[regions.vertex_start[k]:regions.vertex_start[k + 1]]
        w = regions.profile[regions.vertex_start[k]:regions.vertex_start[k + 1]] * free[idx]
        n = vertex_normals_on(y, faces, regions, k)[idx]
        room = MAX_BULGE * regions.radii[k]
        for _ in range(NEWTON_STEPS):
            g = region_volume_gradient(y, faces, regions, k, bone_transforms)[idx]
            slope = float(np.sum(w * np.einsum("ij,ij->i", g, n)))
            if not slope > 0.0 or not room > 0.0:
                break
            t = min(deficit / slope, room)
            room -= t
            y[idx] += t * w[:, None] * n
            deficit = V0 - region_volume(y, faces, regions, k, bone_transforms)
            if abs(deficit) < NEWTON_TOL * abs(V0):
                break
    return y, deficits
