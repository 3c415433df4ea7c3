"""The crease stage of a tracked frame: skin left inside the body pushed back onto the skin it passed
(``kernels/crease.py`` has the method; this module its bind data and its numpy reference).

:func:`crease_mesh` builds the kernel's :class:`kernels.crease.CreaseMesh` once per bind: the triangles of each
vertex, the rest normals, the one-rings, and which vertices may move (not those on an open border, nor the skin that
lies inside the body already at rest: a model's own folds, fingers pressed together, an armpit closed in its rest
pose), and how many shells each vertex's ray leaves at rest. :func:`crease_params` scales the settings' lengths by
the mesh's size. :func:`resolve_creases_reference` is the reference: every ray against every triangle
(``core/skin/quality.first_hits_reference``), the spread by whole-array ring means.
"""
from __future__ import annotations

import numpy as np

from .parts import vertex_normals


def crease_mesh(rest, faces, rings, pinned, own_part, params):
    """The kernel's ``CreaseMesh`` of the rest mesh ``rest (V, 3)`` [m], ``faces (F, 3)``, its one-rings, its
    ``pinned (V,)`` vertices and each vertex's skin part ``own_part (V,)``, for the kernel's ``params`` (a
    ``CreaseParams``: the rest crossings are counted on rays of its ``max_ray``)."""
    from ...kernels.crease import CreaseMesh, rest_crossings
    from .quality import InsideMesh, measure_inside

    inside = InsideMesh.build(rest, faces)
    inside_at_rest = np.isfinite(measure_inside(inside, rest).depth)
    rest = np.ascontiguousarray(rest, dtype=np.float64)
    normal = np.ascontiguousarray(vertex_normals(rest, faces))
    return CreaseMesh(faces=inside.faces, rest_normal=normal, ring_start=rings.start,
                      ring_neighbour=rings.neighbour, ring_weight=rings.weight,
                      free=np.ascontiguousarray(~np.asarray(pinned, dtype=np.bool_) & ~inside_at_rest),
                      vertex_part=np.ascontiguousarray(own_part, dtype=np.int64),
                      face_part=np.ascontiguousarray(np.asarray(own_part, dtype=np.int64)[inside.faces[:, 0]]),
                      rest=rest, rest_crossings=rest_crossings(rest, normal, inside.faces, params))


def crease_params(settings, mesh_size: float, edge_length: float):
    """The kernel's ``CreaseParams`` of ``settings`` (:class:`core.skin.tracking.TrackingSettings`): lengths as
    fractions of ``mesh_size`` [m], the grid's cells ``CREASE_CELL_EDGES`` mean edge lengths ``edge_length`` [m]."""
    from ...kernels.crease import CreaseParams
    from .tracking import CREASE_CELL_EDGES, CREASE_MAX_CELLS

    return CreaseParams(rounds=int(settings.crease_rounds), spread=int(settings.crease_spread),
                        share=float(settings.crease_share), margin=float(settings.crease_margin * mesh_size),
                        max_depth=float(settings.crease_depth * mesh_size),
                        apart=float(settings.crease_apart * mesh_size),
                        max_ray=float(settings.crease_ray * mesh_size), cell=float(CREASE_CELL_EDGES * edge_length),
                        max_cells=int(CREASE_MAX_CELLS), unfold_rings=int(settings.unfold_rings),
                        unfold_sweeps=int(settings.unfold_sweeps))


def resolve_creases_reference(x, rot, seeds, mesh, params):
    """Numpy reference of ``kernels/crease.resolve_creases``: ``(positions (V, 3), pushed (V,), found)``."""
    from ...kernels.crease import MESH_NORMAL_COS
    from .quality import crossings_reference, first_hits_reference

    x = np.array(x, dtype=np.float64)
    V = len(x)
    f = mesh.faces
    rows = np.repeat(np.arange(V), np.diff(mesh.ring_start))

    def grow(mask, steps, only=None):
        for _ in range(steps):
            hit = np.zeros(V, dtype=bool)
            np.logical_or.at(hit, rows, mask[mesh.ring_neighbour])
            mask = mask | (hit if only is None else hit & only)
        return mask

    def ring_mean(values):
        out = np.zeros_like(values)
        np.add.at(out, rows, mesh.ring_weight[:, None] * values[mesh.ring_neighbour])
        return out

    def area_normals(y):
        n = np.zeros_like(y)
        fn = np.cross(y[f[:, 1]] - y[f[:, 0]], y[f[:, 2]] - y[f[:, 0]])
        for c in range(3):
            np.add.at(n, f[:, c], fn)
        return n

    def apart(face):
        k = np.maximum(face, 0)
        far = np.linalg.norm(mesh.rest[f[k, 0]] - mesh.rest, axis=1) > params.apart
        return (face >= 0) & ((mesh.face_part[k] != mesh.vertex_part) | far)

    turned = np.einsum("vij,vj->vi", rot, mesh.rest_normal)
    length = np.linalg.norm(turned, axis=1)
    valid = (length > 1e-12) & mesh.free
    turned = np.where(valid[:, None], turned / np.where(length > 1e-12, length, 1.0)[:, None], 0.0)
    candidates = grow(np.asarray(seeds, dtype=bool), 1)
    rest_crossings = crossings_reference(mesh.rest, f, mesh.rest_normal, params.max_ray)
    pushed = np.zeros(V, dtype=bool)
    found = 0
    for _ in range(params.rounds):
        if params.unfold_sweeps > 0:
            folded = mesh.free & (np.einsum("ij,ij->i", area_normals(x), turned) < 0.0)
            if folded.any():
                folded = grow(folded, params.unfold_rings, only=mesh.free)
                for _ in range(params.unfold_sweeps):
                    x[folded] = ring_mean(x)[folded]
        m = area_normals(x)
        m_length = np.linalg.norm(m, axis=1)
        own = (m_length > 1e-20) & (np.einsum("ij,ij->i", m, turned) > MESH_NORMAL_COS * m_length)
        n = np.where(own[:, None], m / np.where(m_length > 1e-20, m_length, 1.0)[:, None], turned)
        n = np.where((candidates & valid)[:, None], n, 0.0)
        out_t, back, out_face = first_hits_reference(x, f, n)
        in_t, in_back, in_face = first_hits_reference(x, f, -n)
        inside = candidates & valid & back & (out_t <= params.max_ray) & apart(out_face) & in_back & apart(in_face) \
            & (in_t <= params.max_depth)
        inside &= crossings_reference(x, f, np.where(inside[:, None], n, 0.0), params.max_ray) > rest_crossings
        found = int(inside.sum())
        pushed |= inside
        if not found:
            break
        push = np.where(inside[:, None], -(params.share * np.where(inside, in_t, 0.0) + params.margin)[:, None] * n,
                        0.0)
        for _ in range(params.spread):
            push = np.where(inside[:, None], push, 0.5 * ring_mean(push))
        x[mesh.free] += push[mesh.free]
        candidates = grow(inside, params.spread + 1)
    return x, pushed, found
