"""Mesh measurements for the skinning tests: skins crossing each other, minimum angles, enclosed volume."""
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


def deep_crossings(vertices, faces, set_a, set_b, depth):
    """Triangles of ``set_a`` and of ``set_b`` (face index arrays) that cross a triangle of the other set: an edge of
    one passes through the other (pairs sharing a vertex ignored), with both its ends at least ``depth`` [m] from
    that triangle's plane: skins pressed together on a contact surface
    touch (their triangles may graze each other within a fraction of a millimetre), skins passing through each
    other do not. Returns ``(hit_a, hit_b)``."""
    v = np.asarray(vertices, dtype=np.float64)
    fa, fb = faces[set_a], faces[set_b]
    hit_a = np.zeros(len(fa), dtype=bool)
    hit_b = np.zeros(len(fb), dtype=bool)
    for first, second, hit_first, hit_second in ((fa, fb, hit_a, hit_b), (fb, fa, hit_b, hit_a)):
        tri = v[second]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
        for e in range(3):
            i0, i1 = first[:, e], first[:, (e + 1) % 3]
            hits = _segment_hits(v[i0], v[i1], tri)
            d0 = np.abs(np.einsum("stc,tc->st", v[i0][:, None, :] - tri[None, :, 0], n))
            d1 = np.abs(np.einsum("stc,tc->st", v[i1][:, None, :] - tri[None, :, 0], n))
            hits &= (d0 > depth) & (d1 > depth)
            shared = ((second[None, :, :] == i0[:, None, None]) | (second[None, :, :] == i1[:, None, None])).any(2)
            hits &= ~shared
            hit_first[np.flatnonzero(hits.any(axis=1))] = True
            hit_second[np.flatnonzero(hits.any(axis=0))] = True
    return hit_a, hit_b


def enclosed_volume(vertices, faces, lo, hi, step):
    """Volume [m^3] of the region inside the mesh (generalised winding number > 1/2) within the box ``lo..hi``,
    sampled at cell centres ``step`` [m] apart: overlapping parts of a self-intersecting skin count once."""
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

    axes = [np.arange(lo[c] + step / 2, hi[c], step) for c in range(3)]
    pts = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    out = np.empty(len(pts))
    winding(pts, np.ascontiguousarray(np.asarray(vertices, dtype=np.float64)[faces]), out)
    return float(np.sum(out > 0.5)) * step ** 3
