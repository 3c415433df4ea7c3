"""Where bakes go (issue "Production paths in Blender", item 8): two shots saved in one folder and two meshes whose
names clean alike each bake to a file of their own and play it; a file that is another's (a renamed shot's, an
earlier version's) is never written; an unsaved file bakes into the temporary folder and says so; Bake and Merge
Bake say why they cannot run."""
import math
import os
from pathlib import Path

import numpy as np
import pytest

from blender_scenes import animate_arm, animated_arm, bind, evaluated, make_arm, start_scene
from test_bake import _live, _module
from test_evaluation import SAME_TOL

LAST = 20
"""The bakes here cover frames 1-20."""
DIFFERENT = 0.005
"""Two animations compared here differ by more than this [m] somewhere on the arm at frame ``LAST``, so a mesh
playing the other's bake is caught."""


def _bend_elbow(bpy, rig, degrees, side=""):
    """Key the elbow of ``side`` at ``degrees`` on frame 30 instead of the 110 of ``animate_arm``; the current
    frame shows its keyed pose again."""
    elbow = rig.pose.bones["elbow" + side]
    elbow.rotation_euler = (math.radians(degrees), 0.0, 0.0)
    elbow.keyframe_insert("rotation_euler", frame=30)
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)


def _bake(bpy):
    assert bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=LAST) == {'FINISHED'}


def _plays(bpy, blend, mesh_name, live):
    """Open ``blend`` and check that ``mesh_name`` plays ``live[LAST]`` from its Mesh Cache."""
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    mesh = bpy.data.objects[mesh_name]
    assert mesh.implicit_skin.baked
    bpy.context.scene.frame_set(LAST)
    assert np.abs(evaluated(bpy, mesh) - live[LAST]).max() < SAME_TOL, blend


def _cache_file(bpy, mesh) -> Path:
    return Path(bpy.path.abspath(mesh.implicit_skin.bake_file))


def _bound_shot(bpy, blend, elbow=None):
    """The animated arm (its elbow keyed at ``elbow`` degrees on frame 30 if given), saved as ``blend`` and bound:
    ``(rig, mesh, live)``, ``live`` its live positions on frame ``LAST``."""
    rig, mesh = animated_arm(bpy)
    if elbow is not None:
        _bend_elbow(bpy, rig, elbow)
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bind(bpy, mesh)
    return rig, mesh, _live(bpy, mesh, (LAST,))


def test_two_shots_saved_in_one_folder_each_play_their_own_bake(bpy, tmp_path):
    """shot_020.blend is shot_010.blend saved under another name with the elbow keyed differently; both bake a
    mesh named Arm in the same folder, and each shot plays its own animation when reopened."""
    rig, mesh, live_010 = _bound_shot(bpy, tmp_path / "shot_010.blend")
    _bake(bpy)
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot_020.blend"))
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.clear_bake() == {'FINISHED'}
    _bend_elbow(bpy, rig, 60.0)
    bpy.ops.implicit_muscles.reset_simulation()
    live_020 = _live(bpy, mesh, (LAST,))
    assert np.abs(live_020[LAST] - live_010[LAST]).max() > DIFFERENT
    _bake(bpy)
    bpy.ops.wm.save_mainfile()
    assert mesh.implicit_skin.bake_file.startswith("//implicit_muscles_cache/shot_020/Arm_")
    _plays(bpy, tmp_path / "shot_010.blend", "Arm", live_010)
    assert bpy.data.objects["Arm"].implicit_skin.bake_file.startswith("//implicit_muscles_cache/shot_010/Arm_")
    _plays(bpy, tmp_path / "shot_020.blend", "Arm", live_020)


def test_two_meshes_whose_names_clean_alike_bake_two_files(bpy, tmp_path):
    """Arm.L and Arm_L (both clean to Arm_L), on two chains whose elbows bend differently, bake in one go to two
    files, and each plays its own."""
    sides = (".L", "_L")
    rig, meshes = make_arm(bpy, sides=sides)
    animate_arm(bpy, rig, sides)
    _bend_elbow(bpy, rig, 60.0, side="_L")
    start_scene(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    for mesh in meshes:
        bind(bpy, mesh)
    live = {mesh.name: _live(bpy, mesh, (LAST,)) for mesh in meshes}
    assert np.abs(live["Arm.L"][LAST] - live["Arm_L"][LAST]).max() > DIFFERENT
    _bake(bpy)
    files = {mesh.name: _cache_file(bpy, mesh) for mesh in meshes}
    assert files["Arm.L"] != files["Arm_L"] and all(f.is_file() for f in files.values())
    assert all(f.name.startswith("Arm_L_") for f in files.values())
    bpy.ops.wm.save_mainfile()
    for name in live:
        _plays(bpy, tmp_path / "shot.blend", name, live[name])


def test_a_renamed_shots_bake_is_not_written_by_a_new_shot_of_its_old_name(bpy, tmp_path, capfd):
    """shot.blend is baked, then renamed shot_v1.blend on disk (it keeps playing its bake from the stored path). A
    new shot.blend with another animation bakes beside it: the bake takes the next free name and says so."""
    rig, mesh, live_v1 = _bound_shot(bpy, tmp_path / "shot.blend")
    _bake(bpy)
    bpy.ops.wm.save_mainfile()
    first = _cache_file(bpy, mesh)
    before = first.read_bytes()
    os.replace(tmp_path / "shot.blend", tmp_path / "shot_v1.blend")

    bpy.ops.wm.read_homefile(use_empty=True)
    rig, mesh, live = _bound_shot(bpy, tmp_path / "shot.blend", elbow=60.0)
    capfd.readouterr()
    _bake(bpy)
    second = _cache_file(bpy, mesh)
    assert second != first and second.name == first.stem + "-2.pc2"
    assert first.read_bytes() == before
    assert f"belongs to another bake (another object, or another shot of this name), so this bake went to " \
           f"{second.name}." in capfd.readouterr().out
    bpy.ops.wm.save_mainfile()
    _plays(bpy, tmp_path / "shot_v1.blend", "Arm", live_v1)
    _plays(bpy, tmp_path / "shot.blend", "Arm", live)


def test_a_file_another_object_plays_is_not_written(bpy, tmp_path):
    """Arm is baked, then renamed Arm_old; its duplicate, renamed Arm, copies its Mesh Cache and stored bake.
    Baking the new Arm, whose usual file is Arm_old's bake, writes another file and leaves Arm_old's as it was."""
    rig, mesh, _ = _bound_shot(bpy, tmp_path / "shot.blend")
    _bake(bpy)
    played = _cache_file(bpy, mesh)
    before = played.read_bytes()
    copy = mesh.copy()
    copy.data = mesh.data.copy()
    bpy.context.scene.collection.objects.link(copy)
    mesh.name = "Arm_old"
    copy.name = "Arm"
    mesh.implicit_skin.enabled = False  # only the copy bakes
    bind(bpy, copy)
    _bend_elbow(bpy, rig, 60.0)
    bpy.ops.implicit_muscles.reset_simulation()
    _bake(bpy)
    assert _cache_file(bpy, copy) != played and _cache_file(bpy, copy).is_file()
    assert played.read_bytes() == before and mesh.modifiers["Implicit Skinning Cache"].filepath == \
        mesh.implicit_skin.bake_file


def test_an_earlier_versions_bake_still_plays_and_is_never_written(bpy, tmp_path):
    """A file baked by the previous version stores ``//implicit_muscles_cache/Arm.pc2``: reopened, it plays that
    file; baked again after an edit, the new bake goes to this shot's folder and the old file stays as it was."""
    rig, mesh, live = _bound_shot(bpy, tmp_path / "shot.blend")
    _bake(bpy)
    old_path = "//implicit_muscles_cache/Arm.pc2"  # where the previous version baked, and what it stored
    old = tmp_path / "implicit_muscles_cache" / "Arm.pc2"
    os.replace(_cache_file(bpy, mesh), old)
    mesh.modifiers["Implicit Skinning Cache"].filepath = mesh.implicit_skin.bake_file = old_path
    bpy.ops.wm.save_mainfile()
    _plays(bpy, tmp_path / "shot.blend", "Arm", live)
    before = old.read_bytes()
    mesh, rig = bpy.data.objects["Arm"], bpy.data.objects["Rig"]
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.clear_bake() == {'FINISHED'}
    _bend_elbow(bpy, rig, 60.0)
    bpy.ops.implicit_muscles.reset_simulation()
    _bake(bpy)
    assert mesh.implicit_skin.bake_file.startswith("//implicit_muscles_cache/shot/Arm_")
    assert old.read_bytes() == before


def test_an_unsaved_file_bakes_into_the_temporary_folder_and_says_where(bpy, tmp_path, capfd):
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    live = _live(bpy, mesh, (LAST,))
    paths = bpy.context.preferences.filepaths
    temporary = paths.temporary_directory
    paths.temporary_directory = str(tmp_path)
    try:
        capfd.readouterr()
        _bake(bpy)
        out = capfd.readouterr().out
    finally:
        paths.temporary_directory = temporary
    folder = tmp_path / "implicit_muscles_cache" / "untitled"
    assert _cache_file(bpy, mesh).parent == folder and _cache_file(bpy, mesh).is_file()
    assert f"This file is not saved, so the bake went to the temporary folder {folder.as_posix()}: save the file " \
           f"and bake again to keep the bake next to it." in out
    bpy.context.scene.frame_set(LAST)
    assert np.abs(evaluated(bpy, mesh) - live[LAST]).max() < SAME_TOL


@pytest.mark.parametrize("op", ["bake", "bake_merge"])
def test_bake_and_merge_say_why_they_cannot_run(bpy, op):
    operator = getattr(bpy.ops.implicit_muscles, op)
    rig, mesh = animated_arm(bpy)
    assert not operator.poll()
    with pytest.raises(RuntimeError, match="No mesh to bake: bind a mesh with Implicit Skinning first"):
        operator(frame_start=1, frame_end=LAST)
    bind(bpy, mesh)
    assert operator.poll()
    running = _module("operators.bake")._running
    running.add(0)  # what a modal bake in the UI records while it runs
    try:
        with pytest.raises(RuntimeError, match="A bake is running: wait for it to finish, or press Esc to stop it"):
            operator(frame_start=1, frame_end=LAST)
    finally:
        running.discard(0)
    assert operator.poll()
