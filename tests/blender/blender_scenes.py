"""Rigs built in Blender for the tests: the paper's arm (core/scenes.py) as an armature + skinned mesh, on one
side (``.L``) or mirrored on both sides of X = 0 (``.L`` at +X, ``.R`` at -X)."""
from __future__ import annotations

import numpy as np


def make_arm(bpy, sides=("",), offset=0.1):
    """Armature ``Rig`` with bones ``shoulder<side>``, ``elbow<side>``, ``wrist<side>`` and a mesh ``Arm<side>``
    per side, weighted and deformed by an Armature modifier. Side ``.L`` lies at +X, ``.R`` mirrored at -X."""
    import importlib

    import blender_session
    scenes = importlib.import_module(f"{blender_session.ADDON}.core.scenes")

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
