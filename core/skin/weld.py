"""Coincident vertices welded for the computation, expanded again for the result.

Meshes are often split where their UVs or normals are (glTF and FBX imports, a split edge): two vertices at the same
place, each in the faces of its side. Tracked and relaxed separately, the two sides see different neighbours and
drift apart, up to centimetres at a bent elbow, which opens a crack in the skin. :func:`weld` merges vertices at
exactly the same rest position into one (their weights averaged), remaps the faces and drops the faces that
collapse (a zero-area face whose corners coincide) or repeat; :meth:`Weld.expand` gives every original vertex its
welded vertex's position, so split vertices move as one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Weld:
    """``vertices (U, 3)``, ``faces (F', 3)``, ``weights (U, B)`` of the welded mesh and ``inverse (V,)``: the
    welded vertex of each original vertex. ``identity`` when no two vertices coincide (nothing to expand)."""

    vertices: np.ndarray
    faces: np.ndarray
    weights: np.ndarray
    inverse: np.ndarray
    identity: bool

    def expand(self, welded, out=None) -> np.ndarray:
        """``(V, 3)`` positions of the original vertices from ``welded (U, 3)`` (into ``out`` if given)."""
        if self.identity:
            if out is not None and out is not welded:
                out[:] = welded
                return out
            return welded
        if out is None:
            return welded[self.inverse]
        np.take(welded, self.inverse, axis=0, out=out)
        return out


def weld(vertices, faces, weights) -> Weld:
    """Merge vertices at exactly the same position (module docstring). ``vertices (V, 3)``, ``faces (F, 3)`` int,
    ``weights (V, B)``."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    unique, first, inverse = np.unique(v, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if len(unique) == len(v):
        return Weld(v, f, w, np.arange(len(v)), True)
    order = np.argsort(first)  # welded vertices in the order of their first original, so a mesh keeps its order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    inverse = rank[inverse]
    counts = np.bincount(inverse, minlength=len(unique)).astype(np.float64)
    welded_w = np.zeros((len(unique), w.shape[1]))
    np.add.at(welded_w, inverse, w)
    welded_w /= counts[:, None]
    wf = inverse[f]
    keep = (wf[:, 0] != wf[:, 1]) & (wf[:, 1] != wf[:, 2]) & (wf[:, 0] != wf[:, 2])
    wf = wf[keep]
    _, once = np.unique(np.sort(wf, axis=1), axis=0, return_index=True)
    wf = wf[np.sort(once)]
    return Weld(v[first[order]], wf, welded_w, inverse, False)
