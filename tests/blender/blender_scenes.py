"""Rigs built in Blender for the tests: the paper's arm (scenes/paper.py) as an armature + skinned mesh, on one
side (``.L``) or mirrored on both sides of X = 0 (``.L`` at +X, ``.R`` at -X); its animated version and the
helpers the evaluation tests share (bind, evaluated positions)."""
from __future__ import annotations

import math

import numpy as np


def make_arm(bpy, sides=("",), offset=0.1):
    """Armature ``Rig`` with bones ``shoulder<side>``, ``elbow<side>``, ``wrist<side>`` and a mesh ``Arm<side>``
    per side, weighted and deformed by an Armature modifier. Side ``.L`` lies at +X, ``.R`` mirrored at -X."""
    import importlib

    import blender_session
    scenes = importlib.import_module(f"{blender_session.ADDON}.scenes.paper")

    arm = scenes.arm_rig()
    data = bpy.data.armatures.new("Rig")
    rig = bpy.data.objects.new("Rig", data)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    rig.select_set(True)
    bpy.ops.object.mode_set(mode='EDIT')
    meshes = []
    for side in sides:
        sign = -1.0 if side.endswith(("R", "r")) else 1.0
        parent = None
        for k, name in enumerate(scenes.ARM_BONES):
            b = data.edit_bones.new(name + side)
            head = scenes.ARM_HEADS[k] + [offset, 0, 0]
            tail = scenes.ARM_TAILS[k] + [offset, 0, 0]
            b.head = (sign * head[0], head[1], head[2])
            b.tail = (sign * tail[0], tail[1], tail[2])
            b.roll = 0.0
            b.parent = parent
            b.use_connect = parent is not None
            parent = b
    bpy.ops.object.mode_set(mode='OBJECT')
    for side in sides:
        sign = -1.0 if side.endswith(("R", "r")) else 1.0
        v = arm.vertices + [offset, 0, 0]
        v[:, 0] *= sign
        faces = arm.faces if sign > 0 else arm.faces[:, ::-1]
        mesh = bpy.data.meshes.new("Arm" + side)
        mesh.from_pydata(v.tolist(), [], faces.tolist())
        obj = bpy.data.objects.new("Arm" + side, mesh)
        bpy.context.scene.collection.objects.link(obj)
        for k, name in enumerate(scenes.ARM_BONES):
            group = obj.vertex_groups.new(name=name + side)
            w = arm.weights[:, k]
            for i in np.flatnonzero(w > 0):
                group.add([int(i)], float(w[i]), 'REPLACE')
        mod = obj.modifiers.new("Armature", 'ARMATURE')
        mod.object = rig
        obj.parent = rig
        meshes.append(obj)
    bpy.context.view_layer.objects.active = rig
    return rig, meshes


def animate_arm(bpy, rig, sides):
    """A biceps and a triceps per side of ``rig``; the elbow bends 0 -> 110 -> 20 degrees over frames 1, 30, 60
    and the biceps is activated at frame 30, on each side."""
    bpy.context.view_layer.objects.active = rig
    ops = bpy.ops.implicit_muscles
    muscles = rig.implicit_muscles.muscles
    biceps = []
    for side in sides:
        assert ops.add_muscle(origin_bone="shoulder" + side, insertion_bone="elbow" + side,
                              preset="biceps") == {'FINISHED'}
        biceps.append(len(muscles) - 1)
        assert ops.add_muscle(origin_bone="shoulder" + side, insertion_bone="elbow" + side,
                              preset="triceps") == {'FINISHED'}
        muscles[-1].origin_point.z *= -1.0  # triceps behind the bone
        muscles[-1].insertion_point.z *= -1.0
        rig.pose.bones["elbow" + side].rotation_mode = 'XYZ'
    for frame, angle, act in ((1, 0.0, 0.0), (30, 110.0, 1.0), (60, 20.0, 0.0)):
        for side in sides:
            elbow = rig.pose.bones["elbow" + side]
            elbow.rotation_euler = (math.radians(angle), 0.0, 0.0)
            elbow.keyframe_insert("rotation_euler", frame=frame)
        for k in biceps:
            muscles[k].activation = act
            rig.keyframe_insert(f'implicit_muscles.muscles[{k}].activation', frame=frame)


def start_scene(bpy):
    """Frames 1-60, the current frame 1."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 60
    scene.frame_set(1)


def animated_arm(bpy):
    """The arm of ``make_arm`` with ``animate_arm``'s muscles and keys: ``(rig, mesh)``."""
    rig, (mesh,) = make_arm(bpy)
    animate_arm(bpy, rig, ("",))
    start_scene(bpy)
    return rig, mesh


def positions(mesh_data):
    """Vertex positions ``(V, 3)`` of a mesh datablock (original or evaluated), float64."""
    co = np.empty(len(mesh_data.vertices) * 3, dtype=np.float32)
    mesh_data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def evaluated(bpy, obj, depsgraph=None):
    """Evaluated vertex positions of ``obj`` (mesh space) in ``depsgraph`` (default: the view layer's)."""
    if depsgraph is None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
    return positions(obj.evaluated_get(depsgraph).data)


def bind(bpy, mesh):
    """Bind Skin on ``mesh`` (made active)."""
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.bind_skin() == {'FINISHED'}
