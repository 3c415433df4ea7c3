"""Activation from a joint on the generated arm: *Follow Joint* picks the elbow from a biceps'
bones; the angle is the one Blender's own driver reads (local space, constraints included); the activation follows
the elbow (the viewport draws it too) and keys add on top or replace it; the skin is what keys of the same values give; a bake plays what
playback shows; bad joint settings are refused with a sentence."""
import importlib
import math

import numpy as np
import pytest

import blender_session
from blender_scenes import bind, evaluated, make_arm, start_scene

SAME_TOL = 1e-6
"""The same frame computed twice [m] (positions go through float32 attributes)."""
KEYED_TOL = 1e-5
"""[m] the skin with the joint's activation against keys holding the same values (stored as float32, 1e-7)."""
ANGLE_TOL = 1e-5
"""[rad] our angle against Blender's driver (both from float32 pose matrices)."""
FRAMES = range(1, 31)


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _biceps_arm(bpy, elbow_keys=((1, 0.0), (20, 110.0), (40, 20.0))):
    """The arm with a biceps (shoulder -> elbow) and the elbow keyed about its local X: ``(rig, mesh, biceps)``."""
    rig, (mesh,) = make_arm(bpy)
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="elbow",
                                               preset="biceps") == {'FINISHED'}
    elbow = rig.pose.bones["elbow"]
    elbow.rotation_mode = 'XYZ'
    for frame, degrees in elbow_keys:
        elbow.rotation_euler = (math.radians(degrees), 0.0, 0.0)
        elbow.keyframe_insert("rotation_euler", frame=frame)
    start_scene(bpy)
    return rig, mesh, rig.implicit_muscles.muscles[0]


def _activation(bpy, rig, mesh):
    """The biceps' activation this frame as the frame handler computes it."""
    frame_inputs = _module("blender.scene.frame_inputs")
    bound = _module("blender.session.runtime").bound(mesh)
    arm_eval = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    return float(frame_inputs.muscle_values(arm_eval, bound.source).activation[0])


def test_follow_joint_picks_the_elbow_and_the_axis_it_turns_about(bpy):
    rig, mesh, biceps = _biceps_arm(bpy)
    assert bpy.ops.implicit_muscles.follow_joint() == {'FINISHED'}
    assert (biceps.joint_bone, biceps.joint_axis, biceps.activation_mode) == ("elbow", 'X', 'ADD')
    assert biceps.joint_angle_rest == 0.0 and biceps.joint_angle_active == pytest.approx(math.radians(120.0))
    # a triceps behind the bone is stretched by that flexion: it follows the other way
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="elbow",
                                               preset="triceps") == {'FINISHED'}
    triceps = rig.implicit_muscles.muscles[1]
    triceps.origin_point.z *= -1.0
    triceps.insertion_point.z *= -1.0
    assert bpy.ops.implicit_muscles.follow_joint() == {'FINISHED'}
    assert triceps.joint_bone == "elbow" and triceps.joint_angle_active == pytest.approx(-math.radians(120.0))
    assert bpy.ops.implicit_muscles.clear_joint() == {'FINISHED'} and triceps.joint_bone == ""
    # an elbow keyed to turn about its local Z: the muscle follows that turn, whatever its place
    elbow = rig.pose.bones["elbow"]
    for frame, degrees in ((1, 0.0), (20, 80.0)):
        elbow.rotation_euler = (0.0, 0.0, math.radians(degrees))
        elbow.keyframe_insert("rotation_euler", frame=frame)
    rig.implicit_muscles.active_index = 0
    assert bpy.ops.implicit_muscles.follow_joint() == {'FINISHED'} and biceps.joint_axis == 'Z'


def test_the_angle_is_what_blenders_driver_reads_in_local_space_with_constraints(bpy):
    rig, mesh, biceps = _biceps_arm(bpy, elbow_keys=())
    joint, drive_core = _module("blender.scene.joint"), _module("core.muscle.joint_drive")
    elbow = rig.pose.bones["elbow"]
    rig.pose.bones["shoulder"].rotation_mode = 'XYZ'
    rig.pose.bones["shoulder"].rotation_euler = (0.3, -0.5, 0.2)  # the parent's own turn does not count
    limit = elbow.constraints.new('LIMIT_ROTATION')  # the evaluated pose counts: flexion stops at 90 degrees
    limit.use_limit_x, limit.min_x, limit.max_x = True, 0.0, math.radians(90.0)
    limit.owner_space = 'LOCAL'
    gauge = bpy.data.objects.new("Gauge", None)
    bpy.context.scene.collection.objects.link(gauge)
    fc = gauge.driver_add("location", 0)
    fc.driver.type = 'AVERAGE'
    var = fc.driver.variables.new()
    var.type = 'TRANSFORMS'
    t = var.targets[0]
    t.id, t.bone_target, t.transform_type = rig, "elbow", 'ROT_X'
    t.rotation_mode, t.transform_space = 'SWING_TWIST_X', 'LOCAL_SPACE'
    biceps.joint_bone, biceps.joint_axis = "elbow", 'X'
    read = []
    for degrees, swing in ((0.0, 0.0), (35.0, 0.0), (70.0, 0.3), (110.0, -0.2), (-40.0, 0.25)):
        elbow.rotation_euler = (math.radians(degrees), swing, 0.5 * swing)
        bpy.context.view_layer.update()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        arm_eval = rig.evaluated_get(depsgraph)
        B = _module("blender.scene.frame_inputs").bone_transforms(arm_eval, joint.rest_transforms(rig))
        ours = drive_core.joint_angles(B, joint.read_drive(arm_eval, [0]))[0]
        theirs = gauge.evaluated_get(depsgraph).location[0]
        assert abs(ours - theirs) < ANGLE_TOL, (degrees, swing, ours, theirs)
        read.append(ours)
    assert abs(read[3] - math.radians(90.0)) < 0.05  # limited by the constraint, not the key's 110 degrees


def test_activation_follows_the_elbow_and_keys_add_on_top_or_replace_it(bpy):
    rig, mesh, biceps = _biceps_arm(bpy)
    assert bpy.ops.implicit_muscles.follow_joint() == {'FINISHED'}
    biceps.joint_angle_active = math.radians(110.0)
    for frame, value in ((1, 0.0), (40, 0.4)):  # a keyed activation rising slowly under the joint's
        biceps.activation = value
        rig.keyframe_insert("implicit_muscles.muscles[0].activation", frame=frame)
    curve = next(fc for fc in _module("blender.scene.animation").fcurves(rig) if fc.data_path.endswith("activation"))
    bind(bpy, mesh)
    seen = []
    for f in (1, 5, 10, 15, 20, 25, 30, 40):
        bpy.context.scene.frame_set(f)
        angle = rig.pose.bones["elbow"].rotation_euler.x
        expected = min(1.0, max(0.0, angle / math.radians(110.0)) + curve.evaluate(f))
        got = _activation(bpy, rig, mesh)
        assert got == pytest.approx(expected, abs=1e-6), f
        seen.append(got)
    assert seen[0] == 0.0 and seen[4] == 1.0 and 0.2 < seen[2] < 0.9  # rest, full flexion (saturated), between
    bpy.context.scene.frame_set(10)  # the viewport draws (and colours) the same activation
    assert _module("blender.display.muscle_shapes").activations(rig)[0] == pytest.approx(seen[2], abs=1e-6)
    biceps.activation_mode = 'REPLACE'  # the keys alone
    for f in (10, 20):
        bpy.context.scene.frame_set(f)
        assert _activation(bpy, rig, mesh) == pytest.approx(curve.evaluate(f), abs=1e-6)


def test_the_skin_is_what_keys_of_the_same_values_give_and_the_bake_plays_it(bpy, tmp_path):
    rig, mesh, biceps = _biceps_arm(bpy)
    assert bpy.ops.implicit_muscles.follow_joint() == {'FINISHED'}
    biceps.joint_angle_active = math.radians(110.0)
    biceps.joint_curve = 'SMOOTH'
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "curl.blend"))
    bind(bpy, mesh)
    rest = evaluated(bpy, mesh)
    live, activation = {}, {}
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        live[f] = evaluated(bpy, mesh)
        activation[f] = _activation(bpy, rig, mesh)
    assert max(activation.values()) > 0.99 and np.abs(live[20] - rest).max() > 0.01
    # the bake plays the same frames, visited backwards
    assert bpy.ops.implicit_muscles.bake(frame_start=FRAMES[0], frame_end=FRAMES[-1]) == {'FINISHED'}
    for f in (30, 20, 7, 1):
        bpy.context.scene.frame_set(f)
        assert np.abs(evaluated(bpy, mesh) - live[f]).max() < SAME_TOL, f
    assert bpy.ops.implicit_muscles.clear_bake() == {'FINISHED'}
    # the same activation keyed by hand on every frame, the joint off: the same skin
    biceps.joint_bone = ""
    for f in FRAMES:
        biceps.activation = activation[f]
        rig.keyframe_insert("implicit_muscles.muscles[0].activation", frame=f)
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.reset_simulation() == {'FINISHED'}
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        assert np.abs(evaluated(bpy, mesh) - live[f]).max() < KEYED_TOL, f
    # and without the keys nor the joint, the biceps does not bulge the same
    biceps.joint_bone = "elbow"
    biceps.activation_mode = 'REPLACE'
    for f in FRAMES:
        biceps.activation = 0.0
        rig.keyframe_insert("implicit_muscles.muscles[0].activation", frame=f)
    assert bpy.ops.implicit_muscles.reset_simulation() == {'FINISHED'}
    bpy.context.scene.frame_set(1)
    bpy.context.scene.frame_set(20)
    assert np.abs(evaluated(bpy, mesh) - live[20]).max() > 1e-3


def test_bad_joint_settings_are_refused_with_a_sentence(bpy):
    rig, mesh, biceps = _biceps_arm(bpy)
    runtime = _module("blender.session.runtime")
    biceps.joint_bone = "wrist"  # below the insertion: its turn does not bend the biceps
    message = ("biceps: its joint bone 'wrist' does not bend between its origin bone 'shoulder' and its insertion "
               "bone 'elbow'")
    assert _module("blender.scene.rig").muscle_problem(rig, biceps).startswith(message)
    with pytest.raises(RuntimeError, match=message):
        bind(bpy, mesh)
    assert not mesh.implicit_skin.bound and runtime.bound(mesh) is None
    biceps.joint_bone = "elbow"
    biceps.joint_angle_rest = biceps.joint_angle_active = math.radians(30.0)
    with pytest.raises(RuntimeError, match="biceps: its joint angles at rest and fully active are both 30 degrees; "
                                           "give them different values"):
        bind(bpy, mesh)
    # set after bind: the frame falls back to the Armature result and says why
    biceps.joint_angle_active = math.radians(100.0)
    bind(bpy, mesh)
    biceps.joint_angle_active = math.radians(30.0)
    bpy.context.scene.frame_set(5)
    assert "joint angles at rest and fully active are both 30 degrees" in runtime.bound(mesh).last_error
    assert not mesh.modifiers["Implicit Skinning"].show_viewport and mesh.modifiers["Armature"].show_viewport
    biceps.joint_angle_active = math.radians(100.0)
    bpy.context.scene.frame_set(6)
    assert runtime.bound(mesh).last_error == "" and mesh.modifiers["Implicit Skinning"].show_viewport
    # one bone, no joint: Follow Joint says so and changes nothing
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="shoulder") == {'FINISHED'}
    with pytest.raises(RuntimeError, match="on the same bone 'shoulder', so no joint bends it"):
        bpy.ops.implicit_muscles.follow_joint()
    assert rig.implicit_muscles.muscles[1].joint_bone == ""


def test_a_mirrored_muscle_follows_the_other_elbow_the_same_way(bpy):
    rig, meshes = make_arm(bpy, sides=(".L", ".R"))
    ops = bpy.ops.implicit_muscles
    assert ops.add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L", preset="biceps") == {'FINISHED'}
    assert ops.follow_joint() == {'FINISHED'} and ops.mirror_muscle() == {'FINISHED'}
    left, right = rig.implicit_muscles.muscles
    assert (right.name, right.joint_bone, right.joint_axis) == ("biceps.R", "elbow.R", left.joint_axis)
    for side in (".L", ".R"):  # both elbows flexed alike (a mirrored pose turns about X the same way)
        pb = rig.pose.bones["elbow" + side]
        pb.rotation_mode = 'XYZ'
        pb.rotation_euler = (math.radians(60.0), 0.0, 0.0)
    bpy.context.view_layer.update()
    arm_eval = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    got = _module("blender.scene.joint").frame_activation(arm_eval, np.arange(2), np.zeros(2))
    assert got[0] == pytest.approx(0.5, abs=1e-5) and got[1] == pytest.approx(got[0], abs=1e-6)
