"""The fat list and the active fat's settings (thesis ch. 6), below the muscles: in the 3D View's "Muscles" tab
(with the armature or one of its meshes active) and in the armature's Object Data properties."""
from __future__ import annotations

import bpy
from bpy.types import Menu, Panel, UIList

from ..blender.authoring import fat_presets
from ..blender.scene import fats, rig


def _armature(context):
    return rig.armature_of(context.object)


class IMPLICIT_MUSCLES_UL_fats(UIList):
    """Fats of the armature"""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        problem = fats.fat_problem(data.id_data, item)
        row = layout.row(align=True)
        row.alert = bool(problem)
        row.prop(item, "name", text="", emboss=False, icon='ERROR' if problem else 'META_ELLIPSOID')
        row.prop(item, "stiffness", text="", slider=True)


class IMPLICIT_MUSCLES_MT_add_fat(Menu):
    """Add a fat on the active pose bone from a preset"""
    bl_idname = "IMPLICIT_MUSCLES_MT_add_fat"
    bl_label = "Add Fat"

    def draw(self, context):
        for name in fat_presets.PRESETS:
            self.layout.operator("implicit_muscles.add_fat", text=name.capitalize()).preset = name


def draw_fats(layout, context, armature):
    if context.object != armature:  # a mesh is active: the buttons below work on its armature
        layout.context_pointer_set("object", armature)
    props = armature.implicit_muscles
    row = layout.row()
    row.template_list("IMPLICIT_MUSCLES_UL_fats", "", props, "fats", props, "active_fat_index", rows=3)
    col = row.column(align=True)
    col.menu(IMPLICIT_MUSCLES_MT_add_fat.bl_idname, icon='ADD', text="")
    col.operator("implicit_muscles.remove_fat", icon='REMOVE', text="")
    if not 0 <= props.active_fat_index < len(props.fats):
        layout.label(text="Select a pose bone and press + to add a fat", icon='INFO')
        return
    fat = props.fats[props.active_fat_index]
    problem = fats.fat_problem(armature, fat)
    if problem:
        box = layout.box()
        box.alert = True
        box.label(text=problem, icon='ERROR')
    box = layout.box()
    box.prop_search(fat, "bone", armature.data, "bones")
    box.prop(fat, "center")
    box.prop(fat, "axes")
    box.prop(fat, "collide_bones", text="Collide With Bones")
    box = layout.box()
    box.label(text="Animation", icon='ANIM')
    box.prop(fat, "stiffness", slider=True)
    box.prop(fat, "damping", slider=True)


class IMPLICIT_MUSCLES_PT_fats_view3d(Panel):
    """Fats of the active armature (or of the active mesh's armature)"""
    bl_idname = "IMPLICIT_MUSCLES_PT_fats_view3d"
    bl_label = "Fat"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Muscles"
    bl_order = 0
    bl_options = {'DEFAULT_CLOSED'}

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None

    def draw(self, context):
        draw_fats(self.layout, context, _armature(context))


class IMPLICIT_MUSCLES_PT_fats_data(Panel):
    """Fats of this armature"""
    bl_idname = "IMPLICIT_MUSCLES_PT_fats_data"
    bl_label = "Fat"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "data"
    bl_options = {'DEFAULT_CLOSED'}

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == 'ARMATURE'

    def draw(self, context):
        draw_fats(self.layout, context, context.object)


classes = (IMPLICIT_MUSCLES_UL_fats, IMPLICIT_MUSCLES_MT_add_fat, IMPLICIT_MUSCLES_PT_fats_view3d,
           IMPLICIT_MUSCLES_PT_fats_data)

register, unregister = bpy.utils.register_classes_factory(classes)
