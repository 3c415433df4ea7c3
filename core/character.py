"""A skinned character with muscles, one frame at a time: the whole per-frame pipeline of paper §7.2 (Fig. 10).

Shaped as the solvers are (a frozen model, states, one frame's inputs, a step that never writes its input state):

* :class:`CharacterSetup` says what a character is made of (the rig, the muscles and the bones they hang on, what
  they collide with, their solvers, the fats), :class:`CharacterSettings` how it is simulated and skinned;
  :func:`build_character` binds them into a :class:`CharacterModel`, the frozen parts: the welded rig, the
  muscles' PBD model (``core/pbd/``) and rods (``core/rod/muscles.py``), the fats' model (``core/fat``), the
  skin field (``core/skin/field.py``) and the settled rest state.
* A state is a :class:`CharacterState`: the muscles' PBD state (with the rods' and the muscle batch the skin
  reads) and the fats'.
* One frame's animated values are one :class:`core.pbd.control.MuscleInputs` (activation, stiffness, width scale,
  eccentricity, and the fats' stiffness and damping); the bones come as their rest -> posed transforms
  ``B (B, 4, 4)``.
* :class:`MuscledCharacter` drives a model: :meth:`MuscledCharacter.step` advances the muscles and fats one frame
  from one state into another, :meth:`MuscledCharacter.deform` gives the skin of a state (the Implicit Skinning
  deformer, ``core/skin/deformer.py``). For hosts it keeps a current state, ``current``: :meth:`~MuscledCharacter.
  frame` steps it and deforms (**PBD**, then **pose** (DQS), **field** (grids placed, the muscles taken from the
  new state), **tracking**; ``timings`` [s] has each stage), :meth:`~MuscledCharacter.advance` only steps it,
  :meth:`~MuscledCharacter.settle` lets the muscles come to rest in a shot's first pose, ``state()`` /
  ``restore()`` snapshot and resume it and ``reset()`` goes back to the settled rest.

Muscles are attached to bones: the origin follows ``origin_bones[m]``, the insertion ``insertion_bones[m]``, and
the muscle joins the skin part of ``skin_bones[m]``. Bone capsules (radius from the skin,
``capsule_radius_from_skin``, or the muscle's own bone radius) are the muscles' bone collisions; muscles sharing a
skin bone push each other (their contact set), except those of one overlap group; the axes are kept inside the
skin's parts (the field without the muscles, at ``KEEP_INSIDE_ISO``), so a muscle crossing a bent joint wraps
around the fold instead of cutting across it. Each switch is per muscle
(:class:`core.pbd.collisions.MuscleCollisions`). Vertices at the same rest place (a mesh split at its seams) are
welded for all of this and move as one (``core/skin/weld.py``). Bind happens with the axes settled under their own
tension (``rest_state``), so a rig at rest gives back its rest mesh.

Fats (``core/fat``, thesis ch. 6), if given, hang on ``fat_bones[k]``, join that bone's skin part and step after the
muscles in each frame (their own solver, ``core/fat/dynamics.py``), colliding with the same bone capsules.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace

import numpy as np

from .fat.batch import FatBatch
from .fat.dynamics import FatControl, FatInputs, FatSolver, build_fat_model
from .fat.state import MusclesAndFat
from .skin.deformer import ImplicitSkinDeformer
from .muscle.batch import pack_muscles
from .muscle.primitive import eccentricity_at
from .pbd.collisions import MuscleCollisions, coincident_overlaps
from .pbd.control import DEFAULT_ACTIVATION, MuscleInputs, PBDControl
from .pbd.model import PBDModel, build_pbd_model, capsule_radius_from_skin
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


CREASE_RINGS = 1
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
"""Frames :func:`build_character` holds the rest with rods and axes pushing each other at most."""
REST_TOGETHER_TOL = 1e-10
"""[m] :func:`build_character` ends the rods' and axes' rest together at the first frame that moves no particle
this far."""
KEEP_INSIDE_ISO = 0.4
"""Iso-value of the skin's parts without the muscles (compact convention) inside which the muscle axes are kept
(paper §6.3, muscle-skin collision); ``None`` turns the constraint off."""
FRAME_DT = 1.0 / 24.0
"""[s] The frame duration :class:`MuscledCharacter` steps by unless told (24 fps)."""
NO_BONE_RADIUS = 0.005
"""[m] Capsule radius of a bone that no vertex is weighted to most (no skin to measure it from)."""

CharacterState = MusclesAndFat
"""A character's state (:class:`core.fat.state.MusclesAndFat`): the muscles' :class:`core.pbd.state.PBDState`
(particles, velocities, the last frame's kinematic inputs, the muscle batch, the rods' state) and the fats'
state in ``fat`` (None without fats)."""


@dataclass(frozen=True)
class CharacterSettings:
    """How a character is simulated and skinned; a field left at None takes that part's own defaults.

    pbd: PBDSettings                  the axis solver (``core/pbd/settings.py``)
    rod: RodSettings                  the rod solver of the muscles whose solver is ``'ROD'``; its contact friction
                                      and damping are the axis solver's (one contact law)
    skin: SkinSettings                the skin field's bind (``core/skin/field.py``)
    tracking: TrackingSettings        the tracking (``core/skin/tracking.py``)
    muscle_collisions: bool           False: no muscle pushes another (default True)
    keep_inside: float | None         iso-value of the muscle-skin constraint, ``KEEP_INSIDE_ISO`` by default;
                                      None: off for all
    """

    pbd: PBDSettings | None = None
    rod: RodSettings | None = None
    skin: SkinSettings | None = None
    tracking: TrackingSettings | None = None
    muscle_collisions: bool = True
    keep_inside: float | None = KEEP_INSIDE_ISO


@dataclass(frozen=True, eq=False)
class CharacterSetup:
    """What a character is made of, at rest in the rig's space [m] (``M`` muscles, ``F`` fats, ``B`` bones).

    rig: core.rig.Rig                 the mesh and its skeleton (vertices, faces, weights, heads, tails, parents,
                                      names)
    muscles: sequence                 :class:`core.muscle.primitive.FusiformMuscle` at rest, or none at all
                                      (Implicit Skinning alone: a mesh of the character that no muscle lies on, e.g.
                                      the head). The bind settles their axes: they are the model's afterwards.
    origin_bones, insertion_bones: (M,) int   the bones each muscle's origin and insertion follow
    skin_bones: (M,) int              the bone whose skin part shows each muscle (its contact set)
    collisions: MuscleCollisions      what each muscle collides with (:class:`core.pbd.collisions.MuscleCollisions`,
                                      default everything)
    solvers: sequence | None          per muscle ``'AXIS'`` (the paper's PBD axis, default) or ``'ROD'`` (a VIPER rod,
                                      ``core/rod/muscles.py``); a rod muscle collides with its bones (VIPER's touch
                                      constraint) and with the muscles of its contact set, axes and rods
                                      (``core/rod/contacts.py``); the rods of one bundle
                                      (``MuscleCollisions.bundles``) push each other even in one overlap group
    fats: sequence                    :class:`core.fat.primitive.FatPrimitive` at rest
    fat_bones: (F,) int               the bone each fat hangs on
    fat_collide_bones: (F,) bool      whether each fat collides with the bone capsules (default all)
    """

    rig: Rig
    muscles: tuple = ()
    origin_bones: np.ndarray | tuple = ()
    insertion_bones: np.ndarray | tuple = ()
    skin_bones: np.ndarray | tuple = ()
    collisions: MuscleCollisions | None = None
    solvers: tuple | None = None
    fats: tuple = ()
    fat_bones: np.ndarray | tuple = ()
    fat_collide_bones: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class CharacterModel:
    """What a bind makes and no frame changes (:func:`build_character`; ``M`` muscles, ``F`` fats, ``B`` bones).

    rig: Rig                          the rig as given (its vertex count is the length of a frame's positions)
    welded: Rig                       the rig with its split vertices welded (``weld``), what the skin binds
    weld: core.skin.weld.Weld         which given vertices are one
    muscles: tuple                    the muscles, their axes at the settled rest
    origin_bones, insertion_bones, skin_bones: (M,) int64
    collisions: MuscleCollisions      resolved per muscle
    rod_muscles: (M,) bool            the muscles simulated as VIPER rods
    capsules_rest: (B, 2, 3) [m]      the bones' capsule segments (head, tail)
    bone_radius: (B,) [m]             each bone's automatic capsule radius (from its skin)
    capsule_radius: (M, B) [m]        the radius each muscle sees each capsule with
    pbd: PBDModel | None              the axis solver's model, its particle parameters settled (None: no muscles)
    rods: RodMuscles | None           the rod muscles' model and solver (None: no rods)
    fats: tuple; fat_bones: (F,) int64; fat_model: FatModel | None
    skin: SkinField                   the bound skin field (muscles and fats in their parts)
    hull: SkinField                   the skin field without the muscles (the muscle-skin constraint)
    tracking: TrackingSettings | None the deformer's settings
    keep_inside: float | None         iso-value of the muscle-skin constraint (None: off)
    reach: float [m]                  how far a bone may move before a pose is refused (``check_rigid``)
    origin_rest, insertion_rest: (M, 4)  homogeneous rest endpoints (settled); normals_rest: (M, 2, 3)
    eccentricity: (M, 2)              each muscle's rest and active eccentricity
    rest: CharacterState              the settled rest state, what a shot starts from
    settled_x: (P, 3) [m]             the axes' own settled rest (:meth:`settled_rest`)
    hint: tuple                       ``(x (P, 3), particle_s (P,))`` where the rest settle started
                                      (:meth:`rest_hint`)
    """

    rig: Rig
    welded: Rig
    weld: object
    muscles: tuple
    origin_bones: np.ndarray
    insertion_bones: np.ndarray
    skin_bones: np.ndarray
    collisions: MuscleCollisions
    rod_muscles: np.ndarray
    capsules_rest: np.ndarray
    bone_radius: np.ndarray
    capsule_radius: np.ndarray
    pbd: PBDModel | None
    rods: RodMuscles | None
    fats: tuple
    fat_bones: np.ndarray
    fat_model: object
    skin: object
    hull: object
    tracking: TrackingSettings | None
    keep_inside: float | None
    reach: float
    origin_rest: np.ndarray
    insertion_rest: np.ndarray
    normals_rest: np.ndarray
    eccentricity: np.ndarray
    rest: CharacterState
    settled_x: np.ndarray
    hint: tuple

    @property
    def muscle_count(self) -> int:
        return len(self.muscles)

    @property
    def vertex_count(self) -> int:
        """Vertices of the mesh as given (before welding), the length of a frame's positions."""
        return len(self.rig.vertices)

    def settled_rest(self) -> tuple:
        """``(x (P, 3), particle_s (P,))`` of the settled rest: pass it back as ``settled_rest`` to bind the same
        character again with no settling at all and bit for bit the same."""
        return self.settled_x.copy(), (self.pbd.particle_s.copy() if self.pbd is not None else np.zeros(0))

    def rest_hint(self) -> tuple:
        """``(x (P, 3), particle_s (P,))`` where the rest settle started: pass it back as ``rest_hint`` to bind the
        same character again in a fraction of the time (``core.pbd.settle.rest_state``) and bit for bit the same."""
        return self.hint[0].copy(), self.hint[1].copy()

    def control(self, bones, inputs: MuscleInputs) -> PBDControl:
        """This frame's PBD control: ``inputs`` (an eccentricity not given is each muscle's rest and active
        eccentricity mixed by the activation, ``core.muscle.primitive.eccentricity_at``) and the endpoints and
        normals moved by their bones ``B (B, 4, 4)``, the capsules by theirs."""
        B = bones
        if inputs.eccentricity is None:
            a = np.asarray(DEFAULT_ACTIVATION if inputs.activation is None else inputs.activation, dtype=np.float64)
            inputs = replace(inputs, eccentricity=eccentricity_at(self.eccentricity[:, 0], self.eccentricity[:, 1],
                                                                  a))
        o = np.einsum("mij,mj->mi", B[self.origin_bones, :3, :], self.origin_rest)
        i = np.einsum("mij,mj->mi", B[self.insertion_bones, :3, :], self.insertion_rest)
        n0 = np.einsum("mij,mj->mi", B[self.origin_bones, :3, :3], self.normals_rest[:, 0])
        n1 = np.einsum("mij,mj->mi", B[self.insertion_bones, :3, :3], self.normals_rest[:, 1])
        caps = np.einsum("bij,bkj->bki", B[:, :3, :3], self.capsules_rest) + B[:, None, :3, 3]
        return PBDControl.of(inputs, endpoints=np.stack([o, i], axis=1), normals=np.stack([n0, n1], axis=1),
                             capsules=caps)

    def checked_pose(self, bones) -> np.ndarray:
        """``bones (B, 4, 4)`` as float64, checked (``core.skin.skinning.check_rigid``: ``ValueError`` naming the
        bone for a NaN, scaled or far-flung pose; one transform per bone)."""
        B = check_rigid(bones, self.rig.names, self.reach)
        if B.shape[0] != len(self.rig.heads):
            raise ValueError(f"expected transforms for {len(self.rig.heads)} bones, got {B.shape[0]}.")
        return B


def build_character(setup: CharacterSetup, settings: CharacterSettings | None = None, settled_rest=None,
                    rest_hint=None) -> CharacterModel:
    """Bind ``setup`` with ``settings`` (default :class:`CharacterSettings`): weld the rig, build the bone capsules,
    the muscles' models and their settled rest, the fats' model and the skin field (module docstring).
    ``settled_rest``: :meth:`CharacterModel.settled_rest` of an earlier bind of the same character (no settling);
    ``rest_hint``: its :meth:`CharacterModel.rest_hint` (a shorter settle); both bit for bit the same bind.
    ``ValueError`` names a bad bone index or setting."""
    settings = settings or CharacterSettings()
    welded_vertices = weld(setup.rig.vertices, setup.rig.faces, setup.rig.weights)
    rig = setup.rig if welded_vertices.identity else Rig(
        welded_vertices.vertices, welded_vertices.faces, welded_vertices.weights, setup.rig.heads, setup.rig.tails,
        setup.rig.parents, setup.rig.names)
    muscles = tuple(setup.muscles)
    B = len(rig.heads)
    bones = [_bones(b, B, what) for b, what in ((setup.origin_bones, "origin"), (setup.insertion_bones, "insertion"),
                                                 (setup.skin_bones, "skin"))]
    labels = np.argmax(rig.weights, axis=1)
    radius = np.array([capsule_radius_from_skin(rig.heads[j], rig.tails[j], rig.vertices[labels == j])
                       if np.any(labels == j) else NO_BONE_RADIUS for j in range(B)])
    collisions = (setup.collisions or MuscleCollisions()).resolved(len(muscles))
    # (M, B) [m]: each muscle sees the bones at their automatic radius, or all at its own
    capsule_radius = np.where(np.isfinite(collisions.bone_radius)[:, None], collisions.bone_radius[:, None],
                              radius[None, :])
    parts = dict(welded=rig, weld=welded_vertices, muscles=muscles, origin_bones=bones[0], insertion_bones=bones[1],
                 skin_bones=bones[2], collisions=collisions, rod_muscles=resolve_solvers(setup.solvers, len(muscles)),
                 capsules_rest=np.stack([rig.heads, rig.tails], axis=1), bone_radius=radius,
                 capsule_radius=capsule_radius,
                 eccentricity=np.array([[m.shape.eccentricity_rest, m.shape.eccentricity_active]
                                        for m in muscles]).reshape(-1, 2))
    activation = np.array([m.activation for m in muscles], dtype=np.float64)
    parts.update(_fat_parts(setup, B, parts["capsules_rest"], radius))
    # the skin first, without the muscles: they settle inside it, then join it where they came to rest
    parts.update(_unjoined_skin(parts, settings))
    if muscles:
        parts.update(_muscle_models(parts, settings, settled_rest, rest_hint, activation))
    else:  # Implicit Skinning alone: nothing to simulate, the state is empty
        empty = PBDState.empty()
        parts.update(pbd=None, rods=None, rest=empty, settled_x=empty.x.copy(),
                     hint=(empty.x.copy(), np.zeros(0)))
    parts.update(_skin_parts(parts))
    rest = parts["rest"]
    ends = rest.endpoints
    parts["rest"] = CharacterState.of(rest, parts["fat_model"].rest_state() if parts["fat_model"] else None)
    return CharacterModel(rig=setup.rig, **parts, tracking=settings.tracking, keep_inside=settings.keep_inside,
                          reach=REACH_FACTOR * max(float(np.linalg.norm(np.ptp(rig.vertices, axis=0))), 1e-3),
                          origin_rest=np.concatenate([ends[:, 0], np.ones((len(muscles), 1))], axis=1),
                          insertion_rest=np.concatenate([ends[:, 1], np.ones((len(muscles), 1))], axis=1),
                          normals_rest=rest.normals.copy())


def _bones(values, count, what) -> np.ndarray:
    """``(M,)`` int64 bone indices, checked against the rig's ``count`` bones."""
    arr = np.asarray(values, dtype=np.int64).reshape(-1)
    if np.any(arr < 0) or np.any(arr >= count):
        raise ValueError(f"a muscle's {what} bone index is out of range (the rig has {count} bones).")
    return arr


def _muscle_models(parts: dict, settings: CharacterSettings, settled_rest, rest_hint, activation) -> dict:
    """The muscles' PBD model with its settled particle parameters, the rods (if any) and the settled rest state:
    ``{pbd, rods, rest, settled_x, hint}``; the muscles' axes are set to the settled rest (the skin binds them
    there). ``activation (M,)``: each muscle's own (the rods' rest field takes its eccentricity there)."""
    muscles, c = parts["muscles"], parts["collisions"]
    sets = [int(j) if settings.muscle_collisions and on else None for j, on in zip(parts["skin_bones"], c.muscles)]
    # muscles placed through each other share an overlap group: their contacts have no side to push to
    groups = coincident_overlaps([m.axis for m in muscles], [m.width for m in muscles], sets, c.overlap_groups)
    overlap = [int(g) if g >= 0 else None for g in groups]
    rod_muscles = parts["rod_muscles"]
    built = build_pbd_model(muscles, settings.pbd, capsules=parts["capsules_rest"],
                            capsule_radius=parts["capsule_radius"], contact_sets=sets, overlap_groups=overlap,
                            bone_collisions=c.bones & ~rod_muscles, keep_inside=c.keep_inside)
    rods = rod_rest = None
    if rod_muscles.any():  # built from the axes as given, before anything settles
        rod = replace(settings.rod or RodSettings(), contact_friction=built.settings.contact_friction,
                      contact_damping_ratio=built.settings.contact_damping_ratio)  # one contact law
        rods = RodMuscles(muscles, rod_muscles, built.axis_start, rod, capsules=parts["capsules_rest"],
                          capsule_radius=parts["capsule_radius"], bone_collisions=c.bones, keep_inside=c.keep_inside,
                          skin_max_step=built.settings.skin_max_step, contact_sets=sets, overlap_groups=overlap,
                          bundles=[int(g) if g >= 0 else None for g in c.bundles])
        rod_rest = rods.rest_state()  # first: the axes settle against the rods at their rest
        built = freeze(built, rod_muscles, rod_rest.x)
    stored = _stored_rest(built, settled_rest)
    if stored is None:
        held = _rest_control(built, parts, settings)
        if rest_hint is None:  # settle from scratch, then once more from there, as a bind from the hint does
            cold_model, cold = rest_state(built, control=held)
            rest_hint = (cold.x.copy(), cold_model.particle_s.copy())
        stored = rest_state(built, start=rest_hint, control=held)
    model, rest = stored  # the model with the settled particle parameters (PBDModel.with_particle_s)
    settled_x = rest.x.copy()  # the axes' own rest, what settled_rest() gives back
    if rods is not None:  # the rods' own rest, mirrored into the axis state
        rods.particle_s = model.particle_s
        rest.rod = rod_rest
        bind = PBDControl.of(MuscleInputs(eccentricity=eccentricity_at(parts["eccentricity"][:, 0],
                                                                        parts["eccentricity"][:, 1], activation)))
        rods.fill(rest, bind)
        rest = _settle_together(model, rods, rest, bind)
    for m, muscle in enumerate(muscles):  # bind the skin with the settled axes
        muscle.set_axis(rest.x[model.axis_start[m]:model.axis_start[m + 1]])
    return dict(pbd=model, rods=rods, rest=rest, settled_x=settled_x, hint=rest_hint)


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


def _settle_together(model: PBDModel, rods: RodMuscles, rest: PBDState, control: PBDControl,
                     dt: float = FRAME_DT) -> PBDState:
    """Where rods touch axis muscles (``RodMuscles.chains``), the rest is where both push each other: the rods
    rested alone, then the axes against them (one way), so the rig is held at rest with both solvers until a
    frame moves no particle ``REST_TOGETHER_TOL`` [m] nor any scale as much (at most ``REST_TOGETHER_FRAMES``);
    then every rate is zeroed. ``rest`` as it is without such contacts."""
    if not np.any(rods.model.chain_rod[rods.model.touch_chain] < 0):
        return rest
    solver = PBDSolver(model)
    state, spare = rest, rest.copy()
    for _ in range(REST_TOGETHER_FRAMES):
        solver.step(state, spare, control, dt)
        rods.step(state, spare, control, dt)
        moved = max(float(np.abs(spare.x - state.x).max()), float(np.abs(spare.rod.s - state.rod.s).max()))
        state, spare = spare, state
        if moved < REST_TOGETHER_TOL:
            break
    for rate in (state.v, state.rod.v, state.rod.sv, state.rod.qd):
        rate[:] = 0.0
    return state


def _fat_parts(setup: CharacterSetup, bone_count: int, capsules, radius) -> dict:
    """``{fats, fat_bones, fat_model}`` of the setup's fats on the bone capsules ``capsules (B, 2, 3)`` of radius
    ``radius (B,)`` [m]."""
    fats = tuple(setup.fats or ())
    fat_bones = np.asarray(setup.fat_bones if fats else [], dtype=np.int64).reshape(-1)
    if np.any(fat_bones < 0) or np.any(fat_bones >= bone_count):
        raise ValueError(f"a fat's bone index is out of range (the rig has {bone_count} bones).")
    model = build_fat_model(list(fats), fat_bones, capsules, radius, setup.fat_collide_bones) if fats else None
    return dict(fats=fats, fat_bones=fat_bones, fat_model=model)


def _rest_control(model: PBDModel, parts: dict, settings: CharacterSettings) -> PBDControl:
    """The control the rest settles under: a frame's at rest given no animated values (:meth:`CharacterModel.control`:
    the eccentricity mixed at ``DEFAULT_ACTIVATION``) and, with ``keep_inside``, the skin without muscles, so that a
    frame at rest finds the muscles where the bind left them."""
    ecc = parts["eccentricity"]
    control = PBDControl.of(MuscleInputs(eccentricity=eccentricity_at(ecc[:, 0], ecc[:, 1],
                                                                      np.full(len(ecc), DEFAULT_ACTIVATION))))
    if settings.keep_inside is not None and model.skin_inv_mass.any():
        control.skin_field = parts["hull"].place().evaluate
        control.skin_iso = settings.keep_inside
    return control


def _unjoined_skin(parts: dict, settings: CharacterSettings) -> dict:
    """``{unjoined, hull}``: the skin field bound on the welded rig with the fats but no muscles, and the field
    without the muscles and fats (the skin the muscles are kept inside)."""
    rig, fats = parts["welded"], parts["fats"]
    skin = bind_skin_field(rig.vertices, rig.faces, rig.weights, rig.heads, rig.tails, rig.parents,
                           settings=settings.skin, bone_names=rig.names,
                           fats=FatBatch.of(list(fats)) if fats else None,
                           fat_bones=parts["fat_bones"] if fats else None)
    return dict(unjoined=skin, hull=skin.without_muscles())


def _skin_parts(parts: dict) -> dict:
    """``{skin}``: the unjoined skin with the muscles joined at their settled rest (the rods' rest field, their
    scales and twist)."""
    rig, muscles = parts["welded"], parts["muscles"]
    skin = parts.pop("unjoined")
    if not muscles:
        return dict(skin=skin)
    bound = pack_muscles(list(muscles))
    if parts["rods"] is not None:  # the skin binds the rods' rest field (their scales and twist)
        parts["rods"].copy_batch(bound)
    return dict(skin=join_muscles(skin, rig.vertices, bound, parts["skin_bones"],
                                  np.stack([parts["origin_bones"], parts["insertion_bones"]], axis=1), rig.names))


class MuscledCharacter:
    """Drives a :class:`CharacterModel` (module docstring): the axis and fat solvers and the Implicit Skinning
    deformer (their scratch), and the host's current state ``current`` (a :class:`CharacterState`, the settled rest
    at first). ``timings`` [s]: the last :meth:`frame`'s stages."""

    def __init__(self, model: CharacterModel):
        self.model = model
        self.solver = PBDSolver(model.pbd) if model.pbd is not None else None
        """The axis solver (:class:`core.pbd.solver.PBDSolver`), or None without muscles."""
        self.fat_solver = FatSolver(model.fat_model) if model.fat_model is not None else None
        """The fats' solver (:class:`core.fat.dynamics.FatSolver`), or None without fats."""
        w = model.welded
        self.deformer = ImplicitSkinDeformer(model.skin, w.vertices, w.faces, w.weights, model.tracking,
                                             bone_names=w.names)
        """The Implicit Skinning deformer (``core/skin/deformer.py``); its switches may change between frames."""
        self.current = model.rest.copy()
        """The current state: what :meth:`frame`, :meth:`advance` and :meth:`settle` step."""
        self._spare = model.rest.copy()
        self.timings: dict = {}

    @classmethod
    def bind(cls, setup: CharacterSetup, settings: CharacterSettings | None = None, settled_rest=None,
             rest_hint=None) -> "MuscledCharacter":
        """The character of :func:`build_character` ``(setup, settings, settled_rest, rest_hint)``."""
        return cls(build_character(setup, settings, settled_rest, rest_hint))

    # --- one frame, from a state into another ---

    def step(self, state_in: CharacterState, state_out: CharacterState, bones, inputs: MuscleInputs | None = None,
             dt: float = FRAME_DT, quality: EvaluationQuality = RENDER) -> None:
        """One frame of ``dt`` [s] of the muscles and the fats from ``state_in`` into ``state_out`` (another
        object; ``state_in`` is not written): the fats (their own solver), the axes (PBD, with the muscle-skin
        constraint in the skin's parts without the muscles), then the rods, which see the axes where this frame
        left them. ``bones``: the rest -> posed transforms ``(B, 4, 4)``; ``inputs``: the frame's animated values
        (:class:`core.pbd.control.MuscleInputs`, None: every default); ``quality`` (``core/quality.py``): how many
        PBD substeps and sweeps. A pose turning a muscle half a turn within the frame is a cut: the muscles and fats
        are placed straight into it first (:meth:`place`). ``ValueError`` naming the bone for a NaN, scaled or
        far-flung pose (``core.skin.skinning.check_rigid``), before anything is stepped."""
        m = self.model
        inputs = inputs or MuscleInputs()
        B = m.checked_pose(bones)
        if m.fat_model is not None:  # the fats, then the muscles (neither reads the other)
            self._step_fats(state_in.fat, state_out.fat, B, dt, inputs.fats)
        if m.pbd is None:  # no muscles: only the checks above
            return
        control = m.control(B, inputs)
        rods_inside = m.rods is not None and m.rods.keep_inside.any()
        if m.keep_inside is not None and (m.pbd.skin_inv_mass.any() or rods_inside):
            control.skin_field = m.hull.place(B).evaluate
            control.skin_iso = m.keep_inside
        start = state_in
        try:
            self.solver.step(start, state_out, control, dt, quality)
        except AxisCollapsed:  # a cut: the muscles jump with their bones
            start = state_in.copy()
            self.place(start, B, inputs)
            self.solver.step(start, state_out, control, dt, quality)
            if m.fat_model is not None:
                state_out.fat.assign(start.fat)
        if m.rods is not None:  # after the axes, which saw the rods where the last frame left them
            m.rods.step(start, state_out, control, dt, quality)

    def _step_fats(self, fat_in, fat_out, B, dt, fats: FatInputs | None) -> None:
        """One frame of the fats' particles (``core/fat/dynamics.py``), each fat's own stiffness and damping unless
        ``fats`` gives them."""
        f = fats or FatInputs()
        stiffness = f.stiffness if f.stiffness is not None else [fat.stiffness for fat in self.model.fats]
        damping = f.damping if f.damping is not None else [fat.damping for fat in self.model.fats]
        self.fat_solver.step(fat_in, fat_out, FatControl.of(self.model.fat_model, B, stiffness, damping), dt)

    def place(self, state: CharacterState, bones, inputs: MuscleInputs | None = None) -> None:
        """Put ``state`` straight into this pose, at rest: each particle of the settled rest axes carried by its
        muscle's origin and insertion bones, mixed by its place along the axis, and the fats where their bones
        carry them (a cut; nothing simulated)."""
        m = self.model
        B = check_rigid(bones, m.rig.names, m.reach)
        if m.fat_model is not None:
            state.fat.assign(m.fat_model.placed(B))
        if m.pbd is None:
            return
        control = m.control(B, inputs or MuscleInputs())
        rest = np.concatenate([m.rest.x, np.ones((len(m.rest.x), 1))], axis=1)
        counts = np.diff(m.pbd.axis_start)
        by_origin = np.einsum("pij,pj->pi", np.repeat(B[m.origin_bones, :3, :], counts, axis=0), rest)
        by_insertion = np.einsum("pij,pj->pi", np.repeat(B[m.insertion_bones, :3, :], counts, axis=0), rest)
        s = m.pbd.particle_s[:, None]
        self.solver.place(state, control, (1.0 - s) * by_origin + s * by_insertion)
        if m.rods is not None:
            m.rods.place(state.rod, control, state.x)

    def deform(self, state: CharacterState, bones, quality: EvaluationQuality = RENDER, frame=None,
               out=None) -> np.ndarray:
        """Vertex positions ``(V, 3)`` [m] of the mesh as given in the pose ``bones (B, 4, 4)`` with the muscles and
        fats of ``state``: DQS, the skin field placed, the tracking (``core/skin/deformer.py``; ``frame``: the
        frame number its temporal mode keys on). ``out (V, 3)``: written in place when given."""
        B = np.asarray(bones, dtype=np.float64)
        x = self.deformer.deform(B, state.muscles, out=out if self.model.weld.identity else None, frame=frame,
                                 quality=quality, fats=self._fat_batch(state))
        return self.model.weld.expand(x, out)

    # --- the current state, for hosts ---

    def frame(self, bones, inputs: MuscleInputs | None = None, dt: float = FRAME_DT,
              quality: EvaluationQuality = RENDER, frame=None, out=None) -> np.ndarray:
        """Vertex positions ``(V, 3)`` [m] for this frame: :meth:`advance` then :meth:`deform` the current state;
        ``dt`` [s] since the last frame. ``quality`` (``core/quality.py``): how many PBD substeps and sweeps,
        tracking iterations and ARAP sweeps the frame takes; :data:`core.quality.RENDER` (default) the bound
        settings, :data:`core.quality.PREVIEW` fewer, for animating. ``timings`` [s] gets each stage."""
        B = np.asarray(bones, dtype=np.float64)
        t0 = time.perf_counter()
        self.advance(B, inputs, dt, quality)
        t1 = time.perf_counter()
        x = self.deform(self.current, B, quality, frame, out)
        self.timings = {"pbd": t1 - t0, **self.deformer.timings}
        self.timings["total"] = sum(self.timings.values())
        return x

    def advance(self, bones, inputs: MuscleInputs | None = None, dt: float = FRAME_DT,
                quality: EvaluationQuality = RENDER) -> None:
        """One frame of the muscles and fats only (:meth:`step` of the current state, what :meth:`frame` does before
        the skin): for a host that simulates the frames it does not show (a jump forward in the timeline)."""
        self.step(self.current, self._spare, bones, inputs, dt, quality)
        self.current, self._spare = self._spare, self.current

    def settle(self, bones, inputs: MuscleInputs | None = None, dt: float = FRAME_DT,
               quality: EvaluationQuality = RENDER) -> None:
        """Let the muscles come to rest in this pose (the first frame of a shot, which is rarely the rest pose):
        the current state placed in it (:meth:`place`), then frames of ``dt`` [s] holding the pose, at least
        ``START_SETTLE_FRAMES`` and then until one moves no muscle particle ``START_SETTLE_STILL`` [m] (at most
        ``START_SETTLE_MAX_FRAMES`` in all), then every velocity zeroed."""
        self.place(self.current, bones, inputs)
        for f in range(max(START_SETTLE_FRAMES, START_SETTLE_MAX_FRAMES)):
            before = self.current.x.copy() if f >= START_SETTLE_FRAMES - 1 else None
            self.advance(bones, inputs, dt, quality)
            if before is not None and (len(before) == 0 or np.abs(self.current.x - before).max() < START_SETTLE_STILL):
                break
        state = self.current
        state.v[:] = 0.0
        if state.rod is not None:
            for rate in (state.rod.v, state.rod.sv, state.rod.qd):
                rate[:] = 0.0
        if state.fat is not None:
            state.fat.v[:] = 0.0

    def state(self) -> CharacterState:
        """A snapshot of the current state to resume from (positions, velocities, last inputs; the muscle batch is
        rebuilt by the next step, ``PBDState.snapshot``)."""
        return self.current.snapshot()

    def restore(self, state: PBDState) -> None:
        """Continue from a snapshot taken with :meth:`state`."""
        self.current.assign(state)

    def reset(self) -> None:
        """Back to the settled rest state (the simulation start)."""
        self.current.assign(self.model.rest)

    @property
    def muscle_batch(self):
        """The muscles as the skin sees them after the last step (a :class:`core.muscle.batch.MuscleBatch` of the
        current state: simulated axes, widths, profiles), or None without muscles. Read it, never write it."""
        return self.current.muscles if self.model.pbd is not None else None

    @property
    def fat_batch(self) -> FatBatch | None:
        """The fats as the skin sees them after the last step (centres, frames, semi-axes, where their bones carry
        them), or None without fats."""
        return self._fat_batch(self.current)

    def _fat_batch(self, state: CharacterState) -> FatBatch | None:
        if self.model.fat_model is None:
            return None
        fat = state.fat
        return FatBatch(fat.x, fat.frame, self.model.fat_model.axes, fat.anchors.mean(axis=1))

    @property
    def vertex_count(self) -> int:
        """Vertices of the mesh as given (before welding), the length of :meth:`frame`'s result."""
        return self.model.vertex_count

    # --- read-outs ---

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
        return self.model.weld.expand(turns)

    def muscle_volumes(self, activation=None, measure: str = "field", rings: int = 48, sides: int = 24) -> np.ndarray:
        """``(M,)`` volume [m^3] of each muscle with its axis in the current state and ``activation (M,)`` (default:
        each muscle's own), what paper Fig. 13 plots against the rest volume. ``measure``: ``"field"``, the region
        ``f_M < 0`` the skin sees (``core.muscle.surface.field_volume``), or ``"mesh"``, the swept surface mesh
        (``rings`` x ``sides``), which reads wrong where the axis bends more tightly than the muscle is wide. A rod
        muscle's field volume is that of its field after the last step (its scales and twist; ``activation`` does not
        apply: the rod's contraction makes its bulge)."""
        from .muscle.surface import batch_field_volume, field_volume, mesh_volume, muscle_surface

        if measure not in ("field", "mesh"):
            raise ValueError(f"measure must be 'field' or 'mesh', got {measure!r}.")
        m = self.model
        x, starts = self.current.x, (m.pbd.axis_start if m.pbd is not None else [0])
        out = np.empty(m.muscle_count)
        for i, muscle in enumerate(m.muscles):
            if m.rod_muscles[i] and measure == "field":  # the rod's field: its scales and twist
                out[i] = batch_field_volume(self.current.muscles, i)
                continue
            probe = copy.deepcopy(muscle)
            probe.set_axis(x[starts[i]:starts[i + 1]])
            if activation is not None:
                probe.activation = float(activation[i])
            out[i] = field_volume(probe) if measure == "field" else mesh_volume(
                *muscle_surface(probe, rings=rings, sides=sides))
        return out


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
