"""*Add Muscle from Patch*: a muscle under a patch painted on the skin (a vertex group), between two bones
(``blender/authoring/patch.py``). Undoable; problems are reported in plain words and nothing is added."""
from __future__ import annotations

import bpy
from bpy.props import FloatProperty, StringProperty
from bpy.types import Operator

from ..blender.authoring import patch
from ..blender.scene import rig


def _skin_mesh(context, armature, name: str):
    """The mesh named ``name``; else the active object if it is a mesh; else the armature's only skin mesh."""
    if name:
        return bpy.data.objects.get(name)
    active = context.view_layer.objects.active if context.view_layer else None
    if active is not None and active.type == 'MESH':
        return active
    meshes = rig.skin_meshes(armature)
    return meshes[0] if len(meshes) == 1 else None


class IMPLICIT_MUSCLES_OT_add_muscle_from_patch(Operator):
    """Add a muscle under a patch painted on the skin (a vertex group) between two bones (or the two selected pose
    bones: the active one gets the insertion), sized so its surface sits just under the patch"""
    bl_idname = "implicit_muscles.add_muscle_from_patch"
    bl_label = "Add Muscle from Patch"
    bl_options = {'REGISTER', 'UNDO'}

    mesh: StringProperty(name="Skin", description="The mesh the patch is painted on (empty: the active mesh, or "
                                                  "the armature's only skin mesh)")
    vertex_group: StringProperty(name="Patch", description="The vertex group painted over where the muscle "
                                                           "should bulge (empty: the mesh's active group)")
    origin_bone: StringProperty(name="Origin Bone", description="Bone the muscle starts from (empty: selection)")
    insertion_bone: StringProperty(name="Insertion Bone", description="Bone it pulls on (empty: active bone)")
    preset: StringProperty(name="Preset", description="Shape preset for its profile, e.g. 'biceps'")
    name: StringProperty(name="Name", description="Muscle name (empty: from the bones or the preset)")
    threshold: FloatProperty(name="Weight", default=patch.THRESHOLD, min=0.001, max=1.0,
                             description="Vertices painted with at least this weight make the patch")

    @classmethod
    def poll(cls, context):
        if rig.armature_of(context.object) is None:
            cls.poll_message_set("Select an armature, or the skin mesh it deforms")
            return False
        return True

    def invoke(self, context, event):
        armature = rig.armature_of(context.object)
        mesh_obj = _skin_mesh(context, armature, self.mesh)
        if mesh_obj is not None:
            self.mesh = mesh_obj.name
            if not self.vertex_group and mesh_obj.vertex_groups.active is not None:
                self.vertex_group = mesh_obj.vertex_groups.active.name
        origin, insertion = self._selected_bones(context, armature)
        self.origin_bone, self.insertion_bone = self.origin_bone or origin, self.insertion_bone or insertion
        return context.window_manager.invoke_props_dialog(self)

    def draw(self, context):
        armature = rig.armature_of(context.object)
        layout = self.layout
        layout.prop_search(self, "mesh", context.scene, "objects")
        mesh_obj = bpy.data.objects.get(self.mesh)
        if mesh_obj is not None and mesh_obj.type == 'MESH':
            layout.prop_search(self, "vertex_group", mesh_obj, "vertex_groups")
        else:
            layout.prop(self, "vertex_group")
        layout.prop(self, "threshold")
        layout.prop_search(self, "origin_bone", armature.data, "bones")
        layout.prop_search(self, "insertion_bone", armature.data, "bones")
        layout.prop(self, "preset")
        layout.prop(self, "name")

    @staticmethod
    def _selected_bones(context, armature) -> tuple:
        """``(origin, insertion)`` from the selected pose bones of ``armature`` (the active one is the
        insertion), or empty names."""
        selected = [pb.name for pb in (getattr(context, "selected_pose_bones", None) or [])
                    if pb.id_data == armature]
        active = getattr(context, "active_pose_bone", None)
        if not selected:
            return "", ""
        insertion = active.name if active is not None and active.name in selected else selected[-1]
        others = [n for n in selected if n != insertion]
        return (others[0] if others else insertion), insertion

    def execute(self, context):
        armature = rig.armature_of(context.object)
        origin, insertion = self.origin_bone, self.insertion_bone
        if not origin or not insertion:
            chosen = self._selected_bones(context, armature)
            origin, insertion = origin or chosen[0], insertion or chosen[1]
        mesh_obj = _skin_mesh(context, armature, self.mesh)
        group = self.vertex_group
        if not group and mesh_obj is not None and mesh_obj.type == 'MESH' \
                and mesh_obj.vertex_groups.active is not None:
            group = mesh_obj.vertex_groups.active.name
        try:
            index = patch.add_patch_muscle(armature, mesh_obj, group, origin, insertion, preset=self.preset,
                                           name=self.name, threshold=self.threshold)
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        muscle = armature.implicit_muscles.muscles[index]
        self.report({'INFO'}, f"Added {muscle.name} under the patch '{group}' of {mesh_obj.name}.")
        return {'FINISHED'}


classes = (IMPLICIT_MUSCLES_OT_add_muscle_from_patch,)

register, unregister = bpy.utils.register_classes_factory(classes)
