"""One frame's inputs: the animated values (:class:`MuscleInputs`, with the defaults of each in ``DEFAULT_*``) and
the PBD solver's control (:class:`PBDControl`: the muscles' values plus the kinematic targets from the bones)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

DEFAULT_ACTIVATION = 0.0
"""A muscle's activation where a frame gives none: at rest."""
DEFAULT_STIFFNESS = 0.5
"""A muscle's artist stiffness ``k`` where a frame gives none (10 Hz in XPBD mode)."""
DEFAULT_WIDTH_SCALE = 1.0
"""A muscle's width scale where a frame gives none."""
DEFAULT_ECCENTRICITY = 0.0
"""A muscle's eccentricity where a frame gives none to a solver (a round cross-section). A character mixes each
muscle's rest and active eccentricity by the frame's activation instead (``core.character.CharacterModel.control``),
where it knows their shapes."""


@dataclass(frozen=True)
class MuscleInputs:
    """One frame's animated inputs: the muscles' ``(M,)`` float64 each (or scalars: the same for every muscle), and
    the fats'. None keeps the default.

    activation: in [0, 1] (default ``DEFAULT_ACTIVATION``)
    stiffness: artist stiffness k in [0, 1] (default ``DEFAULT_STIFFNESS``)
    width_scale: > 0 (default ``DEFAULT_WIDTH_SCALE``)
    eccentricity: cross-section eccentricity in [0, 0.99] (a character's default: each muscle's rest and active
                  eccentricity mixed by the activation, paper §5.2; a solver's: ``DEFAULT_ECCENTRICITY``)
    fats: core.fat.dynamics.FatInputs, the fats' stiffness and damping (default: each fat's own)
    """

    activation: np.ndarray | None = None
    stiffness: np.ndarray | None = None
    width_scale: np.ndarray | None = None
    eccentricity: np.ndarray | None = None
    fats: object = None


@dataclass
class PBDControl:
    """One frame's inputs to :meth:`core.pbd.solver.PBDSolver.step`. ``None`` keeps the model's rest value (kinematic
    fields) or the default (animated values: ``DEFAULT_ACTIVATION``, ``DEFAULT_STIFFNESS``, ``DEFAULT_WIDTH_SCALE``,
    ``DEFAULT_ECCENTRICITY``).

    endpoints: (M, 2, 3) [m]     origin and insertion of each muscle (they follow their bones)
    normals: (M, 2, 3)           cross-section orientation at each end (rotates with the bones)
    activation, stiffness, width_scale, eccentricity: (M,)   animated muscle parameters (:class:`MuscleInputs`)
    capsules: (B, 2, 3) [m]      bone capsule segments
    grid_transforms: (T, 4, 4)   rest -> current rigid transforms of the bones carrying distance grids
    skin_field: callable(points (n, 3)) -> (values (n,), grads (n, 3)), compact convention (inside > skin_iso);
                particles are kept inside it (paper §6.3, muscle-skin). None: no skin constraint.
    skin_iso: float              iso-value of the skin field the particles are kept inside (default 0.5)
    """

    endpoints: np.ndarray | None = None
    normals: np.ndarray | None = None
    activation: np.ndarray | None = None
    stiffness: np.ndarray | None = None
    width_scale: np.ndarray | None = None
    eccentricity: np.ndarray | None = None
    capsules: np.ndarray | None = None
    grid_transforms: np.ndarray | None = None
    skin_field: Callable | None = None
    skin_iso: float = 0.5

    @classmethod
    def of(cls, inputs: MuscleInputs | None = None, **kinematics) -> "PBDControl":
        """A control with the animated values of ``inputs`` and the given kinematic fields (``endpoints``,
        ``normals``, ``capsules``, ``grid_transforms``, ``skin_field``, ``skin_iso``)."""
        inputs = inputs or MuscleInputs()
        return cls(activation=inputs.activation, stiffness=inputs.stiffness, width_scale=inputs.width_scale,
                   eccentricity=inputs.eccentricity, **kinematics)
