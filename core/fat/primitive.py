"""One fat primitive at rest: an ellipsoid (thesis ch. 6, Fig. 6.13) with its dynamic settings."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import validation

FAT_DENSITY = 1060.0
"""[kg/m^3] the fat's density, the muscles' (``core/pbd/settings.MUSCLE_DENSITY``): its particle's mass is this times
the ellipsoid's volume."""


@dataclass
class FatPrimitive:
    """An ellipsoid of soft tissue at rest, in the rig's rest space.

    center: (3,) [m] the ellipsoid's centre, where its particle sits at rest.
    axes: (3,) [m] the semi-axes, each > 0.
    frame: (3, 3) the semi-axes' unit directions as columns (a rotation; default the rig's axes).
    stiffness: 0..1, how fast it follows its bone: a natural frequency (``core/fat/dynamics.stiffness_frequency``,
        0.5 Hz at 0 to 8 Hz at 1; default 0.3, 1.15 Hz).
    damping: 0..1, the damping ratio of its springs (1: critically damped; default 0.1).
    anchor_distance: [m] the anchors' distance from the centre (0, the default: the mean semi-axis).
    name: for messages.
    """

    center: np.ndarray
    axes: np.ndarray
    frame: np.ndarray = field(default_factory=lambda: np.eye(3))
    stiffness: float = 0.3
    damping: float = 0.1
    anchor_distance: float = 0.0
    name: str = "fat"

    def __post_init__(self):
        self.center = validation.vector3(self.center, f"fat {self.name}: centre")
        axes = np.asarray(self.axes, dtype=np.float64).reshape(-1)
        if axes.shape != (3,) or not np.isfinite(axes).all() or not (axes > 0).all():
            raise ValueError(f"fat {self.name}: its three semi-axes must be finite and greater than 0, "
                             f"got {np.array2string(axes, precision=4)}.")
        self.axes = axes
        frame = np.asarray(self.frame, dtype=np.float64)
        if frame.shape != (3, 3) or not np.isfinite(frame).all() \
                or not np.allclose(frame.T @ frame, np.eye(3), atol=1e-6) or np.linalg.det(frame) < 0:
            raise ValueError(f"fat {self.name}: its frame must be a rotation (three orthonormal columns).")
        self.frame = frame
        self.stiffness = validation.unit_interval(self.stiffness, f"fat {self.name}: stiffness")
        self.damping = validation.unit_interval(self.damping, f"fat {self.name}: damping")
        d = float(self.anchor_distance)
        if not math.isfinite(d) or d < 0:
            raise ValueError(f"fat {self.name}: anchor distance must be 0 (automatic) or more, got {d:g}.")

    @property
    def volume(self) -> float:
        """The ellipsoid's volume ``4/3 pi a b c`` [m^3]; it never changes (the ellipsoid moves rigidly)."""
        return 4.0 / 3.0 * math.pi * float(np.prod(self.axes))

    @property
    def mass(self) -> float:
        """Its particle's mass [kg]: ``FAT_DENSITY`` times the volume."""
        return FAT_DENSITY * self.volume

    @property
    def support(self) -> float:
        """The compact support's radius ``R`` [m], the smallest semi-axis (``core/fat/field.py``)."""
        return float(self.axes.min())

    def field(self, points):
        """Raw field ``f (n,)`` [m] (0 on the surface, negative inside) and gradient ``(n, 3)`` at rest, at ``points
        (n, 3)`` [m], by the numba kernel."""
        from ...kernels.fat import fat_field

        pts = validation.points(points, "query points", min_count=0)
        values, grads = np.empty(len(pts)), np.empty((len(pts), 3))
        fat_field(pts, self.center, self.frame, self.axes, values, grads)
        return values, grads
