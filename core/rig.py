"""A skinned mesh and its skeleton at rest: what a character is bound from."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rig:
    """Mesh and skeleton at rest. vertices (V, 3) [m], faces (F, 3), weights (V, B), heads/tails (B, 3) [m],
    parents (B,), names (B,)."""

    vertices: np.ndarray
    faces: np.ndarray
    weights: np.ndarray
    heads: np.ndarray
    tails: np.ndarray
    parents: np.ndarray
    names: tuple
