"""The rod state: what changes every frame (positions, scales, frames, their rates, last kinematic inputs)."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .model import RodModel


@dataclass
class RodState:
    """What changes every frame (``P`` vertices, ``F`` frames, ``M`` muscles, ``B`` capsules).

    x: (P, 3) float64 [m]             vertex positions
    v: (P, 3) float64 [m/s]           vertex velocities
    s: (P,) float64                   vertex scales (local radius = rest radius x scale; 1 at rest)
    sv: (P,) float64 [1/s]            scale rates
    q: (F, 4) float64                 frames (w, x, y, z): origin anchor, one per segment, insertion anchor
    qd: (F, 4) float64 [1/s]          frame rates
    endpoints: (M, 2, 3) float64 [m]  the last frame's endpoint targets
    normals: (M, 2, 3) float64        the last frame's endpoint normals
    capsules: (B, 2, 3) float64 [m]   the last frame's bone capsules
    """

    x: np.ndarray
    v: np.ndarray
    s: np.ndarray
    sv: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    endpoints: np.ndarray
    normals: np.ndarray
    capsules: np.ndarray

    @classmethod
    def at_rest(cls, model: RodModel) -> "RodState":
        """The rods at rest: rest axes and frames, scales 1, nothing moving."""
        starts = model.axis_start
        x = model.rest_points.copy()
        return cls(x=x, v=np.zeros_like(x), s=np.ones(model.vertex_count), sv=np.zeros(model.vertex_count),
                   q=model.rest_frames.copy(), qd=np.zeros((model.frame_count, 4)),
                   endpoints=np.stack([x[starts[:-1]], x[starts[1:] - 1]], 1),
                   normals=model.rest_normals.copy(), capsules=model.rest_capsules.copy())

    def copy(self) -> "RodState":
        return RodState(*(getattr(self, f.name).copy() for f in fields(self)))

    def assign(self, other: "RodState") -> None:
        """Overwrite this state with ``other`` without allocating."""
        for f in fields(self):
            np.copyto(getattr(self, f.name), getattr(other, f.name))
