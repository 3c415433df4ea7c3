"""Settings of the VIPER rod solver (``core/rod/``); what they mean is in ``kernels/rod.py``."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import validation
from ..pbd.settings import MUSCLE_DENSITY


@dataclass(frozen=True)
class RodSettings:
    """Solver settings.

    substeps: int            substeps per frame at ``reference_fps``, default 20 (the substep length sets the implicit
                             step's frequency error, design notes); other frame rates take as many as keep the
                             substep length (:meth:`substeps_for`)
    iterations: int          sweeps per substep (each a direct solve of stretch/shear and bend/twist, then the
                             scales' Gauss-Seidel, alternately forward and backward), default 1
    damping_ratio: float     damping of the rod's motion relative to its bones, as a fraction of critical damping of
                             its first mode ``f(k)`` (0: none, 1: critical; the axis solver's ``damping_ratio``),
                             default 0.25: a swing decays as ``exp(-zeta 2 pi f(k) t)`` whatever the substeps, the
                             frame rate and the vertex count (``kernels/rod.py`` ``velocity_keep``)
    reference_fps: float     the substep length is ``1 / (substeps reference_fps)``
    tendon_fraction: float   first and last fraction of the rest length that does not contract, default 10 %
    contraction: float       belly segments shorten by this fraction at activation 1 (VIPER §8.2), default 0.2
    volume_compliance: float [1/J]  compliance of the volume constraint, default 0 (incompressible)
    smoothing: float         scale smoothing stiffness as a multiple of the bending stiffness EI (eq. 13), default 1
    shear_ratio: float       stretch stiffness EA as a multiple of ``4 EI / r^2`` (a solid disc: 1), default 1
    take_up_slack: bool      where a muscle's ends come closer than at rest, its belly shortens to take up the slack
                             (``core.rod.solver.RodSolver.shortening``), default True
    touch_squeeze: float     share of a vertex's scale inverse mass a bone's touch uses: 1 VIPER's (the bone squeezes
                             the rod as much as it pushes it, and the volume it takes is lost where the rod lies on
                             its bone), default 0 (the bone pushes the rod aside, the volume holds)
    friction: float          eta at bone contacts, default 0.3
    density: float [kg/m^3]  default 1060 (paper §6.2)
    min_mass_fraction: float radii used for the inertias at least this fraction of the largest, default 0.5
    gravity: (3,) [m/s^2]    default off
    contact_friction: float  mu, Coulomb coefficient of a contact with another muscle (as the axis solver's, whose
                             value ``core.character.MuscledCharacter`` gives it), default 0
    contact_damping_ratio: float  drag on a slide over another muscle, a fraction of critical damping of the rod's
                             first mode (the axis solver's law, ``kernels/pbd.py`` ``contact_keep``), default 0.25;
                             none between the fibres of one bundle
    """

    substeps: int = 20
    iterations: int = 1
    damping_ratio: float = 0.25
    reference_fps: float = 24.0
    tendon_fraction: float = 0.1
    contraction: float = 0.2
    volume_compliance: float = 0.0
    smoothing: float = 1.0
    shear_ratio: float = 1.0
    take_up_slack: bool = True
    touch_squeeze: float = 0.0
    friction: float = 0.3
    density: float = MUSCLE_DENSITY
    min_mass_fraction: float = 0.5
    gravity: tuple = (0.0, 0.0, 0.0)
    contact_friction: float = 0.0
    contact_damping_ratio: float = 0.25

    def validated(self) -> "RodSettings":
        """A copy with every value checked (``ValueError`` with a plain sentence otherwise)."""
        for name in ("substeps", "iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or not 1 <= value <= 1000:
                raise ValueError(f"{name} must be a whole number from 1 to 1000, got {value!r}.")
        validation.unit_interval(self.damping_ratio, "damping ratio")
        validation.positive(self.reference_fps, "reference frame rate")
        fraction = validation.unit_interval(self.tendon_fraction, "tendon fraction")
        if fraction >= 0.5:
            raise ValueError(f"tendon fraction must be below 0.5 (tendons at both ends), got {fraction:g}.")
        contraction = validation.unit_interval(self.contraction, "contraction")
        if contraction >= 1.0:
            raise ValueError(f"contraction must be below 1 (a segment cannot shorten to nothing), got {contraction:g}.")
        for name in ("volume_compliance", "smoothing"):
            value = float(getattr(self, name))
            if not value >= 0.0 or value == float("inf"):
                raise ValueError(f"{name.replace('_', ' ')} must be 0 or more, got {value!r}.")
        validation.positive(self.shear_ratio, "shear ratio")
        validation.unit_interval(self.friction, "friction")
        validation.unit_interval(self.touch_squeeze, "touch squeeze")
        validation.positive(self.density, "muscle density")
        validation.unit_interval(self.min_mass_fraction, "minimum mass fraction")
        validation.vector3(self.gravity, "gravity")
        validation.unit_interval(self.contact_friction, "contact friction")
        value = float(self.contact_damping_ratio)
        if not value >= 0.0 or value == float("inf"):
            raise ValueError(f"contact damping ratio must be 0 or more, got {value!r}.")
        return replace(self, substeps=int(self.substeps), iterations=int(self.iterations))

    def substeps_for(self, dt: float) -> int:
        """Substeps of a frame of ``dt`` seconds: the fewest whose length is at most ``1 / (substeps reference_fps)``
        (the rod's convergence depends on the substep length, so it stays the same across frame rates)."""
        return max(1, int(np.ceil(dt * self.substeps * self.reference_fps - 1e-9)))
