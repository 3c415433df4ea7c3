"""Settings of the muscle axis dynamics (paper §6, defaults = the paper's; docs/formulas.md#axis-dynamics)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import validation

MUSCLE_DENSITY = 1060.0
"""rho_M = 1.06 g/cm^3 in kg/m^3 (paper §6.2)."""


@dataclass(frozen=True)
class PBDSettings:
    """Solver settings (paper defaults).

    substeps: int            substeps per frame (paper: a tenth of the frame interval), default 10
    iterations: int          constraint sweeps per substep, default 4 (the paper gives no count)
    xpbd: bool               XPBD (default) or the paper's plain PBD. XPBD: a muscle's stiffness ``k`` sets the
                             natural frequency of its belly's first mode, ``f(k)`` (kernels/pbd.py,
                             ``stiffness_frequency``), so a muscle swings the same whatever its particle count,
                             substeps and frame rate. PBD: ``k`` is the fraction of a constraint's error closed per
                             sweep (paper §6.2), which depends on all three (paper §8.6)
    damping: float           PBD: velocity factor mu per substep (paper: 0.9)
    damping_ratio: float     XPBD: damping of the axis's motion relative to its bones, as a fraction of critical
                             damping of its first mode (0: none, 1: critical), default 0.25
    tendon_fraction: float   first and last fraction of the rest length that is tendon (paper: 10 %)
    tendon_stiffness: float  stiffness of tendon constraints in [0, 1] (paper: ~0.9)
    belly_rest_fraction: float  belly constraints' rest length as a fraction of their initial length (paper: 2 %)
    friction: float          PBD: eta, fraction of the tangential displacement removed at a contact per substep
                             (thesis §5.3.3), default 0.3
    contact_friction: float  XPBD: mu, Coulomb friction coefficient of a contact: a slide over a bone or another
                             muscle is stopped up to mu times the contact's push, default 0 (muscles slide on
                             their fascia; 0.3 carries a muscle resting on a bone with it)
    contact_damping_ratio: float  XPBD: viscous drag on a slide over a contact, as a fraction of critical damping
                             of the muscle's first mode (so a tense muscle's slide stops within a swing or two, a
                             loose one's slowly), default 0.25
    density: float [kg/m^3]  muscle density (paper: 1.06 g/cm^3)
    min_mass_fraction: float inner particle masses follow the rest profile Phi (paper §6.2), each at least this
                             fraction of the heaviest (0: the paper's plain proportion), default 0.5
    gravity: (3,) [m/s^2]    default off (the paper's muscles have none)
    skin_every_substep: bool the muscle-skin keep-inside constraint after every substep, or (default) once after the
                             frame's last substep
    skin_max_step: float [m] longest move of one keep-inside correction (the Newton step along the skin field's
                             gradient is cut to this length), default 5 mm
    """

    substeps: int = 10
    iterations: int = 4
    xpbd: bool = True
    damping: float = 0.9
    damping_ratio: float = 0.25
    tendon_fraction: float = 0.1
    tendon_stiffness: float = 0.9
    belly_rest_fraction: float = 0.02
    friction: float = 0.3
    contact_friction: float = 0.0
    contact_damping_ratio: float = 0.25
    density: float = MUSCLE_DENSITY
    min_mass_fraction: float = 0.5
    gravity: tuple = (0.0, 0.0, 0.0)
    skin_every_substep: bool = False
    skin_max_step: float = 0.005

    def validated(self) -> "PBDSettings":
        """A copy with every value checked (``ValueError`` with a plain sentence otherwise)."""
        for name in ("substeps", "iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or not 1 <= value <= 1000:
                raise ValueError(f"{name} must be a whole number from 1 to 1000, got {value!r}.")
        validation.unit_interval(self.damping, "damping")
        validation.unit_interval(self.damping_ratio, "damping ratio")
        validation.unit_interval(self.tendon_stiffness, "tendon stiffness")
        validation.unit_interval(self.friction, "friction")
        validation.unit_interval(self.contact_friction, "contact friction")
        validation.unit_interval(self.contact_damping_ratio, "contact damping ratio")
        fraction = validation.unit_interval(self.tendon_fraction, "tendon fraction")
        if fraction >= 0.5:
            raise ValueError(f"tendon fraction must be below 0.5 (tendons at both ends), got {fraction:g}.")
        validation.unit_interval(self.belly_rest_fraction, "belly rest fraction")
        validation.positive(self.density, "muscle density")
        validation.positive(self.skin_max_step, "skin max step")
        validation.unit_interval(self.min_mass_fraction, "minimum mass fraction")
        validation.vector3(self.gravity, "gravity")
        return replace(self, substeps=int(self.substeps), iterations=int(self.iterations))
