"""Muscles in the viewport: a display mesh per armature, and handle empties to move origins and insertions.

**Display mesh.** Each armature with muscles and "Show Muscles" on gets a mesh object ``<armature>.muscles``
(wireframe-over-solid, not rendered, not selectable) holding every muscle's surface (``core/muscle/surface.py``, coarse
rings) and its axis through the simulation particles, in the current pose: the axis is the simulated one when the armature's skin is bound (the muscles' PBD
state), else the straight line between origin and insertion, with the current activation, flatness and width scale
(the volume law bulges a shortened muscle). It is rebuilt on frame change and after edits, only when something it
shows changed (a signature of the pose matrices and the muscles' values), and never in background mode (renders
and farms do not need it).

**Handles.** ``implicit_muscles.edit_handles`` adds two empties per active muscle, parented to the origin and
insertion bones (so they follow the pose and can be grabbed with the mouse); moving one writes the point back into
the muscle in its bone's frame (a depsgraph handler). ``implicit_muscles.clear_handles`` removes them.
"""
from __future__ import annotations

import bpy
import numpy as np
from bpy.app.handlers import persistent
from mathutils import Matrix, Vector

from . import rig as rig_utils
from .playback import on_main_thread

SUFFIX = ".muscles"
HANDLE_KEY = "implicit_muscles_handle"
"""Custom property on a handle empty: ``"<muscle name>|origin"`` or ``"<muscle name>|insertion"``."""
RINGS, SIDES = 16, 12

_signatures: dict = {}


def display_name(armature) -> str:
    return armature.name + SUFFIX


def _signature(armature) -> int:
    props = armature.implicit_muscles
    parts = [props.show_muscles, len(props.muscles)]
    for m in props.muscles:
        parts.extend((m.origin_bone, m.insertion_bone, tuple(m.origin_point), tuple(m.insertion_point), m.width,
                      m.activation, m.width_scale, m.eccentricity_rest, m.eccentricity_active, m.alpha_rest,
                      m.beta_rest, m.alpha_active, m.beta_active, m.twist))
    for pb in armature.pose.bones:
        parts.append(tuple(round(x, 7) for row in pb.matrix for x in row))
    return hash(tuple(parts))


def muscle_meshes(armature):
    """Vertices (armature space), edges and faces of every valid muscle in the current pose: its surface, and its
    axis with the simulation particles as a polyline of loose edges."""
    from ..core.muscle.primitive import FusiformMuscle, MuscleShape
    from ..core.muscle.surface import muscle_surface

    verts, faces, edges, offset = [], [], [], 0
    for m in armature.implicit_muscles.muscles:
        if rig_utils.muscle_problem(armature, m):
            continue
        o, i = rig_utils.muscle_endpoints(armature, m, posed=True)
        o0, i0 = rig_utils.muscle_endpoints(armature, m, posed=False)
        frame = rig_utils.bone_frame(armature, m.origin_bone, posed=True)
        axis = i - o
        x = frame.to_3x3() @ Vector((1.0, 0.0, 0.0))
        n = x - axis.normalized() * x.dot(axis.normalized())
        if n.length < 1e-6:
            n = frame.to_3x3() @ Vector((0.0, 0.0, 1.0))
        n = Matrix.Rotation(m.twist, 3, axis.normalized()) @ n.normalized()
        try:
            muscle = FusiformMuscle(o[:], i[:], volume=np.pi * m.width ** 2 * (i0 - o0).length,
                                    shape=MuscleShape(m.alpha_rest, m.beta_rest, m.alpha_active, m.beta_active,
                                                      m.eccentricity_rest, m.eccentricity_active),
                                    particles=8, origin_normal=n[:], insertion_normal=n[:],
                                    activation=m.activation, width_scale=m.width_scale, name=m.name)
            v, f = muscle_surface(muscle, rings=RINGS, sides=SIDES, snap=False)
        except ValueError:
            continue
        verts.append(v)
        faces.append(f + offset)
        offset += len(v)
        axis_points = muscle.axis
        verts.append(axis_points)
        edges.append(offset + np.stack([np.arange(len(axis_points) - 1), np.arange(1, len(axis_points))], 1))
        offset += len(axis_points)
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3), dtype=np.int64)
    return np.concatenate(verts), np.concatenate(edges), np.concatenate(faces)


def update_display(armature, force: bool = False):
    """Create, rebuild or remove the armature's display mesh; returns the display object or None."""
    name = display_name(armature)
    obj = bpy.data.objects.get(name)
    props = armature.implicit_muscles
    if not props.show_muscles or not len(props.muscles):
        if obj is not None:
            mesh = obj.data
            bpy.data.objects.remove(obj)
            if mesh.users == 0:
                bpy.data.meshes.remove(mesh)
        _signatures.pop(armature.name_full, None)
        return None
    sig = _signature(armature)
    if obj is not None and not force and _signatures.get(armature.name_full) == sig:
        return obj
    verts, edges, faces = muscle_meshes(armature)
    if obj is None:
        mesh = bpy.data.meshes.new(name)
        obj = bpy.data.objects.new(name, mesh)
        for collection in armature.users_collection:
            collection.objects.link(obj)
        obj.hide_render = True
        obj.hide_select = True
        obj.show_wire = True
        obj.display_type = 'SOLID'
        obj.color = (0.75, 0.2, 0.2, 1.0)
    mesh = obj.data
    mesh.clear_geometry()
    mesh.from_pydata(verts.tolist(), edges.tolist(), faces.tolist())
    mesh.update()
    obj.matrix_world = armature.matrix_world
    _signatures[armature.name_full] = sig
    return obj


def update_all():
    for obj in list(bpy.data.objects):
        if obj.type == 'ARMATURE' and hasattr(obj, "implicit_muscles"):
            if len(obj.implicit_muscles.muscles) or bpy.data.objects.get(display_name(obj)) is not None:
                update_display(obj)


def sync_handles():
    """Write moved handle empties back into their muscles' points (bone frame)."""
    for empty in bpy.data.objects:
        key = empty.get(HANDLE_KEY)
        if not key or empty.parent is None or empty.parent.type != 'ARMATURE':
            continue
        armature = empty.parent
        name, end = key.rsplit("|", 1)
        muscle = armature.implicit_muscles.muscles.get(name)
        if muscle is None or empty.parent_bone not in armature.data.bones:
            continue
        bone = armature.data.bones[empty.parent_bone]
        # the point in the bone's own frame: the posed bone matrix's inverse times the armature-space position
        world = armature.matrix_world.inverted() @ empty.matrix_world.translation
        rest_local = rig_utils.bone_frame(armature, bone.name, posed=True).inverted() @ world
        target = "origin_point" if end == "origin" else "insertion_point"
        if (Vector(getattr(muscle, target)) - rest_local).length > 1e-7:
            setattr(muscle, target, rest_local)


def add_handles(armature, muscle):
    """Two empties at the muscle's origin and insertion, parented to their bones; returns them."""
    out = []
    for end, bone_name, point in (("origin", muscle.origin_bone, muscle.origin_point),
                                  ("insertion", muscle.insertion_bone, muscle.insertion_point)):
        empty = bpy.data.objects.new(f"{muscle.name}.{end}", None)
        empty.empty_display_type = 'SPHERE'
        empty.empty_display_size = max(muscle.width * 0.5, 0.005)
        empty[HANDLE_KEY] = f"{muscle.name}|{end}"
        for collection in armature.users_collection:
            collection.objects.link(empty)
        empty.parent = armature
        empty.parent_type = 'BONE'
        empty.parent_bone = bone_name
        world = armature.matrix_world @ (rig_utils.bone_frame(armature, bone_name, posed=True) @ Vector(point))
        empty.matrix_world = Matrix.Translation(world)
        out.append(empty)
    return out


def remove_handles(armature):
    for obj in list(bpy.data.objects):
        if obj.get(HANDLE_KEY) and obj.parent == armature:
            bpy.data.objects.remove(obj)


@persistent
def _on_depsgraph_update(scene, depsgraph=None):
    if bpy.app.background:
        return
    sync_handles()
    update_all()


@persistent
def _on_frame_change(scene, depsgraph=None):
    if bpy.app.background or not on_main_thread():  # a render's own thread never edits the display meshes
        return
    update_all()


def register():
    bpy.app.handlers.depsgraph_update_post.append(_on_depsgraph_update)
    bpy.app.handlers.frame_change_post.append(_on_frame_change)


def unregister():
    for handlers, fn in ((bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update),
                         (bpy.app.handlers.frame_change_post, _on_frame_change)):
        while fn in handlers:
            handlers.remove(fn)
    _signatures.clear()
