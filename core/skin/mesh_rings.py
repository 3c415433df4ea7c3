"""One-ring neighbourhoods and clamped cotangent weights of a triangle mesh (thesis §3.3, ARAP relaxation).

``c_ik = 1/2 (cot alpha_ik + cot beta_ik)`` over the (one or two) triangles sharing edge ``ik``, computed on the
rest mesh. Negative sums (obtuse triangles) are clamped to 0, our choice (the thesis is silent): a negative weight
would pull a vertex away from its neighbour and the Jacobi iteration could diverge. ``cbar_ik = c_ik / sum_k c_ik``;
a vertex whose weights all vanish (or whose faces are degenerate) uses uniform weights over its ring, and a vertex on
no face has an empty ring (it is left where it is).

Output CSR: ``start (V+1,)``, ``neighbour (E2,) int64``, ``weight (E2,)`` (each row sums to 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rings:
    start: np.ndarray
    neighbour: np.ndarray
    weight: np.ndarray


def cotangent_rings(vertices, faces) -> Rings:
    """Normalised clamped cotangent weights of every vertex's one-ring (module docstring)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    V = len(v)
    i_list, j_list, w_list = [], [], []
    for c in range(3):
        a, b, o = f[:, c], f[:, (c + 1) % 3], f[:, (c + 2) % 3]  # edge (a, b), opposite vertex o
        ea = v[a] - v[o]
        eb = v[b] - v[o]
        cross = np.linalg.norm(np.cross(ea, eb), axis=1)
        dot = np.einsum("ij,ij->i", ea, eb)
        with np.errstate(divide="ignore", invalid="ignore"):
            cot = np.where(cross > 1e-20, dot / np.where(cross > 1e-20, cross, 1.0), 0.0)
        i_list += [a, b]
        j_list += [b, a]
        w_list += [0.5 * cot, 0.5 * cot]
    i = np.concatenate(i_list)
    j = np.concatenate(j_list)
    w = np.concatenate(w_list)
    keep = i != j
    key = i[keep] * V + j[keep]
    uniq, inverse = np.unique(key, return_inverse=True)
    weight = np.zeros(len(uniq))
    np.add.at(weight, inverse, w[keep])
    rows = uniq // V
    cols = uniq % V
    weight = np.maximum(weight, 0.0)
    start = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=V), out=start[1:])
    total = np.bincount(rows, weights=weight, minlength=V)  # a vertex in no face (last or not) has no row
    counts = np.diff(start)
    per_row_total = np.repeat(total, counts)
    per_row_count = np.repeat(counts, counts)
    weight = np.where(per_row_total > 1e-20, weight / np.where(per_row_total > 1e-20, per_row_total, 1.0),
                      1.0 / np.maximum(per_row_count, 1))
    return Rings(start, cols.astype(np.int64), weight)


def border_vertices(faces, vertex_count: int) -> np.ndarray:
    """``(V,)`` bool: vertices on an open border of the mesh, the ends of every edge that only one face uses."""
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    unique, count = np.unique(edges, axis=0, return_counts=True)
    out = np.zeros(vertex_count, dtype=np.bool_)
    out[unique[count == 1].ravel()] = True
    return out
