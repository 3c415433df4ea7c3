"""Numba kernel: give back the volume lost at the bent joints after tracking (``core/skin/joint_volume.py`` has the
method, the defaults and the numpy reference ``restore_reference``).

:func:`restore` takes ``x (V, 3)`` [m] the tracked positions (moved in place), ``B (B, 4, 4)`` the bone transforms
(rest -> posed), ``state (V,) int8`` the tracking's outcome (STATE_CONTACT vertices and ``gap`` rings around them
are not moved), and four structs: :class:`VolumeMesh`, :class:`VolumeRegions` (``J`` joints),
:class:`VolumeParams` and :class:`VolumeScratch`; it writes ``deficits (J,)`` [m^3], each joint's loss before the
restore (0 where nothing is given back). Serial: the sums over a region must not race.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .constants import JIT, STATE_CONTACT


class VolumeMesh(NamedTuple):
    """The skinned mesh (``V`` vertices, ``F`` faces)."""

    faces: np.ndarray           # (F, 3) int64
    ring_start: np.ndarray      # (V+1,) int64 CSR one-rings ...
    ring_neighbour: np.ndarray  # (sum,) int64 ... neighbour indices
    pinned: np.ndarray          # (V,) bool vertices that never move (open borders)


class VolumeRegions(NamedTuple):
    """The joints' volume regions (``J`` joints; ``core/skin/joint_volume.JointRegions.kernel_arrays``)."""

    bones: np.ndarray           # (J,) int64 each joint's bone ...
    parent_bones: np.ndarray    # (J,) int64 ... and the bone of the nearest ancestor part
    face_part: np.ndarray       # (F,) int64 bone of each face's part
    centres: np.ndarray         # (J, 3) float64 [m] rest joint centres
    rest_volume: np.ndarray     # (J,) float64 [m^3]
    max_move: np.ndarray        # (J,) float64 [m] the largest move of a joint's vertices (MAX_BULGE r_j)
    face_start: np.ndarray      # (J+1,) int64 CSR: each joint's faces ...
    faces: np.ndarray           # (sum,) int64 ... as face indices
    vertex_start: np.ndarray    # (J+1,) int64 CSR: each joint's vertices ...
    vertices: np.ndarray        # (sum,) int64 ... as vertex indices
    profile: np.ndarray         # (sum,) float64 ... and their weight before the taper


class VolumeParams(NamedTuple):
    """Scalar settings (``core/skin/joint_volume.py`` defaults)."""

    full_bend: float     # [rad] the bend from which the whole deficit is given back (bend_share)
    gap: int             # the taper from the contact: 0 up to gap rings ...
    rings: int           # ... full from rings rings
    volume_tol: float    # a deficit below this fraction of the rest volume is left alone
    newton_steps: int    # most Newton steps on the bulge's size
    newton_tol: float    # Newton stops below this fraction of the rest volume


class VolumeScratch(NamedTuple):
    """Work arrays of :func:`restore`."""

    dist: np.ndarray    # (V,) int64 rings from the nearest contact vertex (capped at rings + 1)
    normal: np.ndarray  # (V, 3) float64 area-weighted vertex normals
    grad: np.ndarray    # (V, 3) float64 the region volume's gradient


@njit(**JIT)
def _centre(B, part, c):
    """The rest point ``c (3,)`` moved by bone ``part``'s transform: ``(x, y, z)``."""
    return (B[part, 0, 0] * c[0] + B[part, 0, 1] * c[1] + B[part, 0, 2] * c[2] + B[part, 0, 3],
            B[part, 1, 0] * c[0] + B[part, 1, 1] * c[1] + B[part, 1, 2] * c[2] + B[part, 1, 3],
            B[part, 2, 0] * c[0] + B[part, 2, 1] * c[1] + B[part, 2, 2] * c[2] + B[part, 2, 3])


@njit(**JIT)
def _volume(x, faces, B, face_part, c, face_ids, grad, want_grad):
    """Cone volume of the faces ``face_ids`` about their moved centres; adds ``dV/dx`` into ``grad`` if
    ``want_grad`` (a ``np.bool_``: a literal ``True`` or ``False`` would compile a signature each)."""
    total = 0.0
    for q in range(face_ids.shape[0]):
        f = face_ids[q]
        c0, c1, c2 = _centre(B, face_part[f], c)
        i, j, k = faces[f, 0], faces[f, 1], faces[f, 2]
        ax, ay, az = x[i, 0] - c0, x[i, 1] - c1, x[i, 2] - c2
        bx, by, bz = x[j, 0] - c0, x[j, 1] - c1, x[j, 2] - c2
        ex, ey, ez = x[k, 0] - c0, x[k, 1] - c1, x[k, 2] - c2
        bex, bey, bez = by * ez - bz * ey, bz * ex - bx * ez, bx * ey - by * ex
        total += ax * bex + ay * bey + az * bez
        if want_grad:
            grad[i, 0] += bex / 6.0
            grad[i, 1] += bey / 6.0
            grad[i, 2] += bez / 6.0
            grad[j, 0] += (ey * az - ez * ay) / 6.0
            grad[j, 1] += (ez * ax - ex * az) / 6.0
            grad[j, 2] += (ex * ay - ey * ax) / 6.0
            grad[k, 0] += (ay * bz - az * by) / 6.0
            grad[k, 1] += (az * bx - ax * bz) / 6.0
            grad[k, 2] += (ax * by - ay * bx) / 6.0
    return total / 6.0


@njit(**JIT)
def _zero_corners(arr, faces, face_ids):
    """Zero the rows of ``arr (V, 3)`` of every corner of the faces ``face_ids``."""
    for q in range(face_ids.shape[0]):
        for corner in range(3):
            v = faces[face_ids[q], corner]
            arr[v, 0] = 0.0
            arr[v, 1] = 0.0
            arr[v, 2] = 0.0


@njit(**JIT)
def _bulge_weight(ring_distance, gap, span, pinned, profile):
    """A vertex's share of the bulge: its profile times the taper from the contact (0 if pinned)."""
    if pinned:
        return 0.0
    s = min(max((ring_distance - gap) / span, 0.0), 1.0)
    return profile * s * s


@njit(**JIT)
def _contact_rings(state, ring_start, ring_neighbour, limit, dist):
    """``dist (V,)``: rings from the nearest STATE_CONTACT vertex, ``limit + 1`` beyond ``limit`` rings; a
    breadth-first walk out from the contact vertices, so a frame without contact touches no ring."""
    V = state.shape[0]
    frontier = np.empty(V, dtype=np.int64)
    n = 0
    for v in range(V):
        if state[v] == STATE_CONTACT:
            dist[v] = 0
            frontier[n] = v
            n += 1
        else:
            dist[v] = limit + 1
    start = 0
    for k in range(1, limit + 1):  # layer k: the unreached neighbours of layer k - 1 (frontier[start:n])
        end = n
        for q in range(start, end):
            v = frontier[q]
            for e in range(ring_start[v], ring_start[v + 1]):
                u = ring_neighbour[e]
                if dist[u] > k:
                    dist[u] = k
                    frontier[n] = u
                    n += 1
        start = end


@njit(**JIT)
def restore(x, B, state, mesh, regions, params, scratch, deficits):
    """Module docstring; returns the number of joints whose volume was restored."""
    faces = mesh.faces
    pinned = mesh.pinned
    face_part = regions.face_part
    centres = regions.centres
    rest_volume = regions.rest_volume
    face_start = regions.face_start
    region_faces = regions.faces
    vertex_start = regions.vertex_start
    region_vertices = regions.vertices
    profile = regions.profile
    gap = params.gap
    rings = params.rings
    dist = scratch.dist
    normal = scratch.normal
    grad = scratch.grad
    _contact_rings(state, mesh.ring_start, mesh.ring_neighbour, rings, dist)
    restored = 0
    span = float(rings - gap)
    for jn in range(centres.shape[0]):
        deficits[jn] = 0.0
        c = centres[jn]
        face_ids = region_faces[face_start[jn]:face_start[jn + 1]]
        verts = region_vertices[vertex_start[jn]:vertex_start[jn + 1]]
        weight = profile[vertex_start[jn]:vertex_start[jn + 1]]
        jb, jp = regions.bones[jn], regions.parent_bones[jn]
        trace = 0.0
        for r in range(3):
            for col in range(3):
                trace += B[jp, col, r] * B[jb, col, r]
        bend = min(1.0, math.acos(min(1.0, max(-1.0, 0.5 * (trace - 1.0)))) / params.full_bend)
        share = bend * bend * (3.0 - 2.0 * bend)
        lost = rest_volume[jn] - _volume(x, faces, B, face_part, c, face_ids, grad, np.bool_(False))
        if not share * lost > params.volume_tol * abs(rest_volume[jn]):
            continue
        deficits[jn] = lost
        V0 = rest_volume[jn] - (1.0 - share) * lost
        deficit = share * lost
        restored += 1
        _zero_corners(normal, faces, face_ids)  # area-weighted normals from the region's faces
        for q in range(face_ids.shape[0]):
            f = face_ids[q]
            i, j, k = faces[f, 0], faces[f, 1], faces[f, 2]
            ux, uy, uz = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
            wx, wy, wz = x[k, 0] - x[i, 0], x[k, 1] - x[i, 1], x[k, 2] - x[i, 2]
            nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
            for v in (i, j, k):
                normal[v, 0] += nx
                normal[v, 1] += ny
                normal[v, 2] += nz
        for q in range(verts.shape[0]):
            v = verts[q]
            length = math.sqrt(normal[v, 0] ** 2 + normal[v, 1] ** 2 + normal[v, 2] ** 2)
            for r in range(3):
                normal[v, r] = normal[v, r] / length if length > 0.0 else 0.0
        room = regions.max_move[jn]
        for _ in range(params.newton_steps):
            _zero_corners(grad, faces, face_ids)
            _volume(x, faces, B, face_part, c, face_ids, grad, np.bool_(True))
            slope = 0.0
            for q in range(verts.shape[0]):
                v = verts[q]
                w = _bulge_weight(dist[v], gap, span, pinned[v], weight[q])
                slope += w * (grad[v, 0] * normal[v, 0] + grad[v, 1] * normal[v, 1] + grad[v, 2] * normal[v, 2])
            if not slope > 0.0 or not room > 0.0:
                break
            t = min(deficit / slope, room)
            room -= t
            for q in range(verts.shape[0]):
                v = verts[q]
                w = _bulge_weight(dist[v], gap, span, pinned[v], weight[q])
                for r in range(3):
                    x[v, r] += t * w * normal[v, r]
            deficit = V0 - _volume(x, faces, B, face_part, c, face_ids, grad, np.bool_(False))
            if abs(deficit) < params.newton_tol * abs(V0):
                break
    return restored
