"""How a shaken arm's muscle jiggles on a family member and on the paper's arm (not shipped; ``tests/family.py``).

The paper's arm shake (``scenes/paper.py`` ``arm_shake``): the arm shaken 4 cm at 4 Hz for ``SHAKE_FRAMES`` frames
at 24 fps, then held for ``HOLD_FRAMES``, the muscles settled in the first pose first
(``MuscledCharacter.settle``). On a family member the left upper arm and every bone below it are translated across
the biceps (along its side from the bone line, ``tests/family_flex.py``), with the presets placed from the skin
depth (``flex_setup``); on the paper's arm the whole arm, elbow at 70 degrees. Per run (:class:`Jiggle`), over the
``OVER`` skin vertices nearest the biceps' middle particle at the bind's rest carried into the held pose by its
origin bone (whatever the stiffness, so the same vertices for a loose and a tense muscle) and over the biceps'
inner particles:

* ``window`` [m]: the largest peak-to-peak move of one of them from 0.1 s to 0.6 s after the stop (the loose
  muscle's jiggle: at least 3 mm);
* ``late`` [m]: the largest peak-to-peak move of one of them from 0.2 s after the stop to the end (the tense
  muscle's: under 1 mm);
* ``settle`` [s]: the time after the stop from which they all stay within 1 mm of where they end;
* ``depth`` [m]: from the biceps' middle particle settled in the held pose to the nearest skin vertex;
* ``axis_window``, ``axis_late`` [m]: the same two for the biceps' axis particles.

    python tests/family_jiggle.py default/average [game_engine/heavy ...] [--paper] [--axis-only]

Options for the experiments: ``--arm`` the arm's muscles (``ARM_MUSCLES``) with the biceps, ``--bend=70`` the
elbow bent [deg], ``--pose=jump`` from the first frame of that action, ``--twist=90`` the biceps' insertion turned
about its bone line [deg], ``--roll`` the biceps placed as Add Muscle places it (along the bones' local Z),
``--depth=0.9`` the biceps' axis that many skin depths out.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from pkgpath import CORE_TESTS_CACHE, make_importable, use_cache  # noqa: E402

SHAKE_FRAMES, HOLD_FRAMES = 24, 24
"""Frames shaken, then held (24 fps)."""
FPS = 24.0
AMPLITUDE, SHAKE_HZ = 0.04, 4.0
"""[m], [Hz] of the shake."""
OVER = 40
"""Skin vertices measured over the biceps (nearest its middle particle)."""
JIGGLE_MUSCLES = (("biceps", "upper_arm", "forearm", "front"),)
"""(preset, origin segment, insertion segment, side) of the shaken muscles on a family member: the biceps first."""
ARM_MUSCLES = JIGGLE_MUSCLES + (("triceps", "upper_arm", "forearm", "back"),
                                 ("brachialis", "upper_arm", "forearm", "out"),
                                 ("deltoid", "clavicle", "upper_arm", "up"))
"""The biceps and the arm's muscles around it (the first three push each other: one skin bone)."""
LOOSE, TENSE = 0.1, 0.9
PARTICLES = (10, 30)


@dataclass(frozen=True)
class Jiggle:
    """One shaken run (module docstring): ``window``, ``late`` [m], ``settle`` [s] over the skin (NaN when the skin
    was not deformed), ``axis_window``, ``axis_late`` [m] over the biceps' axis particles."""

    stiffness: float
    particles: int
    window: float
    late: float
    settle: float
    axis_window: float
    axis_late: float
    depth: float
    """[m] from the biceps' settled middle particle to the nearest skin vertex in the held pose"""


def shake_offset(frame: int) -> float:
    """[m] the shake's offset at ``frame`` (0-based): ``AMPLITUDE sin(2 pi SHAKE_HZ t)`` while shaken, then 0."""
    return AMPLITUDE * np.sin(2.0 * np.pi * SHAKE_HZ * frame / FPS) if frame < SHAKE_FRAMES else 0.0


def _below(rig, bone: int) -> np.ndarray:
    """``(B,)`` bool: ``bone`` and every bone below it."""
    moved = np.zeros(len(rig.heads), dtype=bool)
    moved[bone] = True
    for _ in range(len(rig.heads)):  # parents come in any order
        moved |= (rig.parents >= 0) & moved[np.maximum(rig.parents, 0)]
    return moved


def family_poses(rig, bone: int, direction, elbow: int | None = None, bend: float = 0.0, start=None) -> np.ndarray:
    """``(frames, B, 4, 4)``: ``bone`` and every bone below it translated by :func:`shake_offset` along
    ``direction (3,)`` (unit, across ``bone`` at rest), the others held; ``elbow`` (a bone below ``bone``) and the
    bones below it turned by ``bend`` [deg] about its head, towards ``direction``; all of it on top of the pose
    ``start (B, 4, 4)`` (None: the rest pose), which also turns ``direction`` with ``bone``."""
    B0 = np.tile(np.eye(4), (len(rig.heads), 1, 1))
    if elbow is not None and bend:
        e = rig.tails[bone] - rig.heads[bone]
        axis = np.cross(e, direction)
        axis /= np.linalg.norm(axis)
        t = np.radians(bend)
        K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
        R = np.eye(3) + np.sin(t) * K + (1.0 - np.cos(t)) * K @ K
        turn = np.eye(4)
        turn[:3, :3] = R
        turn[:3, 3] = rig.heads[elbow] - R @ rig.heads[elbow]
        B0[_below(rig, elbow)] = turn
    if start is not None:
        B0 = np.einsum("bij,bjk->bik", start, B0)
        direction = start[bone, :3, :3] @ direction
    moved = _below(rig, bone)
    poses = np.tile(B0, (SHAKE_FRAMES + HOLD_FRAMES, 1, 1, 1))
    for f in range(len(poses)):
        poses[f, moved, :3, 3] += shake_offset(f) * np.asarray(direction)
    return poses


def paper_poses() -> np.ndarray:
    """``(frames, 3, 4, 4)`` of the paper's arm shake (``scenes.paper.arm_shake``) over this module's frames."""
    from implicit_muscles.scenes import paper as scenes

    return np.array([scenes.arm_shake(f, fps=FPS, shake_frames=SHAKE_FRAMES)
                     for f in range(SHAKE_FRAMES + HOLD_FRAMES)])


def run_shake(character, poses, stiffness: float, skin: bool = True, muscle: int = 0):
    """Settle ``character`` (a ``MuscledCharacter``) in ``poses[0]`` with every muscle at ``stiffness``, then play
    ``poses``: ``(skin (F, V, 3) or None, axis (F, n, 3), settled (n, 3))``, the skin per frame (``skin``) and the
    inner particles of ``muscle`` per frame and settled in the first pose."""
    from implicit_muscles.core.pbd.control import MuscleInputs

    inputs = MuscleInputs(stiffness=np.full(character.model.muscle_count, stiffness))
    character.reset()
    character.settle(poses[0], inputs)
    a, b = character.model.pbd.axis_start[muscle:muscle + 2]
    settled = character.current.x[a + 1:b - 1].copy()
    xs, axes = [], []
    for B in poses:
        if skin:
            xs.append(character.frame(B, inputs, dt=1.0 / FPS).copy())
        else:
            character.advance(B, inputs, dt=1.0 / FPS)
        axes.append(character.current.x[a + 1:b - 1].copy())
    return (np.array(xs) if skin else None), np.array(axes), settled


def _peak_to_peak(X, first: int, last: int) -> float:
    """Largest peak-to-peak move [m] of one point of ``X (F, n, 3)`` over frames ``first .. last - 1``."""
    w = X[first:last]
    return float(np.linalg.norm(w.max(axis=0) - w.min(axis=0), axis=1).max())


def _after_stop(X) -> tuple:
    """``(window, late, settle)`` of ``X (F, n, 3)`` (module docstring)."""
    stop = SHAKE_FRAMES
    window = _peak_to_peak(X, stop + int(round(0.1 * FPS)), stop + int(round(0.6 * FPS)) + 1)
    late = _peak_to_peak(X, stop + int(round(0.2 * FPS)), len(X))
    off = np.linalg.norm(X[stop:] - X[-1], axis=2).max(axis=1)
    above = np.flatnonzero(off > 0.001)
    return window, late, (above[-1] + 1) / FPS if len(above) else 0.0


def measure(character, poses, stiffness: float, particles: int, skin: bool = True) -> Jiggle:
    """One :class:`Jiggle` of ``character`` shaken by ``poses`` (:func:`run_shake`; the biceps is muscle 0)."""
    xs, axes, settled = run_shake(character, poses, stiffness, skin)
    window = late = settle = depth = float("nan")
    if xs is not None:
        model = character.model
        a, b = model.pbd.axis_start[:2]
        B = poses[-1][model.origin_bones[0]]
        belly = B[:3, :3] @ model.rest.x[(a + b) // 2] + B[:3, 3]  # the bind's rest, carried into the held pose
        distance = np.linalg.norm(xs[-1] - belly, axis=1)
        over = np.argsort(distance)[:OVER]
        window, late, settle = _after_stop(xs[:, over])
        depth = float(np.linalg.norm(xs[-1] - settled[len(settled) // 2], axis=1).min())
    axis_window, axis_late, _ = _after_stop(axes)
    return Jiggle(stiffness, particles, window, late, settle, axis_window, axis_late, depth)


def family_character(body, particles: int, muscles=JIGGLE_MUSCLES, settings=None, bend: float = 0.0, action=None,
                     twist: float = 0.0, roll_placed: bool = False, depth: float | None = None, **setup):
    """``(MuscledCharacter, poses)``: ``muscles`` placed on the family member ``body`` with ``particles`` each and
    bound (``settings``: its ``CharacterSettings``; ``setup``: more of its ``CharacterSetup``), and the shake of its
    left upper arm across the biceps, the elbow bent by ``bend`` [deg] towards it, from the first frame of
    ``action`` (one of the member's, None: the rest pose); ``twist`` [deg] turns the biceps' insertion about its
    bone line (ends on different sides, as a rig whose bones' rolls differ places them)."""
    from implicit_muscles.core.character import MuscledCharacter
    from family import load_character
    from family_flex import _side_of, flex_setup

    setup, _ = flex_setup(load_character(body), body.bone_map, muscles, particles=particles, **setup)
    rig = setup.rig
    if depth is not None:
        from implicit_muscles.core.muscle.placement import place_preset

        preset, _, _, side = muscles[0]
        setup = replace(setup, muscles=(place_preset(rig, setup.origin_bones[0], setup.insertion_bones[0], preset,
                                                     side, name=preset, depth=depth, particles=particles),)
                        + setup.muscles[1:])
    if roll_placed:
        setup = replace(setup, muscles=(_roll_placed(body, rig, setup.origin_bones[0], setup.insertion_bones[0],
                                                     particles),) + setup.muscles[1:])
    if twist:
        setup = replace(setup, muscles=(_twisted(setup.muscles[0], rig, setup.origin_bones[0],
                                                 setup.insertion_bones[0], twist, particles),) + setup.muscles[1:])
    character = MuscledCharacter.bind(setup, settings)
    bone = setup.origin_bones[0]
    side = _side_of(setup.muscles[0], rig, bone, setup.insertion_bones[0])
    e = rig.tails[bone] - rig.heads[bone]
    e = e / np.linalg.norm(e)
    across = side - (side @ e) * e
    start = None
    if action is not None:
        from family import load_animation

        start = load_animation(body, action, stride=100000).transforms[0]
    return character, family_poses(rig, bone, across / np.linalg.norm(across), setup.insertion_bones[0], bend,
                                   start)


def _twisted(muscle, rig, origin_bone, insertion_bone, twist, particles):
    """``muscle`` with its insertion turned by ``twist`` [deg] about its bone line."""
    from implicit_muscles.core.muscle.placement import muscle_line
    from implicit_muscles.core.muscle.primitive import FusiformMuscle

    start, end = muscle_line(rig.heads, rig.tails, origin_bone, insertion_bone)
    u = (end - start) / np.linalg.norm(end - start)
    p = muscle.axis[-1] - end
    t = np.radians(twist)
    p = p * np.cos(t) + np.cross(u, p) * np.sin(t) + u * (u @ p) * (1.0 - np.cos(t))
    return FusiformMuscle(muscle.axis[0], end + p, width=muscle.width, shape=muscle.shape, name=muscle.name,
                          particles=particles)


def _roll_placed(body, rig, origin_bone, insertion_bone, particles):
    """The biceps preset placed as ``blender/scene/rig.py`` ``default_points`` and ``fitted_width`` place it: its
    ends a quarter down the origin bone and 15 % into the insertion bone, both 0.6 limb radii out along each
    bone's local Z (the rest matrices read from the member's .blend file)."""
    import bpy

    from implicit_muscles.core.muscle.placement import preset_shape, preset_values
    from implicit_muscles.core.muscle.primitive import FusiformMuscle
    from implicit_muscles.core.muscle.profile import ellipse_axes, profile_max

    bpy.ops.wm.open_mainfile(filepath=str(body.path))
    armature = next(o for o in bpy.data.objects if o.type == 'ARMATURE')
    frames = [np.array(armature.data.bones[rig.names[b]].matrix_local) for b in (origin_bone, insertion_bone)]
    head, tail = rig.heads[origin_bone], rig.tails[origin_bone]
    mine = rig.vertices[np.argmax(rig.weights, axis=1) == origin_bone]
    e = tail - head
    t = np.clip((mine - head) @ e / (e @ e), 0.0, 1.0)
    radius = float(np.median(np.linalg.norm(mine - (head + t[:, None] * e), axis=1)))
    ends = []
    for M, b, along in zip(frames, (origin_bone, insertion_bone), (0.25, 0.15)):
        length = np.linalg.norm(rig.tails[b] - rig.heads[b])
        ends.append((M @ np.array([0.0, along * length, 0.6 * radius, 1.0]))[:3])
    shape = preset_shape(preset_values("biceps"))
    peak = profile_max(shape.alpha_rest, shape.beta_rest, shape.alpha_active, shape.beta_active, 0.0)
    width = max(0.3 * radius / (ellipse_axes(shape.eccentricity_rest)[1] * peak), 0.002)
    return FusiformMuscle(ends[0], ends[1], width=width, shape=shape, name="biceps", particles=particles)


def paper_character(particles: int, biceps_only: bool = False, settings=None, **setup):
    """The paper's arm (``scenes.paper.arm_character``), or its biceps alone, with ``particles`` per muscle."""
    from implicit_muscles.core.character import CharacterSetup, MuscledCharacter
    from implicit_muscles.scenes import paper as scenes

    if not biceps_only:
        return scenes.arm_character(particles=particles, settings=settings, **setup)
    muscles, skin_bones = scenes.arm_muscles(particles)
    return MuscledCharacter.bind(CharacterSetup(scenes.arm_rig(), (muscles[0],), [0], [1], [skin_bones[0]],
                                                **setup), settings)


def report(name: str, jiggles, log=print) -> None:
    for j in jiggles:
        log(f"  {name:22s} k {j.stiffness:.1f} n {j.particles:2d}: skin window {j.window * 1e3:6.2f} mm, late "
            f"{j.late * 1e3:5.2f} mm, settles {j.settle:.2f} s; axis window {j.axis_window * 1e3:6.2f} mm, late "
            f"{j.axis_late * 1e3:5.2f} mm; skin {j.depth * 1e3:.1f} mm from the axis")


def main(argv) -> None:
    if "implicit_muscles" not in sys.modules:
        make_importable(CORE_TESTS_CACHE)
        use_cache(CORE_TESTS_CACHE)
    from family import member

    skin = "--axis-only" not in argv
    muscles = ARM_MUSCLES if "--arm" in argv else JIGGLE_MUSCLES
    bend = next((float(a[7:]) for a in argv if a.startswith("--bend=")), 0.0)
    action = next((a[7:] for a in argv if a.startswith("--pose=")), None)
    twist = next((float(a[8:]) for a in argv if a.startswith("--twist=")), 0.0)
    depth = next((float(a[8:]) for a in argv if a.startswith("--depth=")), None)
    names = [a for a in argv if not a.startswith("--")]
    if "--paper" in argv:
        for only in (False, True):
            out = []
            for n in PARTICLES:
                character = paper_character(n, biceps_only=only)
                out += [measure(character, paper_poses(), k, n, skin) for k in (LOOSE, TENSE)]
            report("paper arm" + (" (biceps)" if only else ""), out)
    for name in names:
        t0 = time.perf_counter()
        out = []
        for n in PARTICLES:
            character, poses = family_character(member(name), n, muscles, bend=bend, action=action,
                                                 twist=twist, roll_placed="--roll" in argv, depth=depth)
            out += [measure(character, poses, k, n, skin) for k in (LOOSE, TENSE)]
        report(name, out)
        print(f"  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
