"""Activation from a joint: *Follow Joint* sets the active muscle to follow the joint it crosses, from its bones
(``blender/authoring/joint_follow.py``); *Keys Only* clears it. Undoable; problems are reported in plain words."""
from __future__ import annotations

import bpy
from bpy.props import IntProperty
from bpy.types import Operator

from ..blender.authoring import joint_follow
from ..blender.scene import rig


def _muscle(op, context):
    """``(armature, muscle)`` the operator works on: muscle ``op.index`` (-1: the active one) of the context's
    armature (or the active mesh's), or ``(armature, None)`` after reporting that there is no such muscle."""
    armature = rig.armature_of(context.object)
    props = armature.implicit_muscles if armature is not None else None
    index = -1 if props is None else (props.active_index if op.index < 0 else op.index)
    if props is None or not 0 <= index < len(props.muscles):
        op.report({'ERROR'}, f"There is no muscle number {op.index}.")
        return armature, None
    return armature, props.muscles[index]


def _poll(cls, context) -> bool:
    armature = rig.armature_of(context.object)
    if armature is None:
        cls.poll_message_set("Select an armature with muscles, or a mesh bound to one")
        return False
    if armature.implicit_muscles.active_muscle is None:
        cls.poll_message_set(f"{armature.name} has no muscle: add one first")
        return False
    return True


class IMPLICIT_MUSCLES_OT_follow_joint(Operator):
    """Make the muscle's activation follow the joint it crosses: the insertion bone's turn relative to its parent,
    about the axis that shortens the muscle, 0 at rest and 1 at 120 degrees (keys add on top)"""
    bl_idname = "implicit_muscles.follow_joint"
    bl_label = "Follow Joint"
    bl_options = {'REGISTER', 'UNDO'}

    index: IntProperty(name="Index", default=-1, description="Muscle to set (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return _poll(cls, context)

    def execute(self, context):
        armature, muscle = _muscle(self, context)
        if muscle is None:
            return {'CANCELLED'}
        problem = joint_follow.follow_joint(armature, muscle)
        if problem:
            self.report({'ERROR'}, problem)
            return {'CANCELLED'}
        self.report({'INFO'}, f"{muscle.name} follows '{muscle.joint_bone}' about its {muscle.joint_axis} axis.")
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_clear_joint(Operator):
    """Stop the muscle's activation following a joint: its keys alone drive it"""
    bl_idname = "implicit_muscles.clear_joint"
    bl_label = "Keys Only"
    bl_options = {'REGISTER', 'UNDO'}

    index: IntProperty(name="Index", default=-1, description="Muscle to set (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return _poll(cls, context)

    def execute(self, context):
        _, muscle = _muscle(self, context)
        if muscle is None:
            return {'CANCELLED'}
        muscle.joint_bone = ""
        return {'FINISHED'}


classes = (IMPLICIT_MUSCLES_OT_follow_joint, IMPLICIT_MUSCLES_OT_clear_joint)

register, unregister = bpy.utils.register_classes_factory(classes)
