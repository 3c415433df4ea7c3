"""Fats as the skin field reads them for one frame: each ellipsoid's centre, frame and semi-axes, and its world box."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class FatBatch(NamedTuple):
    """``F`` fats placed for one frame.

    center: (F, 3) float64 [m]; frame: (F, 3, 3) float64 (columns: semi-axis directions); axes: (F, 3) float64 [m]
    """

    center: np.ndarray
    frame: np.ndarray
    axes: np.ndarray

    @property
    def count(self) -> int:
        return len(self.center)

    @classmethod
    def empty(cls) -> "FatBatch":
        return cls(np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3)))

    @classmethod
    def of(cls, fats) -> "FatBatch":
        """The batch of :class:`core.fat.primitive.FatPrimitive` at rest."""
        fats = list(fats)
        if not fats:
            return cls.empty()
        return cls(np.array([f.center for f in fats]), np.array([f.frame for f in fats]),
                   np.array([f.axes for f in fats]))

    @property
    def support(self) -> np.ndarray:
        """``(F,)`` [m] each compact support's radius ``R``, the smallest semi-axis."""
        return self.axes.min(axis=1)

    def bounds(self, offsets) -> np.ndarray:
        """``(F, 6)`` [m] (min xyz, max xyz): beyond this box the skin sees nothing of a fat, ``K((f + o) / R) = 0``
        where ``f >= R - o``. ``f = (rho - 1) / |grad rho|`` and ``|grad rho| <= 1 / min(axes)``, so ``f < c`` lies
        inside the ellipsoid scaled by ``1 + c / min(axes)``."""
        cut = np.maximum(self.support - np.asarray(offsets, dtype=np.float64), 0.0)
        scale = 1.0 + cut / self.support
        half = scale[:, None] * np.sqrt(np.einsum("fij,fj->fi", self.frame ** 2, self.axes ** 2))
        return np.concatenate([self.center - half, self.center + half], axis=1)
