"""Muscle authoring operators: add (with a mirrored copy), remove, move in the list, duplicate, mirror, select the
muscle's bones, apply and save shape presets. All work on the active armature object, are undoable and report
problems in plain words instead of raising.
"""
from __future__ import annotations

import os

import bpy
from bl_operators.presets import AddPresetBase
from bpy.props import BoolProperty, EnumProperty, IntProperty, StringProperty
from bpy.types import Menu, Operator

from ..blender.authoring import handles, presets
from ..blender.authoring.mirror import add_duplicate, append_muscle, mirror_muscle, mirrored_values, unique_name
from ..blender.authoring.presets import MENU, PRESET_SUBDIR, SHAPE_FIELDS, apply_preset_file, find_preset
from ..blender.scene import animation, names, rig

def _armature(context):
    obj = context.object
    return obj if obj is not None and obj.type == 'ARMATURE' else None


def _handle_armature(context):
    """The context's armature, or the armature of the active muscle handle (``blender/authoring/handles.py``)."""
    obj = context.object
    if obj is not None and obj.type == 'EMPTY':
        return rig.armature_of(obj)
    return _armature(context)


def _has_active_muscle(context) -> bool:
    arm = _armature(context)
    return arm is not None and arm.implicit_muscles.active_muscle is not None


class IMPLICIT_MUSCLES_OT_add_muscle(Operator):
    """Add a muscle between two bones (or the two selected pose bones: the active one gets the insertion)"""
    bl_idname = "implicit_muscles.add_muscle"
    bl_label = "Add Muscle"
    bl_options = {'REGISTER', 'UNDO'}

    origin_bone: StringProperty(name="Origin Bone", description="Bone the muscle starts from (empty: selection)")
    insertion_bone: StringProperty(name="Insertion Bone", description="Bone it pulls on (empty: active bone)")
    skin_bone: StringProperty(name="Skin Bone", description="Bone whose skin shows it (empty: the origin bone)")
    preset: StringProperty(name="Preset", description="Shape preset to apply, e.g. 'biceps'")
    name: StringProperty(name="Name", description="Muscle name (empty: from the bones or the preset)")
    mirror: BoolProperty(name="Mirror", default=False, description="Also add the other side's muscle")

    @classmethod
    def poll(cls, context):
        if _armature(context) is None:
            cls.poll_message_set("Select an armature")
            return False
        return True

    def execute(self, context):
        armature = _armature(context)
        origin, insertion = self.origin_bone, self.insertion_bone
        if not origin or not insertion:
            selected = [pb.name for pb in (context.selected_pose_bones or []) if pb.id_data == armature]
            active = context.active_pose_bone.name if context.active_pose_bone else None
            if not selected:
                self.report({'ERROR'}, "Give an origin and an insertion bone, or select one or two pose bones.")
                return {'CANCELLED'}
            insertion = insertion or (active if active in selected else selected[-1])
            others = [n for n in selected if n != insertion]
            origin = origin or (others[0] if others else insertion)
        for label, bone in (("origin", origin), ("insertion", insertion), ("skin", self.skin_bone)):
            if bone and bone not in armature.data.bones:
                self.report({'ERROR'}, f"The {label} bone '{bone}' is not in {armature.name}.")
                return {'CANCELLED'}
        preset_path = None
        if self.preset:
            preset_path = find_preset(self.preset)
            if preset_path is None:
                self.report({'ERROR'}, f"No muscle preset called '{self.preset}'.")
                return {'CANCELLED'}
        rig.follow_renames(armature)  # old muscles catch up with renames first; records the names for later ones
        skin = self.skin_bone or origin
        muscles = armature.implicit_muscles.muscles
        index = len(muscles)
        muscle = muscles.add()
        muscle.name = unique_name(muscles, self._base_name(origin, insertion, skin))
        muscle.origin_bone, muscle.insertion_bone, muscle.skin_bone = origin, insertion, skin
        o, i, radius = rig.default_points(armature, origin, insertion)
        muscle.origin_point, muscle.insertion_point = o, i
        muscle.width = rig.fitted_width(radius, muscle)
        armature.implicit_muscles.active_index = index  # presets set the active muscle
        if preset_path:
            apply_preset_file(preset_path)
            # a preset's width is relative to nothing: fit the width to this limb and the preset's profile
            muscle.width = rig.fitted_width(radius, muscle)
        problem = rig.muscle_problem(armature, muscle)
        mirrored = mirrored_values(armature, index) if self.mirror and not problem else None
        if problem or isinstance(mirrored, str):  # nothing is kept: the new muscle is the last one, with no keys
            muscles.remove(index)
            armature.implicit_muscles.active_index = max(index - 1, 0)
            self.report({'ERROR'}, problem or mirrored)
            return {'CANCELLED'}
        added = [muscles[index].name]
        if mirrored is not None:
            mirrored.pop("joint_flipped", None)
            added.append(muscles[append_muscle(armature, mirrored)].name)
        armature.update_tag()
        self.report({'INFO'}, f"Added {' and '.join(added)}.")
        return {'FINISHED'}

    def _base_name(self, origin, insertion, skin):
        """The name asked for; else the preset's or ``<origin>_muscle``, with the bones' side as they write it
        (``biceps.L``, ``upper_arm_muscle.L``; ``blender/scene/names.py``)."""
        if self.name:
            return self.name
        if self.preset:
            return names.name_with_side(self.preset.replace(" ", "_"), (origin, insertion, skin))
        return names.default_muscle_name(origin, (insertion, skin))


class IMPLICIT_MUSCLES_OT_remove_muscle(Operator):
    """Remove the active muscle and its keyframes and drivers in every action"""
    bl_idname = "implicit_muscles.remove_muscle"
    bl_label = "Remove Muscle"
    bl_options = {'REGISTER', 'UNDO'}

    index: IntProperty(name="Index", default=-1, description="Muscle to remove (-1: the active one)")

    @classmethod
    def poll(cls, context):
        arm = _armature(context)
        return arm is not None and len(arm.implicit_muscles.muscles) > 0

    def execute(self, context):
        armature = _armature(context)
        props = armature.implicit_muscles
        index = props.active_index if self.index < 0 else self.index
        if not 0 <= index < len(props.muscles):
            self.report({'ERROR'}, f"There is no muscle number {index}.")
            return {'CANCELLED'}
        name = props.muscles[index].name
        try:
            orphans = animation.remap_muscle_indices(armature, animation.removal_mapping(index, len(props.muscles)))
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        handles.remove_handles(armature, [index])
        props.muscles.remove(index)
        props.active_index = min(index, max(len(props.muscles) - 1, 0))
        armature.update_tag()
        if orphans:
            self.report({'WARNING'}, f"Removed {name}; these drivers read it and now read nothing: "
                                     f"{', '.join(orphans)}.")
        else:
            self.report({'INFO'}, f"Removed {name}.")
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_move_muscle(Operator):
    """Move the active muscle up or down in the list (its keyframes and drivers move with it, in every action)"""
    bl_idname = "implicit_muscles.move_muscle"
    bl_label = "Move Muscle"
    bl_options = {'REGISTER', 'UNDO'}

    direction: EnumProperty(items=(('UP', "Up", ""), ('DOWN', "Down", "")), name="Direction")

    @classmethod
    def poll(cls, context):
        arm = _armature(context)
        return arm is not None and len(arm.implicit_muscles.muscles) > 1

    def execute(self, context):
        armature = _armature(context)
        props = armature.implicit_muscles
        a = props.active_index
        b = a - 1 if self.direction == 'UP' else a + 1
        if not 0 <= b < len(props.muscles):
            return {'CANCELLED'}
        try:
            animation.remap_muscle_indices(armature, {a: b, b: a})
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        props.muscles.move(a, b)
        props.active_index = b
        armature.update_tag()  # the evaluated copy must see the reordered list
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_duplicate_muscle(Operator):
    """Copy the active muscle (its settings, not its keyframes)"""
    bl_idname = "implicit_muscles.duplicate_muscle"
    bl_label = "Duplicate Muscle"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return _has_active_muscle(context)

    def execute(self, context):
        armature = _armature(context)
        props = armature.implicit_muscles
        props.active_index = add_duplicate(armature, props.active_index)
        armature.update_tag()
        self.report({'INFO'}, f"Added {props.active_muscle.name}.")
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_mirror_muscle(Operator):
    """Add the other side's copy of the active muscle (bones and name mirrored by their side), or update it with
    the active muscle's settings, shape and keys when it exists"""
    bl_idname = "implicit_muscles.mirror_muscle"
    bl_label = "Mirror Muscle"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return _has_active_muscle(context)

    def execute(self, context):
        armature = _armature(context)
        props = armature.implicit_muscles
        source = props.active_muscle.name
        try:
            result = mirror_muscle(armature, props.active_index)
        except ValueError as ex:  # keys in a library's action
            result = str(ex)
        if isinstance(result, str):
            self.report({'ERROR'}, result)
            return {'CANCELLED'}
        new, updated = result
        props.active_index = new
        armature.update_tag()
        if updated:
            self.report({'INFO'}, f"Updated {props.active_muscle.name} from {source}: its settings, shape and keys "
                                  f"mirrored.")
        else:
            self.report({'INFO'}, f"Added {props.active_muscle.name}.")
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_select_bones(Operator):
    """Select the active muscle's origin and insertion bones"""
    bl_idname = "implicit_muscles.select_bones"
    bl_label = "Select Bones"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return _has_active_muscle(context)

    def execute(self, context):
        armature = _armature(context)
        muscle = armature.implicit_muscles.active_muscle
        bones = armature.data.bones
        missing = [n for n in (muscle.origin_bone, muscle.insertion_bone) if n not in bones]
        if missing:
            self.report({'ERROR'}, f"{muscle.name}: bone '{missing[0]}' is not in {armature.name}.")
            return {'CANCELLED'}
        for bone in bones:
            _set_selected(armature, bone, bone.name in (muscle.origin_bone, muscle.insertion_bone))
        bones.active = bones[muscle.insertion_bone]
        return {'FINISHED'}


def _set_selected(armature, bone, value):
    if "select" in bone.bl_rna.properties.keys():
        bone.select = value
    else:  # Blender 5.0 keeps the selection on the pose bone
        armature.pose.bones[bone.name].select = value


def _preset_target(cls, context):
    """The armature whose active muscle a preset operator works on (the active one, or the active mesh's), or
    None with the reason set as the poll message."""
    armature = rig.armature_of(context.object)
    if armature is None:
        cls.poll_message_set("Select an armature with muscles, or a mesh bound to one")
        return None
    if armature.implicit_muscles.active_muscle is None:
        cls.poll_message_set(f"{armature.name} has no muscle: add one first")
        return None
    return armature


class IMPLICIT_MUSCLES_OT_apply_preset(Operator):
    """Apply a shape preset to the active muscle (the presets menu does the same)"""
    bl_idname = "implicit_muscles.apply_preset"
    bl_label = "Apply Muscle Preset"
    bl_options = {'REGISTER', 'UNDO'}

    filepath: StringProperty(subtype='FILE_PATH', options={'SKIP_SAVE'})
    preset: StringProperty(name="Preset", description="Preset name, e.g. 'biceps' (instead of a file path)")

    @classmethod
    def poll(cls, context):
        return _preset_target(cls, context) is not None

    def execute(self, context):
        path = self.filepath or (find_preset(self.preset) if self.preset else None)
        if not path or not os.path.isfile(path):
            self.report({'ERROR'}, f"No muscle preset called '{self.preset or self.filepath}'.")
            return {'CANCELLED'}
        try:
            apply_preset_file(path, rig.armature_of(context.object))
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        return {'FINISHED'}


class IMPLICIT_MUSCLES_MT_presets(Menu):
    """Muscle shape presets: the shipped ones and yours (the label is the one last applied or saved)"""
    bl_label = presets.NO_PRESET_LABEL
    bl_idname = MENU
    preset_subdir = PRESET_SUBDIR
    preset_operator = "script.execute_preset"
    preset_extensions = {".py"}
    reset_cb = staticmethod(presets.remember_muscle)
    post_cb = staticmethod(presets.keep_width)
    draw = Menu.draw_preset


class IMPLICIT_MUSCLES_OT_save_preset(AddPresetBase, Operator):
    """Save the active muscle's shape as a preset in your presets folder, or remove the preset shown (shipped
    presets cannot be removed)"""
    bl_idname = "implicit_muscles.save_preset"
    bl_label = "Save Muscle Preset"
    preset_menu = MENU
    preset_subdir = PRESET_SUBDIR
    preset_defines = ["muscle = bpy.context.object.implicit_muscles.active_muscle"]
    preset_values = [f"muscle.{field}" for field in SHAPE_FIELDS]

    @classmethod
    def poll(cls, context):
        return _preset_target(cls, context) is not None

    def execute(self, context):
        with context.temp_override(object=rig.armature_of(context.object)):  # the lines above read context.object
            return super().execute(context)


class IMPLICIT_MUSCLES_OT_edit_handles(Operator):
    """Add handles at the active muscle's origin and insertion, selected: move them with G, they follow their bones"""
    bl_idname = "implicit_muscles.edit_handles"
    bl_label = "Edit Handles"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        arm = _handle_armature(context)
        return arm is not None and arm.implicit_muscles.active_muscle is not None

    def execute(self, context):
        armature = _handle_armature(context)
        props = armature.implicit_muscles
        problem = rig.muscle_problem(armature, props.active_muscle)
        if problem:
            self.report({'ERROR'}, problem)
            return {'CANCELLED'}
        if context.mode != 'OBJECT' and context.view_layer.objects.active is not None:
            bpy.ops.object.mode_set(mode='OBJECT')  # the handles are objects: grab them in Object Mode
        handles.sync(armature)
        handles.remove_handles(armature)
        handles.add_handles(armature, props.active_index)
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_clear_handles(Operator):
    """Remove the muscle handles of the active armature (the muscles keep their points)"""
    bl_idname = "implicit_muscles.clear_handles"
    bl_label = "Clear Handles"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return _handle_armature(context) is not None

    def execute(self, context):
        armature = _handle_armature(context)
        handles.sync(armature)
        handles.remove_handles(armature)
        return {'FINISHED'}


classes = (
    IMPLICIT_MUSCLES_OT_edit_handles,
    IMPLICIT_MUSCLES_OT_clear_handles,
    IMPLICIT_MUSCLES_OT_add_muscle,
    IMPLICIT_MUSCLES_OT_remove_muscle,
    IMPLICIT_MUSCLES_OT_move_muscle,
    IMPLICIT_MUSCLES_OT_duplicate_muscle,
    IMPLICIT_MUSCLES_OT_mirror_muscle,
    IMPLICIT_MUSCLES_OT_select_bones,
    IMPLICIT_MUSCLES_OT_apply_preset,
    IMPLICIT_MUSCLES_MT_presets,
    IMPLICIT_MUSCLES_OT_save_preset,
)

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    IMPLICIT_MUSCLES_MT_presets.bl_label = presets.NO_PRESET_LABEL  # nothing applied yet in this session
    _register_classes()
    presets.register()


def unregister():
    presets.unregister()
    _unregister_classes()
