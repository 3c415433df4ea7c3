"""Closed triangle meshes cut into cross-sections: the checks a mesh must pass to be measured, its solid moments
(divergence theorem) and the area moments of its plane sections, whole or within strips.

A section at height ``t`` along a unit ``direction`` is the region of the plane ``(x - point) . direction = t``
inside the mesh. Each triangle that crosses the plane gives one boundary segment, oriented along
``direction x normal`` so that outer boundaries run counter-clockwise in the plane's frame ``(e1, e2)``
(``e1 x e2 = direction``). Green's theorem with the forms ``-y dx``, ``-x y dx``, ... then gives the area and its
moments from the segments alone, without joining them into loops; a strip ``x0 <= x <= x1`` adds only chords along
``x = const``, where ``dx = 0``, so the same sums over the segments clipped to the strip give the moments of the
section's part inside the strip, exactly (3-point Gauss-Legendre, exact for the cubic integrands).

Plain numpy, vectorised over triangles and sections.
"""
from __future__ import annotations

import numpy as np

_GAUSS_T = 0.5 + 0.5 * np.array([-np.sqrt(0.6), 0.0, np.sqrt(0.6)])
_GAUSS_W = np.array([5.0, 8.0, 5.0]) / 18.0
"""3-point Gauss-Legendre nodes and weights on ``[0, 1]``."""


def closed_mesh_problem(faces, name: str = "the mesh") -> str:
    """A plain sentence saying why ``faces (F, 3)`` is not a closed, consistently oriented surface, or ``""``.

    Closed: every edge is shared by exactly two faces. Oriented: those two faces run along it in opposite
    directions (so the normals all point out, or all in)."""
    f = np.asarray(faces, dtype=np.int64)
    if f.ndim != 2 or f.shape[1] != 3 or len(f) < 4:
        return f"{name} has fewer than 4 triangles: it cannot enclose a volume."
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    directed = directed[directed[:, 0] != directed[:, 1]]
    undirected = np.sort(directed, axis=1)
    _, counts = np.unique(undirected, axis=0, return_counts=True)
    border = int((counts == 1).sum())
    if border:
        return (f"{name} is not closed: {border} edges border a hole; fill the holes (Edit Mode: Select > "
                f"Select All by Trait > Non Manifold, then Face > Fill) and try again.")
    if (counts > 2).any():
        return (f"{name} has {int((counts > 2).sum())} edges shared by more than two faces: make it one closed "
                f"surface (Mesh > Clean Up > Merge by Distance, remove inner faces) and try again.")
    _, dir_counts = np.unique(directed, axis=0, return_counts=True)
    if (dir_counts > 1).any():
        return (f"{name} has faces whose normals point the other way: recalculate them (Edit Mode: Mesh > "
                f"Normals > Recalculate Outside) and try again.")
    return ""


def piece_count(faces, vertex_count: int) -> int:
    """How many separate pieces (sets of faces connected through shared vertices) ``faces (F, 3)`` form; vertices
    in no face are not counted. Labels spread along the edges with pointer jumping until they settle."""
    f = np.asarray(faces, dtype=np.int64)
    if not len(f):
        return 0
    a = np.concatenate([f[:, 0], f[:, 1], f[:, 2]])
    b = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    label = np.arange(vertex_count)
    while True:
        low = label.copy()
        np.minimum.at(low, a, label[b])
        np.minimum.at(low, b, label[a])
        low = low[low]  # pointer jumping: a label's own label
        if np.array_equal(low, label):
            break
        label = low
    return len(np.unique(label[f.ravel()]))


def solid_moments(vertices, faces):
    """``(volume [m^3], centroid (3,) [m], covariance (3, 3) [m^2])`` of the solid a closed, consistently oriented
    mesh encloses, by the divergence theorem (signed tetrahedra from the vertices' mean, ``int x x^T dV = V/20
    (sum p p^T + (sum p)(sum p)^T)`` per tetrahedron). Inward normals give a negative volume."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    base = v.mean(axis=0)
    a, b, c = v[f[:, 0]] - base, v[f[:, 1]] - base, v[f[:, 2]] - base
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    volume = float(vol.sum())
    if volume == 0.0:
        return 0.0, base, np.zeros((3, 3))
    total = a + b + c
    first = (vol[:, None] * total).sum(axis=0) / 4.0
    second = (np.einsum("i,ij,ik->jk", vol, a, a) + np.einsum("i,ij,ik->jk", vol, b, b)
              + np.einsum("i,ij,ik->jk", vol, c, c) + np.einsum("i,ij,ik->jk", vol, total, total)) / 20.0
    centroid = first / volume
    covariance = second / volume - np.outer(centroid, centroid)
    return volume, centroid + base, covariance


def plane_frame(direction):
    """``(d, e1, e2)``: ``direction`` normalised and two unit vectors completing a right-handed frame
    (``e1 x e2 = d``)."""
    d = np.asarray(direction, dtype=np.float64)
    d = d / np.linalg.norm(d)
    helper = np.eye(3)[int(np.argmin(np.abs(d)))]
    e1 = np.cross(helper, d)
    e1 /= np.linalg.norm(e1)
    return d, e1, np.cross(d, e1)


def section_segments(vertices, faces, point, frame, levels):
    """Boundary segments of the sections at heights ``levels (N,)`` [m] (sorted) along ``frame[0]`` from
    ``point``.

    Returns ``start (S, 2)``, ``end (S, 2)`` (coordinates along ``frame[1]``, ``frame[2]`` [m], oriented
    counter-clockwise around the inside) and ``level (S,) int64`` (the section each segment belongs to). A vertex
    exactly on a plane counts as above it, so the segments of a section always close up."""
    d, e1, e2 = frame
    v = np.asarray(vertices, dtype=np.float64) - np.asarray(point, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    t = np.asarray(levels, dtype=np.float64)
    h = v @ d
    hf = h[f]
    first = np.searchsorted(t, hf.min(axis=1), side="right")
    last = np.searchsorted(t, hf.max(axis=1), side="right")
    count = last - first
    tri = np.repeat(np.arange(len(f)), count)
    level = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    tl = t[level]
    corners = v[f[tri]]  # (S, 3, 3)
    hc = hf[tri]
    points = []
    crosses = []
    for i, j in ((0, 1), (1, 2), (2, 0)):
        above_i, above_j = hc[:, i] >= tl, hc[:, j] >= tl
        cross = above_i != above_j
        denom = np.where(cross, hc[:, j] - hc[:, i], 1.0)
        u = np.clip((tl - hc[:, i]) / denom, 0.0, 1.0)
        points.append(corners[:, i] + u[:, None] * (corners[:, j] - corners[:, i]))
        crosses.append(cross)
    crosses = np.stack(crosses, axis=1)  # (S, 3): exactly two edges cross
    points = np.stack(points, axis=1)
    order = np.argsort(~crosses, axis=1, kind="stable")[:, :2]
    rows = np.arange(len(tri))[:, None]
    p0, p1 = points[rows, order].transpose(1, 0, 2)
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    flip = np.einsum("ij,ij->i", p1 - p0, np.cross(d, normal)) < 0.0
    p0, p1 = np.where(flip[:, None], p1, p0), np.where(flip[:, None], p0, p1)
    start = np.stack([p0 @ e1, p0 @ e2], axis=1)
    end = np.stack([p1 @ e1, p1 @ e2], axis=1)
    return start, end, level


MOMENTS = ("area", "x", "y", "xx", "yy", "xy")
"""The columns of :func:`strip_moments`: ``int 1, x, y, x^2, y^2, x y dA`` over the region."""


def strip_moments(start, end, level, count: int, x0=None, x1=None) -> np.ndarray:
    """Area moments ``(count, 6)`` (``MOMENTS``) of each section's part with ``x0[k] <= x <= x1[k]`` (per section
    ``k``; ``None``: unbounded), from the segments of :func:`section_segments` [m^2, m^3, m^4]."""
    xa, ya = start[:, 0], start[:, 1]
    dx, dy = end[:, 0] - xa, end[:, 1] - ya
    lo, hi = np.zeros(len(xa)), np.ones(len(xa))
    if x0 is not None or x1 is not None:
        low = np.full(count, -np.inf) if x0 is None else np.asarray(x0, dtype=np.float64)
        high = np.full(count, np.inf) if x1 is None else np.asarray(x1, dtype=np.float64)
        safe = np.where(dx != 0.0, dx, 1.0)  # a segment with dx = 0 adds nothing (its weight has dx)
        ta, tb = (low[level] - xa) / safe, (high[level] - xa) / safe
        lo = np.clip(np.minimum(ta, tb), 0.0, 1.0)
        hi = np.maximum(np.clip(np.maximum(ta, tb), 0.0, 1.0), lo)
    span = hi - lo
    out = np.zeros((count, 6))
    for node, weight in zip(_GAUSS_T, _GAUSS_W):
        s = lo + node * span
        x, y = xa + s * dx, ya + s * dy
        w = -weight * span * dx  # -dx, Green's theorem
        for col, value in enumerate((y, x * y, 0.5 * y * y, x * x * y, y ** 3 / 3.0, 0.5 * x * y * y)):
            out[:, col] += np.bincount(level, weights=w * value, minlength=count)
    return out


def section_extent(start, end, level, count: int):
    """``(low (count,), high (count,))``: each section's extent along ``e1`` [m] (``inf``, ``-inf`` when empty)."""
    low = np.full(count, np.inf)
    high = np.full(count, -np.inf)
    for pts in (start, end):
        np.minimum.at(low, level, pts[:, 0])
        np.maximum.at(high, level, pts[:, 0])
    return low, high
