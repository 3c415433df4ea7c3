"""Bake, farm chunks, cache invalidation and feedback on the generated arm.

The bake's Mesh Cache must play exactly what the live evaluation shows (positions go through float32 both ways);
two part bakes made by separate processes (the farm command line) must merge into the cache of one bake; editing
keys must forget the cached muscle states from the edited frame on, and only from there."""
import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import blender_session
from blender_scenes import animated_arm, bind, evaluated
from test_evaluation import SAME_TOL

FRAMES = (1, 12, 30, 40)
"""Frames compared between the live evaluation and the bake."""


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _saved_bound_arm(bpy, tmp_path):
    rig, mesh = animated_arm(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "arm.blend"))
    bind(bpy, mesh)
    bpy.ops.wm.save_mainfile()
    return rig, mesh


def _live(bpy, mesh, frames=FRAMES):
    out = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        out[f] = evaluated(bpy, mesh)
    return out


def test_bake_plays_the_live_result_and_clearing_gives_it_back(bpy, tmp_path):
    rig, mesh = _saved_bound_arm(bpy, tmp_path)
    rest = np.array([v.co[:] for v in mesh.data.vertices])
    live = _live(bpy, mesh)
    assert bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=40) == {'FINISHED'}
    skin = mesh.implicit_skin
    cache = mesh.modifiers["Implicit Skinning Cache"]
    baked = f"implicit_muscles_cache/arm/{_module('blender.session.bake').mesh_stem(mesh)}.pc2"
    assert skin.baked and skin.bake_file == "//" + baked and cache.filepath == skin.bake_file
    assert (tmp_path / baked).is_file()
    shown = {m.name: m.show_render for m in mesh.modifiers}
    assert shown == {"Armature": False, "Implicit Skinning": False, "Implicit Skinning Cache": True}
    bound = _module("blender.session.runtime").bound(mesh)
    for f in reversed(FRAMES):  # backwards: a cache does not care
        bpy.context.scene.frame_set(f)
        assert np.abs(evaluated(bpy, mesh) - live[f]).max() < SAME_TOL, f
    assert bound.last_frame == 40  # the bake ended on frame 40; playing the bake computed nothing
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "arm.blend"))
    mesh = bpy.data.objects["Arm"]
    bpy.context.scene.frame_set(30)
    assert np.abs(evaluated(bpy, mesh) - live[30]).max() < SAME_TOL  # the reopened file plays the bake
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.clear_bake() == {'FINISHED'}
    assert "Implicit Skinning Cache" not in mesh.modifiers and not mesh.implicit_skin.baked
    assert (tmp_path / baked).is_file()  # the file is kept
    bpy.context.scene.frame_set(12)
    assert np.abs(evaluated(bpy, mesh) - live[12]).max() < SAME_TOL
    assert np.array_equal(rest, np.array([v.co[:] for v in mesh.data.vertices]))


def test_two_part_bakes_in_separate_processes_equal_one_bake(bpy, tmp_path):
    """Frames 1-20 and 21-40 baked by the farm command line in two fresh processes, merged, equal one bake of
    1-40 (each part simulates the muscles from the start frame)."""
    rig, mesh = _saved_bound_arm(bpy, tmp_path)
    blend = str(tmp_path / "arm.blend")
    runner = Path(__file__).with_name("run_cli.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(runner.parent), os.environ.get("PYTHONPATH", "")]))
    for frames in ("1-20", "21-40"):
        done = subprocess.run([sys.executable, str(runner), blend, "--frames", frames, "--part"], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    folder = tmp_path / "implicit_muscles_cache" / "arm"
    stem = _module("blender.session.bake").mesh_stem(mesh)
    assert sorted(p.name for p in folder.iterdir()) == [f"{stem}.000001-000020.pc2", f"{stem}.000021-000040.pc2"]
    assert bpy.ops.implicit_muscles.bake_merge(frame_start=1, frame_end=40) == {'FINISHED'}
    pc2 = _module("core.io.pc2")
    start, merged = pc2.read(folder / f"{stem}.pc2")
    assert start == 1 and merged.shape == (40, len(mesh.data.vertices), 3)
    assert sorted(p.name for p in folder.iterdir()) == [f"{stem}.pc2"]  # the parts are merged away
    bpy.context.view_layer.objects.active = mesh
    bpy.ops.implicit_muscles.clear_bake()
    assert bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=40) == {'FINISHED'}
    _, single = pc2.read(folder / f"{stem}.pc2")
    assert np.abs(merged - single).max() < SAME_TOL
    bad = subprocess.run([sys.executable, str(runner), blend, "--frames", "20-x"], env=env, capture_output=True,
                         text=True, timeout=600)
    assert bad.returncode == 1 and "--frames takes a range like 1-100" in bad.stderr


def test_editing_a_key_forgets_the_cache_from_the_key_before_it(bpy):
    """Keys at 1, 30, 40 and 60 on the biceps' activation: changing the key at 40 changes the curve after 30 only,
    so frames up to 29 stay cached, later ones are simulated again and equal a simulation from scratch."""
    rig, mesh = animated_arm(bpy)
    muscle = rig.implicit_muscles.muscles[0]
    muscle.activation = 0.2
    rig.keyframe_insert("implicit_muscles.muscles[0].activation", frame=40)
    bind(bpy, mesh)
    scene = bpy.context.scene
    for f in range(1, 46):
        scene.frame_set(f)
    bound = _module("blender.session.runtime").bound(mesh)
    before = {f: bound.state_for(f) for f in (10, 29)}
    muscle.activation = 1.0  # at frame 45: the preview of the edit forgets frames from 45 on only
    rig.keyframe_insert("implicit_muscles.muscles[0].activation", frame=40)
    evaluated(bpy, mesh)  # the depsgraph update notices the edited action
    assert sorted(bound.cache) == list(range(1, 30)), sorted(bound.cache)
    assert all(bound.state_for(f) is before[f] for f in before)
    for f in range(30, 36):
        scene.frame_set(f)
    edited = evaluated(bpy, mesh)
    bpy.ops.implicit_muscles.reset_simulation()
    scene.frame_set(35)
    assert np.abs(evaluated(bpy, mesh) - edited).max() < SAME_TOL


def test_posing_updates_the_skin_and_a_stale_bind_is_reported(bpy):
    """Posing between frame changes shows the new pose at once; changing a muscle's set-up after bind makes the
    panel say the bind is stale and offer to bind again; each frame's stage times are kept for the panel."""
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    scene = bpy.context.scene
    scene.frame_set(10)
    before = evaluated(bpy, mesh)
    rig.pose.bones["elbow"].rotation_euler[0] += 0.4  # not keyed
    posed = evaluated(bpy, mesh)
    assert np.abs(posed - before).max() > 0.01
    runtime = _module("blender.session.runtime")
    timings = runtime.bound(mesh).timings
    assert timings["frame"] == 10 and {"read", "pbd", "tracking", "write", "total"} <= set(timings)
    panels = _module("panels.muscles")
    layout = blender_session.RecordingLayout()
    panels.draw_skin(layout, bpy.context, mesh)
    assert ("label", "Bound", 'CHECKMARK', False) in layout.log
    assert any(kind == "label" and text.startswith("Frame 10:") for kind, text, _, _ in layout.log)
    rig.implicit_muscles.muscles[0].alpha_rest = 5
    assert runtime.stale_reason(mesh) == "The rest pose or the muscles' set-up changed since bind."
    layout = blender_session.RecordingLayout()
    panels.draw_skin(layout, bpy.context, mesh)
    assert any(alert and "changed since bind" in text for _, text, _, alert in layout.log)
    assert ("operator", "implicit_muscles.bind_skin", 'FILE_REFRESH', True) in layout.log
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.bind_skin() == {'FINISHED'}
    assert runtime.stale_reason(mesh) == ""
