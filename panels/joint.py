"""The active muscle's *Joint* sub-panel (activation from a joint, ``blender/scene/joint.py``), under the muscle panels
of the 3D View's "Muscles" tab and the armature's Object Data properties."""
from __future__ import annotations

import bpy
from bpy.types import Panel

from ..blender.scene import rig


def _muscle(context):
    armature = rig.armature_of(context.object)
    return armature, (armature.implicit_muscles.active_muscle if armature is not None else None)


def draw_joint(layout, context):
    armature, muscle = _muscle(context)
    if context.object != armature:  # a mesh is active: the buttons work on its armature
        layout.context_pointer_set("object", armature)
    row = layout.row(align=True)
    row.operator("implicit_muscles.follow_joint", icon='CON_ROTLIKE')
    sub = row.row(align=True)
    sub.enabled = bool(muscle.joint_bone)
    sub.operator("implicit_muscles.clear_joint", icon='X', text="")
    layout.prop_search(muscle, "joint_bone", armature.data, "bones")
    col = layout.column(align=True)
    col.active = bool(muscle.joint_bone)
    col.row(align=True).prop(muscle, "joint_axis", expand=True)
    col.prop(muscle, "joint_angle_rest")
    col.prop(muscle, "joint_angle_active")
    col.prop(muscle, "joint_curve")
    col.prop(muscle, "activation_mode")


class _JointPanel:
    bl_label = "Joint"
    bl_options = {'DEFAULT_CLOSED'}

    @classmethod
    def poll(cls, context):
        return _muscle(context)[1] is not None

    def draw_header(self, context):
        self.layout.label(icon='CON_ROTLIKE')

    def draw(self, context):
        draw_joint(self.layout, context)


class IMPLICIT_MUSCLES_PT_joint_view3d(_JointPanel, Panel):
    """The active muscle's activation from a joint"""
    bl_idname = "IMPLICIT_MUSCLES_PT_joint_view3d"
    bl_parent_id = "IMPLICIT_MUSCLES_PT_muscles_view3d"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Muscles"


class IMPLICIT_MUSCLES_PT_joint_data(_JointPanel, Panel):
    """The active muscle's activation from a joint"""
    bl_idname = "IMPLICIT_MUSCLES_PT_joint_data"
    bl_parent_id = "IMPLICIT_MUSCLES_PT_muscles_data"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "data"


classes = (IMPLICIT_MUSCLES_PT_joint_view3d, IMPLICIT_MUSCLES_PT_joint_data)

register, unregister = bpy.utils.register_classes_factory(classes)
