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


COINCIDENT_SHARE = 0.1
"""Two muscles run through each other (:func:`coincident_overlaps`) where their axes, sampled along their length,
lie closer than this share of the sum of their widths at the median sample."""
COINCIDENT_SAMPLES = 17
"""Points along each axis at which :func:`coincident_overlaps` measures the distance to the other axis."""


def coincident_overlaps(axes, widths, contact_sets, overlap_groups) -> np.ndarray:
    """``(M,)`` int64 overlap groups in which muscles of one contact set that run through each other at rest never
    push each other: ``overlap_groups (M,)`` (-1: none, as :class:`MuscleCollisions`) with each such pair joined
    into one group (a new label above the given ones where neither has one).

    ``axes``: per muscle its ``(n, 3)`` [m] rest axis polyline; ``widths (M,)`` [m] the muscles' widths ``w``;
    ``contact_sets (M,)``: the label of the muscles each may push (None or -1: none). A pair runs through each
    other when the median distance from ``COINCIDENT_SAMPLES`` points along one axis to the other axis is below
    ``COINCIDENT_SHARE`` times the sum of their widths, both ways: placed so (two presets on the same bones, a
    muscle drawn through its neighbour) their contacts have no side to push to, and the axes would never come to
    rest."""
    groups = np.asarray(overlap_groups, dtype=np.int64).reshape(-1).copy()
    M = len(groups)
    sets = np.array([-1 if c is None else int(c) for c in contact_sets], dtype=np.int64)
    if len(axes) != M or len(widths) != M or len(sets) != M:
        raise ValueError(f"coincident_overlaps needs an axis, a width and a contact set per muscle ({M}).")
    samples = [_polyline_samples(np.asarray(a, dtype=np.float64), COINCIDENT_SAMPLES) for a in axes]
    parent = list(range(M))

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a in range(M):
        for b in range(a + 1, M):
            if groups[a] >= 0 and groups[a] == groups[b]:  # one group already
                parent[root(a)] = root(b)
            elif sets[a] >= 0 and sets[a] == sets[b]:
                reach = COINCIDENT_SHARE * (float(widths[a]) + float(widths[b]))
                if np.median(_distance_to_polyline(samples[a], axes[b])) < reach \
                        and np.median(_distance_to_polyline(samples[b], axes[a])) < reach:
                    parent[root(a)] = root(b)
    roots = np.array([root(k) for k in range(M)], dtype=np.int64)
    out = groups.copy()
    following = int(groups.max()) + 1 if M else 0
    for r in np.unique(roots):
        members = np.flatnonzero(roots == r)
        if len(members) < 2:
            continue
        given = groups[members][groups[members] >= 0]
        if len(given):
            out[members] = given.min()
        else:
            out[members] = following
            following += 1
    return out


def _polyline_samples(points, count: int) -> np.ndarray:
    """``(count, 3)`` points evenly spaced by arc length along the polyline ``points (n, 3)``."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    t = np.linspace(0.0, s[-1], count)
    return np.stack([np.interp(t, s, points[:, k]) for k in range(3)], axis=1)


def _distance_to_polyline(points, polyline) -> np.ndarray:
    """``(n,)`` [m] distance from each of ``points (n, 3)`` to the polyline ``polyline (k, 3)``."""
    a, b = polyline[:-1], polyline[1:]
    ab = b - a
    t = np.einsum("nsk,sk->ns", points[:, None, :] - a[None], ab) / np.maximum(np.einsum("sk,sk->s", ab, ab),
                                                                                1e-30)
    closest = a[None] + np.clip(t, 0.0, 1.0)[..., None] * ab[None]
    return np.linalg.norm(points[:, None, :] - closest, axis=2).min(axis=1)
