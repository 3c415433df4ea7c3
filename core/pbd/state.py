"""The PBD state: what changes every frame (particle positions and velocities, the last frame's kinematic inputs
and the muscles' field batch after the frame)."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ..muscle.batch import MuscleBatch

_BATCH_SHARED = frozenset({"axis_start", "muscle_exponent"})
"""Kernel arrays of a MuscleBatch fixed by the model: state copies share them (and the volumes and names)."""


def _batch_arrays(batch: MuscleBatch) -> list:
    """The batch's per-frame arrays: its kernel arrays but the fixed layout and exponents, its lengths, statuses."""
    arrays = batch.arrays
    return [getattr(arrays, name) for name in arrays._fields if name not in _BATCH_SHARED] + [batch.length,
                                                                                                batch.status]


def _copy_batch(batch: MuscleBatch) -> MuscleBatch:
    arrays = batch.arrays
    return replace(batch, arrays=arrays._replace(**{name: getattr(arrays, name).copy() for name in arrays._fields
                                                    if name not in _BATCH_SHARED}),
                   length=batch.length.copy(), status=batch.status.copy())


@dataclass
class PBDState:
    """What changes every frame (``P`` particles, ``M`` muscles, ``B`` capsules, ``G`` grids).

    x: (P, 3) float64 [m]               particle positions
    v: (P, 3) float64 [m/s]             particle velocities
    endpoints: (M, 2, 3) float64 [m]    the last frame's endpoint targets (interpolated from within the next frame)
    normals: (M, 2, 3) float64          the last frame's endpoint normals
    capsules: (B, 2, 3) float64 [m]     the last frame's bone capsules
    grid_inverse: (G, 3, 4) float64     the last frame's world -> bone-grid rigid transforms
    muscles: MuscleBatch or None        the muscles' axes, control normals and widths from ``x`` (paper §6: updated
                                        after the solve), what the skin reads; None for a state without muscles
    rod: RodState or None               the state of the muscles simulated as VIPER rods (``core/rod/muscles.py``;
                                        their particles in ``x`` and ``v`` mirror its positions); None: no rods
    """

    x: np.ndarray
    v: np.ndarray
    endpoints: np.ndarray
    normals: np.ndarray
    capsules: np.ndarray
    grid_inverse: np.ndarray
    muscles: MuscleBatch | None = None
    rod: object = None

    @classmethod
    def empty(cls) -> "PBDState":
        """The state of a character without muscles: every array has length 0, no batch."""
        return cls(x=np.zeros((0, 3)), v=np.zeros((0, 3)), endpoints=np.zeros((0, 2, 3)),
                   normals=np.zeros((0, 2, 3)), capsules=np.zeros((0, 2, 3)), grid_inverse=np.zeros((0, 3, 4)))

    @property
    def nbytes(self) -> int:
        """Bytes a snapshot of this state holds of its own (the batch's shared layout not counted)."""
        own = [self.x, self.v, self.endpoints, self.normals, self.capsules, self.grid_inverse]
        if self.muscles is not None:
            own += _batch_arrays(self.muscles)
        if self.rod is not None:
            own += [getattr(self.rod, f.name) for f in fields(self.rod)]
        return sum(a.nbytes for a in own)

    def copy(self) -> "PBDState":
        """A snapshot that a host can keep per frame and :meth:`assign` later (the batch's per-frame arrays are
        copied, its fixed layout shared)."""
        batch = None if self.muscles is None else _copy_batch(self.muscles)
        return PBDState(self.x.copy(), self.v.copy(), self.endpoints.copy(), self.normals.copy(),
                        self.capsules.copy(), self.grid_inverse.copy(), batch, self._rod_copy())

    def snapshot(self) -> "PBDState":
        """A copy without the muscle batch, to resume from: a step rebuilds the batch from ``x`` and its inputs, so
        a host keeping a state per frame keeps only the particles and the last kinematic inputs."""
        return PBDState(self.x.copy(), self.v.copy(), self.endpoints.copy(), self.normals.copy(),
                        self.capsules.copy(), self.grid_inverse.copy(), rod=self._rod_copy())

    def _rod_copy(self):
        return None if self.rod is None else self.rod.copy()

    def assign(self, other: "PBDState") -> None:
        """Overwrite this state with ``other`` (restore a snapshot without allocating); the muscle batch too when
        both have one (a :meth:`snapshot` has none: the next step rebuilds it), and the rods' state."""
        for name in ("x", "v", "endpoints", "normals", "capsules", "grid_inverse"):
            np.copyto(getattr(self, name), getattr(other, name))
        if self.muscles is not None and other.muscles is not None:
            for mine, theirs in zip(_batch_arrays(self.muscles), _batch_arrays(other.muscles)):
                np.copyto(mine, theirs)
        if self.rod is not None and other.rod is not None:
            self.rod.assign(other.rod)
