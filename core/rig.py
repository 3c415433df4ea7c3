"""A skinned mesh and its skeleton at rest: what a character is bound from."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rig:
    """Mesh and skeleton at rest, in armature space.

    * ``vertices``: ``(V, 3) float64`` [m], rest positions.
    * ``faces``: ``(F, 3)`` integer, triangles as vertex indices.
    * ``weights``: ``(V, B) float64``, skinning weight of each vertex for each bone.
    * ``heads``, ``tails``: ``(B, 3) float64`` [m], bone ends at rest.
    * ``parents``: ``(B,)`` integer, parent bone index, -1 for a root.
    * ``names``: ``(B,)`` tuple of bone names.
    """

    vertices: np.ndarray
    faces: np.ndarray
    weights: np.ndarray
    heads: np.ndarray
    tails: np.ndarray
    parents: np.ndarray
    names: tuple


def capped_tube_faces(rings: int, around: int) -> np.ndarray:
    """``(2 around rings, 3) int64`` outward triangles of a capped tube whose vertices are laid out as: a cap point,
    ``rings`` rings of ``around`` vertices each, then the other cap point."""
    A = around
    faces = [[0, 1 + (k + 1) % A, 1 + k] for k in range(A)]
    for i in range(rings - 1):
        for k in range(A):
            a = 1 + i * A + k
            b = 1 + i * A + (k + 1) % A
            faces += [[a, b, b + A], [a, b + A, a + A]]
    last = 1 + rings * A
    base = 1 + (rings - 1) * A
    faces += [[last, base + k, base + (k + 1) % A] for k in range(A)]
    return np.array(faces, dtype=np.int64)
