"""The muscle list, the rig's simulation start and substeps and the active muscle's settings, in the 3D View's
"Muscles" tab and in the armature's Object Data properties; the skin settings in the mesh's Object Data properties
and the same tab. With a mesh active, the tab shows its armature's muscles and its buttons work on that armature
(the layout's ``object`` context pointer)."""
from __future__ import annotations

import bpy
from bpy.types import Panel, UIList

from ..blender.authoring import presets
from ..blender.scene import rig
from ..blender.session import runtime
from .status import wrapped


def _armature(context):
    return rig.armature_of(context.object)


class IMPLICIT_MUSCLES_UL_muscles(UIList):
    """Muscles of the armature"""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        armature = data.id_data
        problem = rig.muscle_problem(armature, item)
        row = layout.row(align=True)
        row.alert = bool(problem)
        row.prop(item, "name", text="", emboss=False, icon='ERROR' if problem else 'FORCE_HARMONIC')
        row.prop(item, "activation", text="", slider=True)


def draw_display(layout, context, props):
    """How the viewport draws the muscles, and the scene's viewport quality (``blender/session/quality.py``)."""
    row = layout.row(align=True)
    row.prop(props, "show_muscles")
    sub = row.row(align=True)
    sub.active = props.show_muscles
    sub.prop(props, "show_in_front", toggle=True)
    sub.prop(props, "display_color", text="")
    scene = context.scene
    if scene is not None and getattr(scene, "implicit_muscles", None) is not None:
        row = layout.row(align=True)
        row.prop(scene.implicit_muscles, "viewport_quality", expand=True)
        if scene.render.use_simplify and scene.implicit_muscles.viewport_quality == 'RENDER':
            layout.label(text="Simplify is on: the viewport shows Preview", icon='INFO')


def draw_simulation(layout, context, props):
    """The rig's simulation settings: where it starts (the scene's first frame unless set), its substeps and the
    muscles' friction at their contacts."""
    col = layout.column(align=True)
    row = col.row(align=True)
    row.prop(props, "use_scene_start", text="Scene Start")
    if props.use_scene_start:
        row.label(text=f"Start Frame {context.scene.frame_start}")
    else:
        row.prop(props, "start_frame")
    col.prop(props, "substeps")
    col.prop(props, "friction")


def draw_muscles(layout, context, armature):
    if context.object != armature:  # a mesh is active: the buttons below work on its armature
        layout.context_pointer_set("object", armature)
    props = armature.implicit_muscles
    draw_display(layout, context, props)
    draw_simulation(layout, context, props)
    row = layout.row()
    row.template_list("IMPLICIT_MUSCLES_UL_muscles", "", props, "muscles", props, "active_index", rows=4)
    col = row.column(align=True)
    col.operator("implicit_muscles.add_muscle", icon='ADD', text="")
    col.operator("implicit_muscles.add_muscle_from_patch", icon='MOD_VERTEX_WEIGHT', text="")
    col.operator("implicit_muscles.remove_muscle", icon='REMOVE', text="")
    col.separator()
    col.operator("implicit_muscles.move_muscle", icon='TRIA_UP', text="").direction = 'UP'
    col.operator("implicit_muscles.move_muscle", icon='TRIA_DOWN', text="").direction = 'DOWN'
    col.separator()
    col.operator("implicit_muscles.duplicate_muscle", icon='DUPLICATE', text="")
    col.operator("implicit_muscles.mirror_muscle", icon='MOD_MIRROR', text="")
    col.operator("implicit_muscles.muscle_from_mesh", icon='MESH_DATA', text="")
    muscle = props.active_muscle
    if muscle is None:
        layout.label(text="Select two pose bones and press + to add a muscle", icon='INFO')
        return
    problem = rig.muscle_problem(armature, muscle)
    if problem:
        box = layout.box()
        box.alert = True
        box.label(text=problem, icon='ERROR')

    box = layout.box()
    box.label(text="Attachment", icon='BONE_DATA')
    bones = armature.data
    box.prop_search(muscle, "origin_bone", bones, "bones")
    box.prop(muscle, "origin_point", text="")
    box.prop_search(muscle, "insertion_bone", bones, "bones")
    box.prop(muscle, "insertion_point", text="")
    box.prop_search(muscle, "skin_bone", bones, "bones")
    box.prop(muscle, "twist")
    row = box.row(align=True)
    row.operator("implicit_muscles.edit_handles", icon='EMPTY_ARROWS')
    row.operator("implicit_muscles.clear_handles", icon='X', text="")
    box.operator("implicit_muscles.select_bones", icon='RESTRICT_SELECT_OFF')

    box = layout.box()
    row = box.row(align=True)
    row.label(text="Shape", icon='MOD_SMOOTH')
    shown = presets.shown_preset()
    row.menu(presets.MENU, text=shown)
    row.operator("implicit_muscles.save_preset", text="", icon='ADD')
    sub = row.row(align=True)
    sub.enabled = shown != presets.NO_PRESET_LABEL  # nothing shown, nothing to remove
    sub.operator("implicit_muscles.save_preset", text="", icon='REMOVE').remove_active = True
    box.prop(muscle, "width")
    grid = box.grid_flow(columns=2, align=True)
    grid.prop(muscle, "alpha_rest")
    grid.prop(muscle, "beta_rest")
    grid.prop(muscle, "alpha_active")
    grid.prop(muscle, "beta_active")
    grid.prop(muscle, "eccentricity_rest", slider=True)
    grid.prop(muscle, "eccentricity_active", slider=True)

    box = layout.box()
    box.label(text="Animation", icon='ANIM')
    box.prop(muscle, "activation", slider=True)
    box.prop(muscle, "stiffness", slider=True)
    box.prop(muscle, "width_scale")
    box.prop(muscle, "particles")
    box.prop(muscle, "solver")

    box = layout.box()
    box.label(text="Collisions", icon='MOD_PHYSICS')
    row = box.row(align=True)
    row.prop(muscle, "collide_bones", toggle=True)
    row.prop(muscle, "collide_muscles", toggle=True)
    row.prop(muscle, "keep_inside", toggle=True)
    row = box.row(align=True)
    row.prop(muscle, "collision_group")
    row.prop(muscle, "bone_radius")

    box = layout.box()
    box.label(text="Fibres", icon='OUTLINER_DATA_CURVES')
    box.prop(muscle, "fibres")
    sub = box.column(align=True)
    sub.enabled = muscle.fibres > 1
    sub.prop(muscle, "origin_spread")
    sub.prop(muscle, "insertion_spread")
    if muscle.fibres > 1:  # what the fibres do with each other: the Solver decides (blender/scene/reader.py bundles)
        if muscle.solver == 'ROD':
            box.label(text="A bundle: the rods slide along each other", icon='INFO')
        else:
            box.label(text="Axis fibres overlap freely", icon='INFO')


def draw_skin(layout, context, mesh_obj):
    skin = mesh_obj.implicit_skin
    layout.prop(skin, "enabled")
    layout.prop(skin, "armature")
    col = layout.column(align=True)
    col.prop(skin, "samples_per_part")
    col.prop(skin, "grid_resolution")
    layout.prop(skin, "unweighted")
    col = layout.column(align=True)
    col.prop(skin, "iterations")
    col.prop(skin, "contact_angle")
    col.prop(skin, "temporal")
    col.prop(skin, "land_on_contact")
    col.prop(skin, "keep_volume")
    col.prop(skin, "limit_correction")
    row = layout.row(align=True)
    row.operator("implicit_muscles.bind_skin", icon='LINKED')
    row.operator("implicit_muscles.unbind_skin", icon='UNLINKED')
    if not skin.bound:
        return
    bound = runtime.bound(mesh_obj)
    stale = runtime.stored_stale(mesh_obj)
    if stale:
        col = layout.column(align=True)
        col.alert = True
        wrapped(col, stale, 'ERROR')
        col.operator("implicit_muscles.bind_skin", text="Bind Again", icon='FILE_REFRESH')
    elif bound is not None and bound.last_error:
        col = layout.column(align=True)
        col.alert = True
        wrapped(col, f"Plain Armature result shown: {bound.last_error}", 'ERROR')
    else:
        layout.label(text="Bound", icon='CHECKMARK')
    layout.operator("implicit_muscles.reset_simulation", icon='FILE_REFRESH')
    if bound is not None and bound.timings:
        draw_timings(layout.box(), bound.timings)
    box = layout.box()
    box.label(text="Bake", icon='FILE_CACHE')
    if skin.baked:
        box.label(text=f"Playing {skin.bake_file} ({skin.bake_start}-{skin.bake_end})")
        box.operator("implicit_muscles.clear_bake", icon='X')
    row = box.row(align=True)
    row.operator("implicit_muscles.bake", icon='RENDER_ANIMATION')
    row.operator("implicit_muscles.bake_merge", icon='AUTOMERGE_ON')


TIMED_STAGES = ("read", "pbd", "pose", "field", "tracking", "write")
"""The stages of a frame shown in the panel, in the order they run (``blender/session/playback.py``)."""


def draw_timings(layout, timings):
    """Last frame's time and its stages [ms]."""
    quality = f", {timings['quality'].capitalize()} quality" if timings.get("quality") else ""
    layout.label(text=f"Frame {timings['frame']}: {1000 * timings['total']:.1f} ms{quality}", icon='TIME')
    grid = layout.grid_flow(columns=2, align=True)
    for stage in TIMED_STAGES:
        if stage in timings:
            grid.label(text=stage.capitalize())
            grid.label(text=f"{1000 * timings[stage]:.2f} ms")
    if timings.get("simulate gap", 0.0) > 0.001:
        grid.label(text="Gap simulated")
        grid.label(text=f"{1000 * timings['simulate gap']:.0f} ms")


class IMPLICIT_MUSCLES_PT_muscles_view3d(Panel):
    """Muscles of the active armature (or of the active mesh's armature)"""
    bl_idname = "IMPLICIT_MUSCLES_PT_muscles_view3d"
    bl_label = "Muscles"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Muscles"
    bl_order = 0

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None

    def draw(self, context):
        draw_muscles(self.layout, context, _armature(context))


class IMPLICIT_MUSCLES_PT_muscles_data(Panel):
    """Muscles of this armature"""
    bl_idname = "IMPLICIT_MUSCLES_PT_muscles_data"
    bl_label = "Muscles"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "data"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == 'ARMATURE'

    def draw(self, context):
        draw_muscles(self.layout, context, context.object)


class IMPLICIT_MUSCLES_PT_skin_view3d(Panel):
    """Implicit Skinning of the active mesh"""
    bl_idname = "IMPLICIT_MUSCLES_PT_skin_view3d"
    bl_label = "Skin"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Muscles"
    bl_order = 1

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == 'MESH'

    def draw(self, context):
        draw_skin(self.layout, context, context.object)


class IMPLICIT_MUSCLES_PT_skin_data(Panel):
    """Implicit Skinning of this mesh"""
    bl_idname = "IMPLICIT_MUSCLES_PT_skin_data"
    bl_label = "Implicit Skinning"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "data"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == 'MESH'

    def draw(self, context):
        draw_skin(self.layout, context, context.object)


classes = (
    IMPLICIT_MUSCLES_UL_muscles,
    IMPLICIT_MUSCLES_PT_muscles_view3d,
    IMPLICIT_MUSCLES_PT_muscles_data,
    IMPLICIT_MUSCLES_PT_skin_view3d,
    IMPLICIT_MUSCLES_PT_skin_data,
)

register, unregister = bpy.utils.register_classes_factory(classes)
