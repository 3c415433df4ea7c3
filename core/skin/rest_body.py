"""The body at rest as a closed surface: what the skin's part fields are clipped to (``core/skin/part_grid.py``).

A part's HRBF is distance-like only near its samples; between and beyond them it can swell out through the skin of its
neighbours (a thigh's field standing out of the calf below the knee, a hand's as a disc around the wrist). Each part is
therefore intersected with the body at rest, grown by a small margin: no part's volume lies outside the rest skin, so
every vertex's iso-value at rest is its own part's (about 0.5) and a vertex that enters another part in a pose has met
it there. The design notes (docs/design-notes.md#part-fields-clipped-beyond-their-joints-and-to-the-body) give the
measurements.

:class:`RestBody` holds the rest mesh welded where vertices coincide (a mesh split at its UV seams), each of its
connected pieces closed at its open borders (each border loop fanned to its centre, so that a character made of
several open meshes, or a mesh with holes, still has an inside; a point is inside the body when it is inside one of
the pieces, so pieces that overlap, a torso and legs meeting at the waist, stay inside), and its triangles sorted into a
uniform grid of cells (``core/skin/triangle_grid.py``), the two handed to the kernels as one
``kernels.mesh_distance.DistanceMesh`` (:meth:`RestBody.distance_mesh`); :meth:`RestBody.signed_distance` gives the
signed distance of points to it and its gradient (``kernels/mesh_distance.signed_distance_gradient``),
:meth:`RestBody.lattice_signed_distance` the same for the nodes of a lattice, a part grid's
(``kernels/mesh_distance.lattice_inside``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .triangle_grid import TriangleGrid

def border_loops(faces) -> list:
    """The closed loops of border edges (edges of one face) of a triangle mesh, each as a vertex index array in the
    order of its edges; a border vertex where several loops touch is walked once per loop."""
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    key = np.sort(directed, axis=1)
    _, inverse, count = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    border = directed[count[inverse.ravel()] == 1]
    if not len(border):
        return []
    # a border edge runs a -> b in its face; the loop follows b -> its next border edge
    following = {}
    for a, b in border:
        following.setdefault(int(a), []).append(int(b))
    loops = []
    used = set()
    for a, b in border:
        if (int(a), int(b)) in used:
            continue
        loop = [int(a)]
        cur, nxt = int(a), int(b)
        while (cur, nxt) not in used:
            used.add((cur, nxt))
            loop.append(nxt)
            candidates = [c for c in following.get(nxt, []) if (nxt, c) not in used]
            if not candidates:
                break
            cur, nxt = nxt, candidates[0]
        if loop[-1] == loop[0]:
            loop.pop()
        if len(loop) >= 3:
            loops.append(np.array(loop, dtype=np.int64))
    return loops


def face_components(faces, vertex_count: int) -> np.ndarray:
    """``(F,)`` int64 the connected piece (faces sharing vertices) of each face, numbered from 0."""
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    label = np.arange(vertex_count)
    while True:  # every face's corners take their smallest label, until none changes
        low = label[f].min(axis=1)
        new = label.copy()
        for c in range(3):
            np.minimum.at(new, f[:, c], low)
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    _, piece = np.unique(label[f[:, 0]], return_inverse=True)
    return piece.reshape(-1).astype(np.int64)


def closed_surface(vertices, faces) -> tuple:
    """``(vertices, faces, piece)``: the mesh welded where vertices coincide, each border loop fanned to a new vertex
    at its centre, and the connected piece of each face."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    v, inverse = np.unique(v, axis=0, return_inverse=True)
    f = inverse.reshape(-1)[f]
    f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
    piece = face_components(f, len(v))
    loops = border_loops(f)
    if not loops:
        return v, f, piece
    vertex_piece = np.zeros(len(v), dtype=np.int64)
    vertex_piece[f.ravel()] = np.repeat(piece, 3)
    extra_v, extra_f, extra_p = [], [], []
    for loop in loops:
        centre = len(v) + len(extra_v)
        extra_v.append(v[loop].mean(axis=0))
        nxt = np.roll(loop, -1)
        extra_f.append(np.stack([nxt, loop, np.full(len(loop), centre)], axis=1))
        extra_p.append(np.full(len(loop), vertex_piece[loop[0]]))
    return np.vstack([v, np.array(extra_v)]), np.vstack([f, *extra_f]), np.concatenate([piece, *extra_p])


@dataclass(frozen=True)
class RestBody:
    """The rest mesh closed at its borders, its triangles in a grid (module docstring). Lengths in metres."""

    vertices: np.ndarray  # (V', 3) the welded rest vertices and the border loops' centres
    faces: np.ndarray  # (F', 3) int64 the rest triangles and the fans that close the borders
    piece: np.ndarray  # (F',) int64 the connected piece of each triangle
    pieces: int  # how many pieces
    grid: TriangleGrid

    @classmethod
    def build(cls, vertices, faces) -> "RestBody":
        v, f, piece = closed_surface(vertices, faces)
        v = np.ascontiguousarray(v)
        f = np.ascontiguousarray(f)
        return cls(vertices=v, faces=f, piece=np.ascontiguousarray(piece), pieces=int(piece.max()) + 1 if len(piece)
                   else 1, grid=TriangleGrid.build(v, f))

    def distance_mesh(self):
        """The body and its grid as the distance kernels' ``kernels.mesh_distance.DistanceMesh``."""
        from ...kernels.mesh_distance import DistanceMesh

        g = self.grid
        return DistanceMesh(x=np.ascontiguousarray(self.vertices, dtype=np.float64),
                            faces=np.ascontiguousarray(self.faces, dtype=np.int64),
                            piece=np.ascontiguousarray(self.piece, dtype=np.int64), pieces=int(self.pieces),
                            cell_start=np.ascontiguousarray(g.cell_start, dtype=np.int64),
                            cell_triangle=np.ascontiguousarray(g.cell_triangle, dtype=np.int64),
                            origin=np.ascontiguousarray(g.origin, dtype=np.float64), inv_cell=float(g.inv_cell),
                            dims=np.ascontiguousarray(g.dims, dtype=np.int64))

    def signed_distance(self, points, max_distance: float, inside_reach=None) -> tuple:
        """``(distance (n,), gradient (n, 3))`` of ``points (n, 3)`` [m]: the signed distance to the body (negative
        inside; ``+-inf`` further than ``max_distance``, or for a point inside further than its ``inside_reach (n,)``
        [m] if given) and its unit gradient (``kernels/mesh_distance.signed_distance_gradient``)."""
        from ...kernels.mesh_distance import signed_distance_gradient

        p = np.ascontiguousarray(points, dtype=np.float64)
        reach = np.full(len(p), np.inf) if inside_reach is None else \
            np.ascontiguousarray(np.broadcast_to(np.asarray(inside_reach, dtype=np.float64), (len(p),)))
        distance, gradient = np.empty(len(p)), np.empty((len(p), 3))
        signed_distance_gradient(p, self.distance_mesh(), float(max_distance), reach, distance, gradient)
        return distance, gradient

    def lattice_signed_distance(self, origin, spacing: float, want, max_distance: float, inside_reach=None,
                                outside_enough=None) -> tuple:
        """:meth:`signed_distance` of the nodes ``origin + spacing (i, j, k)`` [m] of a lattice where ``want (nx, ny,
        nz)`` bool is true, in the order of ``np.flatnonzero(want)``; ``inside_reach`` one per such node.
        ``outside_enough`` [m] (one per node, None: none): a node outside takes the distance of the first mesh point
        found within it, no more than it but not always the nearest (for a caller to which every distance that
        short means the same). The side of every node comes from one parity ray per lattice line
        (``kernels/mesh_distance.lattice_inside``), the same side as the ray of each node alone."""
        from ...kernels.mesh_distance import lattice_inside, sided_distance_gradient

        want = np.ascontiguousarray(want, dtype=np.bool_)
        lattice = np.array([*np.asarray(origin, dtype=np.float64), float(spacing)])
        inside = np.zeros(want.shape, dtype=np.bool_)
        mesh = self.distance_mesh()
        lattice_inside(lattice, want, mesh, inside)
        index = np.flatnonzero(want)
        inside = inside.reshape(-1)[index]
        ijk = np.stack(np.unravel_index(index, want.shape), axis=1)
        points = np.ascontiguousarray(lattice[:3] + lattice[3] * ijk)
        reach, enough = (np.broadcast_to(np.inf if a is None else np.asarray(a, dtype=np.float64), (len(points),))
                         for a in (inside_reach, outside_enough))
        limit = np.ascontiguousarray(np.where(inside, reach, np.where(np.isfinite(enough), enough, -1.0)))
        out = np.empty((len(points), 4))
        sided_distance_gradient(points, inside, mesh, float(max_distance), limit, out)
        return out[:, 0], out[:, 1:]
