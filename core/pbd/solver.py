"""Muscle axis dynamics: Position Based Dynamics for all muscles of a character (paper §6, thesis ch. 5).

Shaped like warp.sim: a :class:`PBDModel` (what does not change: masses, rest lengths, collision pairs) is built
once by :func:`build_pbd_model`; a :class:`PBDState` (positions, velocities, last frame's kinematic targets) is
what changes; a :class:`PBDControl` carries one frame's inputs (endpoint positions from the bones, activation,
stiffness, width scale, bone capsules, bone grid transforms, an optional skin field). :meth:`PBDSolver.step`
advances one frame and never writes its input state, so a host can keep states per frame and resume exactly.

Units: metres, seconds, kilograms. Defaults are the paper's (SEED-NOTES §2, §4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from ..muscle import profile as _profile
from .. import validation
from ..validation import ECCENTRICITY_MAX, FLOAT32_SLACK
from .distance_grid import DistanceGrid
from ..muscle.batch import MuscleBatch

MUSCLE_DENSITY = 1060.0
"""rho_M = 1.06 g/cm^3 in kg/m^3 (paper §6.2)."""


@dataclass(frozen=True)
class PBDSettings:
    """Solver settings (paper defaults).

    substeps: int            substeps per frame (paper: a tenth of the frame interval)
    iterations: int          constraint sweeps per substep (Gauss-Seidel). The paper does not give its count; with
                             one sweep the chain is far from converged and the artist's stiffness hardly shows
                             (a tense muscle lags like a loose one); four sweeps make k = 0.7 follow the bones while
                             k = 0.1 still swings, as the paper describes, at a small cost
    xpbd: bool               XPBD (default: stiffness and damping independent of substeps and frame rate) or the
                             paper's plain PBD; both give the same first correction at 10 substeps of 24 fps
    damping: float           velocity factor mu per reference substep (paper: 0.9)
    reference_fps: float     frame rate at which PBD and XPBD coincide with ``substeps = 10``
    reference_iterations: int  sweeps at which PBD and XPBD coincide (XPBD's stiffness mapping, kernels/pbd.py):
                             1 = the first sweep of a substep; more XPBD iterations then converge better but do
                             not stiffen, while PBD stiffens with every sweep (paper §8.6)
    tendon_fraction: float   first and last fraction of the rest length that is tendon (paper: 10 %)
    tendon_stiffness: float  stiffness of tendon constraints in [0, 1] (paper: ~0.9)
    belly_rest_fraction: float  belly constraints' rest length as a fraction of their initial length (paper: 2 %)
    friction: float          eta, fraction of the tangential displacement removed at a contact per substep
    density: float [kg/m^3]  muscle density (paper: 1.06 g/cm^3)
    min_mass_fraction: float inner particle masses follow the rest profile Phi (paper §6.2) but none is lighter than
                             this fraction of the heaviest. With the paper's plain proportion (0) the particles by
                             the tendons are 50-100x lighter than the belly's, Gauss-Seidel barely converges, the
                             stiffness loses its meaning and XPBD its substep independence; 0.5 keeps the
                             proportion over the belly, where the muscle is thick, and conditions the ends
    gravity: (3,) [m/s^2]    off by default (the paper's muscles have none); a rig's muscles then stay where the
                             artist put them at rest
    skin_every_substep: bool the muscle-skin keep-inside constraint after every substep, or (default) once after the
                             frame's last substep: the skin field is the most expensive field to evaluate and the
                             other constraints do not push particles outwards
    skin_max_step: float [m] longest move of one keep-inside correction. Near the skin the Newton step is exact
                             and short; a particle left far outside by a jump in the pose (the first frame of a
                             shot posed away from rest, a cut) sees a nearly flat field, where the step is
                             unbounded (the axis was thrown kilometres): it comes back at most this far per
                             correction, and the axis constraints do the rest
    """

    substeps: int = 10
    iterations: int = 4
    xpbd: bool = True
    damping: float = 0.9
    reference_fps: float = 24.0
    reference_iterations: int = 1
    tendon_fraction: float = 0.1
    tendon_stiffness: float = 0.9
    belly_rest_fraction: float = 0.02
    friction: float = 0.3
    density: float = MUSCLE_DENSITY
    min_mass_fraction: float = 0.5
    gravity: tuple = (0.0, 0.0, 0.0)
    skin_every_substep: bool = False
    skin_max_step: float = 0.005

    def validated(self) -> "PBDSettings":
        for name in ("substeps", "iterations", "reference_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or not 1 <= value <= 1000:
                raise ValueError(f"{name} must be a whole number from 1 to 1000, got {value!r}.")
        validation.unit_interval(self.damping, "damping")
        validation.unit_interval(self.tendon_stiffness, "tendon stiffness")
        validation.unit_interval(self.friction, "friction")
        fraction = validation.unit_interval(self.tendon_fraction, "tendon fraction")
        if fraction >= 0.5:
            raise ValueError(f"tendon fraction must be below 0.5 (tendons at both ends), got {fraction:g}.")
        validation.unit_interval(self.belly_rest_fraction, "belly rest fraction")
        validation.positive(self.reference_fps, "reference frame rate")
        validation.positive(self.density, "muscle density")
        validation.positive(self.skin_max_step, "skin max step")
        validation.unit_interval(self.min_mass_fraction, "minimum mass fraction")
        validation.vector3(self.gravity, "gravity")
        return replace(self, substeps=int(self.substeps), iterations=int(self.iterations),
                       reference_iterations=int(self.reference_iterations))

    @property
    def reference_dt(self) -> float:
        """Substep length [s] at which PBD and XPBD coincide: ``1 / (10 reference_fps)``."""
        return 1.0 / (10.0 * self.reference_fps)


@dataclass
class BoneGrid:
    """An anatomical bone mesh as a distance grid (built in the rest pose, armature space) and the index of the
    grid transform that moves it (``PBDControl.grid_transforms``)."""

    grid: DistanceGrid
    transform_index: int = 0


@dataclass
class PBDModel:
    """Static description of all muscle axes of a character (``M`` muscles, ``P`` particles). See kernels/pbd.py."""

    settings: PBDSettings
    names: tuple
    axis_start: np.ndarray            # (M+1,) int64
    rest_points: np.ndarray           # (P, 3) [m] rest axes
    inv_mass: np.ndarray              # (P,) [1/kg]
    w_ref: np.ndarray                 # (M,) [1/kg] XPBD compliance reference: 2 / mean inner particle mass
    particle_s: np.ndarray            # (P,)
    rest_length: np.ndarray           # (P,) [m]
    tendon: np.ndarray                # (P,) bool
    muscle_group: np.ndarray          # (M,) int64, -1: no muscle collisions
    group_start: np.ndarray           # (Gm+1,) int64
    group_members: np.ndarray         # (K,) int64
    island_start: np.ndarray          # (I+1,) int64: islands = collision groups + muscles in no group
    island_members: np.ndarray        # (M,) int64
    cap_start: np.ndarray             # (M+1,) int64
    cap_index: np.ndarray             # (C,) int64
    cap_radius: np.ndarray            # (B,) [m]
    grid_start: np.ndarray            # (M+1,) int64
    grid_index: np.ndarray            # (Cg,) int64
    grid_values: np.ndarray           # (cells,) [m]
    grid_offset: np.ndarray           # (G+1,) int64
    grid_dims: np.ndarray             # (G, 3) int64
    grid_origin: np.ndarray           # (G, 3) [m]
    grid_spacing: np.ndarray          # (G, 3) [m]
    grid_transform_index: np.ndarray  # (G,) int64
    exponents: np.ndarray             # (M, 4) int64
    volume: np.ndarray                # (M,) [m^3]
    rest_normals: np.ndarray          # (M, 2, 3)
    rest_capsules: np.ndarray         # (B, 2, 3) [m]
    mass: np.ndarray = field(default=None)  # (P,) [kg], 0 for endpoints

    @property
    def muscle_count(self) -> int:
        return len(self.axis_start) - 1

    @property
    def particle_count(self) -> int:
        return len(self.inv_mass)

    @property
    def capsule_count(self) -> int:
        return len(self.cap_radius)


@dataclass
class PBDState:
    """What changes every frame. x, v: (P, 3) [m], [m/s]; the last frame's kinematic inputs, for interpolating
    within the next frame: endpoints (M, 2, 3), normals (M, 2, 3), capsules (B, 2, 3), grid_inverse (G, 3, 4)."""

    x: np.ndarray
    v: np.ndarray
    endpoints: np.ndarray
    normals: np.ndarray
    capsules: np.ndarray
    grid_inverse: np.ndarray

    def copy(self) -> "PBDState":
        """A snapshot that a host can keep per frame and :meth:`restore` later."""
        return PBDState(self.x.copy(), self.v.copy(), self.endpoints.copy(), self.normals.copy(),
                        self.capsules.copy(), self.grid_inverse.copy())

    def assign(self, other: "PBDState") -> None:
        """Overwrite this state with ``other`` (restore a snapshot without allocating)."""
        for name in ("x", "v", "endpoints", "normals", "capsules", "grid_inverse"):
            np.copyto(getattr(self, name), getattr(other, name))


@dataclass
class PBDControl:
    """One frame's inputs. Arrays of ``None`` keep the model's rest values.

    endpoints: (M, 2, 3) [m]     origin and insertion of each muscle (they follow their bones)
    normals: (M, 2, 3)           cross-section orientation at each end (rotates with the bones)
    activation, stiffness, width_scale, eccentricity: (M,)   animated muscle parameters
    capsules: (B, 2, 3) [m]      bone capsule segments
    grid_transforms: (T, 4, 4)   rest -> current rigid transforms of the bones carrying distance grids
    skin_field: callable(points (n, 3)) -> (values (n,), grads (n, 3)), compact convention (inside > skin_iso);
                particles are kept inside it (paper §6.3, muscle-skin). None: no skin constraint.
    """

    endpoints: np.ndarray | None = None
    normals: np.ndarray | None = None
    activation: np.ndarray | None = None
    stiffness: np.ndarray | None = None
    width_scale: np.ndarray | None = None
    eccentricity: np.ndarray | None = None
    capsules: np.ndarray | None = None
    grid_transforms: np.ndarray | None = None
    skin_field: Callable | None = None
    skin_iso: float = 0.5


def build_pbd_model(muscles: Sequence, settings: PBDSettings | None = None, capsules=None, capsule_radius=None,
                    grids: Sequence[BoneGrid] = (), collision_groups: Sequence | None = None,
                    capsule_margin: float | None = None) -> PBDModel:
    """Build the PBD model of ``muscles`` (:class:`core.muscle.primitive.FusiformMuscle`, rest state = their current axis).

    capsules: (B, 2, 3) [m] bone segments at rest; capsule_radius: (B,) [m] (see :func:`capsule_radius_from_skin`).
    grids: bone distance grids. collision_groups: per muscle an int group (muscles of a group collide with each
    other) or None (no muscle-muscle collisions; the default for every muscle).
    capsule_margin [m]: a muscle collides with the capsules and grids within its reach plus this margin at rest
    (default: a quarter of its rest length), so distant bones cost nothing.
    """
    settings = (settings or PBDSettings()).validated()
    muscles = list(muscles)
    if not muscles:
        raise ValueError("a PBD model needs at least one muscle.")
    count = len(muscles)
    counts = np.array([m.particle_count + 2 for m in muscles], dtype=np.int64)
    axis_start = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(counts, out=axis_start[1:])
    rest = np.concatenate([m.axis for m in muscles])
    total = len(rest)
    inv_mass = np.zeros(total)
    w_ref = np.zeros(count)
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
        # masses: m = V rho, shared by the inner particles in proportion to the rest width (paper §6.2),
        # above min_mass_fraction of the heaviest (see PBDSettings)
        phi = muscle.profile_at(s[1:-1]) if b - a > 2 else np.zeros(0)
        phi = np.maximum(phi, max(settings.min_mass_fraction, 1e-6) * max(phi.max(initial=0.0), 1e-12))
        if len(phi):
            mass[a + 1:b - 1] = muscle.volume * settings.density * phi / phi.sum()
            inv_mass[a + 1:b - 1] = 1.0 / mass[a + 1:b - 1]
            w_ref[i] = 2.0 * len(phi) / (muscle.volume * settings.density)
        mid = 0.5 * (s[:-1] + s[1:])
        is_tendon = (mid < settings.tendon_fraction) | (mid > 1.0 - settings.tendon_fraction)
        tendon[a:b - 1] = is_tendon
        rest_length[a:b - 1] = np.where(is_tendon, seg, settings.belly_rest_fraction * seg)
    groups = [None] * count if collision_groups is None else list(collision_groups)
    if len(groups) != count:
        raise ValueError(f"collision_groups needs one entry per muscle ({count}), got {len(groups)}.")
    labels = sorted({g for g in groups if g is not None})
    muscle_group = np.array([-1 if g is None else labels.index(g) for g in groups], dtype=np.int64)
    members = [np.flatnonzero(muscle_group == gi) for gi in range(len(labels))]
    group_start = np.zeros(len(labels) + 1, dtype=np.int64)
    np.cumsum([len(mm) for mm in members], out=group_start[1:])
    group_members = np.concatenate(members).astype(np.int64) if members else np.zeros(0, dtype=np.int64)
    islands = [list(mm) for mm in members] + [[i] for i in range(count) if muscle_group[i] < 0]
    island_start, island_members = _csr(islands)

    caps = np.zeros((0, 2, 3)) if capsules is None else np.asarray(capsules, dtype=np.float64).reshape(-1, 2, 3)
    if not np.all(np.isfinite(caps)):
        raise ValueError("bone capsules contain NaN or infinite coordinates.")
    radius = np.zeros(len(caps)) if capsule_radius is None else np.asarray(capsule_radius, float).reshape(-1)
    if len(radius) != len(caps):
        raise ValueError(f"capsule_radius needs one radius per capsule ({len(caps)}), got {len(radius)}.")
    if np.any(~np.isfinite(radius)) or np.any(radius < 0):
        raise ValueError("capsule radii must be finite and 0 or more.")
    reach = np.array([m.width * m.profile().v * _profile.profile_max(
        m.shape.alpha_rest, m.shape.beta_rest, m.shape.alpha_active, m.shape.beta_active, m.activation)
        for m in muscles])
    cap_lists, grid_lists = [], []
    for i, muscle in enumerate(muscles):
        margin = 0.25 * muscle.rest_length if capsule_margin is None else float(capsule_margin)
        axis = muscle.axis
        near = [c for c in range(len(caps))
                if _segment_distance(axis[0], axis[-1], caps[c, 0], caps[c, 1]) < reach[i] + radius[c] + margin]
        cap_lists.append(near)
        near_grids = [g for g, bg in enumerate(grids)
                      if _box_distance(axis, bg.grid) < reach[i] + margin]
        grid_lists.append(near_grids)
    cap_start, cap_index = _csr(cap_lists)
    grid_start, grid_index = _csr(grid_lists)
    grid_values, grid_offset, grid_dims, grid_origin, grid_spacing, grid_tf = _pack_grids(grids)
    exponents = np.array([(m.shape.alpha_rest - 1, m.shape.beta_rest - 1, m.shape.alpha_active - 1,
                           m.shape.beta_active - 1) for m in muscles], dtype=np.int64)
    return PBDModel(settings, tuple(getattr(m, "name", str(i)) for i, m in enumerate(muscles)), axis_start, rest,
                    inv_mass, w_ref, particle_s, rest_length, tendon, muscle_group, group_start, group_members,
                    island_start, island_members, cap_start, cap_index, radius, grid_start, grid_index, grid_values,
                    grid_offset, grid_dims, grid_origin, grid_spacing, grid_tf, exponents,
                    np.array([m.volume for m in muscles]), np.array([m.endpoint_normals() for m in muscles]), caps,
                    mass)


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


def initial_state(model: PBDModel) -> PBDState:
    """The rest axes at rest, velocities zero, last-frame inputs = rest inputs (not settled: see rest_state)."""
    grid_count = len(model.grid_dims)
    identity = np.zeros((grid_count, 3, 4))
    identity[:, :, :3] = np.eye(3)
    M = model.muscle_count
    ends = np.stack([model.rest_points[model.axis_start[:-1]], model.rest_points[model.axis_start[1:] - 1]], axis=1)
    return PBDState(model.rest_points.copy(), np.zeros_like(model.rest_points), ends.reshape(M, 2, 3),
                    model.rest_normals.copy(), model.rest_capsules.copy(), identity)


REST_ROUNDS = 8
"""Settle-then-reparameterise rounds of :func:`rest_state` at most."""
REST_PARAMETER_TOL = 1e-6
"""Largest change of a particle's arc parameter that ends :func:`rest_state`."""


def rest_state(model: PBDModel, stiffness=None, fps: float = 24.0, max_frames: int = 4000,
               tolerance: float = 1e-11, start=None) -> PBDState:
    """The equilibrium of the axes under their own tension with the rig at rest: the simulation's start state.

    Belly constraints (rest length 2 %) pull against the tendons, so the evenly spaced axis is not at equilibrium:
    the Gauss-Seidel fixed point gathers particles towards the middle, most with the paper's PBD and with XPBD at
    one iteration (the light particles near the tendons take most of each correction). The straight rest shape is
    the same either way, and settling first means a rig at rest does not move when the animation starts.
    The model's particle parameters ``particle_s`` are updated to the settled positions, so the particle radii
    ``D_i = w Phi(s_i)`` are taken where the particles really are; that changes the radii the contacts use, so
    settling and updating repeat until the parameters stop changing. ``tolerance`` [m]: largest move in a frame.

    ``start``: optional ``(x (P, 3) [m], particle_s (P,))`` of an earlier settle of the same model (a host keeps
    them with its file): settling starts there and ends after a frame or two instead of thousands (the full body
    takes ~2000 frames cold). The same end test applies, so a wrong or outdated start only costs time.
    """
    solver = PBDSolver(model)
    control = PBDControl(stiffness=stiffness)
    state = initial_state(model)
    if start is not None:
        x0, s0 = (np.asarray(a, dtype=np.float64) for a in start)
        if x0.shape == state.x.shape and s0.shape == model.particle_s.shape and np.isfinite(x0).all() \
                and np.isfinite(s0).all():
            state.x[:] = x0
            model.particle_s[:] = s0
    nxt = state.copy()
    for _ in range(REST_ROUNDS):
        for _ in range(max_frames):
            solver.step(state, nxt, control, 1.0 / fps)
            moved = np.abs(nxt.x - state.x).max()
            state, nxt = nxt, state
            if moved < tolerance:
                break
        # the particles' arc parameters move with them, and with them the particle radii D_i: settle again until
        # the radii the contacts use are the ones where the particles are
        change = 0.0
        for m in range(model.muscle_count):
            a, b = model.axis_start[m], model.axis_start[m + 1]
            cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(state.x[a:b], axis=0), axis=1))])
            change = max(change, float(np.abs(cum / cum[-1] - model.particle_s[a:b]).max()))
            model.particle_s[a:b] = cum / cum[-1]
        if change < REST_PARAMETER_TOL:
            break
    state.v[:] = 0.0
    return state


class PBDSolver:
    """Advances a :class:`PBDState` by one frame. Holds scratch arrays and the muscles' field batch.

    After :meth:`step`, ``solver.batch`` (a :class:`core.muscle.batch.MuscleBatch`) holds the new axes with their
    control normals and widths from the new lengths (paper §6: updated after the solve), ready for skinning.
    """

    def __init__(self, model: PBDModel):
        self.model = model
        P, M = model.particle_count, model.muscle_count
        self.batch = MuscleBatch.allocate(np.diff(model.axis_start), model.exponents, model.volume, model.names)
        self._x_prev = np.zeros((P, 3))
        self._lam = np.zeros(P)
        self._length = np.zeros(M)
        self._chord_dev = np.zeros(M)
        self._status = np.zeros(M, dtype=np.int64)
        self._bad = np.zeros(M, dtype=np.int64)
        self.last_bad_particles = 0
        # inputs a control leaves at None (never written by the kernels, so shared between frames)
        self._default = {"activation": np.zeros(M), "stiffness": np.full(M, 0.5), "width scale": np.ones(M),
                         "eccentricity": np.zeros(M)}
        self._rest_ends = np.ascontiguousarray(np.stack([model.rest_points[model.axis_start[:-1]],
                                                         model.rest_points[model.axis_start[1:] - 1]], 1))
        self._gravity = np.asarray(model.settings.gravity, dtype=np.float64)

    def _per_muscle(self, value, name, lo=None, hi=None) -> np.ndarray:
        """(M,) float64 from ``value`` (None: the default, a scalar: the same for every muscle), checked."""
        if value is None:
            return self._default[name]
        M = self.model.muscle_count
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
        if arr.size == 1:
            arr = np.full(M, float(arr[0]))
        if arr.shape != (M,):
            raise ValueError(f"{name} needs one value per muscle ({M}), got {arr.size}.")
        # one min and one max decide the common case (NaN propagates into both); the messages below otherwise
        low, high = float(arr.min()), float(arr.max())
        if (math.isfinite(low) and math.isfinite(high) and (lo is None or low >= lo)
                and (hi is None or high <= hi)):
            return arr
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        raise ValueError(f"{name} must be from {lo} to {hi}.")

    def _inputs(self, control: PBDControl):
        m = self.model
        M = m.muscle_count
        activation = self._per_muscle(control.activation, "activation", 0.0, 1.0)
        stiffness = self._per_muscle(control.stiffness, "stiffness", 0.0, 1.0)
        width_scale = self._per_muscle(control.width_scale, "width scale", 1e-6, None)
        eccentricity = None
        if control.eccentricity is not None:
            eccentricity = np.minimum(self._per_muscle(control.eccentricity, "eccentricity", 0.0,
                                                       ECCENTRICITY_MAX + FLOAT32_SLACK), ECCENTRICITY_MAX)
        ends = _frame_array(control.endpoints, (M, 2, 3), "endpoints", self._rest_ends)
        chord = ends[:, 1] - ends[:, 0]
        span2 = np.einsum("ij,ij->i", chord, chord)
        if span2.min() <= 1e-18:  # span <= 1 nm
            bad = int(np.flatnonzero(span2 <= 1e-18)[0])
            raise ValueError(f"muscle {m.names[bad]}: origin and insertion are at the same place in this frame; "
                             f"check the bones it is attached to.")
        normals = _frame_array(control.normals, (M, 2, 3), "endpoint normals", m.rest_normals)
        caps = _frame_array(control.capsules, (m.capsule_count, 2, 3), "bone capsules", m.rest_capsules)
        T = len(m.grid_dims)
        if T:
            tf = _frame_array(control.grid_transforms, (int(m.grid_transform_index.max()) + 1, 4, 4),
                              "grid transforms", np.broadcast_to(np.eye(4), (int(m.grid_transform_index.max()) + 1,
                                                                              4, 4)))
            grid_inverse = np.linalg.inv(tf[m.grid_transform_index])[:, :3, :]
        else:
            grid_inverse = np.zeros((0, 3, 4))
        return activation, stiffness, width_scale, eccentricity, ends, normals, caps, grid_inverse

    def place(self, state: PBDState, control: PBDControl, x) -> None:
        """Put ``state`` straight into this frame: particles at ``x (P, 3)`` [m] (the axes' ends at ``control``'s
        endpoints), at rest, and the kinematic inputs the next step interpolates from set to ``control``'s, so that
        step moves nothing kinematic (a cut: nothing happens in between)."""
        _, _, _, _, ends, normals, caps, grid_inverse = self._inputs(control)
        x = np.array(x, dtype=np.float64)
        starts = self.model.axis_start
        x[starts[:-1]] = ends[:, 0]
        x[starts[1:] - 1] = ends[:, 1]
        state.x[:] = x
        state.v[:] = 0.0
        state.endpoints[:] = ends
        state.normals[:] = normals
        state.capsules[:] = caps
        state.grid_inverse[:] = grid_inverse

    def step(self, state_in: PBDState, state_out: PBDState, control: PBDControl, dt: float) -> None:
        """Advance one frame of ``dt`` seconds from ``state_in`` into ``state_out`` (may be the same object).

        Raises ``ValueError`` on bad input (NaN endpoints, out-of-range values, degenerate axes), naming the muscle.
        If the result has non-finite positions, ``state_out`` keeps ``state_in`` and ``ValueError`` is raised.

        Three kernel launches when there is no skin field: the frame's profile scalars from the axis lengths
        (``kernels/profile.frame_scalars``), the substeps (``kernels/pbd.pbd_substeps``), the axis geometry and
        widths after the frame (``kernels/axis.axis_update``).
        """
        from ...kernels.pbd import keep_inside, pbd_substeps
        from ...kernels.profile import frame_scalars

        dt = validation.positive(dt, "frame duration")
        model, s = self.model, self.model.settings
        activation, stiffness, width_scale, eccentricity, ends, normals, caps, grid_inverse = self._inputs(control)
        if eccentricity is None:
            eccentricity = self._default["eccentricity"]
        separate = state_out is not state_in
        if separate:
            np.copyto(state_out.x, state_in.x)
            np.copyto(state_out.v, state_in.v)
        x, v = state_out.x, state_out.v
        saved_x, saved_v = (state_in.x, state_in.v) if separate else (x.copy(), v.copy())

        def restore():
            if separate:
                state_out.assign(state_in)
            else:
                x[:], v[:] = saved_x, saved_v

        b = self.batch
        # this frame's profile scalars (activation, eccentricity); the kernel rescales widths per substep
        frame_scalars(model.axis_start, x, 1e-12, b.muscle_exponent, activation, eccentricity, b.volume,
                      width_scale, _profile.PHI_NORMALISER, _profile.K_TABLE, _profile.PROFILE_MAX_SAMPLES,
                      _profile.PROFILE_MAX_NEWTON, b._length, b.muscle_scalar)
        n_sub = s.substeps
        sub_dt = dt / n_sub
        chunks = [(0, n_sub)] if control.skin_field is None or not s.skin_every_substep \
            else [(k, k + 1) for k in range(n_sub)]
        for k0, k1 in chunks:
            pbd_substeps(k0, k1, n_sub, sub_dt, s.reference_dt, s.xpbd, s.iterations, s.reference_iterations,
                         s.damping, self._gravity,
                         s.friction, s.tendon_stiffness, x, v, self._x_prev, self._lam, model.inv_mass,
                         model.w_ref, model.particle_s, model.rest_length, model.tendon, stiffness,
                         state_in.endpoints, ends, state_in.normals, normals,
                         model.island_start, model.island_members,
                         model.muscle_group, model.group_start, model.group_members,
                         model.cap_start, model.cap_index, state_in.capsules, caps, model.cap_radius,
                         model.grid_start, model.grid_index, model.grid_values, model.grid_offset, model.grid_dims,
                         model.grid_origin, model.grid_spacing, state_in.grid_inverse, grid_inverse,
                         model.axis_start, b.axis_points, b.axis_cumulative, b.axis_tangent, b.axis_normal,
                         b.seg_tangent, b.seg_length, b.seg_angle, b.muscle_scalar, b.muscle_exponent,
                         b.muscle_bounds, b.volume, width_scale, self._length, self._chord_dev, self._status,
                         self._bad)
            if self._status.any():
                bad = int(np.flatnonzero(self._status)[0])
                restore()
                raise AxisCollapsed(f"muscle {model.names[bad]}: its axis collapsed to zero length during the "
                                    f"simulation; check its origin and insertion.")
            if control.skin_field is not None:
                values, grads = control.skin_field(x)
                keep_inside(x, v, model.inv_mass, np.ascontiguousarray(values, dtype=np.float64),
                            np.ascontiguousarray(grads, dtype=np.float64), float(control.skin_iso), sub_dt,
                            s.skin_max_step)
        # the kernel counts non-finite coordinates after the last substep; only the skin field can add more
        self.last_bad_particles = int(self._bad.sum())
        if self.last_bad_particles or (control.skin_field is not None and not np.all(np.isfinite(x))):
            restore()
            raise ValueError("the muscle simulation diverged (non-finite positions); the frame was not applied.")
        state_out.endpoints[:] = ends
        state_out.normals[:] = normals
        state_out.capsules[:] = caps
        state_out.grid_inverse[:] = grid_inverse
        # paper §6: after the solve, control normals and widths follow the new axes
        b.update_axes(x, normals, width_scale)


class AxisCollapsed(ValueError):
    """A muscle's axis shrank to nothing within a frame. Its ends move linearly from the last frame's places to
    this frame's within the substeps, so a pose that turns a muscle half a turn in one frame (a cut, a snapped
    root) sends both ends through the same point; ``MuscledCharacter`` then places the muscles straight into the
    new pose instead (``PBDSolver.place``)."""


def kinetic_energy(model: PBDModel, state: PBDState) -> float:
    """``sum 1/2 m v^2`` of the inner particles [J]."""
    return float(0.5 * np.sum(model.mass * np.einsum("ij,ij->i", state.v, state.v)))


def _frame_array(value, shape, name, default) -> np.ndarray:
    if value is None:
        return np.ascontiguousarray(default, dtype=np.float64).reshape(shape)
    arr = np.ascontiguousarray(value, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contain NaN or infinite values.")
    return arr


def _csr(lists):
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


def _segment_distance(p0, p1, q0, q1, samples: int = 33) -> float:
    """Distance between two segments (sampled; used once at build time for the broad phase)."""
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
