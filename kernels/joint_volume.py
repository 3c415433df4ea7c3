"""Numba kernel: give back the volume lost at the bent joints after tracking (``core/skin/joint_volume.py`` has the
method, the defaults and the numpy reference ``restore_reference``).

Inputs (``V`` vertices, ``F`` faces, ``J`` joints):
    x (V, 3) [m]              tracked positions, moved in place
    faces (F, 3) int64
    B (B, 4, 4)               bone transforms (rest -> posed)
    bones, parent_bones (J,)  each joint's two bones; full_bend [rad]: the bend from which the whole deficit is
                              given back (``core/joint_volume.bend_share``)
    face_part (F,) int64      bone of each face's part; centres (J, 3) [m] rest joint centres; rest_volume (J,) [m^3]
    max_move (J,) [m]         the largest move of a joint's vertices (``MAX_BULGE r_j``)
    face_start, region_faces  CSR (J+1,), (sum,): each joint's faces
    vertex_start, region_vertices, profile   CSR (J+1,), (sum,), (sum,): each joint's vertices and their weight
    state (V,) int8           tracking outcome; STATE_CONTACT vertices (and ``gap`` rings) are not moved
    ring_start, ring_neighbour   CSR one-rings
    pinned (V,) bool          vertices that never move (open borders)
    gap, rings                the taper from the contact (``core/joint_volume.taper``)
    volume_tol, newton_steps, newton_tol   as ``core/joint_volume`` (VOLUME_TOL, NEWTON_STEPS, NEWTON_TOL)
Scratch: dist (V,) int64, normal (V, 3), grad (V, 3). Output: deficits (J,) [m^3] before the restore (0 where
nothing is given back).

Serial: a region is a few thousand faces, and the sums must not race; the arm's elbow takes about 0.1 ms.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .constants import JIT, STATE_CONTACT


@njit(**JIT)
def _centre(B, part, c):
    out = np.empty(3)
    for r in range(3):
        out[r] = B[part, r, 0] * c[0] + B[part, r, 1] * c[1] + B[part, r, 2] * c[2] + B[part, r, 3]
    return out


@njit(**JIT)
def _volume(x, faces, B, face_part, c, face_ids, grad, want_grad):
    """Cone volume of the faces ``face_ids`` about their moved centres; adds ``dV/dx`` into ``grad`` if asked."""
    total = 0.0
    for q in range(face_ids.shape[0]):
        f = face_ids[q]
        cf = _centre(B, face_part[f], c)
        i, j, k = faces[f, 0], faces[f, 1], faces[f, 2]
        ax, ay, az = x[i, 0] - cf[0], x[i, 1] - cf[1], x[i, 2] - cf[2]
        bx, by, bz = x[j, 0] - cf[0], x[j, 1] - cf[1], x[j, 2] - cf[2]
        ex, ey, ez = x[k, 0] - cf[0], x[k, 1] - cf[1], x[k, 2] - cf[2]
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
    V = state.shape[0]
    for v in range(V):
        dist[v] = 0 if state[v] == STATE_CONTACT else limit + 1
    for k in range(1, limit + 1):  # layer k: a neighbour of layer k - 1 (read before this layer is written)
        for v in range(V):
            if dist[v] > k:
                for e in range(ring_start[v], ring_start[v + 1]):
                    if dist[ring_neighbour[e]] == k - 1:
                        dist[v] = -k  # marked, made positive after the sweep so it is not read as layer k - 1
                        break
        for v in range(V):
            if dist[v] < 0:
                dist[v] = -dist[v]


@njit(**JIT)
def restore(x, faces, B, bones, parent_bones, full_bend, face_part, centres, rest_volume, max_move, face_start,
            region_faces, vertex_start, region_vertices, profile, state, ring_start, ring_neighbour, pinned, gap,
            rings, volume_tol, newton_steps, newton_tol, dist, normal, grad, deficits):
    """Module docstring; returns the number of joints whose volume was restored."""
    _contact_rings(state, ring_start, ring_neighbour, rings, dist)
    restored = 0
    span = float(rings - gap)
    for jn in range(centres.shape[0]):
        deficits[jn] = 0.0
        c = centres[jn]
        face_ids = region_faces[face_start[jn]:face_start[jn + 1]]
        verts = region_vertices[vertex_start[jn]:vertex_start[jn + 1]]
        weight = profile[vertex_start[jn]:vertex_start[jn + 1]]
        jb, jp = bones[jn], parent_bones[jn]
        trace = 0.0
        for r in range(3):
            for col in range(3):
                trace += B[jp, col, r] * B[jb, col, r]
        bend = min(1.0, math.acos(min(1.0, max(-1.0, 0.5 * (trace - 1.0)))) / full_bend)
        share = bend * bend * (3.0 - 2.0 * bend)
        lost = rest_volume[jn] - _volume(x, faces, B, face_part, c, face_ids, grad, False)
        if not share * lost > volume_tol * abs(rest_volume[jn]):
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
        room = max_move[jn]
        for _ in range(newton_steps):
            _zero_corners(grad, faces, face_ids)
            _volume(x, faces, B, face_part, c, face_ids, grad, True)
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
            deficit = V0 - _volume(x, faces, B, face_part, c, face_ids, grad, False)
            if abs(deficit) < newton_tol * abs(V0):
                break
    return restored
