"""Muscle from Mesh: the selected closed meshes (sculpted muscles) fitted as muscles of the armature
(``core/muscle/mesh_fit.py``, ``blender/authoring/mesh_fit.py``). The meshes are only read; problems are reported in plain
words and then nothing is added."""
from __future__ import annotations

import bpy
from bpy.props import IntProperty, StringProperty
from bpy.types import Operator

from ..blender.authoring.mesh_fit import add_fitted, read_bones, read_mesh


def _armature(context):
    """The active object if it is an armature, else the one selected armature, else None."""
    obj = context.object
    if obj is not None and obj.type == 'ARMATURE':
        return obj
    found = [o for o in (context.selected_objects or ()) if o.type == 'ARMATURE']
    return found[0] if len(found) == 1 else None


def _meshes(context, armature):
    """The selected meshes to fit: mesh objects that the armature does not deform."""
    out = []
    for obj in context.selected_objects or ():
        if obj.type == 'MESH' and not any(m.type == 'ARMATURE' and m.object == armature for m in obj.modifiers):
            out.append(obj)
    return out


class IMPLICIT_MUSCLES_OT_muscle_from_mesh(Operator):
    """Fit a muscle to each selected closed mesh (a sculpted muscle): its axis, the bones it attaches to, its width,
    rest profile and flatness, several fibres for a fan. Select the meshes, then the armature"""
    bl_idname = "implicit_muscles.muscle_from_mesh"
    bl_label = "Muscle from Mesh"
    bl_options = {'REGISTER', 'UNDO'}

    fibres: IntProperty(name="Fibres", default=0, min=0, max=16,
                        description="Fibres per muscle (0: as many as fit the mesh best, up to 6)")
    name: StringProperty(name="Name", description="Muscle name (empty: the mesh's name)")

    @classmethod
    def poll(cls, context):
        armature = _armature(context)
        if armature is None:
            cls.poll_message_set("Select the muscle mesh, then the armature it belongs to (one armature)")
            return False
        if not _meshes(context, armature):
            cls.poll_message_set("Select the closed mesh of a muscle as well as the armature")
            return False
        return True

    def execute(self, context):
        from ..core.muscle.mesh_fit import attach_to_bones, fit_mesh

        armature = _armature(context)
        if armature is None:
            self.report({'ERROR'}, "Select the muscle mesh, then the armature it belongs to (one armature).")
            return {'CANCELLED'}
        meshes = _meshes(context, armature)
        bone_names, heads, tails, parents = read_bones(armature)
        depsgraph = context.evaluated_depsgraph_get()
        fitted = []
        for obj in meshes:  # every mesh is fitted before anything is added
            try:
                vertices, triangles = read_mesh(obj, armature, depsgraph)
                fit = fit_mesh(vertices, triangles, fibres=self.fibres, name=obj.name)
                attachments = attach_to_bones(fit, heads, tails, parents, name=obj.name, skeleton=armature.name)
            except ValueError as ex:
                self.report({'ERROR'}, str(ex))
                return {'CANCELLED'}
            fitted.append((obj, fit, attachments))
        lines = []
        props = armature.implicit_muscles
        for obj, fit, attachments in fitted:
            name = self.name if self.name and len(fitted) == 1 else obj.name
            added = add_fitted(armature, attachments, bone_names, name)
            props.active_index = added[0]
            lines.append(_summary(props.muscles, added, fit))
        armature.update_tag()
        self.report({'INFO'}, " ".join(lines))
        return {'FINISHED'}


def _summary(muscles, added, fit) -> str:
    """One sentence: what was added, its shape and the fit error."""
    first = muscles[added[0]]
    error = (f"fit error {fit.error_rms * 1000:.2g} mm RMS ({100 * fit.relative_error:.2g} % of its thickness), "
             f"{fit.error_max * 1000:.2g} mm at most")
    if len(added) == 1:
        return (f"Added {first.name} from {first.origin_bone} to {first.insertion_bone}: rest profile "
                f"({first.alpha_rest}, {first.beta_rest}), flatness {first.eccentricity_rest:.2f}, width "
                f"{first.width * 1000:.3g} mm; {error}.")
    group = f" (group {first.collision_group})" if first.collision_group else ""
    return (f"Added {len(added)} fibres {first.name} to {muscles[added[-1]].name}{group}, from "
            f"{first.origin_bone} to {first.insertion_bone}; {error}.")


classes = (IMPLICIT_MUSCLES_OT_muscle_from_mesh,)

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()


def unregister():
    _unregister_classes()
