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
