"""How hard one frame's evaluation works: :class:`EvaluationQuality`, passed with each frame, and the two qualities a
host picks from, :data:`RENDER` (the bind's own settings) and :data:`PREVIEW` (lighter, for animating).

A quality changes only how many steps the per-frame solvers take, never what was bound: the PBD substeps and
Gauss-Seidel sweeps per substep (``core/pbd/solver.py``), the tracking's projection iterations, its final ARAP
sweeps and the limited correction's smoothing sweeps (``core/skin/deformer.py``). So switching quality between
frames needs no new bind, and a frame at :data:`RENDER` is exactly what it was before qualities existed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class EvaluationQuality:
    """The evaluation settings of one frame. ``None`` keeps the bound setting.

    name: str                          "render" or "preview" (hosts key their caches by it)
    substep_fraction: float            PBD substeps per frame as a fraction of ``PBDSettings.substeps`` (rounded up,
                                       at least 1), default 1
    pbd_iterations: int | None         Gauss-Seidel sweeps per substep (``PBDSettings.iterations``)
    tracking_iterations: int | None    projection iterations (``TrackingSettings.iterations``)
    arap_sweeps: int | None            most final ARAP sweeps (``TrackingSettings.final_sweeps``)
    correction_sweeps: int | None      smoothing sweeps of the limited correction
                                       (``TrackingSettings.correction_smoothing``)
    """

    name: str = "render"
    substep_fraction: float = 1.0
    pbd_iterations: int | None = None
    tracking_iterations: int | None = None
    arap_sweeps: int | None = None
    correction_sweeps: int | None = None

    def __post_init__(self):
        if not (isinstance(self.substep_fraction, (int, float)) and 0.0 < self.substep_fraction <= 1.0):
            raise ValueError(f"substep_fraction must be above 0 and at most 1, got {self.substep_fraction!r}.")
        for field in ("pbd_iterations", "tracking_iterations", "arap_sweeps", "correction_sweeps"):
            value = getattr(self, field)
            if value is not None and (isinstance(value, bool) or int(value) != value or value < (
                    0 if field in ("arap_sweeps", "correction_sweeps") else 1)):
                raise ValueError(f"{field} must be a whole number of at least "
                                 f"{0 if field in ('arap_sweeps', 'correction_sweeps') else 1}, got {value!r}.")

    def substeps(self, bound: int) -> int:
        """PBD substeps per frame for a model bound with ``bound`` substeps."""
        return max(1, math.ceil(bound * self.substep_fraction - 1e-9))

    def sweeps(self, bound: int) -> int:
        """Gauss-Seidel sweeps per substep for a model bound with ``bound``."""
        return bound if self.pbd_iterations is None else min(bound, int(self.pbd_iterations))

    @property
    def is_render(self) -> bool:
        """True when nothing is changed from the bound settings."""
        return (self.substep_fraction == 1.0 and self.pbd_iterations is None and self.tracking_iterations is None
                and self.arap_sweeps is None and self.correction_sweeps is None)


RENDER = EvaluationQuality()
"""The bound settings: renders, bakes and (by default) the viewport."""
PREVIEW = EvaluationQuality(name="preview", substep_fraction=1.0, pbd_iterations=2, tracking_iterations=2,
                            arap_sweeps=2, correction_sweeps=2)
"""All the PBD substeps with two sweeps each, two projection iterations, at most two final ARAP sweeps and two
smoothing sweeps of the correction (never more than the bound settings)."""
