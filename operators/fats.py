"""Fat authoring operators (thesis ch. 6): add a fat on a bone from a preset (belly, chest, buttocks, thigh), remove
one with its keys. They work on the active armature (or the active mesh's), are undoable and report problems in
plain words instead of raising."""
from __future__ import annotations

from bpy.props import IntProperty, StringProperty
from bpy.types import Operator

from ..blender.authoring import fat_presets
from ..blender.authoring.mirror import unique_name
from ..blender.scene import animation, names, rig
from ..blender.session import runtime


def _armature(context):
    return rig.armature_of(context.object)


class IMPLICIT_MUSCLES_OT_add_fat(Operator):
    """Add a fat (soft tissue that jiggles) on a bone, or on the active pose bone, placed and sized by a preset"""
    bl_idname = "implicit_muscles.add_fat"
    bl_label = "Add Fat"
    bl_options = {'REGISTER', 'UNDO'}

    bone: StringProperty(name="Bone", description="Bone the fat hangs on (empty: the active pose bone)")
    preset: StringProperty(name="Preset", default="belly",
                           description="Where and how big, relative to the limb: belly, chest, buttocks or thigh")
    name: StringProperty(name="Name", description="Fat name (empty: the preset's, with the bone's side)")

    @classmethod
    def poll(cls, context):
        if _armature(context) is None:
            cls.poll_message_set("Select an armature")
            return False
        return True

    def execute(self, context):
        armature = _armature(context)
        bone = self.bone or (context.active_pose_bone.name if context.active_pose_bone is not None
                             and context.active_pose_bone.id_data == armature else "")
        if not bone:
            self.report({'ERROR'}, "Give the bone the fat hangs on, or select a pose bone.")
            return {'CANCELLED'}
        if bone not in armature.data.bones:
            self.report({'ERROR'}, f"The bone '{bone}' is not in {armature.name}.")
            return {'CANCELLED'}
        preset = fat_presets.preset_key(self.preset)
        if not preset:
            self.report({'ERROR'}, f"No fat preset called '{self.preset}'; the presets are "
                                   f"{', '.join(fat_presets.PRESETS)}.")
            return {'CANCELLED'}
        items = armature.implicit_muscles.fats
        fat = items.add()
        fat.name = unique_name(items, self.name or names.name_with_side(preset, (bone,)))
        fat.bone = bone
        fat_presets.apply_preset(armature, fat, preset)
        armature.implicit_muscles.active_fat_index = len(items) - 1
        armature.update_tag()
        self.report({'INFO'}, f"Added {fat.name} on {bone}.")
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_remove_fat(Operator):
    """Remove the active fat and its keyframes"""
    bl_idname = "implicit_muscles.remove_fat"
    bl_label = "Remove Fat"
    bl_options = {'REGISTER', 'UNDO'}

    index: IntProperty(name="Index", default=-1, description="Fat to remove (-1: the active one)")

    @classmethod
    def poll(cls, context):
        arm = _armature(context)
        if arm is None or not len(arm.implicit_muscles.fats):
            cls.poll_message_set("Select an armature with a fat")
            return False
        return True

    def execute(self, context):
        armature = _armature(context)
        props = armature.implicit_muscles
        index = props.active_fat_index if self.index < 0 else self.index
        if not 0 <= index < len(props.fats):
            self.report({'ERROR'}, f"There is no fat number {index}.")
            return {'CANCELLED'}
        name = props.fats[index].name
        try:
            orphans = animation.remap_indices(armature, animation.removal_mapping(index, len(props.fats)), "fats")
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        props.fats.remove(index)
        props.active_fat_index = min(index, max(len(props.fats) - 1, 0))
        armature.update_tag()
        runtime.on_setup_changed(armature)
        if orphans:
            self.report({'WARNING'}, f"Removed {name}; these drivers read it and now read nothing: "
                                     f"{', '.join(orphans)}.")
        else:
            self.report({'INFO'}, f"Removed {name}.")
        return {'FINISHED'}


classes = (IMPLICIT_MUSCLES_OT_add_fat, IMPLICIT_MUSCLES_OT_remove_fat)


def register():
    from bpy.utils import register_class
    for cls in classes:
        register_class(cls)


def unregister():
    from bpy.utils import unregister_class
    for cls in reversed(classes):
        unregister_class(cls)
