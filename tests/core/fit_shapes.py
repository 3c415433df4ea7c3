"""Closed meshes made by hand for the mesh-fit tests: a flat fan (a pectoral-like sheet) and a sculpt-like bent,
lumpy, egg-shaped belly. Each is rings of vertices closed at each end by a vertex. Plain numpy, no add-on code (the
Blender tests load this file too)."""
from __future__ import annotations

import numpy as np


def _ring_faces(rings, sides):
    """Outward triangles of ``rings`` rings of ``sides`` vertices (ring-major), then one vertex closing each end
    (index ``rings * sides``: the first ring's end, then the last's)."""
    idx = np.arange(rings * sides).reshape(rings, sides)
    nxt = np.roll(idx, -1, axis=1)
    a, b, c, d = idx[:-1].ravel(), nxt[:-1].ravel(), idx[1:].ravel(), nxt[1:].ravel()
    start, end = np.full(sides, rings * sides), np.full(sides, rings * sides + 1)
    return np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1), np.stack([start, nxt[0], idx[0]], 1),
                           np.stack([end, idx[-1], nxt[-1]], 1)]).astype(np.int64)


def _closed(rings):
    """Vertices and faces of ``rings (R, S, 3)`` closed by a vertex at each end's centre."""
    r, sides = rings.shape[:2]
    vertices = np.concatenate([rings.reshape(-1, 3), rings[0].mean(axis=0)[None], rings[-1].mean(axis=0)[None]])
    return vertices, _ring_faces(r, sides)


def fan_mesh(length=0.15, wide=0.08, narrow=0.015, thickness=0.012, rings=40, sides=48):
    """A flat fan along +Z from ``z = 0`` (``2 wide`` across X) to ``z = length`` (``2 narrow`` across X), its
    sections ellipses ``thickness (0.4 + 0.6 sin(pi z / length))`` thick along Y: ``(vertices, faces)`` [m]."""
    z = np.linspace(0.0, length, rings)
    half = wide + (narrow - wide) * z / length
    thick = thickness * (0.4 + 0.6 * np.sin(np.pi * z / length))
    angle = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    ring = np.stack([half[:, None] * np.cos(angle), thick[:, None] * np.sin(angle),
                     np.broadcast_to(z[:, None], (rings, sides))], axis=-1)
    return _closed(ring)


def sculpt_mesh(length=0.28, radius=0.03, peak=0.4, bend=0.01, lumps=0.06, rings=60, sides=40):
    """A sculpt-like muscle along +Z: an egg-shaped belly, thickest at ``peak`` of its length (radius ``radius``),
    pointed at both ends, its axis bent ``bend`` towards +X in the middle, its sections a little flattened along Y
    and ``lumps`` (fraction of the radius) of smooth bumps on its surface: ``(vertices, faces)`` [m]."""
    s = np.linspace(0.0, 1.0, rings + 2)[1:-1]
    a = np.log(0.5) / np.log(peak)
    profile = np.sin(np.pi * s ** a) ** 0.8
    angle = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    bumps = 1.0 + lumps * np.sin(3.0 * angle[None] + 7.0 * s[:, None]) * np.sin(5.0 * np.pi * s[:, None])
    r = radius * profile[:, None] * bumps
    centre_x = bend * np.sin(np.pi * s)
    ring = np.stack([centre_x[:, None] + 1.25 * r * np.cos(angle), 0.8 * r * np.sin(angle),
                     np.broadcast_to(length * s[:, None], r.shape)], axis=-1)
    vertices = np.concatenate([ring.reshape(-1, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, length]]])
    return vertices, _ring_faces(len(s), sides)
