"""Mesh measurements for the skinning tests: skins crossing each other, minimum angles, enclosed volume."""
import functools

import numpy as np


def _segment_hits(p0, p1, tri):
    """(S, T) bool: segment s crosses triangle t (Moller-Trumbore, strictly inside both)."""
    d = (p1 - p0)[:, None, :]
    v0, v1, v2 = tri[:, 0][None], tri[:, 1][None], tri[:, 2][None]
    e1, e2 = v1 - v0, v2 - v0
    h = np.cross(d, e2)
    a = np.einsum("stc,stc->st", e1, h)
    ok = np.abs(a) > 1e-14
    f = np.where(ok, 1.0 / np.where(ok, a, 1.0), 0.0)
    s = p0[:, None, :] - v0
    u = f * np.einsum("stc,stc->st", s, h)
    q = np.cross(s, e1)
    v = f * np.einsum("stc,stc->st", d, q)
    t = f * np.einsum("stc,stc->st", e2, q)
    eps = 1e-9
    return ok & (u > eps) & (v > eps) & (u + v < 1 - eps) & (t > eps) & (t < 1 - eps)


def min_angles(vertices, faces) -> np.ndarray:
    """Smallest interior angle of each triangle [deg]."""
    v = np.asarray(vertices, dtype=np.float64)[faces]
    out = []
    for k in range(3):
        a = v[:, (k + 1) % 3] - v[:, k]
        b = v[:, (k + 2) % 3] - v[:, k]
        cos = np.einsum("ij,ij->i", a, b) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)
        out.append(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
    return np.min(out, axis=0)


def _segment_distance(p, a, b):
    """(n, T) distance from points p (n, 1, 3) to segments a..b (1, T, 3)."""
    ab = b - a
    t = np.clip(np.einsum("ntc,ntc->nt", p - a, np.broadcast_to(ab, (p.shape[0],) + ab.shape[1:]))
                / np.maximum(np.einsum("ntc,ntc->nt", ab, ab), 1e-30), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[..., None] * ab), axis=-1)


def surface_distance(points, tri) -> np.ndarray:
    """(n,) distance [m] from ``points (n, 3)`` to the nearest of the triangles ``tri (T, 3, 3)``."""
    p = np.asarray(points, dtype=np.float64)[:, None, :]
    a, b, c = tri[None, :, 0], tri[None, :, 1], tri[None, :, 2]
    n = np.cross(b - a, c - a)
    n = n / np.maximum(np.linalg.norm(n, axis=-1, keepdims=True), 1e-30)
    h = np.einsum("ntc,ntc->nt", p - a, np.broadcast_to(n, (p.shape[0],) + n.shape[1:]))
    q = p - h[..., None] * n  # the point's projection on each triangle's plane
    inside = np.ones(h.shape, dtype=bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ntc,ntc->nt", np.cross(v - u, q - u), np.broadcast_to(n, q.shape)) >= 0.0
    edges = np.minimum(np.minimum(_segment_distance(p, a, b), _segment_distance(p, b, c)), _segment_distance(p, c, a))
    return np.where(inside, np.abs(h), edges).min(axis=1)


def deep_crossings(vertices, faces, set_a, set_b, depth):
    """Triangles of ``set_a`` and of ``set_b`` (face index arrays) that the other skin passes through: an edge of
    one set passes through a triangle of the other (pairs sharing a vertex ignored) with both its ends farther than
    ``depth`` [m] from the other set's skin (the nearest point on any of its triangles). Skins pressed together on
    a contact surface touch: where one leaves the surface at an angle, an edge of the other lying on the surface can
    cut the corner of its tilted triangle, but that edge's ends stay on the shared surface, so the ends' distance
    is measured to the other skin, not to the crossed triangle's own plane. Returns ``(hit_a, hit_b)``."""
    v = np.asarray(vertices, dtype=np.float64)
    fa, fb = faces[set_a], faces[set_b]
    hit_a = np.zeros(len(fa), dtype=bool)
    hit_b = np.zeros(len(fb), dtype=bool)
    for first, second, hit_first, hit_second in ((fa, fb, hit_a, hit_b), (fb, fa, hit_b, hit_a)):
        tri = v[second]
        for e in range(3):
            i0, i1 = first[:, e], first[:, (e + 1) % 3]
            hits = _segment_hits(v[i0], v[i1], tri)
            shared = ((second[None, :, :] == i0[:, None, None]) | (second[None, :, :] == i1[:, None, None])).any(2)
            s, t = np.nonzero(hits & ~shared)
            if not len(s):
                continue
            deep = (surface_distance(v[i0[s]], tri) > depth) & (surface_distance(v[i1[s]], tri) > depth)
            hit_first[s[deep]] = True
            hit_second[t[deep]] = True
    return hit_a, hit_b


@functools.cache
def _winding_kernel():
    """The winding-number kernel, compiled on first use (this module must import without numba's compile)."""
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def winding(points, tri, out):
        for n in prange(points.shape[0]):
            total = 0.0
            for t in range(tri.shape[0]):
                ax, ay, az = tri[t, 0, 0] - points[n, 0], tri[t, 0, 1] - points[n, 1], tri[t, 0, 2] - points[n, 2]
                bx, by, bz = tri[t, 1, 0] - points[n, 0], tri[t, 1, 1] - points[n, 1], tri[t, 1, 2] - points[n, 2]
                cx, cy, cz = tri[t, 2, 0] - points[n, 0], tri[t, 2, 1] - points[n, 1], tri[t, 2, 2] - points[n, 2]
                la = np.sqrt(ax * ax + ay * ay + az * az)
                lb = np.sqrt(bx * bx + by * by + bz * bz)
                lc = np.sqrt(cx * cx + cy * cy + cz * cz)
                num = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
                den = (la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la
                       + (cx * ax + cy * ay + cz * az) * lb)
                total += 2.0 * np.arctan2(num, den)
            out[n] = total / (4.0 * np.pi)

    return winding


def _winding_numbers(vertices, faces, points) -> np.ndarray:
    """Generalised winding number ``(N,)`` of the closed (or nearly closed) mesh at each point ``(N, 3)``."""
    out = np.empty(len(points))
    _winding_kernel()(np.ascontiguousarray(points, dtype=np.float64),
                      np.ascontiguousarray(np.asarray(vertices, dtype=np.float64)[faces]), out)
    return out


def _cell_centres(lo, hi, step):
    axes = [np.arange(lo[c] + step / 2, hi[c], step) for c in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)


def enclosed_volume_in_ball(vertices, faces, centre, radius, step):
    """Volume [m^3] of the region inside the mesh (generalised winding number > 1/2, so overlapping parts of a
    self-intersecting skin count once) within the ball of ``radius`` [m] about ``centre``, sampled at cell centres
    ``step`` [m] apart: a measure about a joint that its two bones' rigid rotations about it leave unchanged."""
    c = np.asarray(centre, dtype=np.float64)
    pts = _cell_centres(c - radius, c + radius, step)
    pts = pts[np.linalg.norm(pts - c, axis=1) < radius]
    return float(np.sum(_winding_numbers(vertices, faces, pts) > 0.5)) * step ** 3
