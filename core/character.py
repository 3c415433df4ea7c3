"""A skinned character with muscles, one frame at a time: the whole per-frame pipeline of paper §7.2 (Fig. 10).

:class:`MuscledCharacter` owns the muscles' PBD system (``core/pbd/``), the implicit skin field
(``core/skin/field.py``) and the Implicit Skinning deformer (``core/skin/deformer.py``). Muscles are attached to bones:
the origin follows ``origin_bones[m]``, the insertion ``insertion_bones[m]``, and the muscle joins the skin part of
``skin_bones[m]``. Bone capsules (radius from the skin, ``capsule_radius_from_skin``, or the muscle's own bone
radius) are the muscles' bone collisions; muscles sharing a skin bone push each other (their contact set), except
those of one overlap group; the axes are kept inside the skin's parts (the field without the muscles, at
``KEEP_INSIDE_ISO``), so a muscle crossing a bent joint wraps around the fold instead of cutting across it. Each
switch is per muscle (:class:`core.pbd.collisions.MuscleCollisions`).

Per frame, :meth:`MuscledCharacter.frame` takes the bones' rest -> posed transforms ``B (B, 4, 4)`` and the
muscles' animated values (one :class:`core.pbd.control.MuscleInputs`, :meth:`MuscledCharacter.inputs`) and runs:
**pose** (DQS), **PBD** (one frame of axis dynamics from the muscles' cached state; the output state carries the
muscles' new axes and widths), **field** (grids placed, the muscles taken from that state), **tracking**;
``timings`` [s] has each stage.
Vertices at the same rest place (a mesh split at its seams) are welded for all of this and move as one
(``core/skin/weld.py``). The PBD state is kept between calls: ``state()`` / ``restore()`` snapshot and resume it,
``reset()`` goes back to the settled rest state, ``settle(B)`` then lets the muscles come to rest in a shot's first
pose. Bind happens with the axes settled under their own tension (``rest_state``), so a rig at rest gives back its
rest mesh.

Fats (``core/fat``, thesis ch. 6), if given, hang on ``fat_bones[k]``, join that bone's skin part and step after the
muscles in each frame (their own solver, ``core/fat/dynamics.py``), colliding with the same bone capsules; the
state then also holds them (``core/fat/state.MusclesAndFat``).
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .fat.batch import FatBatch
from .fat.dynamics import FatControl, FatInputs, FatSolver, build_fat_model
from .fat.state import MusclesAndFat
from .skin.deformer import ImplicitSkinDeformer
from .muscle.batch import pack_muscles
from .pbd.collisions import MuscleCollisions, coincident_overlaps
from .pbd.control import MuscleInputs, PBDControl, muscle_inputs
from .pbd.model import build_pbd_model, capsule_radius_from_skin
from .pbd.settings import PBDSettings
from .pbd.settle import initial_state, rest_state
from .pbd.solver import AxisCollapsed, PBDSolver
from .pbd.state import PBDState
from .quality import RENDER, EvaluationQuality
from .rod.muscles import RodMuscles, freeze, resolve_solvers
from .rod.settings import RodSettings
from .rig import Rig
from .skin.field import SkinSettings, bind_skin_field, join_muscles
from .skin.parts import vertex_normals
from .skin.skinning import REACH_FACTOR, check_rigid
from .skin.tracking import STATE_CONTACT, TrackingSettings
from .skin.weld import weld


CREASE_RINGS = 2
"""Rings around the vertices stopped at a contact surface whose offsets (shape keys) lose their normal component
too, fully, and over how many more rings that fades (:meth:`MuscledCharacter.offset_turns`). One: with none, a key
along the normals at the bent elbow pushed the ring next to the crease through the other side (43 triangles
crossed, 0 without the key); with one, 2; two rings from the contact on a key keeps its whole effect (a belly key
losing 7 of its 10 mm three rings away, with three rings and three more fading, did not)."""
START_SETTLE_FRAMES = 24
"""PBD frames :meth:`MuscledCharacter.settle` holds the first pose of a shot at least (1 s at 24 fps)."""
START_SETTLE_MAX_FRAMES = 120
"""PBD frames :meth:`MuscledCharacter.settle` holds the first pose of a shot at most (5 s at 24 fps)."""
START_SETTLE_STILL = 1e-5
"""[m] :meth:`MuscledCharacter.settle` ends (after ``START_SETTLE_FRAMES``) at the first frame that moves no muscle
particle this far."""
REST_TOGETHER_FRAMES = 480
"""Frames :meth:`MuscledCharacter._settle_together` holds the rest with rods and axes pushing each other at most."""
REST_TOGETHER_TOL = 1e-10
"""[m] :meth:`MuscledCharacter._settle_together` ends at the first frame that moves no particle this far."""
KEEP_INSIDE_ISO = 0.4
"""Iso-value of the skin's parts without the muscles (compact convention) inside which the muscle axes are kept
(paper §6.3, muscle-skin collision); ``None`` turns the constraint off."""


class MuscledCharacter:
    """See the module docstring. ``rig``: an object with vertices, faces, weights, heads, tails, parents, names
    (``core.rig.Rig``); ``muscles``: :class:`core.muscle.primitive.FusiformMuscle` at rest, or none at all (Implicit
    Skinning alone: a mesh of the character that no muscle lies on, e.g. the head; the state is then empty).
    ``muscle_collisions`` False turns every muscle-muscle collision off; ``keep_inside`` is the iso-value of the
    muscle-skin constraint (None: off for all); ``collisions`` says per muscle what it collides with
    (:class:`core.pbd.collisions.MuscleCollisions`, default: everything). ``fats``:
    :class:`core.fat.primitive.FatPrimitive` at rest, on ``fat_bones (F,)``; ``fat_collide_bones (F,)`` bool (default
    all). ``solvers``: per muscle ``'AXIS'`` (the paper's PBD axis, default) or ``'ROD'`` (a VIPER rod,
    ``core/rod/muscles.py``, with ``rod`` its :class:`core.rod.settings.RodSettings`); None: every muscle ``'AXIS'``.
    A rod muscle collides with its bones (VIPER's touch constraint) and with the muscles of its contact set, axes
    and rods, which push it as it pushes them (``core/rod/contacts.py``); the rods of one bundle
    (``MuscleCollisions.bundles``) push each other even in one overlap group."""

    def __init__(self, rig, muscles, origin_bones, insertion_bones, skin_bones, pbd: PBDSettings | None = None,
                 skin: SkinSettings | None = None, tracking: TrackingSettings | None = None,
                 muscle_collisions: bool = True, keep_inside: float | None = KEEP_INSIDE_ISO, rest_hint=None,
                 settled_rest=None, collisions: MuscleCollisions | None = None, fats=None, fat_bones=None,
                 fat_collide_bones=None, solvers=None, rod: RodSettings | None = None):
        self.rig = rig
        self.weld = weld(rig.vertices, rig.faces, rig.weights)  # split vertices move as one (core/skin/weld.py)
        if not self.weld.identity:
            rig = Rig(self.weld.vertices, self.weld.faces, self.weld.weights, rig.heads, rig.tails, rig.parents,
                      rig.names)
        self.muscles = list(muscles)
        B = len(rig.heads)
        self.origin_bones = self._bones(origin_bones, B, "origin")
        self.insertion_bones = self._bones(insertion_bones, B, "insertion")
        self.skin_bones = self._bones(skin_bones, B, "skin")
        labels = np.argmax(rig.weights, axis=1)
        radius = np.array([capsule_radius_from_skin(rig.heads[j], rig.tails[j], rig.vertices[labels == j])
                           if np.any(labels == j) else 0.005 for j in range(B)])
        self.capsules_rest = np.stack([rig.heads, rig.tails], axis=1)
        self.collisions = (collisions or MuscleCollisions()).resolved(len(self.muscles))
        c = self.collisions
        # (M, B) [m]: each muscle sees the bones at their automatic radius, or all at its own
        self.capsule_radius = np.where(np.isfinite(c.bone_radius)[:, None], c.bone_radius[:, None], radius[None, :])
        sets = [int(j) if muscle_collisions and on else None for j, on in zip(self.skin_bones, c.muscles)]
        # muscles placed through each other share an overlap group: their contacts have no side to push to
        groups = coincident_overlaps([m.axis for m in self.muscles], [m.width for m in self.muscles], sets,
                                     c.overlap_groups) if self.muscles else c.overlap_groups
        overlap = [int(g) if g >= 0 else None for g in groups]
        self.rod_muscles = resolve_solvers(solvers, len(self.muscles))
        """``(M,)`` bool: the muscles simulated as VIPER rods."""
        self.rods = None
        """:class:`core.rod.muscles.RodMuscles` of the rod muscles, or None when there are none."""
        self._ecc = np.array([[m.shape.eccentricity_rest, m.shape.eccentricity_active]
                              for m in self.muscles]).reshape(-1, 2)
        self._activation_default = np.array([m.activation for m in self.muscles], dtype=np.float64)
        self.fats = list(fats or [])
        self.fat_bones = np.asarray(fat_bones if self.fats else [], dtype=np.int64).reshape(-1)
        if np.any(self.fat_bones < 0) or np.any(self.fat_bones >= B):
            raise ValueError(f"a fat's bone index is out of range (the rig has {B} bones).")
        # the skin first, without the muscles: they settle inside it, then join it where they came to rest
        unjoined = bind_skin_field(rig.vertices, rig.faces, rig.weights, rig.heads, rig.tails, rig.parents,
                                   settings=skin, bone_names=rig.names,
                                   fats=FatBatch.of(self.fats) if self.fats else None,
                                   fat_bones=self.fat_bones if self.fats else None)
        self.keep_inside = keep_inside
        self.hull = unjoined.without_muscles()
        if self.muscles:
            built = build_pbd_model(self.muscles, pbd, capsules=self.capsules_rest,
                                    capsule_radius=self.capsule_radius, contact_sets=sets, overlap_groups=overlap,
                                    bone_collisions=c.bones & ~self.rod_muscles, keep_inside=c.keep_inside)
            if self.rod_muscles.any():  # built from the axes as given, before anything settles
                rod = replace(rod or RodSettings(), contact_friction=built.settings.contact_friction,
                              contact_damping_ratio=built.settings.contact_damping_ratio)  # one contact law
                bundles = [int(g) if g >= 0 else None for g in c.bundles]
                self.rods = RodMuscles(self.muscles, self.rod_muscles, built.axis_start, rod,
                                       capsules=self.capsules_rest, capsule_radius=self.capsule_radius,
                                       bone_collisions=c.bones, keep_inside=c.keep_inside,
                                       skin_max_step=built.settings.skin_max_step, contact_sets=sets,
                                       overlap_groups=overlap, bundles=bundles)
                rod_rest = self.rods.rest_state()  # first: the axes settle against the rods at their rest
                built = freeze(built, self.rod_muscles, rod_rest.x)
            stored = self._stored_rest(built, settled_rest)
            if stored is None:
                held = self._rest_control(built)
                if rest_hint is None:  # settle from scratch, then once more from there, as a bind from the hint does
                    cold_model, cold = rest_state(built, control=held)
                    rest_hint = (cold.x.copy(), cold_model.particle_s.copy())
                stored = rest_state(built, start=rest_hint, control=held)
            # the model with the settled particle parameters (PBDModel.with_particle_s) and its rest state
            self.model, self._rest = stored
            self.solver = PBDSolver(self.model)
            self._settled_x = self._rest.x.copy()  # the axes' own rest, what settled_rest() gives back
            if self.rods is not None:  # the rods' own rest, mirrored into the axis state
                self.rods.particle_s = self.model.particle_s
                self._rest.rod = rod_rest
                self.rods.fill(self._rest, PBDControl.of(self.inputs()))
                self._settle_together()
        else:  # Implicit Skinning alone: nothing to simulate, the state is empty
            self.model = self.solver = None
            self._rest = PBDState.empty()
            self._settled_x = self._rest.x.copy()
            rest_hint = (self._rest.x.copy(), np.zeros(0))
        self._rest_hint = rest_hint
        self._state = self._rest.copy()
        self._next = self._rest.copy()
        ends = self._rest.endpoints
        self.origin_rest = np.concatenate([ends[:, 0], np.ones((len(self.muscles), 1))], axis=1)
        self.insertion_rest = np.concatenate([ends[:, 1], np.ones((len(self.muscles), 1))], axis=1)
        self.normals_rest = self._rest.normals.copy()
        for m, muscle in enumerate(self.muscles):  # bind the skin with the settled axes
            a, b = self.model.axis_start[m], self.model.axis_start[m + 1]
            muscle.set_axis(self._rest.x[a:b])
        self.fat_model = build_fat_model(self.fats, self.fat_bones, self.capsules_rest, radius,
                                         fat_collide_bones) if self.fats else None
        self.fat_inputs: FatInputs | None = None
        """The fats' animated values for a step given none (a host sets them with each frame's pose)."""
        if self.fat_model is not None:
            self.fat_solver = FatSolver(self.fat_model)
            self._fat_rest = self.fat_model.rest_state()
            self._fat_state = self._fat_rest.copy()
            self._fat_next = self._fat_rest.copy()
        bound = pack_muscles(self.muscles) if self.muscles else None
        if self.rods is not None:  # the skin binds the rods' rest field (their scales and twist)
            self.rods.copy_batch(bound)
        self.skin = unjoined if bound is None else join_muscles(
            unjoined, rig.vertices, bound, self.skin_bones, np.stack([self.origin_bones, self.insertion_bones],
                                                                      axis=1), rig.names)
        self.deformer = ImplicitSkinDeformer(self.skin, rig.vertices, rig.faces, rig.weights, tracking,
                                             bone_names=rig.names)
        self.reach = REACH_FACTOR * max(float(np.linalg.norm(np.ptp(rig.vertices, axis=0))), 1e-3)
        self.timings: dict = {}

    def _settle_together(self, dt: float = 1.0 / 24.0) -> None:
        """Where rods touch axis muscles (``RodMuscles.chains``), the rest is where both push each other: the rods
        rested alone, then the axes against them (one way), so the rig is held at rest with both solvers until a
        frame moves no particle ``REST_TOGETHER_TOL`` [m] nor any scale as much (at most ``REST_TOGETHER_FRAMES``);
        then every rate is zeroed. Nothing to do without such contacts."""
        model = self.rods.model
        if not np.any(model.chain_rod[model.touch_chain] < 0):
            return
        control = PBDControl.of(self.inputs())
        state, spare = self._rest, self._rest.copy()
        for _ in range(REST_TOGETHER_FRAMES):
            self.solver.step(state, spare, control, dt)
            self.rods.step(state, spare, control, dt)
            moved = max(float(np.abs(spare.x - state.x).max()), float(np.abs(spare.rod.s - state.rod.s).max()))
            state, spare = spare, state
            if moved < REST_TOGETHER_TOL:
                break
        for rate in (state.v, state.rod.v, state.rod.sv, state.rod.qd):
            rate[:] = 0.0
        self._rest = state

    def _rest_control(self, model) -> PBDControl:
        """The control the rest settles under: the frames' own at rest, the muscles' rest inputs (:meth:`inputs`,
        their eccentricity too) and, with ``keep_inside``, the skin without muscles, so that a frame at rest
        (:meth:`frame`) finds the muscles where the bind left them."""
        control = PBDControl.of(self.inputs())
        if self.keep_inside is not None and model.skin_inv_mass.any():
            control.skin_field = self.hull.place().evaluate
            control.skin_iso = self.keep_inside
        return control

    @staticmethod
    def _bones(values, count, what):
        arr = np.asarray(values, dtype=np.int64).reshape(-1)
        if np.any(arr < 0) or np.any(arr >= count):
            raise ValueError(f"a muscle's {what} bone index is out of range (the rig has {count} bones).")
        return arr

    @staticmethod
    def _stored_rest(model, settled):
        """``(model with the stored particle parameters, rest state)`` from ``settled_rest()`` of an earlier bind of
        the same character, or None if it does not fit ``model`` (then the rest is settled again)."""
        if settled is None:
            return None
        x, s = (np.asarray(a, dtype=np.float64) for a in settled)
        state = initial_state(model)
        if x.shape != state.x.shape or s.shape != model.particle_s.shape \
                or not (np.isfinite(x).all() and np.isfinite(s).all()):
            return None
        state.x[:] = x
        return model.with_particle_s(s), state

    def settled_rest(self) -> tuple:
        """``(x (P, 3), particle_s (P,))`` of the settled rest: pass it back as ``settled_rest`` to bind the same
        character again with no settling at all and bit for bit the same."""
        return self._settled_x.copy(), (self.model.particle_s.copy() if self.model else np.zeros(0))

    def rest_hint(self) -> tuple:
        """``(x (P, 3), particle_s (P,))`` where the rest settle started: pass it back as ``rest_hint`` to bind the
        same character again in a fraction of the time (``core.pbd.settle.rest_state``) and bit for bit the same."""
        return self._rest_hint[0].copy(), self._rest_hint[1].copy()

    def state(self) -> PBDState:
        """A snapshot of the muscles' simulation state to resume from (positions, velocities, last inputs;
        ``PBDState.snapshot``: the muscle batch is rebuilt by the next step)."""
        snapshot = self._state.snapshot()
        if self.fat_model is None:
            return snapshot
        return MusclesAndFat.of(snapshot, self._fat_state.copy())

    @property
    def fat_batch(self) -> FatBatch | None:
        """The fats as the skin sees them after the last step (centres, frames, semi-axes, where their bones carry
        them), or None without fats."""
        if self.fat_model is None:
            return None
        return FatBatch(self._fat_state.x, self._fat_state.frame, self.fat_model.axes,
                        self._fat_state.anchors.mean(axis=1))

    @property
    def muscle_batch(self):
        """The muscles as the skin sees them after the last step (a :class:`core.muscle.batch.MuscleBatch` of the
        current state: simulated axes, widths, profiles), or None without muscles. Read it, never write it."""
        return self._state.muscles if self.model is not None else None

    def restore(self, state: PBDState) -> None:
        """Continue from a snapshot taken with :meth:`state`."""
        self._state.assign(state)
        if self.fat_model is not None and getattr(state, "fat", None) is not None:
            self._fat_state.assign(state.fat)

    def reset(self) -> None:
        """Back to the settled rest state (the simulation start)."""
        self._state.assign(self._rest)
        if self.fat_model is not None:
            self._fat_state.assign(self._fat_rest)

    def inputs(self, activation=None, stiffness=None, width_scale=None, eccentricity=None) -> MuscleInputs:
        """This frame's animated muscle inputs ``(M,)`` as one :class:`core.pbd.control.MuscleInputs`: the
        eccentricity, unless given, is each muscle's rest and active eccentricity mixed by the activation (each
        muscle's own activation where none is given; ``core.pbd.control.muscle_inputs``)."""
        return muscle_inputs(activation, stiffness, width_scale, eccentricity, eccentricity_rest=self._ecc[:, 0],
                             eccentricity_active=self._ecc[:, 1], default_activation=self._activation_default)

    def _inputs(self, inputs, activation, stiffness, width_scale, eccentricity) -> MuscleInputs:
        """``inputs`` if given, else :meth:`inputs` of the separate values."""
        return inputs if inputs is not None else self.inputs(activation, stiffness, width_scale, eccentricity)

    def settle(self, bone_transforms, activation=None, stiffness=None, width_scale=None, eccentricity=None,
               frames: int = START_SETTLE_FRAMES, dt: float = 1.0 / 24.0, inputs: MuscleInputs | None = None,
               quality: EvaluationQuality = RENDER, fat_inputs: FatInputs | None = None,
               max_frames: int = START_SETTLE_MAX_FRAMES, still: float = START_SETTLE_STILL) -> None:
        """Let the muscles come to rest in this pose: placed in it (:meth:`place`), then PBD frames at ``dt`` [s]
        holding the pose, at least ``frames`` and then until one moves no muscle particle ``still`` [m] (at most
        ``max_frames`` in all), then every velocity zeroed (the first frame of a shot, which is rarely the rest
        pose). ``inputs`` (:meth:`inputs`) or the separate animated values; ``quality`` as in :meth:`frame`."""
        inputs = self._inputs(inputs, activation, stiffness, width_scale, eccentricity)
        self.place(bone_transforms, inputs=inputs)
        for f in range(max(int(frames), int(max_frames))):
            before = self._state.x.copy() if f >= frames - 1 else None
            self.step_muscles(bone_transforms, dt=dt, inputs=inputs, quality=quality, fat_inputs=fat_inputs)
            if before is not None and (len(before) == 0 or np.abs(self._state.x - before).max() < still):
                break
        self._state.v[:] = 0.0
        if self.rods is not None:
            for rate in (self._state.rod.v, self._state.rod.sv, self._state.rod.qd):
                rate[:] = 0.0
        if self.fat_model is not None:
            self._fat_state.v[:] = 0.0

    def place(self, bone_transforms, activation=None, stiffness=None, width_scale=None, eccentricity=None,
              inputs: MuscleInputs | None = None) -> None:
        """Put the muscles straight into this pose, at rest: each particle of the settled rest axes carried by its
        muscle's origin and insertion bones, mixed by its place along the axis (a cut; nothing simulated)."""
        B = check_rigid(bone_transforms, self.rig.names, self.reach)
        if self.fat_model is not None:
            self._fat_state.assign(self.fat_model.placed(B))
        if self.model is None:
            return
        control = self.control(B, self._inputs(inputs, activation, stiffness, width_scale, eccentricity))
        rest = np.concatenate([self._rest.x, np.ones((len(self._rest.x), 1))], axis=1)
        counts = np.diff(self.model.axis_start)
        by_origin = np.einsum("pij,pj->pi", np.repeat(B[self.origin_bones, :3, :], counts, axis=0), rest)
        by_insertion = np.einsum("pij,pj->pi", np.repeat(B[self.insertion_bones, :3, :], counts, axis=0), rest)
        s = self.model.particle_s[:, None]
        self.solver.place(self._state, control, (1.0 - s) * by_origin + s * by_insertion)
        if self.rods is not None:
            self.rods.place(self._state.rod, control, self._state.x)

    def control(self, B, inputs: MuscleInputs) -> PBDControl:
        """This frame's PBD control: ``inputs`` and the endpoints and normals moved by their bones ``B (B, 4, 4)``,
        the capsules by theirs."""
        o = np.einsum("mij,mj->mi", B[self.origin_bones, :3, :], self.origin_rest)
        i = np.einsum("mij,mj->mi", B[self.insertion_bones, :3, :], self.insertion_rest)
        n0 = np.einsum("mij,mj->mi", B[self.origin_bones, :3, :3], self.normals_rest[:, 0])
        n1 = np.einsum("mij,mj->mi", B[self.insertion_bones, :3, :3], self.normals_rest[:, 1])
        caps = np.einsum("bij,bkj->bki", B[:, :3, :3], self.capsules_rest) + B[:, None, :3, 3]
        return PBDControl.of(inputs, endpoints=np.stack([o, i], axis=1), normals=np.stack([n0, n1], axis=1),
                             capsules=caps)

    def step_muscles(self, bone_transforms, activation=None, stiffness=None, width_scale=None,
                     dt: float = 1.0 / 24.0, eccentricity=None, inputs: MuscleInputs | None = None,
                     quality: EvaluationQuality = RENDER, fat_inputs: FatInputs | None = None) -> None:
        """One frame of the muscles' PBD only (what :meth:`frame` does before the skin), at ``quality``'s substeps:
        for a host that simulates the frames it does not show (a jump forward in the timeline). ``ValueError``
        naming the bone for a NaN, scaled or far-flung pose (``core.skin.skinning.check_rigid``), before anything is
        stepped."""
        B = check_rigid(bone_transforms, self.rig.names, self.reach)
        if B.shape[0] != len(self.rig.heads):
            raise ValueError(f"expected transforms for {len(self.rig.heads)} bones, got {B.shape[0]}.")
        if self.fat_model is not None:  # the fats, then the muscles (neither reads the other)
            self._step_fats(B, dt, fat_inputs)
        if self.model is None:  # no muscles: only the checks above
            return
        inputs = self._inputs(inputs, activation, stiffness, width_scale, eccentricity)
        control = self.control(B, inputs)
        rods_inside = self.rods is not None and self.rods.keep_inside.any()
        if self.keep_inside is not None and (self.model.skin_inv_mass.any() or rods_inside):
            control.skin_field = self.hull.place(B).evaluate
            control.skin_iso = self.keep_inside
        try:
            self.solver.step(self._state, self._next, control, dt, quality)
        except AxisCollapsed:  # a half turn within one frame: a cut, the muscles jump with their bones
            self.place(B, inputs=inputs)
            self.solver.step(self._state, self._next, control, dt, quality)
        if self.rods is not None:  # after the axes, which saw the rods where the last frame left them
            self.rods.step(self._state, self._next, control, dt, quality)
        self._state, self._next = self._next, self._state

    def _step_fats(self, B, dt, fat_inputs: FatInputs | None) -> None:
        """One frame of the fats' particles (``core/fat/dynamics.py``), each fat's own stiffness and damping unless
        ``fat_inputs`` gives them."""
        f = fat_inputs or self.fat_inputs or FatInputs()
        stiffness = f.stiffness if f.stiffness is not None else [fat.stiffness for fat in self.fats]
        damping = f.damping if f.damping is not None else [fat.damping for fat in self.fats]
        control = FatControl.of(self.fat_model, B, stiffness, damping)
        self.fat_solver.step(self._fat_state, self._fat_next, control, dt)
        self._fat_state, self._fat_next = self._fat_next, self._fat_state

    def frame(self, bone_transforms, activation=None, stiffness=None, width_scale=None, dt: float = 1.0 / 24.0,
              out=None, frame=None, eccentricity=None, inputs: MuscleInputs | None = None,
              quality: EvaluationQuality = RENDER, fat_inputs: FatInputs | None = None) -> np.ndarray:
        """Vertex positions ``(V, 3)`` [m] for this frame (module docstring); ``dt`` [s] since the last frame.
        ``inputs`` (:meth:`inputs`) or the separate animated values. ``quality`` (``core/quality.py``): how many
        PBD substeps and sweeps, tracking iterations and ARAP sweeps the frame takes; :data:`core.quality.RENDER`
        (default) the bound settings, :data:`core.quality.PREVIEW` fewer, for animating. ``fat_inputs``: the fats'
        animated stiffness and damping (:class:`core.fat.dynamics.FatInputs`; default each fat's own)."""
        B = np.asarray(bone_transforms, dtype=np.float64)
        t0 = time.perf_counter()
        self.step_muscles(B, dt=dt, inputs=self._inputs(inputs, activation, stiffness, width_scale, eccentricity),
                          quality=quality, fat_inputs=fat_inputs)
        t1 = time.perf_counter()
        x = self.deformer.deform(B, self._state.muscles, out=out if self.weld.identity else None, frame=frame,
                                 quality=quality, fats=self.fat_batch)
        self.timings = {"pbd": t1 - t0, **self.deformer.timings}
        self.timings["total"] = sum(self.timings.values())
        return self.weld.expand(x, out)

    def offset_turns(self) -> np.ndarray:
        """``(V, 3, 3)`` per vertex of the mesh, after :meth:`frame`: the linear map that turns an offset of the
        vertex's rest place (a shape key's, or a modifier's before the skinning) into its offset in this frame, in
        the rig's space. It is the vertex's dual-quaternion rotation, so away from joints an offset moves as the
        Armature modifier moves it. At a contact surface the offset's component along the surface's normal is
        dropped, so it slides the skin along the crease and never pushes it through: at the vertices the tracking
        stopped there or the crease stage pushed out (along their turned normal), and ``CREASE_RINGS`` rings around
        them (the normal of the nearest ones), fading out over as
        many rings again. Everywhere else, from two rings off the crease on, a key moves the skin by its whole
        offset, turned."""
        d = self.deformer
        turns = d.rotations.copy()
        contact = d.scratch.state == STATE_CONTACT
        normal = d.scratch.normal
        if d.crease_pushed.any():  # the crease stage left these on the skin they passed: along its turned normal
            pushed = d.crease_pushed & ~contact
            normal = normal.copy()
            normal[pushed] = np.einsum("vij,vj->vi", d.rotations[pushed], vertex_normals(d.rest, d.faces)[pushed])
            contact = contact | pushed
        normal, weight = _crease_normals(contact, normal, d.rings.start, d.rings.neighbour)
        near = np.flatnonzero(weight > 0.0)
        if len(near):
            n = normal[near] * np.sqrt(weight[near])[:, None]
            turns[near] -= n[:, :, None] * np.einsum("vj,vjk->vk", n, turns[near])[:, None, :]
        return self.weld.expand(turns)

    def muscle_volumes(self, activation=None, measure: str = "field", rings: int = 48, sides: int = 24) -> np.ndarray:
        """``(M,)`` volume [m^3] of each muscle with its current simulated axis and ``activation (M,)`` (default: each
        muscle's own), what paper Fig. 13 plots against the rest volume. ``measure``: ``"field"``, the region
        ``f_M < 0`` the skin sees (``core.muscle.surface.field_volume``), or ``"mesh"``, the swept surface mesh
        (``rings`` x ``sides``), which reads wrong where the axis bends more tightly than the muscle is wide. A rod
        muscle's field volume is that of its field after the last step (its scales and twist; ``activation`` does not
        apply: the rod's contraction makes its bulge)."""
        import copy

        from .muscle.surface import batch_field_volume, field_volume, mesh_volume, muscle_surface

        if measure not in ("field", "mesh"):
            raise ValueError(f"measure must be 'field' or 'mesh', got {measure!r}.")
        x, starts = self._state.x, (self.model.axis_start if self.model is not None else [0])
        out = np.empty(len(self.muscles))
        for m, muscle in enumerate(self.muscles):
            if self.rod_muscles[m] and measure == "field":  # the rod's field: its scales and twist
                out[m] = batch_field_volume(self._state.muscles, m)
                continue
            probe = copy.deepcopy(muscle)
            probe.set_axis(x[starts[m]:starts[m + 1]])
            if activation is not None:
                probe.activation = float(activation[m])
            out[m] = field_volume(probe) if measure == "field" else mesh_volume(
                *muscle_surface(probe, rings=rings, sides=sides))
        return out

    @property
    def vertex_count(self) -> int:
        """Vertices of the mesh as given (before welding), the length of :meth:`frame`'s result."""
        return len(self.rig.vertices)


def _crease_normals(contact, normal, ring_start, ring_neighbour):
    """``(normal (V, 3), weight (V,))``: each vertex's contact normal and how much of an offset's component along it
    to drop (1 at the ``contact (V,)`` vertices, whose unit normals ``normal (V, 3)`` are given, and ``CREASE_RINGS``
    rings around them, then fading to 0 over as many rings; a ring's normal is the normalised sum of its
    neighbours' in the ring before). 0 everywhere when no vertex is at a contact."""
    V = len(contact)
    out = np.where(contact[:, None], normal, 0.0)
    weight = contact.astype(np.float64)
    if not contact.any():
        return out, weight
    counts = np.diff(ring_start)
    owner = np.repeat(np.arange(V), counts)
    reached = contact.copy()
    for ring in range(1, 2 * CREASE_RINGS + 1):
        summed = np.zeros((V, 3))
        np.add.at(summed, owner, np.where(reached[ring_neighbour, None], out[ring_neighbour], 0.0))
        length = np.linalg.norm(summed, axis=1)
        new = ~reached & (length > 1e-12)
        if not new.any():
            break
        out[new] = summed[new] / length[new, None]
        weight[new] = 1.0 if ring <= CREASE_RINGS else (2 * CREASE_RINGS + 1 - ring) / (CREASE_RINGS + 1)
        reached |= new
    return out, weight
