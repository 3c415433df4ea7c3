"""One frame's inputs: the muscles' animated values (:class:`MuscleInputs`, built by :func:`muscle_inputs`) and the
PBD solver's control (:class:`PBDControl`: those values plus the kinematic targets from the bones)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..muscle.primitive import eccentricity_at


@dataclass(frozen=True)
class MuscleInputs:
    """The muscles' animated inputs of one frame, ``(M,)`` float64 each; None keeps the solver's default.

    activation: in [0, 1] (default 0)
    stiffness: artist stiffness k in [0, 1] (default 0.5)
    width_scale: > 0 (default 1)
    eccentricity: cross-section eccentricity in [0, 0.99] (default 0)
    """

    activation: np.ndarray | None = None
    stiffness: np.ndarray | None = None
    width_scale: np.ndarray | None = None
    eccentricity: np.ndarray | None = None


def muscle_inputs(activation=None, stiffness=None, width_scale=None, eccentricity=None, *, eccentricity_rest=None,
                  eccentricity_active=None, default_activation=None) -> MuscleInputs:
    """This frame's :class:`MuscleInputs`.

    ``eccentricity`` is taken as given; without it and with ``eccentricity_rest`` and ``eccentricity_active``
    ``(M,)``, it is their mix ``e = (1-a) e_rest + a e_active`` (paper §5.2,
    ``core.muscle.primitive.eccentricity_at``) by the activation, or by ``default_activation (M,)`` where no
    activation is given. Arrays are ``(M,)`` or scalars.
    """
    if eccentricity is None and eccentricity_rest is not None and eccentricity_active is not None:
        a = default_activation if activation is None else activation
        a = np.asarray(0.0 if a is None else a, dtype=np.float64)
        eccentricity = eccentricity_at(np.asarray(eccentricity_rest, dtype=np.float64),
                                       np.asarray(eccentricity_active, dtype=np.float64), a)
    return MuscleInputs(activation, stiffness, width_scale, eccentricity)


@dataclass
class PBDControl:
    """One frame's inputs to :meth:`core.pbd.solver.PBDSolver.step`. ``None`` keeps the model's rest value (kinematic
    fields) or the solver's default (animated values: activation 0, stiffness 0.5, width scale 1, eccentricity 0).

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
