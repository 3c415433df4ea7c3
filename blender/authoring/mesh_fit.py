"""Muscles fitted to a sculpted mesh: the mesh and the skeleton read for the core's fit
(``core/muscle/mesh_fit.py``), and the fitted fibres written as ordinary muscles of the armature.

The mesh is read as it shows (evaluated, modifiers applied), triangulated, in the armature's space, and never
written. One fibre gives one muscle named after the mesh; several give one muscle per fibre, named
``<mesh> fibre 1``..., sharing a collision *Group* no muscle of the armature uses yet, so they overlap freely as
the fibres of one muscle do.
"""
from __future__ import annotations

import math

import numpy as np
from mathutils import Matrix, Vector

from ..scene import units
from ..scene.reader import _normal
from .mirror import unique_name

MAX_GROUP = 64
"""The largest collision group (``ImplicitMuscle.collision_group``)."""


def read_mesh(obj, armature, depsgraph):
    """``(vertices (V, 3) in the armature's core frame, world units (``blender/scene/units.py``), triangles (T, 3)
    int64)`` of ``obj`` as it shows in ``depsgraph``."""
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        co = np.empty(len(mesh.vertices) * 3, dtype=np.float64)
        mesh.vertices.foreach_get("co", co)
        tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", tris)
    finally:
        evaluated.to_mesh_clear()
    to_armature = units.core_frame(armature) @ np.array(armature.matrix_world.inverted() @ obj.matrix_world)
    v = co.reshape(-1, 3) @ to_armature[:3, :3].T + to_armature[:3, 3]
    return v, tris.reshape(-1, 3)


def read_bones(armature):
    """``(names, heads (B, 3), tails (B, 3), parents (B,))`` of the armature's bones at rest, in its core frame."""
    bones = armature.data.bones
    names = [b.name for b in bones]
    index = {n: k for k, n in enumerate(names)}
    S = units.core_frame(armature)
    heads = units.points_to_core(S, np.array([b.head_local[:] for b in bones], dtype=np.float64).reshape(-1, 3))
    tails = units.points_to_core(S, np.array([b.tail_local[:] for b in bones], dtype=np.float64).reshape(-1, 3))
    parents = [index[b.parent.name] if b.parent is not None else -1 for b in bones]
    return names, heads, tails, parents


def _twist(frame: Matrix, axis: Vector, long_axis: Vector) -> float:
    """The muscle *Twist* that turns the automatic cross-section direction (``reader._normal``) onto
    ``long_axis``, in ``(-pi/2, pi/2]`` (the ellipse is the same turned by pi)."""
    n0 = _normal(frame, axis, 0.0)
    a = axis.normalized()
    angle = math.atan2(n0.cross(long_axis).dot(a), n0.dot(long_axis))
    if angle > math.pi / 2:
        angle -= math.pi
    elif angle <= -math.pi / 2:
        angle += math.pi
    return angle


def free_group(armature) -> int:
    """The smallest collision group (1..``MAX_GROUP``) no muscle of ``armature`` uses, or 0 if all are used."""
    used = {m.collision_group for m in armature.implicit_muscles.muscles}
    return next((g for g in range(1, MAX_GROUP + 1) if g not in used), 0)


def add_fitted(armature, attachments, bone_names, name: str) -> list:
    """Add one muscle per :class:`core.muscle.mesh_fit.Attachment` to ``armature``; returns their indices."""
    from ...core.muscle.mesh_fit import active_pair

    muscles = armature.implicit_muscles.muscles
    bones = armature.data.bones
    group = free_group(armature) if len(attachments) > 1 else 0
    S = units.core_frame(armature)  # the fit's frame (``read_mesh``, ``read_bones``)
    s = units.scale(S)
    added = []
    for k, att in enumerate(attachments):
        fibre = att.fibre
        origin_bone, insertion_bone = bone_names[att.origin_bone], bone_names[att.insertion_bone]
        o, i = (Vector(p) for p in units.points_from_core(S, np.array([fibre.origin, fibre.insertion])))
        frame = bones[origin_bone].matrix_local
        alpha_active, beta_active = active_pair(fibre.alpha, fibre.beta)
        base = name if len(attachments) == 1 else f"{name} fibre {k + 1}"
        unique = unique_name(muscles, base)
        muscle = muscles.add()
        muscle.name = unique
        muscle.origin_bone, muscle.insertion_bone = origin_bone, insertion_bone
        muscle.skin_bone = bone_names[att.skin_bone]
        muscle.origin_point = units.point_in_bone(frame, o, s)
        muscle.insertion_point = units.point_in_bone(bones[insertion_bone].matrix_local, i, s)
        muscle.width = fibre.width
        muscle.alpha_rest, muscle.beta_rest = fibre.alpha, fibre.beta
        muscle.alpha_active, muscle.beta_active = alpha_active, beta_active
        muscle.eccentricity_rest = muscle.eccentricity_active = fibre.eccentricity
        muscle.twist = _twist(frame, i - o, Vector(units.rotation(S).T @ np.asarray(fibre.long_axis)))
        muscle.collision_group = group
        added.append(len(muscles) - 1)
    return added
