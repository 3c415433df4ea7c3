"""Stiffness in Blender: the paper's arm shake played through the add-on, with the paper's biceps (``scenes.paper``,
set on the muscle item as the demo does). The arm is shaken 4 cm at 4 Hz for one second with the elbow at 70
degrees, then held; the skin over the biceps jiggles on after the stop with stiffness 0.1 and settles within 0.2 s
with 0.7, with 10 and with 30 particles."""
import importlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from blender_scenes import bind, evaluated, make_arm

SHAKE_FRAMES, HOLD_FRAMES = 24, 24


def _shaken_arm(bpy, stiffness, particles):
    """The arm with one biceps of ``stiffness`` and ``particles``, shaken then held, bound and played: the skin
    positions ``(frames, V, 3)`` of frames 1..48 and the 40 vertices nearest the biceps' middle."""
    from mathutils import Vector

    import blender_session
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "demo"))
    import blender_rig

    scenes = importlib.import_module(f"{blender_session.ADDON}.scenes.paper")
    rig, (mesh,) = make_arm(bpy)
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="elbow",
                                               preset="biceps") == {'FINISHED'}
    muscle = rig.implicit_muscles.muscles[0]
    biceps = scenes.arm_muscles(particles)[0][0]
    biceps.set_axis(biceps.axis + [0.1, 0.0, 0.0])  # make_arm's rig lies 0.1 m along x
    blender_rig.set_muscle(muscle, rig, biceps, "shoulder", "elbow", "shoulder")
    muscle.stiffness = stiffness
    shoulder, elbow = rig.pose.bones["shoulder"], rig.pose.bones["elbow"]
    elbow.rotation_mode = 'XYZ'
    elbow.rotation_euler = (math.radians(70.0), 0.0, 0.0)
    elbow.keyframe_insert("rotation_euler", frame=1)
    up = rig.data.bones["shoulder"].matrix_local.to_3x3().inverted()
    for frame in range(1, SHAKE_FRAMES + HOLD_FRAMES + 1):
        z = 0.04 * math.sin(2.0 * math.pi * 4.0 * (frame - 1) / 24.0) if frame <= SHAKE_FRAMES else 0.0
        shoulder.location = up @ Vector((0.0, 0.0, z))
        shoulder.keyframe_insert("location", frame=frame)
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, SHAKE_FRAMES + HOLD_FRAMES
    scene.frame_set(1)
    bind(bpy, mesh)
    frames = []
    for f in range(1, SHAKE_FRAMES + HOLD_FRAMES + 1):
        scene.frame_set(f)
        frames.append(evaluated(bpy, mesh))
    character = importlib.import_module(f"{blender_session.ADDON}.blender.session.runtime").bound(mesh).character
    a, b = character.model.pbd.axis_start[:2]
    belly = character.state().x[(a + b) // 2]  # the biceps' middle at the end, held still (armature = mesh space)
    over = np.argsort(np.linalg.norm(frames[-1] - belly, axis=1))[:40]
    return np.array(frames), over


def _after_the_stop(frames, over):
    """``(peak to peak [m] of the vertices ``over`` from 0.1 s to 0.6 s after the stop, time [s] after the stop
    from which they stay within 1 mm of where they end)``."""
    X = frames[:, over]
    window = X[SHAKE_FRAMES + 2:SHAKE_FRAMES + 15]
    pp = np.linalg.norm(window.max(axis=0) - window.min(axis=0), axis=1).max()
    off = np.linalg.norm(X[SHAKE_FRAMES:] - X[-1], axis=2).max(axis=1)
    above = np.flatnonzero(off > 0.001)
    return pp, (above[-1] + 1) / 24.0 if len(above) else 0.0


SAME_RESPONSE = 0.30
"""Largest relative difference of the loose jiggle between 10 and 30 particles."""


def test_arm_shake_loose_jiggles_tense_settles_for_10_and_30_particles(bpy):
    import blender_session

    results = {}
    for particles in (10, 30):
        for k in (0.1, 0.7):
            blender_session.reset()
            blender_session.enable()
            frames, over = _shaken_arm(bpy, k, particles)
            results[particles, k] = _after_the_stop(frames, over)
            print(f"{particles} particles, stiffness {k}: {results[particles, k][0] * 1000:.2f} mm peak to peak "
                  f"after the stop, within 1 mm after {results[particles, k][1]:.2f} s")
    for particles in (10, 30):
        loose, tense = results[particles, 0.1], results[particles, 0.7]
        assert loose[0] >= 0.003
        assert tense[1] <= 0.2
        assert loose[0] >= 3.0 * tense[0]
    loose = [results[n, 0.1][0] for n in (10, 30)]
    assert max(loose) - min(loose) <= SAME_RESPONSE * max(loose)
