"""What each muscle collides with (paper §6.3): the per-muscle switches a host gives ``MuscledCharacter``.

:class:`MuscleCollisions` holds one value per muscle for each switch; :meth:`MuscleCollisions.resolved` checks them
against the muscle count and fills the defaults.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MuscleCollisions:
    """Per muscle ``(M,)`` sequences; None gives every muscle the default.

    bones: bool, default True          collides with the bone capsules and grids (slides around its bones)
    muscles: bool, default True        pushes against the other muscles of its contact set (in
                                       ``core.character.MuscledCharacter``: the muscles on the same skin bone)
    keep_inside: bool, default True    kept inside the skin's parts by the muscle-skin constraint
    overlap_groups: int, default -1    muscles with the same label (0 or more) never push each other, as the
                                       overlapping fibres of one fan-shaped muscle (paper §5.3, Fig. 7); -1: none
    bone_radius: float [m], default NaN  the bone capsules' radius as this muscle sees them; NaN: the automatic
                                       radius of each bone (``core.pbd.model.capsule_radius_from_skin``)
    bundles: int, default -1           rod muscles (Solver ROD) with the same label (0 or more) are the fibres of
                                       one broad muscle, a bundle: they push each other even in one overlap group,
                                       sliding along each other with no drag (the contact's Coulomb friction
                                       only); an axis muscle ignores it; -1: none
    """

    bones: object = None
    muscles: object = None
    keep_inside: object = None
    overlap_groups: object = None
    bone_radius: object = None
    bundles: object = None

    def resolved(self, count: int) -> "MuscleCollisions":
        """A copy with numpy arrays of length ``count`` (bool, bool, bool, int64, float64, int64), defaults filled in;
        ``ValueError`` with a plain sentence for a wrong length or value."""

        def column(value, name, default, dtype):
            if value is None:
                return np.full(count, default, dtype=dtype)
            arr = np.asarray(value).reshape(-1)
            if len(arr) != count:
                raise ValueError(f"the muscles' {name} setting needs one value per muscle ({count}), got "
                                 f"{len(arr)}.")
            return arr.astype(dtype)

        radius = column(self.bone_radius, "bone radius", np.nan, np.float64)
        if np.any(radius[np.isfinite(radius)] < 0.0) or np.any(np.isinf(radius)):
            raise ValueError("a muscle's bone radius must be 0 or more (NaN: automatic).")
        groups = column(self.overlap_groups, "overlap group", -1, np.int64)
        if np.any(groups < -1):
            raise ValueError("a muscle's overlap group must be 0 or more (-1: none).")
        bundles = column(self.bundles, "bundle", -1, np.int64)
        if np.any(bundles < -1):
            raise ValueError("a muscle's bundle must be 0 or more (-1: none).")
        return MuscleCollisions(bones=column(self.bones, "bone collisions", True, bool),
                                muscles=column(self.muscles, "muscle collisions", True, bool),
                                keep_inside=column(self.keep_inside, "keep inside", True, bool),
                                overlap_groups=groups, bone_radius=radius, bundles=bundles)
