"""The fusiform muscle primitive (paper §5): shape parameters, axis state and field evaluation.

A :class:`FusiformMuscle` holds what an artist sets (shape presets, activation, width scale, orientation through the
endpoint normals) and the current axis (origin, inner particles, insertion). Its field is evaluated by the numba
kernel (:meth:`FusiformMuscle.field`) or by the plain-numpy reference (:meth:`FusiformMuscle.field_reference`).

Units: metres for positions and widths, m^3 for volumes. Blender's default unit is the metre, so values come
straight from the scene.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import profile as _profile
from .. import validation
from .axis import AxisGeometry, axis_geometry, check_axis, perpendicular_normal, straight_axis, vertex_tangents
from .field import MuscleProfile

DEFAULT_PARTICLES = 30
"""Inner axis points per muscle in the paper's scenes (§8)."""


@dataclass(frozen=True)
class MuscleShape:
    """Rest and active shape of a muscle (paper §5.2, defaults = the paper's biceps).

    alpha_rest, beta_rest: int in 1..9        beta profile at activation 0
    alpha_active, beta_active: int in 1..9    beta profile at activation 1
    eccentricity_rest, eccentricity_active    cross-section eccentricity in [0, 0.99], linearly interpolated
    """

    alpha_rest: int = 3
    beta_rest: int = 3
    alpha_active: int = 4
    beta_active: int = 7
    eccentricity_rest: float = 0.0
    eccentricity_active: float = 0.0

    def validated(self) -> "MuscleShape":
        """A copy with every value checked (``ValueError`` with a plain sentence otherwise)."""
        return MuscleShape(
            validation.shape_exponent(self.alpha_rest, "alpha_rest"),
            validation.shape_exponent(self.beta_rest, "beta_rest"),
            validation.shape_exponent(self.alpha_active, "alpha_active"),
            validation.shape_exponent(self.beta_active, "beta_active"),
            validation.eccentricity(self.eccentricity_rest, "eccentricity_rest"),
            validation.eccentricity(self.eccentricity_active, "eccentricity_active"),
        )

    def eccentricity(self, activation: float) -> float:
        """The cross-section eccentricity at ``activation`` (:func:`eccentricity_at`)."""
        return eccentricity_at(self.eccentricity_rest, self.eccentricity_active, activation)


def eccentricity_at(eccentricity_rest, eccentricity_active, activation):
    """``e = (1-a) e0 + a e1`` (paper §5.2: eccentricities are interpolated linearly); scalars or ``(M,)`` arrays."""
    return (1.0 - activation) * eccentricity_rest + activation * eccentricity_active


class FusiformMuscle:
    """One fusiform muscle: a constant volume swept along an axis polyline (paper §5).

    Parameters
    ----------
    origin, insertion : (3,) [m]   endpoints ``m0``, ``m1`` at rest.
    width : float [m]              rest width ``w0`` at the rest length; the volume is ``V = pi w0^2 l0`` (eq. 3).
    volume : float [m^3]           alternatively, the volume itself. Give exactly one of ``width`` and ``volume``.
    shape : MuscleShape            rest/active profiles and eccentricities.
    particles : int                inner axis points (PBD particles), default 30.
    origin_normal, insertion_normal : (3,)   cross-section orientation at each end (the ellipse's long axis);
                                   ``None`` picks a direction across the muscle.
    activation : float in [0, 1]   0 = rest shape, 1 = active shape.
    width_scale : float > 0        multiplies ``w`` after the volume law (exaggeration, paper Fig. 14).
    name : str                     used in error messages.
    """

    def __init__(self, origin, insertion, *, width=None, volume=None, shape: MuscleShape | None = None,
                 particles: int = DEFAULT_PARTICLES, origin_normal=None, insertion_normal=None,
                 activation: float = 0.0, width_scale: float = 1.0, name: str = "muscle"):
        self.name = str(name)
        self._axis = straight_axis(origin, insertion, particles)
        self.rest_length = float(np.linalg.norm(self._axis[-1] - self._axis[0]))
        if (width is None) == (volume is None):
            raise ValueError("give the muscle either its rest width or its volume (exactly one of the two).")
        if volume is None:
            self.volume = _profile.volume_from_width(width, self.rest_length)
        else:
            self.volume = validation.positive(volume, "muscle volume")
        self.shape = (shape or MuscleShape()).validated()
        self.origin_normal = None if origin_normal is None else validation.vector3(origin_normal, "origin normal")
        self.insertion_normal = None if insertion_normal is None else \
            validation.vector3(insertion_normal, "insertion normal")
        self.activation = activation
        self.width_scale = width_scale
        self.geometry()  # validates the normals against the axis now, not at the first evaluation

    # --- animated parameters -------------------------------------------------------------------------------
    @property
    def activation(self) -> float:
        """Activation ``a`` in [0, 1] (paper §5.2)."""
        return self._activation

    @activation.setter
    def activation(self, value) -> None:
        self._activation = validation.unit_interval(value, "activation")

    @property
    def width_scale(self) -> float:
        """Width exaggeration factor on top of the volume law (1 keeps the volume)."""
        return self._width_scale

    @width_scale.setter
    def width_scale(self, value) -> None:
        self._width_scale = validation.positive(value, "width scale")

    def set_shape(self, **changes) -> None:
        """Change shape parameters by name (``alpha_rest=...``), validated."""
        self.shape = replace(self.shape, **changes).validated()

    # --- axis -----------------------------------------------------------------------------------------------
    @property
    def axis(self) -> np.ndarray:
        """``(particles + 2, 3)`` current axis points [m] (a copy)."""
        return self._axis.copy()

    @property
    def particle_count(self) -> int:
        return len(self._axis) - 2

    def set_axis(self, points) -> None:
        """Replace the axis points (same count), e.g. after a PBD step or to bend the muscle."""
        p = check_axis(points)
        if p.shape != self._axis.shape:
            raise ValueError(f"the axis must keep {len(self._axis)} points, got {len(p)}.")
        self._axis = p

    def set_normals(self, origin_normal=None, insertion_normal=None) -> None:
        """Set the endpoint normals (cross-section orientation); ``None`` keeps the automatic choice."""
        self.origin_normal = None if origin_normal is None else validation.vector3(origin_normal, "origin normal")
        self.insertion_normal = None if insertion_normal is None else \
            validation.vector3(insertion_normal, "insertion normal")
        self.geometry()

    def endpoint_normals(self) -> np.ndarray:
        """``(2, 3)`` origin and insertion normals as given, or the automatic choice (before orthogonalisation)."""
        if self.origin_normal is not None:
            n0 = self.origin_normal
        else:
            n0 = perpendicular_normal(vertex_tangents(self._axis)[0])
        n1 = self.insertion_normal if self.insertion_normal is not None else n0
        return np.stack([n0, n1])

    def geometry(self) -> AxisGeometry:
        """Arc lengths, tangents and control normals of the current axis (paper §5.1)."""
        return axis_geometry(self._axis, self.origin_normal, self.insertion_normal)

    @property
    def length(self) -> float:
        """Current arc length ``l`` of the axis [m]."""
        return float(np.linalg.norm(np.diff(self._axis, axis=0), axis=1).sum())

    # --- shape ----------------------------------------------------------------------------------------------
    @property
    def width(self) -> float:
        """Current width ``w = width_scale sqrt(V / (pi l))`` (paper eq. 3) [m]."""
        return _profile.width_from_volume(self.volume, self.length, self.width_scale)

    def profile(self, length: float | None = None) -> MuscleProfile:
        """Scalar parameters of the current frame in kernel form (:class:`core.muscle.field.MuscleProfile`)."""
        sh, a = self.shape, self._activation
        c0, c1 = _profile.profile_coefficients(sh.alpha_rest, sh.beta_rest, sh.alpha_active, sh.beta_active, a)
        u, v = _profile.ellipse_axes(sh.eccentricity(a))
        w = _profile.width_from_volume(self.volume, self.length if length is None else length, self.width_scale)
        phi_max = _profile.profile_max(sh.alpha_rest, sh.beta_rest, sh.alpha_active, sh.beta_active, a)
        return MuscleProfile(
            (sh.alpha_rest - 1, sh.beta_rest - 1, sh.alpha_active - 1, sh.beta_active - 1),
            c0, c1, w, u, v, w * u * phi_max,
        )

    def profile_at(self, s) -> np.ndarray:
        """``Phi_a(s)`` for parameters ``s`` in [0, 1]."""
        sh = self.shape
        return _profile.activation_profile(sh.alpha_rest, sh.beta_rest, sh.alpha_active, sh.beta_active,
                                           self._activation, s)

    # --- evaluation -----------------------------------------------------------------------------------------
    def field(self, points, compact: bool = False, reparameterise: bool = True):
        """``f_M`` (or ``K(f_M)`` with ``compact=True``) and gradient at ``points (n, 3)`` [m], numba kernel.

        Returns ``values (n,)`` and ``grads (n, 3)``; ``f_M`` is 0 on the surface, negative inside (paper eq. 1);
        ``K(f_M)`` is 0.5 on the surface, 1 deep inside, 0 beyond the support (thesis eq. 3.1, §6.1).
        """
        from .batch import evaluate_muscles
        values, grads = evaluate_muscles([self], points, compact=compact, reparameterise=reparameterise)
        return values[:, 0], grads[:, 0]

    def field_reference(self, points, compact: bool = False, reparameterise: bool = True):
        """The same as :meth:`field`, computed by the plain-numpy reference (slow; for tests)."""
        from . import field as fusiform
        pts = validation.points(points, "query points", min_count=0)
        values, grads, _ = fusiform.evaluate(self.geometry(), self.profile(), pts, compact, reparameterise)
        return values, grads
