"""Many muscles as flat arrays (CSR offsets), updated per frame by numba kernels, evaluated in one call.

A :class:`MuscleBatch` holds the layout documented in ``kernels/fusiform.py``. :meth:`MuscleBatch.update` takes the
per-frame state of all muscles (axis points, endpoint normals, activation, eccentricity, width scale) and refreshes
every derived array with two kernels (``kernels/axis.py``, ``kernels/profile.py``): no Python work per muscle or per
axis point, so the PBD system and the skin can refresh 50 muscles every substep.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import profile as _profile
from .. import validation
from ...kernels.constants import SCALAR_COUNT

_STATUS_MESSAGES = {
    1: "muscle {name}: its axis has zero length (origin and insertion are at the same place).",
    2: "muscle {name}: its origin normal is parallel to the muscle axis; give a direction across the muscle.",
    3: "muscle {name}: its insertion normal is parallel to the muscle axis; give a direction across the muscle.",
    4: "muscle {name}: its axis is folded so that no cross-section normal can be defined.",
    5: "muscle {name}: its axis contains NaN or infinite coordinates.",
}


@dataclass
class MuscleBatch:
    """Flat arrays for ``M`` muscles with ``P`` axis points in all (see ``kernels/fusiform.py`` for each array).

    Besides the kernel arrays it keeps the per-muscle inputs of the last update:
    exponents (M, 4) int64, volume (M,) [m^3], names (M,) for messages.
    """

    axis_start: np.ndarray
    axis_points: np.ndarray
    axis_cumulative: np.ndarray
    axis_tangent: np.ndarray
    axis_normal: np.ndarray
    seg_tangent: np.ndarray
    seg_length: np.ndarray
    seg_angle: np.ndarray
    muscle_scalar: np.ndarray
    muscle_exponent: np.ndarray
    muscle_bounds: np.ndarray
    volume: np.ndarray
    names: tuple
    _length: np.ndarray
    _status: np.ndarray

    @classmethod
    def allocate(cls, point_counts, exponents, volume, names=None) -> "MuscleBatch":
        """Empty batch for muscles with ``point_counts[m]`` axis points (>= 2), fixed shapes and volumes."""
        counts = np.asarray(point_counts, dtype=np.int64)
        if counts.ndim != 1 or np.any(counts < 2):
            raise ValueError("every muscle axis needs at least 2 points.")
        start = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        total, count = int(start[-1]), len(counts)
        names = tuple(names) if names is not None else tuple(str(i) for i in range(count))
        return cls(start, np.zeros((total, 3)), np.zeros(total), np.zeros((total, 3)), np.zeros((total, 3)),
                   np.zeros((total, 3)), np.zeros(total), np.zeros(total), np.zeros((count, SCALAR_COUNT)),
                   np.ascontiguousarray(exponents, dtype=np.int64).reshape(count, 4),
                   np.zeros((count, 6)), np.asarray(volume, dtype=np.float64).reshape(count).copy(), names,
                   np.zeros(count), np.zeros(count, dtype=np.int64))

    @property
    def muscle_count(self) -> int:
        return self.muscle_scalar.shape[0]

    @property
    def lengths(self) -> np.ndarray:
        """``(M,)`` current axis arc lengths [m]."""
        return self._length

    def update(self, points, end_normals, activation, eccentricity, width_scale) -> None:
        """Refresh every derived array from the muscles' current state (two numba kernels, no Python loop).

        points: (P, 3) [m] all axis points; end_normals: (M, 2, 3) origin/insertion normals;
        activation, eccentricity, width_scale: (M,). Raises ``ValueError`` naming the muscle on bad geometry.
        """
        from ...kernels import profile as kp

        self._geometry(points, end_normals)
        kp.profile_scalars(self.muscle_exponent, np.asarray(activation, dtype=np.float64),
                           np.asarray(eccentricity, dtype=np.float64), self.volume,
                           np.asarray(width_scale, dtype=np.float64), self._length, _profile.PHI_NORMALISER,
                           _profile.K_TABLE, _profile.PROFILE_MAX_SAMPLES,
                           _profile.PROFILE_MAX_NEWTON, self.muscle_scalar)

    def update_axes(self, points, end_normals, width_scale) -> None:
        """Refresh the axis geometry and the widths only (activation and eccentricity unchanged since the last
        :meth:`update`): after a PBD step, the new lengths rescale ``w``, the support and the reach (volume law).
        One numba kernel (``kernels/axis.axis_update``); ``ValueError`` naming the muscle on a degenerate axis."""
        from ...kernels import axis as ka

        ka.axis_update(self.axis_start, np.ascontiguousarray(points, dtype=np.float64),
                       np.ascontiguousarray(end_normals, dtype=np.float64),
                       np.ascontiguousarray(width_scale, dtype=np.float64), self.volume, self.axis_points,
                       self.axis_cumulative, self.axis_tangent, self.axis_normal, self.seg_tangent, self.seg_length,
                       self.seg_angle, self.muscle_bounds, self.muscle_scalar, self._length, self._status)
        self._raise_on_status()

    def _geometry(self, points, end_normals) -> None:
        """Copy the axis points in and rebuild arc lengths, tangents, control normals and bounds (one kernel);
        ``ValueError`` naming the muscle on a degenerate axis."""
        from ...kernels import axis as ka

        np.copyto(self.axis_points, points)
        ka.axis_geometry(self.axis_start, self.axis_points, np.ascontiguousarray(end_normals, dtype=np.float64),
                         self.axis_cumulative, self.axis_tangent, self.axis_normal, self.seg_tangent,
                         self.seg_length, self.seg_angle, self.muscle_bounds, self._length, self._status)
        self._raise_on_status()

    def _raise_on_status(self) -> None:
        """``ValueError`` naming the first muscle whose geometry kernel status is not OK."""
        if self._status.any():
            m = int(np.flatnonzero(self._status)[0])
            raise ValueError(_STATUS_MESSAGES[int(self._status[m])].format(name=self.names[m]))

    def kernel_arrays(self):
        """The arrays the kernels read, as one ``kernels.fusiform.MuscleArrays``."""
        from ...kernels.fusiform import MuscleArrays

        return MuscleArrays(self.axis_start, self.axis_points, self.axis_cumulative, self.axis_tangent,
                            self.axis_normal, self.seg_tangent, self.seg_length, self.seg_angle, self.muscle_scalar,
                            self.muscle_exponent, self.muscle_bounds)


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
