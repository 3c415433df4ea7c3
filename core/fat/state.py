"""A character's simulation state with fats: the muscles' PBD state and the fats' particles, cached per frame as one
object (``core/frame_cache.py``)."""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..pbd.state import PBDState
from .dynamics import FatState


@dataclass
class MusclesAndFat(PBDState):
    """A :class:`core.pbd.state.PBDState` snapshot (the muscles) with the fats' :class:`core.fat.dynamics.FatState`
    (``fat``)."""

    fat: FatState | None = None

    @classmethod
    def of(cls, muscles: PBDState, fat: FatState) -> "MusclesAndFat":
        return cls(**{f.name: getattr(muscles, f.name) for f in fields(PBDState)}, fat=fat)

    def copy(self) -> "MusclesAndFat":
        """:meth:`core.pbd.state.PBDState.copy` with a copy of the fats' state."""
        return MusclesAndFat.of(super().copy(), None if self.fat is None else self.fat.copy())

    def assign(self, other: PBDState) -> None:
        """:meth:`core.pbd.state.PBDState.assign`, and the fats' state when both have one."""
        super().assign(other)
        if self.fat is not None and getattr(other, "fat", None) is not None:
            self.fat.assign(other.fat)

    def snapshot(self) -> "MusclesAndFat":
        """:meth:`core.pbd.state.PBDState.snapshot` with a copy of the fats' state."""
        return MusclesAndFat.of(super().snapshot(), None if self.fat is None else self.fat.copy())

    @property
    def nbytes(self) -> int:
        return super().nbytes + (self.fat.nbytes if self.fat is not None else 0)
