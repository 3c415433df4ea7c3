"""A muscle fitted under a patch of skin (Turchet et al.'s skin patches, as authoring): the points and outward
normals of the patch, the rest skin and the muscle's two bones give a muscle whose surface sits just under the patch.

:func:`fit_patch_muscle` works in the rig's rest space (metres):

1. **Extent.** The patch's long direction is its principal axis, pointed from the origin bone towards the
   insertion bone. Its two extreme points project on the bones: the one at the origin's end on the origin bone,
   the other on the insertion bone. These two points on the bones give the muscle's line.
2. **Side.** The patch lies on one side of that line: ``d``, the mean direction from the line to the patch
   points, made orthogonal to the line; ``e = line x d`` is across it. Each patch point has a height ``z`` over the
   line along ``d`` and an offset ``x`` across it; the muscle is centred under the patch's middle across.
3. **Depth.** The limb radius ``R`` is the median distance of the patch from the line. The muscle stays
   ``base = CLEAR_FRACTION R`` clear of the line (the automatic bone capsule is a quarter of it) and its top
   ``gap = GAP_FRACTION R`` under the skin: with ``f(s) = Phi_0(s) / max Phi_0`` its rest profile, half-thickness
   ``h`` and axis height ``base + h``, the top ``base + h (1 + f(s))`` must stay under ``rho(s) - gap`` wherever the
   patch has skin over the line (``rho(s)``: the height of the patch points nearest the middle, in bins along the
   line), so ``h = min_s (rho(s) - gap - base) / (1 + f(s))``.
4. **Width and flatness.** The half-width across is the patch's half-width across at its widest, where the belly
   is, brought down to the axis' height (times ``(base + h) / R``, the patch's wedge seen from the bones). The cross-section is the ellipse of those two half-axes (``u v = 1``, paper eq. 5): eccentricity
   ``e = sqrt(1 - (short / long)^2)`` (at most 0.99), long axis across (or along ``d`` for a narrow, tall patch),
   and the width ``w = sqrt(h_across h) / max Phi_0``.
5. **Inside the skin.** The muscle's surface is checked against the rest skin (each surface point's depth under
   its nearest skin vertex, along that vertex's normal, must be at least ``gap / 2``); the width across, then the
   whole cross-section, shrinks by ``SHRINK`` until it is, at most ``SHRINK_STEPS`` times.

Plain numpy over the patch and the skin; no Blender. Bad input raises ``ValueError`` with a plain sentence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import validation
from .primitive import FusiformMuscle, MuscleShape
from .profile import profile_max
from .surface import muscle_surface

GAP_FRACTION = 0.06
"""The muscle's top lies this many limb radii under the patch's skin (2.4 mm under a 4 cm arm's)."""
CLEAR_FRACTION = 0.3
"""The muscle stays this many limb radii clear of the bones' line (the automatic bone capsule is 0.25)."""
BINS = 12
"""Bins along the muscle's line in which the skin's height over it is measured."""
MIDDLE_FRACTION = 0.35
"""Patch points within this fraction of the patch's half-width across from its middle give the skin's height."""
SHRINK = 0.9
"""Factor by which the cross-section shrinks while the surface is not inside the skin."""
SHRINK_STEPS = 40
"""At most this many shrinks."""
CHECK_RINGS, CHECK_SIDES = 24, 16
"""Resolution of the surface checked against the skin."""
MIN_POINTS = 3
"""Fewest patch points that make a patch."""


@dataclass(frozen=True)
class PatchMuscle:
    """A muscle fitted under a patch (armature rest space).

    origin, insertion: (3,) [m]   the muscle's endpoints (off the bones, at the axis height under the patch)
    origin_on_bone, insertion_on_bone: (3,) [m]   where the patch's extent projects on each bone
    width: float [m]              the muscle's rest width ``w`` (volume ``pi w^2 l``)
    eccentricity: float           the cross-section's flatness in [0, 0.99]
    normal: (3,)                  the cross-section's long axis (unit, orthogonal to the axis)
    side: (3,)                    the direction from the bones to the patch (unit, orthogonal to the axis)
    limb_radius: float [m]        median distance of the patch from the bones' line
    depth: float [m]              the least depth of the muscle's surface under the skin (at least ``gap / 2``)
    """

    origin: np.ndarray
    insertion: np.ndarray
    origin_on_bone: np.ndarray
    insertion_on_bone: np.ndarray
    width: float
    eccentricity: float
    normal: np.ndarray
    side: np.ndarray
    limb_radius: float
    depth: float

    def muscle(self, shape: MuscleShape | None = None, name: str = "muscle", particles: int = 30) -> FusiformMuscle:
        """The fitted muscle at rest with ``shape`` (its eccentricities replaced by the fitted one)."""
        shape = MuscleShape(**{**(shape or MuscleShape()).__dict__, "eccentricity_rest": self.eccentricity,
                               "eccentricity_active": self.eccentricity})
        return FusiformMuscle(self.origin, self.insertion, width=self.width, shape=shape, particles=particles,
                              origin_normal=self.normal, insertion_normal=self.normal, name=name)


def _closest_on_segment(p, a, b):
    """The point of segment ``a b`` nearest ``p``."""
    e = b - a
    t = np.clip((p - a) @ e / max(e @ e, 1e-30), 0.0, 1.0)
    return a + t * e


def _skin_depth(points, skin_points, skin_normals, chunk: int = 256) -> np.ndarray:
    """``(n,)`` depth [m] of ``points`` under the skin: ``(p_skin - x) . n_skin`` at each point's nearest skin vertex
    (positive inside)."""
    out = np.empty(len(points))
    for start in range(0, len(points), chunk):
        x = points[start:start + chunk]
        d2 = ((x[:, None, :] - skin_points[None, :, :]) ** 2).sum(axis=2)
        k = np.argmin(d2, axis=1)
        out[start:start + chunk] = np.einsum("ij,ij->i", skin_points[k] - x, skin_normals[k])
    return out


def fit_patch_muscle(patch_points, patch_normals, skin_points, skin_normals, origin_bone, insertion_bone,
                     shape: MuscleShape | None = None, name: str = "muscle") -> PatchMuscle:
    """Fit a muscle under a patch (module docstring).

    patch_points, patch_normals: (n, 3)   the patch's skin vertices [m] and their outward unit normals
    skin_points, skin_normals: (V, 3)     the whole rest skin's vertices and outward unit normals
    origin_bone, insertion_bone: (2, 3)   head and tail of each bone [m]
    shape: MuscleShape                    the rest profile the muscle will have (default the paper's biceps)
    name: str                             for the messages
    """
    shape = (shape or MuscleShape()).validated()
    p = np.asarray(patch_points, dtype=np.float64).reshape(-1, 3)
    if len(p) < MIN_POINTS:
        raise ValueError(f"{name}: the patch has {len(p)} painted vertices; paint at least {MIN_POINTS} over where "
                         f"the muscle should bulge.")
    p = validation.points(p, "patch vertices", min_count=MIN_POINTS)
    skin = validation.points(skin_points, "skin vertices", min_count=MIN_POINTS)
    skin_n = np.asarray(skin_normals, dtype=np.float64).reshape(skin.shape)
    skin_n = skin_n / np.maximum(np.linalg.norm(skin_n, axis=1, keepdims=True), 1e-30)
    ob = np.asarray(origin_bone, dtype=np.float64).reshape(2, 3)
    ib = np.asarray(insertion_bone, dtype=np.float64).reshape(2, 3)
    if not (np.isfinite(ob).all() and np.isfinite(ib).all()):
        raise ValueError(f"{name}: its bones' heads and tails must be finite.")

    o_bone, i_bone = _patch_ends(p, ob, ib, name)
    frame = _patch_side(p, o_bone, i_bone, name)
    h = _height(frame, shape, name)
    return _shrink_to_skin(frame, h, shape, skin, skin_n, name)


class _PatchFrame(NamedTuple):
    """Where a patch lies about the line between its bones (:func:`_patch_side`): the line's ends ``o_bone``,
    ``i_bone`` [m] and unit direction ``a``, the side ``d`` the patch lies on and ``e = a x d``, per patch vertex
    its place ``s`` along the line in [0, 1], its height ``z`` over the line along ``d`` and its place ``x``
    across (along ``e``) [m], and ``limb`` [m] the patch's median distance from the line."""

    o_bone: np.ndarray
    i_bone: np.ndarray
    a: np.ndarray
    d: np.ndarray
    e: np.ndarray
    s: np.ndarray
    z: np.ndarray
    x: np.ndarray
    limb: float


def _patch_ends(p, ob, ib, name):
    """Step 1: the patch's extent along its principal axis, from the origin bone's side to the insertion bone's:
    ``(o_bone, i_bone)``, the points of the bones ``ob``, ``ib (2, 3)`` nearest its two ends."""
    centre = p.mean(axis=0)
    _, _, vt = np.linalg.svd(p - centre, full_matrices=False)
    along = vt[0]
    if (ib.mean(axis=0) - ob.mean(axis=0)) @ along < 0.0:
        along = -along
    t = (p - centre) @ along
    o_bone = _closest_on_segment(p[np.argmin(t)], *ob)
    i_bone = _closest_on_segment(p[np.argmax(t)], *ib)
    if float(np.linalg.norm(i_bone - o_bone)) < 1e-4:
        raise ValueError(f"{name}: the patch's ends project on the same place of its bones; paint it along the "
                         f"bones, from the origin bone towards the insertion bone.")
    return o_bone, i_bone


def _patch_side(p, o_bone, i_bone, name) -> _PatchFrame:
    """Step 2: the side of the line ``o_bone -> i_bone`` the patch ``p (n, 3)`` lies on, and the across
    direction."""
    line = i_bone - o_bone
    length = float(np.linalg.norm(line))
    a = line / length
    s = np.clip((p - o_bone) @ a / length, 0.0, 1.0)
    radial = p - (o_bone + s[:, None] * line)
    radial -= np.outer(radial @ a, a)
    dist = np.linalg.norm(radial, axis=1)
    d = (radial / np.maximum(dist, 1e-30)[:, None]).sum(axis=0)
    d -= (d @ a) * a
    if np.linalg.norm(d) < 1e-6 * len(p):
        raise ValueError(f"{name}: the patch goes all around its bones, so it has no side to lie under; paint only "
                         f"where the muscle should bulge.")
    d /= np.linalg.norm(d)
    e = np.cross(a, d)
    return _PatchFrame(o_bone, i_bone, a, d, e, s, radial @ d, radial @ e, float(np.median(dist)))


def _bins(frame: _PatchFrame) -> np.ndarray:
    """Each patch vertex's bin along the line (``BINS`` of them)."""
    return np.minimum((frame.s * BINS).astype(np.int64), BINS - 1)


def _height(frame: _PatchFrame, shape: MuscleShape, name) -> float:
    """Step 3: the skin's height over the line near the patch's middle, per bin, gives the muscle's half-thickness
    [m]: at most what leaves ``GAP_FRACTION`` of the limb under the skin wherever its profile reaches."""
    x, z, limb = frame.x, frame.z, frame.limb
    x_mid = 0.5 * (x.min() + x.max())
    half_across = 0.5 * (x.max() - x.min())
    middle = np.abs(x - x_mid) <= max(MIDDLE_FRACTION * half_across, 1e-9)
    base, gap = CLEAR_FRACTION * limb, GAP_FRACTION * limb
    peak = profile_max(shape.alpha_rest, shape.beta_rest, shape.alpha_active, shape.beta_active, 0.0)
    bins = _bins(frame)
    unit = FusiformMuscle((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), width=1.0, shape=shape)
    bound = np.inf
    for b in np.unique(bins[middle]):
        rho = float(np.min(z[middle & (bins == b)]))
        f = unit.profile_at(np.array([(b + 0.5) / BINS]))[0] / peak
        bound = min(bound, (rho - gap - base) / (1.0 + f))
    if not np.isfinite(bound) or bound <= 1e-4 * limb:
        raise ValueError(f"{name}: the skin under the patch is too close to its bones for a muscle "
                         f"(limb radius {1000 * limb:.1f} mm); paint the patch where the limb is thicker.")
    return bound


def _shrink_to_skin(frame: _PatchFrame, h, shape: MuscleShape, skin, skin_n, name) -> PatchMuscle:
    """Steps 4 and 5: the width across (the patch's half-width where it is widest along the line), then the muscle
    of half-thickness ``h`` [m] shrunk until its surface is inside the skin ``skin, skin_n (V, 3)``."""
    x, limb, d, e = frame.x, frame.limb, frame.d, frame.e
    x_mid = 0.5 * (x.min() + x.max())
    base, gap = CLEAR_FRACTION * limb, GAP_FRACTION * limb
    peak = profile_max(shape.alpha_rest, shape.beta_rest, shape.alpha_active, shape.beta_active, 0.0)
    bins = _bins(frame)
    widths = [np.ptp(x[bins == b]) / 2.0 for b in np.unique(bins)]
    h_across = float(max(widths)) * (base + h) / limb  # the patch's wedge at the axis' height
    h_across = max(h_across, 1e-4 * limb)
    for _ in range(SHRINK_STEPS + 1):
        height = base + h
        offset = height * d + x_mid * e
        long_, short = max(h_across, h), min(h_across, h)
        ecc = float(min(np.sqrt(max(0.0, 1.0 - (short / long_) ** 2)), 0.99))
        normal = e if h_across >= h else d
        width = float(np.sqrt(h_across * h) / peak)
        fit = PatchMuscle(frame.o_bone + offset, frame.i_bone + offset, frame.o_bone, frame.i_bone, width, ecc,
                          normal.copy(), d.copy(), limb, 0.0)
        vertices, _ = muscle_surface(fit.muscle(shape, name), rings=CHECK_RINGS, sides=CHECK_SIDES, snap=False)
        depth = float(_skin_depth(vertices, skin, skin_n).min())
        if depth >= 0.5 * gap:
            return PatchMuscle(fit.origin, fit.insertion, frame.o_bone, frame.i_bone, width, ecc, fit.normal,
                               fit.side, limb, depth)
        if h_across > h:
            h_across *= SHRINK
        else:
            h *= SHRINK
            h_across *= SHRINK
    raise ValueError(f"{name}: no muscle under the patch fits inside the skin; paint the patch over a thicker part "
                     f"of the limb, between its two bones.")
