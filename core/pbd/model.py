"""The PBD model: what does not change while the muscles move (masses, rest lengths, collision pairs, bone grids).

:func:`build_pbd_model` builds a frozen :class:`PBDModel` once from the muscles at rest; its kernel arrays
(:class:`kernels.pbd.PBDModelArrays`) are packed once at construction. Units: metres, seconds, kilograms.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from .. import validation
from ..muscle import profile as _profile
from .distance_grid import DistanceGrid
from .settings import PBDSettings


@dataclass(frozen=True)
class BoneGrid:
    """An anatomical bone mesh as a distance grid (built in the rest pose, armature space) and the index of the
    grid transform that moves it (``PBDControl.grid_transforms``)."""

    grid: DistanceGrid
    transform_index: int = 0


@dataclass(frozen=True, eq=False)
class PBDModel:
    """Static description of all muscle axes of a character (``M`` muscles, ``P`` particles, ``B`` capsules,
    ``G`` grids). Frozen: a changed value (the settled particle parameters) makes a new model
    (:meth:`with_particle_s`). See kernels/pbd.py for the equations.

    settings: PBDSettings
    names: (M,) str                   muscle names, for messages
    axis_start: (M+1,) int64          CSR: particles of muscle m are axis_start[m] .. axis_start[m+1]-1
    rest_points: (P, 3) [m]           rest axes
    inv_mass: (P,) [1/kg]             0 for the kinematic endpoints
    mode_unit: (M,) [1/(kg m)]        XPBD stiffness mapping: lowest eigenvalue of the axis's sideways stiffness
                                      per unit belly stiffness over its masses (``first_mode_unit``)
    spring_length: (P,) [m]           length of constraint (k, k+1) when the model was built
    particle_s: (P,)                  arc-length parameter of each particle in [0, 1] (particle radii D = w Phi(s))
    rest_length: (P,) [m]             rest length of constraint (k, k+1); last row of a muscle unused
    tendon: (P,) bool                 constraint (k, k+1) is a tendon
    muscle_group: (M,) int64          contact set (the muscles that may push it), -1: no muscle collisions
    muscle_overlap: (M,) int64        overlap group: muscles of one never push each other, -1: none
    group_start (Gm+1,), group_members (K,) int64     CSR: muscles of each contact set
    island_start (I+1,), island_members (M,) int64    CSR: islands = contact sets + muscles in no set
    cap_start (M+1,), cap_index (C,) int64            CSR: capsules each muscle collides with
    cap_radius: (C,) [m]              radius of each of those capsules, as that muscle sees it
    grid_start (M+1,), grid_index (Cg,) int64         CSR: bone grids each muscle collides with
    grid_values (cells,) [m], grid_offset (G+1,) int64, grid_dims (G, 3) int64, grid_origin (G, 3) [m],
    grid_spacing (G, 3) [m], grid_transform_index (G,) int64      the bone grids, packed
    exponents: (M, 4) int64           alpha0-1, beta0-1, alpha1-1, beta1-1
    volume: (M,) [m^3]
    rest_normals: (M, 2, 3)           endpoint normals at rest
    rest_capsules: (B, 2, 3) [m]      capsule segments at rest
    mass: (P,) [kg]                   0 for the endpoints
    skin_inv_mass: (P,) [1/kg]        inv_mass of the particles kept inside the skin, 0 for the others
    arrays: kernels.pbd.PBDModelArrays   the kernels' view of the arrays above (built at construction)
    """

    settings: PBDSettings
    names: tuple
    axis_start: np.ndarray
    rest_points: np.ndarray
    inv_mass: np.ndarray
    mode_unit: np.ndarray
    spring_length: np.ndarray
    particle_s: np.ndarray
    rest_length: np.ndarray
    tendon: np.ndarray
    muscle_group: np.ndarray
    muscle_overlap: np.ndarray
    group_start: np.ndarray
    group_members: np.ndarray
    island_start: np.ndarray
    island_members: np.ndarray
    cap_start: np.ndarray
    cap_index: np.ndarray
    cap_radius: np.ndarray
    grid_start: np.ndarray
    grid_index: np.ndarray
    grid_values: np.ndarray
    grid_offset: np.ndarray
    grid_dims: np.ndarray
    grid_origin: np.ndarray
    grid_spacing: np.ndarray
    grid_transform_index: np.ndarray
    exponents: np.ndarray
    volume: np.ndarray
    rest_normals: np.ndarray
    rest_capsules: np.ndarray
    mass: np.ndarray
    skin_inv_mass: np.ndarray
    arrays: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        f64, i64 = np.float64, np.int64

        def c(a, dtype):
            return np.ascontiguousarray(a, dtype=dtype)

        from ...kernels.pbd import PBDModelArrays  # numba: loaded on first use, after the host set its cache

        object.__setattr__(self, "arrays", PBDModelArrays(
            axis_start=c(self.axis_start, i64), inv_mass=c(self.inv_mass, f64), mode_unit=c(self.mode_unit, f64),
            spring_length=c(self.spring_length, f64),
            particle_s=c(self.particle_s, f64), rest_length=c(self.rest_length, f64),
            tendon=c(self.tendon, np.bool_), muscle_group=c(self.muscle_group, i64),
            muscle_overlap=c(self.muscle_overlap, i64),
            group_start=c(self.group_start, i64), group_members=c(self.group_members, i64),
            island_start=c(self.island_start, i64), island_members=c(self.island_members, i64),
            cap_start=c(self.cap_start, i64), cap_index=c(self.cap_index, i64), cap_radius=c(self.cap_radius, f64),
            grid_start=c(self.grid_start, i64), grid_index=c(self.grid_index, i64),
            grid_values=c(self.grid_values, f64), grid_offset=c(self.grid_offset, i64),
            grid_dims=c(self.grid_dims, i64), grid_origin=c(self.grid_origin, f64),
            grid_spacing=c(self.grid_spacing, f64), volume=c(self.volume, f64)))

    def with_particle_s(self, particle_s) -> "PBDModel":
        """This model with the particles' arc parameters ``particle_s (P,)`` (e.g. of the settled rest axes)."""
        s = np.array(particle_s, dtype=np.float64).reshape(-1)
        if s.shape != self.particle_s.shape:
            raise ValueError(f"particle_s needs one value per particle ({self.particle_count}), got {s.size}.")
        return replace(self, particle_s=s)

    @property
    def muscle_count(self) -> int:
        return len(self.axis_start) - 1

    @property
    def particle_count(self) -> int:
        return len(self.inv_mass)

    @property
    def capsule_count(self) -> int:
        return len(self.rest_capsules)


def build_pbd_model(muscles: Sequence, settings: PBDSettings | None = None, capsules=None, capsule_radius=None,
                    grids: Sequence[BoneGrid] = (), contact_sets: Sequence | None = None,
                    capsule_margin: float | None = None, overlap_groups: Sequence | None = None,
                    bone_collisions=None, keep_inside=None) -> PBDModel:
    """Build the PBD model of ``muscles`` (:class:`core.muscle.primitive.FusiformMuscle`; rest = their current
    axes).

    capsules: (B, 2, 3) [m] bone segments at rest; capsule_radius [m]: (B,) one radius per capsule (see
    :func:`capsule_radius_from_skin`), or (M, B) the radius each muscle sees each capsule with.
    grids: bone distance grids.
    contact_sets: per muscle a label (muscles with the same label may push each other) or None (it pushes no
    muscle); None: no muscle-muscle collisions at all (the default).
    overlap_groups: per muscle a label or None: muscles with the same label never push each other, even in one
    contact set (the fibres of one fan-shaped muscle, paper §5.3); None: no overlap groups.
    bone_collisions: (M,) bool, False: the muscle ignores every capsule and grid (default all True).
    keep_inside: (M,) bool, False: the muscle-skin constraint leaves the muscle alone (default all True).
    capsule_margin [m]: a muscle collides with the capsules and grids within its reach plus this margin at rest
    (default: a quarter of its rest length), so distant bones cost nothing.
    """
    settings = (settings or PBDSettings()).validated()
    muscles = list(muscles)
    if not muscles:
        raise ValueError("a PBD model needs at least one muscle.")
    count = len(muscles)
    axes = _axes(muscles, settings)
    muscle_group = _labels(contact_sets, count, "contact_sets")
    muscle_overlap = _labels(overlap_groups, count, "overlap_groups")
    members = [np.flatnonzero(muscle_group == gi) for gi in range(muscle_group.max(initial=-1) + 1)]
    group_start = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum([len(mm) for mm in members], out=group_start[1:])
    group_members = np.concatenate(members).astype(np.int64) if members else np.zeros(0, dtype=np.int64)
    islands = [list(mm) for mm in members] + [[i] for i in range(count) if muscle_group[i] < 0]
    island_start, island_members = csr(islands)
    with_bones = _flags(bone_collisions, count, "bone_collisions")
    skin_inv_mass = axes["inv_mass"] * np.repeat(_flags(keep_inside, count, "keep_inside"),
                                                 np.diff(axes["axis_start"]))
    caps = np.zeros((0, 2, 3)) if capsules is None else np.asarray(capsules, dtype=np.float64).reshape(-1, 2, 3)
    if not np.all(np.isfinite(caps)):
        raise ValueError("bone capsules contain NaN or infinite coordinates.")
    bones = _bone_lists(muscles, caps, capsule_radii(capsule_radius, count, len(caps)), grids, with_bones,
                        capsule_margin)
    grid_values, grid_offset, grid_dims, grid_origin, grid_spacing, grid_tf = _pack_grids(grids)
    exponents = np.array([(m.shape.alpha_rest - 1, m.shape.beta_rest - 1, m.shape.alpha_active - 1,
                           m.shape.beta_active - 1) for m in muscles], dtype=np.int64)
    return PBDModel(
        settings=settings, names=tuple(getattr(m, "name", str(i)) for i, m in enumerate(muscles)), **axes,
        muscle_group=muscle_group, muscle_overlap=muscle_overlap,
        group_start=group_start, group_members=group_members, island_start=island_start,
        island_members=island_members, **bones, grid_values=grid_values, grid_offset=grid_offset,
        grid_dims=grid_dims, grid_origin=grid_origin, grid_spacing=grid_spacing, grid_transform_index=grid_tf,
        exponents=exponents, volume=np.array([m.volume for m in muscles]),
        rest_normals=np.array([m.endpoint_normals() for m in muscles]), rest_capsules=caps,
        skin_inv_mass=skin_inv_mass)


def _axes(muscles, settings: PBDSettings) -> dict:
    """The particles of ``muscles`` at their current axes, as :class:`PBDModel` fields: ``axis_start``,
    ``rest_points``, masses (``mass``, ``inv_mass``: the muscle's mass ``V rho`` shared by the inner particles in
    proportion to the rest width, paper §6.2, each at least ``min_mass_fraction`` of the heaviest),
    ``particle_s``, the constraints (``spring_length``, ``rest_length``, ``tendon``) and ``mode_unit``."""
    count = len(muscles)
    counts = np.array([m.particle_count + 2 for m in muscles], dtype=np.int64)
    axis_start = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(counts, out=axis_start[1:])
    rest = np.concatenate([m.axis for m in muscles])
    total = len(rest)
    inv_mass = np.zeros(total)
    mode_unit = np.zeros(count)
    spring_length = np.zeros(total)
    mass = np.zeros(total)
    particle_s = np.zeros(total)
    rest_length = np.zeros(total)
    tendon = np.zeros(total, dtype=np.bool_)
    for i, muscle in enumerate(muscles):
        a, b = axis_start[i], axis_start[i + 1]
        seg = np.linalg.norm(np.diff(rest[a:b], axis=0), axis=1)
        cum = np.concatenate([[0.0], np.cumsum(seg)])
        s = cum / cum[-1]
        particle_s[a:b] = s
        phi = muscle.profile_at(s[1:-1]) if b - a > 2 else np.zeros(0)
        phi = np.maximum(phi, max(settings.min_mass_fraction, 1e-6) * max(phi.max(initial=0.0), 1e-12))
        if len(phi):
            mass[a + 1:b - 1] = muscle.volume * settings.density * phi / phi.sum()
            inv_mass[a + 1:b - 1] = 1.0 / mass[a + 1:b - 1]
        mid = 0.5 * (s[:-1] + s[1:])
        is_tendon = (mid < settings.tendon_fraction) | (mid > 1.0 - settings.tendon_fraction)
        tendon[a:b - 1] = is_tendon
        spring_length[a:b - 1] = seg
        if len(phi):
            mode_unit[i] = first_mode_unit(mass[a + 1:b - 1], seg, settings.belly_rest_fraction)
        rest_length[a:b - 1] = np.where(is_tendon, seg, settings.belly_rest_fraction * seg)
    return dict(axis_start=axis_start, rest_points=rest, inv_mass=inv_mass, mode_unit=mode_unit,
                spring_length=spring_length, particle_s=particle_s, rest_length=rest_length, tendon=tendon,
                mass=mass)


def _bone_lists(muscles, caps, radius, grids, with_bones, capsule_margin) -> dict:
    """Per muscle, the capsules ``caps (B, 2, 3)`` and bone grids within its reach plus the margin at rest (none
    where ``with_bones`` is False), as :class:`PBDModel`'s CSR fields ``cap_start``, ``cap_index``,
    ``cap_radius`` (from ``radius (M, B)``), ``grid_start``, ``grid_index``."""
    reach = np.array([m.width * m.profile().v * _profile.profile_max(
        m.shape.alpha_rest, m.shape.beta_rest, m.shape.alpha_active, m.shape.beta_active, m.activation)
        for m in muscles])
    cap_lists, grid_lists = [], []
    for i, muscle in enumerate(muscles):
        margin = 0.25 * muscle.rest_length if capsule_margin is None else float(capsule_margin)
        axis = muscle.axis
        near = [c for c in range(len(caps)) if with_bones[i]
                and segment_distance(axis[0], axis[-1], caps[c, 0], caps[c, 1]) < reach[i] + radius[i, c] + margin]
        cap_lists.append(near)
        near_grids = [g for g, bg in enumerate(grids)
                      if with_bones[i] and _box_distance(axis, bg.grid) < reach[i] + margin]
        grid_lists.append(near_grids)
    cap_start, cap_index = csr(cap_lists)
    cap_radius = np.array([radius[i, c] for i, near in enumerate(cap_lists) for c in near], dtype=np.float64)
    grid_start, grid_index = csr(grid_lists)
    return dict(cap_start=cap_start, cap_index=cap_index, cap_radius=cap_radius, grid_start=grid_start,
                grid_index=grid_index)


def _labels(values, count, name) -> np.ndarray:
    """``(count,)`` int64 from one label (any sortable value) or None per muscle: equal labels get equal numbers 0,
    1, ... (sorted by type, then value), None gets -1."""
    labels = [None] * count if values is None else list(values)
    if len(labels) != count:
        raise ValueError(f"{name} needs one entry per muscle ({count}), got {len(labels)}.")
    distinct = sorted({g for g in labels if g is not None}, key=lambda g: (type(g).__name__, g))
    return np.array([-1 if g is None else distinct.index(g) for g in labels], dtype=np.int64)


def _flags(values, count, name) -> np.ndarray:
    """``(count,)`` bool from one flag per muscle (default: all True)."""
    if values is None:
        return np.ones(count, dtype=bool)
    flags = np.asarray(values).reshape(-1)
    if len(flags) != count:
        raise ValueError(f"{name} needs one entry per muscle ({count}), got {len(flags)}.")
    return flags.astype(bool)


def capsule_radii(capsule_radius, muscles, capsules) -> np.ndarray:
    """``(muscles, capsules)`` [m] from ``None`` (0), one radius per capsule, or one per muscle and capsule."""
    if capsule_radius is None:
        return np.zeros((muscles, capsules))
    radius = np.asarray(capsule_radius, dtype=np.float64)
    if radius.ndim <= 1:
        radius = radius.reshape(-1)
        if len(radius) != capsules:
            raise ValueError(f"capsule_radius needs one radius per capsule ({capsules}), got {len(radius)}.")
        radius = np.broadcast_to(radius, (muscles, capsules))
    elif radius.shape != (muscles, capsules):
        raise ValueError(f"capsule_radius needs one radius per capsule ({capsules}) or one per muscle and capsule "
                         f"({muscles} x {capsules}), got shape {radius.shape}.")
    if np.any(~np.isfinite(radius)) or np.any(radius < 0):
        raise ValueError("capsule radii must be finite and 0 or more.")
    return radius


def first_mode_unit(mass, seg, rest_fraction: float) -> float:
    """Lowest eigenvalue [1/(kg m)] of ``K v = lambda M v`` for one axis swinging sideways: ``mass (n,)`` [kg] its
    inner particles, ``seg (n+1,)`` [m] its segment lengths, ends fixed. A belly of stiffness ``S`` (segment ``k``:
    ``S / l_k``, rest length ``rest_fraction l_k``) holds the axis under the tension ``T = (1 - rest_fraction) S``;
    sideways, every segment, tendons included, then resists with ``T / l_k``: ``K`` is the chain's Laplacian with
    weights ``(1 - rest_fraction) / l_k``, and the first mode is ``omega^2 = S lambda`` (kernels/pbd.py: ``S =
    omega(k)^2 / lambda``)."""
    n = len(mass)
    stiff = (1.0 - rest_fraction) / np.maximum(np.asarray(seg, dtype=np.float64), 1e-12)
    K = np.diag(stiff[:-1] + stiff[1:]) - np.diag(stiff[1:-1], 1) - np.diag(stiff[1:-1], -1)
    inv_sqrt = 1.0 / np.sqrt(np.asarray(mass, dtype=np.float64))
    return float(np.linalg.eigvalsh(K * inv_sqrt[:, None] * inv_sqrt[None, :])[0]) if n else 0.0


def capsule_radius_from_skin(head, tail, skin_points, fraction: float = 0.25) -> float:
    """Automatic bone capsule radius [m]: ``fraction`` of the median distance from the bone segment to the skin
    vertices that belong to it (a humerus is about a quarter of the upper arm's radius)."""
    p = validation.points(skin_points, "skin vertices of the bone", min_count=1)
    a = validation.vector3(head, "bone head")
    b = validation.vector3(tail, "bone tail")
    e = b - a
    t = np.clip(((p - a) @ e) / max(e @ e, 1e-30), 0.0, 1.0)
    d = np.linalg.norm(p - (a + t[:, None] * e), axis=1)
    return float(fraction * np.median(d))




def csr(lists):
    """``(start (n+1,), index)`` int64 of ``lists`` (n lists of indices) in compressed rows: list ``i`` is
    ``index[start[i]:start[i + 1]]``."""
    start = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(item) for item in lists], out=start[1:])
    index = np.array([i for item in lists for i in item], dtype=np.int64)
    return start, index


def _pack_grids(grids):
    if not grids:
        return (np.zeros(0), np.zeros(1, dtype=np.int64), np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3)),
                np.ones((0, 3)), np.zeros(0, dtype=np.int64))
    values = np.concatenate([bg.grid.values.reshape(-1) for bg in grids])
    offset = np.zeros(len(grids) + 1, dtype=np.int64)
    np.cumsum([bg.grid.values.size for bg in grids], out=offset[1:])
    dims = np.array([bg.grid.values.shape for bg in grids], dtype=np.int64)
    origin = np.array([bg.grid.origin for bg in grids], dtype=np.float64)
    spacing = np.array([bg.grid.spacing for bg in grids], dtype=np.float64)
    tf = np.array([bg.transform_index for bg in grids], dtype=np.int64)
    return values, offset, dims, origin, spacing, tf


def segment_distance(p0, p1, q0, q1, samples: int = 33) -> float:
    """Distance [m] between the segments ``p0-p1`` and ``q0-q1`` (sampled; used at build time for the broad
    phase of the bone contacts, the axes' and the rods')."""
    t = np.linspace(0.0, 1.0, samples)[:, None]
    a = p0 + t * (p1 - p0)
    e = q1 - q0
    u = np.clip(((a - q0) @ e) / max(e @ e, 1e-30), 0.0, 1.0)
    return float(np.min(np.linalg.norm(a - (q0 + u[:, None] * e), axis=1)))


def _box_distance(points, grid: DistanceGrid) -> float:
    lo = grid.origin
    hi = grid.origin + grid.spacing * (np.array(grid.values.shape) - 1)
    d = np.maximum(np.maximum(lo - points, 0.0), points - hi)
    return float(np.min(np.linalg.norm(d, axis=1)))
