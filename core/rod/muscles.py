"""The muscles of a character that the VIPER rod solver moves instead of the paper's axis solver (the per-muscle
*Solver* choice).

:class:`RodMuscles` is what ``core.character.MuscledCharacter`` keeps for them: the rod model of those muscles
(``core/rod/model.py``), its solver, and where their particles sit in the character's axis state. The character's
:class:`core.pbd.state.PBDState` keeps its layout for every muscle; a rod muscle's inner particles are kinematic in
the axis model (:func:`freeze`), so the axis solver leaves them where the rod put them and the axis muscles that
share a contact set push against them. Each frame the rods step after the axes (:meth:`RodMuscles.step`), their
positions are copied into the state's ``x`` and ``v`` and their field (``core/rod/field.py``: the profile times the
rod's scales, turned with its twist) into the state's muscle batch, so the skin and the tracking read one batch.
The rods' own state is the state's ``rod`` field, kept in every snapshot.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..pbd.control import DEFAULT_ECCENTRICITY, DEFAULT_WIDTH_SCALE, PBDControl
from ..pbd.state import PBDState
from ..quality import RENDER, EvaluationQuality
from . import frames as _frames
from .field import rod_batch, update_batch
from .contacts import muscle_touches
from .model import RodModel, build_rod_model
from .settings import RodSettings
from .solver import RodChains, RodSolver
from .state import RodState

AXIS, ROD = "AXIS", "ROD"
SOLVERS = (AXIS, ROD)
"""The per-muscle solver names: ``AXIS`` the paper's PBD axis (default), ``ROD`` the VIPER rod."""

REST_FRAMES = 2000
"""Frames :func:`rest_state` holds the rods at rest at most."""
REST_TOLERANCE = 1e-11
"""[m] :func:`rest_state` ends at the first frame that moves no rod vertex this far (nor any scale by as much)."""
REST_ROUNDS = 8
"""Settle-and-rebuild rounds of :meth:`RodMuscles.rest_state` at most."""
REST_SCALE_TOL = 1e-3
"""A rest settle that leaves no scale further than this from 1 ends :meth:`RodMuscles.rest_state`."""

_BATCH_POINT_ARRAYS = ("axis_points", "axis_cumulative", "axis_tangent", "axis_normal", "seg_tangent",
                       "seg_length", "seg_angle", "axis_scale")
_BATCH_MUSCLE_ARRAYS = ("muscle_scalar", "muscle_bounds")


def resolve_solvers(solvers, count: int) -> np.ndarray:
    """``(count,)`` bool, True for the muscles simulated as rods, from ``solvers``: None (every muscle ``AXIS``) or
    one name of :data:`SOLVERS` per muscle (any case); ``ValueError`` with a plain sentence otherwise."""
    if solvers is None:
        return np.zeros(count, dtype=bool)
    names = [solvers] if isinstance(solvers, str) else list(solvers)
    if len(names) != count:
        raise ValueError(f"the muscles' solver setting needs one value per muscle ({count}), got {len(names)}.")
    out = np.zeros(count, dtype=bool)
    for m, name in enumerate(names):
        key = str(name).upper()
        if key not in SOLVERS:
            raise ValueError(f"a muscle's solver must be 'AXIS' (the paper's) or 'ROD' (VIPER), got {name!r}.")
        out[m] = key == ROD
    return out


def freeze(model, rod: np.ndarray, rest_x=None):
    """The axis model ``model`` (``core.pbd.model.PBDModel``) with the inner particles of the muscles ``rod (M,)``
    kinematic (inverse mass 0, not kept inside the skin): the axis solver moves only their ends. ``rest_x
    (P_rod, 3)`` [m]: the rods' rest positions, the rows of those muscles in the model's rest axes (so the axes
    settle against the rods where they rest)."""
    counts = np.diff(model.axis_start)
    mask = np.repeat(rod, counts)
    rest = model.rest_points.copy()
    if rest_x is not None:
        rest[mask] = rest_x
    return replace(model, inv_mass=np.where(mask, 0.0, model.inv_mass),
                   skin_inv_mass=np.where(mask, 0.0, model.skin_inv_mass), rest_points=rest)


def placed_frames(model: RodModel, x, normals) -> np.ndarray:
    """``(F, 4)`` frames of rods at ``x (P, 3)`` [m] with endpoint normals ``normals (M, 2, 3)``, built as
    :func:`core.rod.model.build_rod_model` builds the rest frames: anchors from the end normals, segments
    parallel transported from the origin normal."""
    out = np.zeros((model.frame_count, 4))
    for i in range(model.muscle_count):
        a, b = int(model.axis_start[i]), int(model.axis_start[i + 1])
        pts = x[a:b]
        t0 = (pts[1] - pts[0]) / np.linalg.norm(pts[1] - pts[0])
        t1 = (pts[-1] - pts[-2]) / np.linalg.norm(pts[-1] - pts[-2])
        q = np.zeros((b - a + 1, 4))
        q[0] = _frames.frame_quaternion(_frames.perpendicular(normals[i, 0], t0), t0)
        q[1:-1] = _frames.transported_frames(pts, normals[i, 0])
        q[-1] = _frames.frame_quaternion(_frames.perpendicular(normals[i, 1], t1), t1)
        for j in range(1, len(q)):
            if np.dot(q[j], q[j - 1]) < 0.0:
                q[j] = -q[j]
        out[a + i:a + i + len(q)] = q
    return out


class RodMuscles:
    """The rod muscles of a character: ``index (R,)`` their places among the character's ``M`` muscles,
    ``points (P_rod,)`` their particles' places in its axis state, the rod ``model`` and ``solver``, and the
    ``batch`` their field is computed in before it is copied into the character's."""

    def __init__(self, muscles, rod: np.ndarray, axis_start, settings: RodSettings | None = None, capsules=None,
                 capsule_radius=None, bone_collisions=None, keep_inside=None, skin_max_step: float = 0.005,
                 contact_sets=None, overlap_groups=None, bundles=None):
        import copy

        self.index = np.flatnonzero(rod)
        chosen = [copy.deepcopy(muscles[m]) for m in self.index]  # their axes become the rods' rest (rest_state)
        self._chosen = chosen
        touches, chain_rod = muscle_touches(rod, contact_sets, overlap_groups, bundles)
        self._build_args = dict(settings=settings, capsules=capsules,
                                capsule_radius=None if capsule_radius is None else capsule_radius[self.index],
                                bone_collisions=None if bone_collisions is None else bone_collisions[self.index],
                                touches=touches, chain_rod=chain_rod)
        self.axis_start = np.asarray(axis_start, dtype=np.int64)
        """``(M+1,)`` the character's axis layout (the chains the rods collide with)."""
        self.particle_s = None
        """``(P,)`` the axis particles' arc parameters (their collision radii, ``kernels.rod.chain_radii``); the
        character sets them once its axes have settled."""
        self.points = np.concatenate([np.arange(axis_start[m], axis_start[m + 1]) for m in self.index])
        self.keep_inside = np.ones(len(self.index), dtype=bool) if keep_inside is None else \
            np.asarray(keep_inside, dtype=bool)[self.index]
        """``(R,)`` bool: the rod muscles kept inside the skin's parts (the axis's muscle-skin constraint)."""
        self.skin_max_step = float(skin_max_step)
        self._build()
        if len(self.points) != self.model.vertex_count:
            raise ValueError("the rod and axis layouts of a muscle differ; this is a bug.")
        self.timings: dict = {}
        """[s] the last :meth:`step`'s ``rod solve`` (the rod kernel and the keep-inside constraint) and ``rod field``
        (:meth:`fill`)."""
        self._ecc = np.array([[m.shape.eccentricity_rest, m.shape.eccentricity_active] for m in chosen])
        self._shapes = [(m.shape.alpha_rest, m.shape.beta_rest, m.shape.alpha_active, m.shape.beta_active)
                        for m in chosen]

    def _build(self) -> None:
        """The rod model of the chosen muscles at their current axes, its solver, batch and rest profile."""
        chosen = self._chosen
        self.model = build_rod_model(chosen, **self._build_args)
        self.solver = RodSolver(self.model)
        self.batch = rod_batch(self.model, chosen)
        self._shapes = [(m.shape.alpha_rest, m.shape.beta_rest, m.shape.alpha_active, m.shape.beta_active)
                        for m in chosen]
        starts = self.model.axis_start
        self._rest_phi = np.concatenate([self._profile(i, self._arc(self.model.rest_points[a:b]))
                                         for i, (a, b) in enumerate(zip(starts[:-1], starts[1:]))])

    @staticmethod
    def _arc(points) -> np.ndarray:
        cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(points, axis=0), axis=1))])
        return cum / cum[-1]

    def _profile(self, i: int, t) -> np.ndarray:
        """The rest profile ``Phi_0(t)`` of rod muscle ``i`` (the one its field is drawn with)."""
        from ..muscle.profile import activation_profile

        return activation_profile(*self._shapes[i], 0.0, t)

    def field_scales(self, x, s) -> np.ndarray:
        """``(P_rod,)`` the scales the field takes for rods at ``x (P_rod, 3)`` [m] with scales ``s``: the field lays
        the profile out by the current arc length ``t``, so each vertex's scale is ``s Phi_0(t_rest) / Phi_0(t)``
        and the field's radius there is the rod's own ``r0 s`` wherever the belly slid along the axis (a contracted
        belly); 1 at the ends and where the profile is below 1e-3 of its largest value."""
        out = np.array(s, dtype=np.float64)
        starts = self.model.axis_start
        for i, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
            phi = self._profile(i, self._arc(x[a:b]))
            rest = self._rest_phi[a:b]
            ok = phi > 1e-3 * rest.max()
            ok[[0, -1]] = False
            out[a:b][ok] *= rest[ok] / phi[ok]
        return out

    def control(self, control: PBDControl) -> PBDControl:
        """The rods' share of the character's ``control`` (endpoints, normals and animated values of the rod
        muscles; every capsule)."""
        def pick(value):
            if value is None:
                return None
            arr = np.asarray(value, dtype=np.float64)
            return arr[self.index] if arr.ndim else arr

        return PBDControl(endpoints=pick(control.endpoints), normals=pick(control.normals),
                          activation=pick(control.activation), stiffness=pick(control.stiffness),
                          width_scale=pick(control.width_scale), eccentricity=pick(control.eccentricity),
                          capsules=control.capsules)

    def rest_state(self, stiffness=None, dt: float = 1.0 / 24.0) -> RodState:
        """The rods' rest with the rig at rest (activation 0, as the axis rest, ``core.pbd.settle.rest_state``):
        frames of ``dt`` [s] holding the rest until one moves no vertex ``REST_TOLERANCE`` [m] and no scale as much
        (at most ``REST_FRAMES``); where that left a scale off 1 (a bone's touch squeezing the rod built from an
        axis through it), the model is rebuilt with the settled axes as its rest and settled again (at most
        ``REST_ROUNDS`` rounds, until no scale is ``REST_SCALE_TOL`` off 1), so the rest holds the muscle's volume;
        then every rate zeroed. A rod built straight from a rest axis clear of its bones is at rest in the first
        frame of the first round."""
        control = PBDControl(stiffness=stiffness)
        for round_ in range(REST_ROUNDS):
            state = RodState.at_rest(self.model)
            spare = state.copy()
            for _ in range(REST_FRAMES):
                self.solver.step(state, spare, control, dt)
                moved = max(float(np.abs(spare.x - state.x).max()), float(np.abs(spare.s - state.s).max()))
                state, spare = spare, state
                if moved < REST_TOLERANCE:
                    break
            if float(np.abs(state.s - 1.0).max()) < REST_SCALE_TOL or round_ == REST_ROUNDS - 1:
                break
            starts = self.model.axis_start
            for i, muscle in enumerate(self._chosen):
                muscle.set_axis(state.x[starts[i]:starts[i + 1]])
            self._build()
        for rate in (state.v, state.sv, state.qd):
            rate[:] = 0.0
        return state

    def place(self, rod: RodState, control: PBDControl, x) -> None:
        """Put ``rod`` straight into this frame at the character's placed particles ``x (P, 3)`` [m] (its rod
        muscles' rows): scales 1, frames along the placed axes, nothing moving, the kinematic inputs the next step
        interpolates from set to ``control``'s (a cut)."""
        mine = self.control(control)
        frame = self.solver.frame(rod, mine)
        rod.x[:] = x[self.points]
        rod.s[:] = 1.0
        rod.q[:] = placed_frames(self.model, rod.x, frame.normal_cur)
        for rate in (rod.v, rod.sv, rod.qd):
            rate[:] = 0.0
        rod.endpoints[:] = frame.end_cur
        rod.normals[:] = frame.normal_cur
        rod.capsules[:] = frame.cap_cur

    def step(self, state_in: PBDState, state_out: PBDState, control: PBDControl, dt: float,
             quality: EvaluationQuality = RENDER) -> None:
        """One frame of the rods from ``state_in.rod`` into ``state_out.rod``, at the substeps of their settings
        for ``dt`` [s] scaled by ``quality``; then :meth:`fill` ``state_out``. ``ValueError`` as
        :meth:`core.rod.solver.RodSolver.step`."""
        import time

        substeps = quality.substeps(self.model.settings.substeps_for(dt))
        t0 = time.perf_counter()
        self.solver.step(state_in.rod, state_out.rod, self.control(control), dt, substeps,
                         self.chains(state_in, state_out))
        if control.skin_field is not None and self.keep_inside.any():
            self._keep_inside(state_out.rod, control)
        t1 = time.perf_counter()
        self.fill(state_out, control)
        self.timings = {"rod solve": t1 - t0, "rod field": time.perf_counter() - t1}

    def chains(self, state_in: PBDState, state_out: PBDState) -> RodChains | None:
        """The axis muscles as the rods collide with them this frame (:class:`core.rod.solver.RodChains`): the
        character's particles at the frame's start (``state_in.x``) and after the axis solver's step
        (``state_out.x``), with the radii of ``state_out``'s widths; None when no rod touches an axis muscle."""
        from ...kernels.rod import chain_radii

        model = self.model
        if not np.any(model.chain_rod[model.touch_chain] < 0) or state_out.muscles is None:
            return None
        if self.particle_s is None:
            raise ValueError("the rods' muscle contacts need the axis particles' parameters; this is a bug.")
        arrays = state_out.muscles.arrays
        radius = np.zeros(len(state_out.x))
        chain_radii(self.axis_start, self.particle_s, arrays.muscle_exponent, arrays.muscle_scalar, radius)
        return RodChains(self.axis_start, state_in.x, state_out.x, radius)

    def _keep_inside(self, rod: RodState, control: PBDControl) -> None:
        """The muscle-skin constraint after the frame, as the axis solver's (``kernels/pbd.py`` ``keep_inside``,
        paper §6.3): the inner vertices of the rods kept inside move back inside ``control.skin_field`` at
        ``control.skin_iso`` (their velocities with them); frames and scales follow in the next frame's solve."""
        from ...kernels.pbd import keep_inside

        counts = np.diff(self.model.axis_start)
        weight = self.model.inv_mass * np.repeat(self.keep_inside, counts)
        values, grads = control.skin_field(rod.x)
        keep_inside(rod.x, rod.v, np.ascontiguousarray(weight), np.ascontiguousarray(values, dtype=np.float64),
                    np.ascontiguousarray(grads, dtype=np.float64), float(control.skin_iso), self.skin_max_step)

    def fill(self, state: PBDState, control: PBDControl) -> None:
        """Copy the rods of ``state.rod`` into ``state``: positions and velocities into ``x`` and ``v``, and their
        field (``core.rod.field.update_batch``, with ``control``'s eccentricity and width scale) into the muscle
        batch, when there is one."""
        rod = state.rod
        state.x[self.points] = rod.x
        state.v[self.points] = rod.v
        if state.muscles is None:
            return
        mine = self.control(control)
        R = len(self.index)
        eccentricity = mine.eccentricity if mine.eccentricity is not None else np.full(R, DEFAULT_ECCENTRICITY)
        width_scale = mine.width_scale if mine.width_scale is not None else np.full(R, DEFAULT_WIDTH_SCALE)
        update_batch(self.batch, self.model, rod.x, self.field_scales(rod.x, rod.s), rod.q,
                     eccentricity=np.broadcast_to(eccentricity, R),
                     width_scale=np.broadcast_to(width_scale, R))
        self.copy_batch(state.muscles)

    def copy_batch(self, target) -> None:
        """Copy the rods' field batch into their rows of the character's batch ``target``
        (:class:`core.muscle.batch.MuscleBatch`)."""
        src, dst = self.batch.arrays, target.arrays
        for name in _BATCH_POINT_ARRAYS:
            getattr(dst, name)[self.points] = getattr(src, name)
        for name in _BATCH_MUSCLE_ARRAYS:
            getattr(dst, name)[self.index] = getattr(src, name)
        target.length[self.index] = self.batch.length
        target.status[self.index] = self.batch.status

    def rest_eccentricity(self, activation) -> np.ndarray:
        """``(R,)`` the rod muscles' eccentricity at ``activation (M,)`` of the character (rest and active mixed)."""
        from ..muscle.primitive import eccentricity_at

        return eccentricity_at(self._ecc[:, 0], self._ecc[:, 1], np.asarray(activation, dtype=np.float64)[self.index])
