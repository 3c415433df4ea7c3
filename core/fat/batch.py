"""Fats as the skin field reads them for one frame: each ellipsoid's centre, frame and semi-axes, where its bone
carries it, and the world box of its change's reach."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class FatBatch(NamedTuple):
    """``F`` fats placed for one frame.

    center: (F, 3) float64 [m]; frame: (F, 3, 3) float64 (columns: semi-axis directions); axes: (F, 3) float64 [m];
    carried: (F, 3) float64 [m] where each fat's bone carries its centre (the anchors' mean; None: ``center``, a fat
    at rest relative to its bone)
    """

    center: np.ndarray
    frame: np.ndarray
    axes: np.ndarray
    carried: np.ndarray | None = None

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

    @property
    def carried_center(self) -> np.ndarray:
        """``(F, 3)`` [m] where each fat's bone carries its centre (``carried``, or ``center`` if not given)."""
        return self.center if self.carried is None else self.carried

    def bounds(self, cut=None) -> np.ndarray:
        """``(F, 6)`` [m] (min xyz, max xyz): the box around each fat where its bone carries it that holds ``f^0 <
        cut`` (``cut (F,)`` [m]; None: the reach of its change, ``(REACH_FULL + REACH_FALL) R``, beyond which it moves
        nothing, ``kernels/fat.reach_weight``). ``f = (rho - 1) / |grad rho|`` and ``|grad rho| <= 1 / min(axes)``,
        so ``f < c`` lies inside the ellipsoid scaled by ``1 + c / min(axes)``."""
        from ...kernels.fat import REACH_FALL, REACH_FULL

        if cut is None:
            cut = (REACH_FULL + REACH_FALL) * self.support
        scale = 1.0 + np.maximum(np.asarray(cut, dtype=np.float64), 0.0) / self.support
        half = scale[:, None] * np.sqrt(np.einsum("fij,fj->fi", self.frame ** 2, self.axes ** 2))
        c = self.carried_center
        return np.concatenate([c - half, c + half], axis=1)
