"""A muscle whose *Solver* is Rod (VIPER) in Blender: it binds as a rod, plays differently from the
paper's axis, scrubs to the same frame however it is reached, bakes what playback shows, survives save and reopen,
and switching the solver makes the bind stale (it is part of the set-up)."""
import importlib

import numpy as np

import blender_session
from blender_scenes import animated_arm, bind, evaluated
from test_evaluation import SAME_TOL

FRAMES = (1, 12, 30, 40)
"""Frames compared between playing, jumping, scrubbing back, the bake and the reopened file."""
DIFFERS = 1e-4
"""[m] Least largest difference between the skin of the arm with the biceps as a rod and as an axis (frame 30)."""


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _play(bpy, mesh, frames=FRAMES):
    out = {}
    scene = bpy.context.scene
    for f in range(1, max(frames) + 1):
        scene.frame_set(f)
        if f in frames:
            out[f] = evaluated(bpy, mesh)
    return out


def scrubs_and_bakes_as_played(bpy, mesh, played):
    """Scrubbing (a jump simulates the frames between, back comes from the cache) and a bake of frames 1-40 show
    ``played`` (frame -> evaluated positions of ``FRAMES``)."""
    scene = bpy.context.scene
    bpy.ops.implicit_muscles.reset_simulation()
    scene.frame_set(1)
    scene.frame_set(30)
    assert np.abs(evaluated(bpy, mesh) - played[30]).max() < SAME_TOL
    scene.frame_set(40)
    for f in (12, 40, 1, 30):
        scene.frame_set(f)
        assert np.abs(evaluated(bpy, mesh) - played[f]).max() < SAME_TOL, f
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=40) == {'FINISHED'}
    for f in reversed(FRAMES):
        scene.frame_set(f)
        assert np.abs(evaluated(bpy, mesh) - played[f]).max() < SAME_TOL, f


def test_a_rod_muscle_binds_plays_scrubs_bakes_and_survives_reopening(bpy, tmp_path):
    rig, mesh = animated_arm(bpy)
    biceps = rig.implicit_muscles.muscles[0]
    assert biceps.solver == 'AXIS'  # the paper's by default
    bind(bpy, mesh)
    axis = _play(bpy, mesh)
    runtime = _module("blender.session.runtime")
    biceps.solver = 'ROD'
    assert runtime.stored_stale(mesh)  # part of the set-up: a new bind is asked for
    path = str(tmp_path / "rod.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bind(bpy, mesh)
    assert runtime.stored_stale(mesh) == ""
    character = runtime.bound(mesh).character
    assert character.model.rod_muscles.tolist() == [True, False]
    played = _play(bpy, mesh)
    assert np.abs(played[30] - axis[30]).max() > DIFFERS  # another solver, another skin
    assert all(np.isfinite(x).all() for x in played.values())
    scrubs_and_bakes_as_played(bpy, mesh, played)
    bpy.ops.wm.save_mainfile()
    # reopened: the solver is kept, the bind fits, the bake plays, and without it the rod plays the same again
    bpy.ops.wm.open_mainfile(filepath=path)
    rig, mesh = bpy.data.objects["Rig"], bpy.data.objects["Arm"]
    assert rig.implicit_muscles.muscles[0].solver == 'ROD'
    scene = bpy.context.scene
    scene.frame_set(30)
    assert np.abs(evaluated(bpy, mesh) - played[30]).max() < SAME_TOL
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.clear_bake() == {'FINISHED'}
    runtime = _module("blender.session.runtime")
    assert runtime.stored_stale(mesh) == ""
    scene.frame_set(1)
    scene.frame_set(12)
    assert np.abs(evaluated(bpy, mesh) - played[12]).max() < SAME_TOL
    assert _module("blender.session.runtime").bound(mesh).character.model.rod_muscles.tolist() == [True, False]
