"""A headless core scene (``scenes/paper.py``: a ``Rig`` and ``FusiformMuscle`` objects) built as Blender data:
an armature, a skin mesh weighted to it with an Armature modifier, and the muscles as the add-on's muscle items.

Used by the benchmarks (``bench/bench_blender.py``) and the demo. Everything talks to ``bpy`` (the add-on must be
enabled for :func:`set_muscle` / :func:`add_muscles`, which fill ``armature.implicit_muscles.muscles``) and takes
the core's numpy arrays, armature space in metres; the armature and the mesh are placed at the world origin, so
armature space is world space. Bones get roll 0 (their rest frame is Blender's default for the head -> tail
direction) and are connected where a bone's head lies on its parent's tail. Meshes are written with
``foreach_set``; vertex-group weights with one ``VertexGroup.add`` call per distinct weight value of a bone (the
scenes' smooth weights repeat along each ring, so that is a few hundred calls, not one per vertex).
"""
from __future__ import annotations

import math

import bpy
import numpy as np
from mathutils import Matrix, Vector

CONNECT_TOL = 1e-6
"""A bone whose head lies this close [m] to its parent's tail is connected to it."""


def build_armature(rig, name: str = "Rig", collection=None):
    """An armature object ``name`` with one bone per ``rig.names`` (heads, tails, parents in armature space)."""
    collection = collection or bpy.context.scene.collection
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    view_layer = bpy.context.view_layer
    previous = view_layer.objects.active
    view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    try:
        edit = []
        for k, bone_name in enumerate(rig.names):
            b = data.edit_bones.new(bone_name)
            b.head = tuple(float(c) for c in rig.heads[k])
            b.tail = tuple(float(c) for c in rig.tails[k])
            b.roll = 0.0
            edit.append(b)
        for k, p in enumerate(rig.parents):
            if p >= 0:
                edit[k].parent = edit[p]
                edit[k].use_connect = bool(np.linalg.norm(rig.heads[k] - rig.tails[p]) < CONNECT_TOL)
    finally:
        bpy.ops.object.mode_set(mode='OBJECT')
        if previous is not None:
            view_layer.objects.active = previous
    return obj


def build_mesh(name: str, vertices, faces, smooth: bool = True):
    """A triangle mesh datablock from ``vertices (V, 3)`` and ``faces (F, 3)`` (``foreach_set``, no Python loop)."""
    vertices = np.ascontiguousarray(vertices, dtype=np.float32)
    faces = np.ascontiguousarray(faces, dtype=np.int32)
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(vertices))
    mesh.vertices.foreach_set("co", vertices.ravel())
    mesh.loops.add(faces.size)
    mesh.polygons.add(len(faces))
    mesh.polygons.foreach_set("loop_start", np.arange(0, faces.size, faces.shape[1], dtype=np.int32))
    mesh.polygons.foreach_set("vertices", faces.ravel())
    mesh.update(calc_edges=True)
    if smooth:
        mesh.shade_smooth()
    return mesh


def add_weights(obj, weights, names) -> None:
    """One vertex group per bone name with the non-zero weights of its column of ``weights (V, B)``."""
    weights = np.asarray(weights, dtype=np.float64)
    for k, bone_name in enumerate(names):
        group = obj.vertex_groups.new(name=bone_name)
        column = weights[:, k]
        nonzero = np.flatnonzero(column > 0.0)
        values, inverse = np.unique(column[nonzero].astype(np.float32), return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(values) + 1))
        for j, w in enumerate(values):
            group.add(nonzero[order[bounds[j]:bounds[j + 1]]].tolist(), float(w), 'REPLACE')


def build_skin(rig, armature, name: str = "Skin", collection=None):
    """A mesh object ``name`` from ``rig`` (vertices, faces, weights), weighted to ``armature``'s bones, deformed by
    an Armature modifier and parented to the armature (no parent inverse: both at the origin)."""
    collection = collection or bpy.context.scene.collection
    mesh = build_mesh(name, rig.vertices, rig.faces)
    obj = bpy.data.objects.new(name, mesh)
    collection.objects.link(obj)
    add_weights(obj, rig.weights, rig.names)
    mod = obj.modifiers.new("Armature", 'ARMATURE')
    mod.object = armature
    obj.parent = armature
    return obj


def build_rig(rig, name: str = "Rig", skin_name: str = "Skin", collection=None):
    """``(armature object, skin mesh object)`` for a ``core.rig.Rig``; the armature is left active."""
    armature = build_armature(rig, name, collection)
    skin = build_skin(rig, armature, skin_name, collection)
    bpy.context.view_layer.objects.active = armature
    return armature, skin


def _bone_point(armature, bone_name: str, point) -> Vector:
    """An armature-space point in the bone's rest frame (what ``origin_point`` / ``insertion_point`` hold)."""
    return armature.data.bones[bone_name].matrix_local.inverted() @ Vector(tuple(float(c) for c in point))


def _twist(armature, origin_bone: str, origin, insertion, normal) -> float:
    """The muscle item's ``twist`` that turns the reader's default cross-section direction (the origin bone's X made
    orthogonal to the axis, ``blender/scene/reader.py``) onto ``normal`` made orthogonal to the axis."""
    axis = (Vector(tuple(insertion)) - Vector(tuple(origin))).normalized()
    frame = armature.data.bones[origin_bone].matrix_local.to_3x3()
    base = frame @ Vector((1.0, 0.0, 0.0))
    base -= axis * base.dot(axis)
    if base.length < 1e-6:
        base = frame @ Vector((0.0, 0.0, 1.0))
        base -= axis * base.dot(axis)
    target = Vector(tuple(float(c) for c in normal))
    target -= axis * target.dot(axis)
    if target.length < 1e-6:
        return 0.0
    base.normalize()
    target.normalize()
    return math.atan2(axis.dot(base.cross(target)), base.dot(target))


def set_muscle(item, armature, muscle, origin_bone: str, insertion_bone: str, skin_bone: str,
               collision_group: int | None = None) -> None:
    """Fill a muscle item (``armature.implicit_muscles.muscles[k]``) from a core ``FusiformMuscle`` at rest:
    bones, end points (in their bones' rest frames), rest width, shape, particles, activation, width scale and the
    twist that matches the core muscle's origin normal. One fibre; stiffness and collisions keep the item's values
    unless ``collision_group`` is given (the item's *Group*: muscles of one group overlap instead of pushing each
    other)."""
    axis = muscle.axis
    origin, insertion = axis[0], axis[-1]
    sh = muscle.shape
    item.origin_bone, item.insertion_bone, item.skin_bone = origin_bone, insertion_bone, skin_bone
    item.origin_point = _bone_point(armature, origin_bone, origin)
    item.insertion_point = _bone_point(armature, insertion_bone, insertion)
    item.width = float(muscle.width / muscle.width_scale)
    item.alpha_rest, item.beta_rest = int(sh.alpha_rest), int(sh.beta_rest)
    item.alpha_active, item.beta_active = int(sh.alpha_active), int(sh.beta_active)
    item.eccentricity_rest, item.eccentricity_active = float(sh.eccentricity_rest), float(sh.eccentricity_active)
    item.particles = int(muscle.particle_count)
    item.activation = float(muscle.activation)
    item.width_scale = float(muscle.width_scale)
    item.fibres = 1
    item.twist = _twist(armature, origin_bone, origin, insertion, muscle.endpoint_normals()[0])
    if collision_group is not None:
        item.collision_group = int(collision_group)


def add_muscles(armature, muscles, origin_bones, insertion_bones, skin_bones, collision_groups=None) -> list:
    """Append one muscle item per core muscle (bone indices into the armature's bones, in ``rig.names`` order, as
    ``core.character.MuscledCharacter`` takes them); returns the items."""
    names = [b.name for b in armature.data.bones]
    items = armature.implicit_muscles.muscles
    out = []
    for k, muscle in enumerate(muscles):
        item = items.add()
        item.name = muscle.name
        group = None if collision_groups is None else collision_groups[k]
        set_muscle(item, armature, muscle, names[origin_bones[k]], names[insertion_bones[k]], names[skin_bones[k]],
                   group)
        out.append(item)
    armature.implicit_muscles.active_index = max(len(items) - 1, 0)
    armature.update_tag()
    return out


def add_arm_muscles(armature, scenes) -> list:
    """The paper's four arm muscles (``scenes.arm_muscles()``) on an ``armature`` built from ``scenes.arm_rig()``,
    each added the way an artist does, with the public operator ``implicit_muscles.add_muscle`` (its bones and its
    preset, which the four names are), then set to the core muscle's end points, rest width, shape exponents,
    eccentricities, particles and cross-section direction (:func:`set_muscle`). Returns the muscle items."""
    names = [b.name for b in armature.data.bones]
    muscles, skin_bones = scenes.arm_muscles()
    bpy.context.view_layer.objects.active = armature
    for muscle, sb in zip(muscles, skin_bones):
        o, i = scenes.ARM_ATTACHMENTS[muscle.name]
        result = bpy.ops.implicit_muscles.add_muscle(origin_bone=names[o], insertion_bone=names[i],
                                                     skin_bone=names[sb], name=muscle.name, preset=muscle.name)
        if result != {'FINISHED'}:
            raise RuntimeError(f"add_muscle {muscle.name}: {result}")
        set_muscle(armature.implicit_muscles.muscles[-1], armature, muscle, names[o], names[i], names[sb])
    return list(armature.implicit_muscles.muscles)


def bone_rotation(armature, bone_name: str, axis, angle: float):
    """The pose bone's local quaternion for a rotation by ``angle`` [rad] about the armature-space ``axis`` through
    the bone's head, applied after its parent's pose (``B_child = B_parent R``, as ``scenes/paper.py`` composes)."""
    local_axis = armature.data.bones[bone_name].matrix_local.to_3x3().inverted() @ Vector(tuple(axis))
    return Matrix.Rotation(angle, 3, local_axis.normalized()).to_quaternion()
