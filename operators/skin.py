"""Bind and unbind a mesh's Implicit Skinning (the per-frame evaluation that uses the bind is in ``blender/``).

Bind reads the mesh at rest, its weights, the armature's bones and muscles (``blender/scene/reader.py``) and builds the
headless core's bind data (``core/character.py``: muscles settled at rest, skin fields, tracking data). The data is
kept in memory for the session (``blender/session/runtime.py``); the .blend stores only the settings, and binding is
deterministic, so a reopened file binds again to the same result. Bind also installs the evaluation
(``blender/session/modifiers.py``: a Geometry Nodes modifier after the Armature modifier, which is switched off while the
effect is on). Unbind drops the data and gives back the Armature modifier's plain result. The rest positions and
the weights are never written.
"""
from __future__ import annotations

import bpy
from bpy.types import Operator

from ..blender.engine import compile_job
from ..blender.scene import reader
from ..blender.session import modifiers, playback, runtime


class IMPLICIT_MUSCLES_OT_bind_skin(Operator):
    """Bind the active mesh to its armature and muscles in the rest pose"""
    bl_idname = "implicit_muscles.bind_skin"
    bl_label = "Bind Skin"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is None or obj.type != 'MESH':
            cls.poll_message_set("Select the skin mesh")
            return False
        return True

    def execute(self, context):
        mesh_obj = context.object
        mod = reader.armature_modifier(mesh_obj)
        # the armature that deforms it: a copy of a bound mesh (Alt+D, another scene's) keeps the armature its
        # original was bound to in its settings, and its Armature modifier's is the one to follow
        armature = (mod.object if mod is not None else None) or mesh_obj.implicit_skin.armature
        if armature is None:
            self.report({'ERROR'}, f"{mesh_obj.name} has no Armature modifier: parent it to an armature first.")
            return {'CANCELLED'}
        deferred = compile_job.defer_bind(mesh_obj)  # "" once the kernels are there (blender/engine/compile_job.py)
        if deferred:
            self.report({'INFO'}, deferred)
            return {'FINISHED'}
        wm = context.window_manager
        wm.progress_begin(0, 3)
        try:
            wm.progress_update(1)
            bound = runtime.bind(mesh_obj, armature)
            wm.progress_update(3)
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        finally:
            wm.progress_end()
        skin = mesh_obj.implicit_skin
        skin.armature = armature
        skin.bound = True
        skin.enabled = True
        skin.bind_signature = bound.signature
        modifiers.install(mesh_obj)
        playback.show_current_frame(mesh_obj, context.scene)
        if context.scene is not None:
            context.scene.render.use_lock_interface = True  # renders read evaluated data, never a half-written mesh
        model = bound.character.model
        fibres = len(model.muscles)
        fats = len(model.fats)
        muscles = f"{fibres} muscle fibres" if fibres else "no muscle on this mesh (Implicit Skinning alone)"
        if fats:  # blender/scene/fats.py
            muscles = (muscles if fibres else "no muscle on this mesh") + (", 1 fat" if fats == 1 else f", {fats} fats")
        self.report({'INFO'}, f"Bound {mesh_obj.name}: {model.skin.part_count} skin parts, {muscles}.")
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_unbind_skin(Operator):
    """Forget the active mesh's bind: the plain Armature result shows again"""
    bl_idname = "implicit_muscles.unbind_skin"
    bl_label = "Unbind"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is None or obj.type != 'MESH':
            cls.poll_message_set("Select the skin mesh")
            return False
        if not obj.implicit_skin.bound:
            cls.poll_message_set(f"{obj.name} is not bound")
            return False
        return True

    def execute(self, context):
        mesh_obj = context.object
        runtime.unbind(mesh_obj)
        modifiers.uninstall(mesh_obj)
        mesh_obj.implicit_skin.bound = False
        mesh_obj.implicit_skin.bind_signature = ""
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_reset_simulation(Operator):
    """Forget the cached muscle simulation of every bound mesh (after editing muscles or their keys): frames are
    simulated again from the start frame when shown"""
    bl_idname = "implicit_muscles.reset_simulation"
    bl_label = "Reset Simulation"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        scene = context.scene
        if scene is None or not any(obj.type == 'MESH' and obj.implicit_skin.bound for obj in scene.objects):
            cls.poll_message_set("No mesh in this scene is bound: bind one first (Bind Skin)")
            return False
        return True

    def execute(self, context):
        count = runtime.invalidate_all()
        if context.scene is not None:
            context.scene.frame_set(context.scene.frame_current)
        self.report({'INFO'}, f"Reset the muscle simulation of {count} mesh(es).")
        return {'FINISHED'}


classes = (IMPLICIT_MUSCLES_OT_bind_skin, IMPLICIT_MUSCLES_OT_unbind_skin, IMPLICIT_MUSCLES_OT_reset_simulation)

register, unregister = bpy.utils.register_classes_factory(classes)
