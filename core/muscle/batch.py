"""Many muscles as flat arrays (CSR offsets), updated per frame by numba kernels, evaluated in one call.

A :class:`MuscleBatch` holds one ``kernels.fusiform.MuscleArrays`` (the layout documented there) and the per-muscle
inputs the kernels need besides it. :meth:`MuscleBatch.update` takes the per-frame state of all muscles (axis
points, endpoint normals, activation, eccentricity, width scale) and refreshes every derived array with two kernels
(``kernels/axis.py`` ``axis_geometry``, ``kernels/profile.py`` ``profile_scalars``), with no Python work per muscle
or per axis point.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from . import profile as _profile
from .. import validation
from ...kernels.constants import (SCALAR_COUNT, STATUS_INSERTION_NORMAL_PARALLEL, STATUS_NO_NORMAL, STATUS_NOT_FINITE,
                                  STATUS_ORIGIN_NORMAL_PARALLEL, STATUS_ZERO_LENGTH)

if TYPE_CHECKING:  # the kernel module imports numba; the batch imports it when it first builds arrays
    from ...kernels.fusiform import MuscleArrays

_STATUS_MESSAGES = {
    STATUS_ZERO_LENGTH: "muscle {name}: its axis has zero length (origin and insertion are at the same place).",
    STATUS_ORIGIN_NORMAL_PARALLEL: "muscle {name}: its origin normal is parallel to the muscle axis; give a direction "
                                   "across the muscle.",
    STATUS_INSERTION_NORMAL_PARALLEL: "muscle {name}: its insertion normal is parallel to the muscle axis; give a "
                                      "direction across the muscle.",
    STATUS_NO_NORMAL: "muscle {name}: its axis is folded so that no cross-section normal can be defined.",
    STATUS_NOT_FINITE: "muscle {name}: its axis contains NaN or infinite coordinates.",
}

_ARRAY_NAMES = ("axis_start", "axis_points", "axis_cumulative", "axis_tangent", "axis_normal", "seg_tangent",
                "seg_length", "seg_angle", "muscle_scalar", "muscle_exponent", "muscle_bounds", "axis_scale")
"""The fields of ``kernels.fusiform.MuscleArrays``, readable on a :class:`MuscleBatch` by the same names."""


@cache
def profile_tables():
    """The ``kernels.profile.ProfileTables`` of ``core/muscle/profile.py`` (``PHI_NORMALISER``, ``K_TABLE``,
    ``PROFILE_MAX_SAMPLES``, ``PROFILE_MAX_NEWTON``), built once."""
    from ...kernels.profile import ProfileTables

    return ProfileTables(_profile.PHI_NORMALISER, _profile.K_TABLE, int(_profile.PROFILE_MAX_SAMPLES),
                         int(_profile.PROFILE_MAX_NEWTON))


@dataclass
class MuscleBatch:
    """``M`` muscles with ``P`` axis points in all.

    arrays: ``kernels.fusiform.MuscleArrays``  what the kernels read (each array documented there); its fields
                                              are also attributes of the batch (``batch.axis_points``, ...)
    volume: (M,) float64 [m^3]               each muscle's volume (paper eq. 3)
    names: (M,) tuple of str                 muscle names for error messages
    length: (M,) float64 [m]                 axis arc lengths of the last update
    status: (M,) int64                       ``STATUS_*`` of the last geometry kernel (0 = OK)
    """

    arrays: MuscleArrays
    volume: np.ndarray
    names: tuple
    length: np.ndarray
    status: np.ndarray

    @classmethod
    def allocate(cls, point_counts, exponents, volume, names=None) -> "MuscleBatch":
        """Empty batch for muscles with ``point_counts[m]`` axis points (>= 2), fixed shapes and volumes.

        exponents: (M, 4) alpha0-1, beta0-1, alpha1-1, beta1-1; volume: (M,) [m^3]; names: (M,) or None.
        """
        from ...kernels.fusiform import MuscleArrays

        counts = np.asarray(point_counts, dtype=np.int64)
        if counts.ndim != 1 or np.any(counts < 2):
            raise ValueError("every muscle axis needs at least 2 points.")
        start = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        total, count = int(start[-1]), len(counts)
        names = tuple(names) if names is not None else tuple(str(i) for i in range(count))
        arrays = MuscleArrays(start, np.zeros((total, 3)), np.zeros(total), np.zeros((total, 3)),
                              np.zeros((total, 3)), np.zeros((total, 3)), np.zeros(total), np.zeros(total),
                              np.zeros((count, SCALAR_COUNT)),
                              np.ascontiguousarray(exponents, dtype=np.int64).reshape(count, 4), np.zeros((count, 6)),
                              np.ones(total))
        return cls(arrays, np.asarray(volume, dtype=np.float64).reshape(count).copy(), names, np.zeros(count),
                   np.zeros(count, dtype=np.int64))

    @property
    def muscle_count(self) -> int:
        return self.arrays.muscle_scalar.shape[0]

    def update(self, points, end_normals, activation, eccentricity, width_scale) -> None:
        """Refresh every derived array from the muscles' current state (two numba kernels, no Python loop).

        points: (P, 3) [m] all axis points; end_normals: (M, 2, 3) origin/insertion normals;
        activation, eccentricity, width_scale: (M,). Raises ``ValueError`` naming the muscle on bad geometry.
        """
        from ...kernels import profile as kp

        self._geometry(points, end_normals)
        kp.profile_scalars(self.arrays, np.asarray(activation, dtype=np.float64),
                           np.asarray(eccentricity, dtype=np.float64), np.asarray(width_scale, dtype=np.float64),
                           self.volume, self.length, profile_tables())

    def update_axes(self, points, end_normals, width_scale) -> None:
        """Refresh the axis geometry and the widths only (activation and eccentricity unchanged since the last
        :meth:`update`): the new lengths rescale ``w``, the support and the reach (volume law, paper eq. 3).
        points: (P, 3) [m]; end_normals: (M, 2, 3); width_scale: (M,). One numba kernel
        (``kernels/axis.py`` ``axis_update``); ``ValueError`` naming the muscle on a degenerate axis."""
        from ...kernels import axis as ka

        ka.axis_update(self.arrays, np.ascontiguousarray(points, dtype=np.float64),
                       np.ascontiguousarray(end_normals, dtype=np.float64),
                       np.ascontiguousarray(width_scale, dtype=np.float64), self.volume, self.length, self.status)
        self._raise_on_status()

    def _geometry(self, points, end_normals) -> None:
        """Copy the axis points in and rebuild arc lengths, tangents, control normals and bounds (one kernel);
        ``ValueError`` naming the muscle on a degenerate axis."""
        from ...kernels import axis as ka

        np.copyto(self.arrays.axis_points, points)
        ka.axis_geometry(self.arrays, np.ascontiguousarray(end_normals, dtype=np.float64), self.length,
                         self.status)
        self._raise_on_status()

    def _raise_on_status(self) -> None:
        """``ValueError`` naming the first muscle whose geometry kernel status is not OK."""
        if self.status.any():
            m = int(np.flatnonzero(self.status)[0])
            raise ValueError(_STATUS_MESSAGES[int(self.status[m])].format(name=self.names[m]))

    def kernel_arrays(self):
        """The arrays the kernels read, as one ``kernels.fusiform.MuscleArrays`` (:attr:`arrays`)."""
        return self.arrays


def _array_property(name: str) -> property:
    return property(lambda self: getattr(self.arrays, name), doc=f"``arrays.{name}`` (``kernels/fusiform.py``).")


for _name in _ARRAY_NAMES:
    setattr(MuscleBatch, _name, _array_property(_name))
del _name


def pack_muscles(muscles) -> MuscleBatch:
    """Pack a sequence of :class:`core.muscle.primitive.FusiformMuscle` (their current state) into a new batch."""
    muscles = list(muscles)
    batch = MuscleBatch.allocate(
        [m.particle_count + 2 for m in muscles],
        [(m.shape.alpha_rest - 1, m.shape.beta_rest - 1, m.shape.alpha_active - 1, m.shape.beta_active - 1)
         for m in muscles],
        [m.volume for m in muscles],
        names=[getattr(m, "name", str(i)) for i, m in enumerate(muscles)],
    )
    points = np.concatenate([m._axis for m in muscles]) if muscles else np.zeros((0, 3))
    normals = np.array([m.endpoint_normals() for m in muscles]).reshape(len(muscles), 2, 3)
    batch.update(points, normals, [m.activation for m in muscles],
                 [m.shape.eccentricity(m.activation) for m in muscles], [m.width_scale for m in muscles])
    return batch


def evaluate_muscles(muscles, points, compact: bool = False, reparameterise: bool = True, out=None):
    """Field value and gradient of every muscle at every point, numba kernel, parallel over points.

    muscles: sequence of FusiformMuscle, or a packed :class:`MuscleBatch`.
    points: (n, 3) [m]. compact: return ``K(f_M)`` (thesis eq. 3.1) instead of ``f_M``.
    out: optional ``(values (n, M), grads (n, M, 3))`` float64 arrays to write into (no allocation).
    Returns ``values (n, M)``, ``grads (n, M, 3)``.
    """
    from ...kernels import fusiform as kf

    batch = muscles if isinstance(muscles, MuscleBatch) else pack_muscles(muscles)
    pts = validation.points(points, "query points", min_count=0)
    n, count = len(pts), batch.muscle_count
    if out is None:
        values = np.empty((n, count))
        grads = np.empty((n, count, 3))
    else:
        values, grads = out
        if values.shape != (n, count) or grads.shape != (n, count, 3):
            raise ValueError(f"output arrays must have shapes {(n, count)} and {(n, count, 3)}.")
    if n and count:
        kf.muscle_field(pts, batch.kernel_arrays(), bool(compact), bool(reparameterise), values, grads)
    return values, grads
