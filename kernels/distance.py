"""Numba kernel: signed distance from grid nodes to a closed triangle mesh (for bone distance grids).

Unsigned distance: closest point on each triangle (Ericson, *Real-Time Collision Detection*, 5.1.5). Sign: the
generalised winding number (sum of the triangles' solid angles, Van Oosterom & Strackee 1983) is about 1 inside a
closed mesh and 0 outside; it also tolerates small holes. Brute force over triangles, parallel over nodes: this
runs once at bind time. Reference: ``core/pbd/distance_grid.py`` (``signed_distance_reference``).
"""
from __future__ import annotations

import math

from numba import njit, prange

from .constants import JIT


@njit(**JIT)
def _closest_on_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Squared distance from p to triangle abc."""
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        qx, qy, qz = ax, ay, az
    else:
        bpx, bpy, bpz = px - bx, py - by, pz - bz
        d3 = abx * bpx + aby * bpy + abz * bpz
        d4 = acx * bpx + acy * bpy + acz * bpz
        cpx, cpy, cpz = px - cx, py - cy, pz - cz
        d5 = abx * cpx + aby * cpy + abz * cpz
        d6 = acx * cpx + acy * cpy + acz * cpz
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d3 >= 0.0 and d4 <= d3:
            qx, qy, qz = bx, by, bz
        elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
            v = d1 / (d1 - d3)
            qx, qy, qz = ax + v * abx, ay + v * aby, az + v * abz
        elif d6 >= 0.0 and d5 <= d6:
            qx, qy, qz = cx, cy, cz
        elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
            w = d2 / (d2 - d6)
            qx, qy, qz = ax + w * acx, ay + w * acy, az + w * acz
        elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
            w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            qx, qy, qz = bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz)
        else:
            denom = 1.0 / (va + vb + vc)
            v = vb * denom
            w = vc * denom
            qx = ax + abx * v + acx * w
            qy = ay + aby * v + acy * w
            qz = az + abz * v + acz * w
    dx, dy, dz = px - qx, py - qy, pz - qz
    return dx * dx + dy * dy + dz * dz


@njit(**JIT)
def _solid_angle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Signed solid angle of triangle abc seen from p (Van Oosterom & Strackee)."""
    ax -= px
    ay -= py
    az -= pz
    bx -= px
    by -= py
    bz -= pz
    cx -= px
    cy -= py
    cz -= pz
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
    den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la \
        + (cx * ax + cy * ay + cz * az) * lb
    return 2.0 * math.atan2(det, den)


@njit(parallel=True, **JIT)
def signed_distance(points, vertices, faces, out):
    """``out[n]`` = signed distance [m] from ``points[n]`` to the mesh: negative inside (winding number > 0.5)."""
    for n in prange(points.shape[0]):
        px, py, pz = points[n, 0], points[n, 1], points[n, 2]
        best = math.inf
        winding = 0.0
        for f in range(faces.shape[0]):
            a, b, c = faces[f, 0], faces[f, 1], faces[f, 2]
            d2 = _closest_on_triangle(px, py, pz, vertices[a, 0], vertices[a, 1], vertices[a, 2],
                                      vertices[b, 0], vertices[b, 1], vertices[b, 2],
                                      vertices[c, 0], vertices[c, 1], vertices[c, 2])
            if d2 < best:
                best = d2
            winding += _solid_angle(px, py, pz, vertices[a, 0], vertices[a, 1], vertices[a, 2],
                                    vertices[b, 0], vertices[b, 1], vertices[b, 2],
                                    vertices[c, 0], vertices[c, 1], vertices[c, 2])
        d = math.sqrt(best)
        out[n] = -d if winding / (4.0 * math.pi) > 0.5 else d
