"""Fat primitives in Blender: added from presets sized to the limb, bound, played (the rest pose
gives the rest mesh, a jiggling fat moves the skin on held frames, the same frame however it is reached), baked
as played, and refused with a sentence on a bone that is not there."""
import importlib
import numpy as np
import pytest

import blender_session
from blender_scenes import bind, evaluated, make_arm, positions, start_scene
from test_evaluation import SAME_TOL

REST_TOL = 5e-4
"""The rest pose against the rest mesh [m]."""
MOVES_SKIN = 5e-4
"""[m] the least the jiggling fat moves the skin between two held frames."""


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def test_presets_place_and_size_the_fat_relative_to_the_limb(bpy):
    rig, _ = make_arm(bpy)
    ops = bpy.ops.implicit_muscles
    fats = rig.implicit_muscles.fats
    radius = _module("blender.scene.rig").limb_radius(rig, "shoulder")
    length = rig.data.bones["shoulder"].length
    presets = _module("blender.authoring.fat_presets").PRESETS
    for name in ("belly", "Chest", "buttocks", "THIGH"):
        assert ops.add_fat(bone="shoulder", preset=name) == {'FINISHED'}
        fat = fats[-1]
        along, depth, axes, stiffness, damping = presets[name.lower()]
        assert fat.name == name.lower() and fat.bone == "shoulder"
        np.testing.assert_allclose(fat.center, (0.0, along * length, depth * radius), atol=1e-6)
        np.testing.assert_allclose(fat.axes, np.array(axes) * radius, atol=1e-6)
        assert fat.stiffness == pytest.approx(stiffness) and fat.damping == pytest.approx(damping)
    assert ops.add_fat(bone="shoulder", preset="belly") == {'FINISHED'}
    assert fats[-1].name == "belly.001" and rig.implicit_muscles.active_fat_index == 4
    with pytest.raises(RuntimeError, match="No fat preset called 'knee'; the presets are belly, chest"):
        ops.add_fat(bone="shoulder", preset="knee")
    with pytest.raises(RuntimeError, match="Give the bone the fat hangs on"):
        ops.add_fat(preset="belly")
    assert len(fats) == 5
    assert ops.remove_fat(index=0) == {'FINISHED'} and [f.name for f in fats][0] == "chest"



def test_removing_a_fat_moves_the_later_fats_keys_and_drivers_down(bpy):
    rig, _ = make_arm(bpy)
    ops = bpy.ops.implicit_muscles
    for preset in ("belly", "chest", "thigh"):
        assert ops.add_fat(bone="shoulder", preset=preset) == {'FINISHED'}
    fats = rig.implicit_muscles.fats
    for index, value in ((0, 0.2), (2, 0.8)):
        fats[index].stiffness = value
        rig.keyframe_insert(f"implicit_muscles.fats[{index}].stiffness", frame=1)
    gauge = bpy.data.objects.new("Gauge", None)
    bpy.context.scene.collection.objects.link(gauge)
    var = gauge.driver_add("location", 2).driver.variables.new()
    var.targets[0].id = rig
    var.targets[0].data_path = "implicit_muscles.fats[2].damping"
    assert ops.remove_fat(index=0) == {'FINISHED'}
    animation = _module("blender.scene.animation")
    paths = sorted(fc.data_path for fc in animation.fcurves(rig))
    assert paths == ["implicit_muscles.fats[1].stiffness"]  # fat 0's key went with it, fat 2's moved to index 1
    assert var.targets[0].data_path == "implicit_muscles.fats[1].damping"
    bpy.context.scene.frame_set(1)
    assert [f.name for f in fats] == ["chest", "thigh"] and fats[1].stiffness == pytest.approx(0.8)

def _jerked_arm(bpy):
    """The arm with a thigh-preset fat on its upper arm, keyed stiffness; the whole arm jerked 3 cm along the
    upper arm's local Z between frames 4 and 6, then held to frame 30."""
    rig, (mesh,) = make_arm(bpy)
    assert bpy.ops.implicit_muscles.add_fat(bone="shoulder", preset="thigh") == {'FINISHED'}
    fat = rig.implicit_muscles.fats[0]
    for frame, stiffness in ((1, 0.5), (30, 0.6)):
        fat.stiffness = stiffness
        rig.keyframe_insert("implicit_muscles.fats[0].stiffness", frame=frame)
    root = rig.pose.bones["shoulder"]
    for frame, z in ((1, 0.0), (4, 0.0), (6, 0.03), (30, 0.03)):
        root.location = (0.0, 0.0, z)
        root.keyframe_insert("location", frame=frame)
    start_scene(bpy)
    return rig, mesh


def test_a_bound_fat_keeps_the_rest_mesh_jiggles_the_skin_and_bakes_as_played(bpy, tmp_path):
    from mathutils import Vector

    rig, mesh = _jerked_arm(bpy)
    rest = positions(mesh.data)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "fat.blend"))
    bind(bpy, mesh)
    character = _module("blender.session.runtime").bound(mesh).character
    assert character.model.fat_model is not None and character.model.fat_model.names == ["thigh"]
    scene = bpy.context.scene
    scene.frame_set(1)
    assert np.abs(evaluated(bpy, mesh) - rest).max() < REST_TOL
    live = {}
    for f in range(1, 21):
        scene.frame_set(f)
        live[f] = evaluated(bpy, mesh)
    # held from frame 6: the jiggling fat keeps moving the skin over it, and only there (each vertex's largest step
    # between two held frames: a single pair may fall on the fat's turning point, where it barely moves)
    steps = np.max([np.linalg.norm(live[f + 1] - live[f], axis=1) for f in range(8, 20)], axis=0)
    assert steps.max() > MOVES_SKIN
    moved = rest[steps > 0.2 * steps.max()]
    fat = rig.implicit_muscles.fats[0]
    bone = rig.data.bones["shoulder"]
    centre = np.array(bone.matrix_local @ Vector(fat.center))
    assert np.linalg.norm(moved - centre, axis=1).max() < 2.5 * max(fat.axes)
    # the same frame however it is reached: jumping back, then forward again
    scene.frame_set(3)
    scene.frame_set(12)
    assert np.abs(evaluated(bpy, mesh) - live[12]).max() < SAME_TOL
    # the bake plays what was played
    bpy.ops.wm.save_mainfile()
    assert bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=20) == {'FINISHED'}
    for f in (20, 12, 6):
        scene.frame_set(f)
        assert np.abs(evaluated(bpy, mesh) - live[f]).max() < SAME_TOL, f


def test_a_fat_on_a_missing_bone_is_refused_with_a_sentence(bpy):
    rig, (mesh,) = make_arm(bpy)
    assert bpy.ops.implicit_muscles.add_fat(bone="shoulder", preset="belly") == {'FINISHED'}
    rig.implicit_muscles.fats[0].bone = "hip"
    before = positions(mesh.data)
    bpy.context.view_layer.objects.active = mesh
    with pytest.raises(RuntimeError, match=r"belly: its bone 'hip' is not in Rig \(renamed or deleted\?\); pick a "
                                           r"bone in the fat's panel\."):
        bpy.ops.implicit_muscles.bind_skin()
    assert not mesh.implicit_skin.bound and np.array_equal(positions(mesh.data), before)
    rig.implicit_muscles.fats[0].bone = "shoulder"
    rig.implicit_muscles.fats[0]["axes"] = (0.05, 0.0, 0.02)  # a raw ID property, past the property's range
    with pytest.raises(RuntimeError, match=r"belly: its semi-axes must all be greater than 0"):
        bpy.ops.implicit_muscles.bind_skin()
    assert not mesh.implicit_skin.bound


def test_a_fat_follows_its_renamed_bone(bpy):
    rig, (mesh,) = make_arm(bpy)
    assert bpy.ops.implicit_muscles.add_fat(bone="shoulder", preset="belly") == {'FINISHED'}
    _module("blender.scene.rig").follow_renames(rig)  # the names as they are now
    rig.data.bones["shoulder"].name = "upper_arm"
    assert _module("blender.scene.rig").follow_renames(rig) == 1
    assert rig.implicit_muscles.fats[0].bone == "upper_arm"
    bind(bpy, mesh)
    assert _module("blender.session.runtime").bound(mesh).character.model.fat_model.count == 1


def test_the_viewport_draws_the_fat_where_it_is(bpy):
    """Headless, the drawn triangles (``blender/display/muscle_shapes.rig_mesh``): a fat alone on a rig is drawn as its
    ellipsoid carried by its bone; once a bound mesh plays, where the simulation put it."""
    from mathutils import Vector

    rig, mesh = _jerked_arm(bpy)
    display_mesh = _module("blender.display.muscle_shapes")
    fat = rig.implicit_muscles.fats[0]
    scene = bpy.context.scene

    def drawn_centre():
        drawn = display_mesh.rig_mesh(rig, scene)
        assert drawn is not None and len(drawn.faces) == 2 * 12 * 7
        return drawn.vertices.astype(np.float64).mean(axis=0)

    scene.frame_set(12)  # not bound: carried rigidly by the posed bone
    pose = rig.pose.bones["shoulder"].matrix @ Vector(fat.center)
    np.testing.assert_allclose(drawn_centre(), pose[:], atol=1e-5)
    bind(bpy, mesh)
    scene.frame_set(1)
    scene.frame_set(7)  # just after the jerk: at its travel (7 mm) from its bone's place
    pose = rig.pose.bones["shoulder"].matrix @ Vector(fat.center)
    simulated = _module("blender.session.runtime").bound(mesh).character.fat_batch.center[0]
    assert np.linalg.norm(simulated - np.array(pose[:])) > 5e-3
    np.testing.assert_allclose(drawn_centre(), simulated, atol=1e-5)
