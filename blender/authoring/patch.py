"""A muscle added under a patch painted on the skin (a vertex group), between two bones: the patch and the rest skin
are read in the armature's rest space and fitted by the core (``core/muscle/patch_fit.py``); the result is an
ordinary muscle (origin and insertion in their bones' frames, width, flatness and twist) the artist can edit.
Nothing of the mesh is changed."""
from __future__ import annotations

import math

import numpy as np
from mathutils import Vector

from ..scene import names, reader, rig, units
from . import presets
from .mirror import unique_name

THRESHOLD = 0.5
"""Vertices painted with at least this weight make the patch."""


def _rest_skin(mesh_obj, armature):
    """``(points (V, 3), normals (V, 3))`` of the mesh at rest in the armature's core frame (world units,
    ``blender/scene/units.py``)."""
    mesh = mesh_obj.data
    V = len(mesh.vertices)
    co = np.empty(V * 3, dtype=np.float32)
    nor = np.empty(V * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    mesh.vertices.foreach_get("normal", nor)
    to_arm = units.core_frame(armature) @ np.array(armature.matrix_world.inverted() @ mesh_obj.matrix_world)
    points = co.reshape(V, 3).astype(np.float64) @ to_arm[:3, :3].T + to_arm[:3, 3]
    normals = nor.reshape(V, 3).astype(np.float64) @ np.linalg.inv(to_arm[:3, :3])  # inverse transpose
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-30)
    return points, normals


def patch_vertices(mesh_obj, group_name: str, threshold: float = THRESHOLD) -> np.ndarray:
    """Indices of the vertices of ``mesh_obj`` painted into ``group_name`` with at least ``threshold``.
    ``ValueError`` with a sentence when the group is missing or the patch is empty."""
    group = mesh_obj.vertex_groups.get(group_name) if group_name else None
    if group is None:
        if not group_name:
            raise ValueError(f"{mesh_obj.name} has no active vertex group: paint the patch where the muscle should "
                             f"bulge into a vertex group (Weight Paint), then pick it.")
        raise ValueError(f"{mesh_obj.name} has no vertex group '{group_name}': paint the patch where the muscle "
                         f"should bulge into a vertex group (Weight Paint), then pick it.")
    gi = group.index
    out = [v.index for v in mesh_obj.data.vertices
           if any(g.group == gi and g.weight >= threshold for g in v.groups)]
    if not out:
        raise ValueError(f"{mesh_obj.name}: the vertex group '{group_name}' has no vertex painted with a weight of "
                         f"{threshold:g} or more: paint the patch where the muscle should bulge (Weight Paint).")
    return np.array(out, dtype=np.int64)


def _owners(mesh_obj, armature, vertices) -> dict:
    """``{bone name: count}`` of ``vertices`` whose highest weight is on that bone."""
    bones = armature.data.bones
    group_bone = {g.index: g.name for g in mesh_obj.vertex_groups if g.name in bones}
    out: dict = {}
    for k in vertices:
        best = max((g for g in mesh_obj.data.vertices[int(k)].groups if g.group in group_bone),
                   key=lambda g: g.weight, default=None)
        if best is not None:
            out[group_bone[best.group]] = out.get(group_bone[best.group], 0) + 1
    return out


def _twist(armature, origin_bone: str, origin, insertion, normal) -> float:
    """The muscle twist that turns its cross-section's default direction (``reader._normal`` with no twist) onto
    ``normal`` (the armature's core frame, as ``origin`` and ``insertion``)."""
    back = units.rotation(units.core_frame(armature)).T  # the core frame's directions in armature space
    axis = Vector(back @ (np.asarray(insertion) - np.asarray(origin)))
    n0 = reader._normal(armature.data.bones[origin_bone].matrix_local, axis, 0.0)
    n = Vector(back @ np.asarray(normal))
    return math.atan2(n0.cross(n).dot(axis.normalized()), n0.dot(n))


def add_patch_muscle(armature, mesh_obj, group_name: str, origin_bone: str, insertion_bone: str, preset: str = "",
                     name: str = "", threshold: float = THRESHOLD) -> int:
    """Add a muscle under the patch ``group_name`` of ``mesh_obj`` from ``origin_bone`` to ``insertion_bone``, with
    the rest profile of ``preset`` (if given); returns its index. ``ValueError`` with a sentence (nothing added)."""
    from ...core.muscle.patch_fit import fit_patch_muscle
    from ...core.muscle.primitive import MuscleShape

    bones = armature.data.bones
    for label, bone in (("origin", origin_bone), ("insertion", insertion_bone)):
        if not bone:
            raise ValueError(f"Give the muscle's {label} bone, or select its two pose bones (the insertion last).")
        if bone not in bones:
            raise ValueError(f"The {label} bone '{bone}' is not in {armature.name}.")
    if mesh_obj is None or mesh_obj.type != 'MESH':
        raise ValueError("Give the skin mesh the patch is painted on, or make it the active object.")
    if mesh_obj not in rig.skin_meshes(armature):
        raise ValueError(f"{mesh_obj.name} is not deformed by {armature.name} (no Armature modifier for it): "
                         f"paint the patch on the skin of {armature.name}.")
    path = None
    if preset:
        path = presets.find_preset(preset)
        if path is None:
            raise ValueError(f"No muscle preset called '{preset}'.")
    patch = patch_vertices(mesh_obj, group_name, threshold)
    points, normals = _rest_skin(mesh_obj, armature)
    rig.follow_renames(armature)
    muscles = armature.implicit_muscles.muscles
    before = armature.implicit_muscles.active_index
    index = len(muscles)
    muscle = muscles.add()
    base = name or (names.name_with_side(preset.replace(" ", "_"), (origin_bone, insertion_bone)) if preset
                    else names.default_muscle_name(origin_bone, (insertion_bone,)))
    muscle.name = unique_name(muscles, base)
    muscle.origin_bone, muscle.insertion_bone, muscle.skin_bone = origin_bone, insertion_bone, origin_bone
    armature.implicit_muscles.active_index = index
    try:
        if path:
            presets.apply_preset_file(path, armature)
        muscle = muscles[index]
        shape = MuscleShape(muscle.alpha_rest, muscle.beta_rest, muscle.alpha_active, muscle.beta_active)
        S = units.core_frame(armature)
        head_tail = lambda b: units.points_to_core(S, np.array([bones[b].head_local[:],  # noqa: E731
                                                                bones[b].tail_local[:]]))
        fit = fit_patch_muscle(points[patch], normals[patch], points, normals, head_tail(origin_bone),
                               head_tail(insertion_bone), shape=shape, name=muscle.name)
    except ValueError:
        muscles.remove(index)
        armature.implicit_muscles.active_index = before
        raise
    muscle = muscles[index]
    muscle.fibres, muscle.origin_spread, muscle.insertion_spread = 1, 0.0, 0.0  # the patch sizes one fibre
    S = units.core_frame(armature)
    s = units.scale(S)
    o, i = units.points_from_core(S, np.array([fit.origin, fit.insertion]))
    muscle.origin_point = units.point_in_bone(bones[origin_bone].matrix_local, o, s)
    muscle.insertion_point = units.point_in_bone(bones[insertion_bone].matrix_local, i, s)
    muscle.twist = _twist(armature, origin_bone, fit.origin, fit.insertion, fit.normal)
    muscle.width = fit.width
    muscle.eccentricity_rest = muscle.eccentricity_active = fit.eccentricity
    # its skin part: the bone (of the two) that owns most of the patch
    owns = _owners(mesh_obj, armature, patch)
    muscle.skin_bone = max((origin_bone, insertion_bone), key=lambda b: owns.get(b, 0))
    armature.update_tag()
    return index
