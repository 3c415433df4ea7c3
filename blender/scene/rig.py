"""Reading rigs: the skin meshes of an armature, the armature an object shows, the simulation's start frame,
muscle placement and checks.

Positions: a muscle's origin and insertion are stored in their bone's rest frame (``bone.matrix_local``), in world
units (``blender/scene/units.py``); :func:`muscle_endpoints` turns them into armature-space points for the rest pose
or the current pose (``pose_bone.matrix``). Lengths given or returned here are in world units.
"""
from __future__ import annotations

import numpy as np
from mathutils import Matrix, Vector

from . import units
from .joint import joint_problem


def skin_meshes(armature) -> list:
    """Mesh objects deformed by ``armature`` (an Armature modifier pointing at it)."""
    import bpy
    out = []
    for obj in bpy.data.objects:
        if obj.type == 'MESH' and any(m.type == 'ARMATURE' and m.object == armature for m in obj.modifiers):
            out.append(obj)
    return out


def armature_of(obj):
    """The armature whose muscles ``obj`` shows: ``obj`` itself if it is an armature; for a mesh, the armature it is
    bound to, else the one deforming it (``Object.find_armature``); for a muscle handle, its armature; else None."""
    if obj is None:
        return None
    if obj.type == 'ARMATURE':
        return obj
    if obj.type == 'MESH':
        return obj.implicit_skin.armature or obj.find_armature()
    if obj.type == 'EMPTY' and obj.get("implicit_muscles_handle") is not None and obj.parent is not None \
            and obj.parent.type == 'ARMATURE':  # a muscle handle (blender/authoring/handles.py)
        return obj.parent
    return None


def simulation_start(armature, scene=None) -> int:
    """The frame where ``armature``'s muscle simulation starts from rest: the scene's first frame, unless *Use
    Scene Start* is off (then the armature's *Start Frame*). ``scene`` defaults to the context's scene if it holds
    the armature, else the first scene that does."""
    props = armature.implicit_muscles
    if not props.use_scene_start:
        return props.start_frame
    if scene is None:
        import bpy
        scene, scenes = bpy.context.scene, armature.users_scene
        if scenes and scene not in scenes:
            scene = scenes[0]
    return scene.frame_start if scene is not None else props.start_frame


def limb_radius(armature, bone_name: str) -> float:
    """A bone's limb radius [world units]: median distance from the bone segment to the skin vertices it weights
    most, or 15 % of the bone's length if no skin mesh is found."""
    return units.world_scale(armature) * _limb_radius(armature, bone_name)


def _limb_radius(armature, bone_name: str) -> float:
    """``limb_radius`` in armature units."""
    bone = armature.data.bones[bone_name]
    head = np.array(bone.head_local)
    tail = np.array(bone.tail_local)
    for mesh in skin_meshes(armature):
        group = mesh.vertex_groups.get(bone_name)
        if group is None:
            continue
        to_arm = np.array(armature.matrix_world.inverted() @ mesh.matrix_world)
        pts = []
        gi = group.index
        for v in mesh.data.vertices:
            best = max(v.groups, key=lambda g: g.weight, default=None)
            if best is not None and best.group == gi:
                pts.append(v.co[:])
        if len(pts) >= 4:
            p = np.array(pts) @ to_arm[:3, :3].T + to_arm[:3, 3]
            e = tail - head
            t = np.clip((p - head) @ e / max(e @ e, 1e-12), 0.0, 1.0)
            return float(np.median(np.linalg.norm(p - (head + t[:, None] * e), axis=1)))
    return 0.15 * float(np.linalg.norm(tail - head))


DEFAULT_DEPTH = 0.6
"""A new muscle's axis lies this many limb radii out from its bones (``default_points``)."""
DEFAULT_REACH = 0.3
"""A new muscle is as thick as reaches this many limb radii from its axis at its thickest point (``fitted_width``).
With ``DEFAULT_DEPTH`` and the automatic bone capsule (a quarter of the limb radius,
``core.pbd.model.capsule_radius_from_skin``) it lies 0.05 limb radii clear of the capsule and 0.1 inside the skin."""


def default_points(armature, origin_bone: str, insertion_bone: str):
    """Origin and insertion in their bones' rest frames, and the origin bone's limb radius, all in world units, for
    a new muscle: the origin a quarter down its bone, the insertion 15 % into its bone (the far end of the origin
    bone if both are the same), both ``DEFAULT_DEPTH`` limb radii out along the bones' local Z (the skin side)."""
    bones = armature.data.bones
    s = units.world_scale(armature)
    ob, ib = bones[origin_bone], bones[insertion_bone]
    radius = limb_radius(armature, origin_bone)
    side = Vector((0.0, 0.0, DEFAULT_DEPTH * radius))  # local Z of the bone frame
    origin = Vector((0.0, 0.25 * s * ob.length, 0.0)) + side
    if origin_bone == insertion_bone:
        insertion = Vector((0.0, 0.9 * s * ib.length, 0.0)) + side
    else:
        insertion = Vector((0.0, 0.15 * s * ib.length, 0.0)) + side
    return origin, insertion, radius


def fitted_width(radius: float, muscle) -> float:
    """The width [world units] at which ``muscle``'s rest shape (its rest profile and flatness, at no activation) reaches
    ``DEFAULT_REACH`` limb radii (``radius``, world units) from its axis at its thickest point, at least 2 mm."""
    from ...core.muscle.profile import ellipse_axes, profile_max
    v = ellipse_axes(muscle.eccentricity_rest)[1]
    peak = profile_max(muscle.alpha_rest, muscle.beta_rest, muscle.alpha_active, muscle.beta_active, 0.0)
    return max(DEFAULT_REACH * radius / (v * peak), 0.002)


def bone_frame(armature, bone_name: str, posed: bool) -> Matrix:
    """The bone's frame in armature space: rest (``matrix_local``) or posed (``pose_bone.matrix``)."""
    if posed:
        return armature.pose.bones[bone_name].matrix
    return armature.data.bones[bone_name].matrix_local


def muscle_endpoints(armature, muscle, posed: bool = True):
    """Origin and insertion of ``muscle`` in armature space (``Vector``s), at rest or in the current pose."""
    s = units.world_scale(armature)
    o = units.bone_point(bone_frame(armature, muscle.origin_bone, posed), muscle.origin_point, s)
    i = units.bone_point(bone_frame(armature, muscle.insertion_bone, posed), muscle.insertion_point, s)
    return o, i


BONE_FIELDS = ("origin_bone", "insertion_bone", "skin_bone")
"""The muscle properties that name a bone (always set)."""
RENAMED_FIELDS = BONE_FIELDS + ("joint_bone",)
"""The muscle properties that name a bone and follow its renames (the joint bone may be empty)."""


def follow_renames(armature) -> int:
    """Give muscles and fats the new names of bones renamed since the last call; returns how many fields changed.

    Muscles name their bones, and Blender renames a bone's vertex groups but not our muscles' fields. The bone names
    of the last call are kept on the rig (``ImplicitMuscleRig.bone_names``). A bone at the same place in the list
    under a new name, with its old name gone, was renamed (renaming keeps the order; adding or deleting bones
    changes the count, and then nothing is guessed: ``muscle_problem`` names the missing bone). Called on depsgraph
    updates and before a bind."""
    rig = armature.implicit_muscles
    now = [b.name for b in armature.data.bones]
    before = rig.bone_names.split("\n") if rig.bone_names else []
    changed = 0
    if len(before) == len(now) and before != now:
        present = set(now)
        renamed = {old: new for old, new in zip(before, now) if old != new and old not in present}
        for m in rig.muscles:
            for field in RENAMED_FIELDS:
                new = renamed.get(getattr(m, field))
                if new is not None:
                    setattr(m, field, new)
                    changed += 1
        for fat in rig.fats:  # the fats' bones likewise (blender/scene/fats.py)
            new = renamed.get(fat.bone)
            if new is not None:
                fat.bone = new
                changed += 1
    joined = "\n".join(now)
    if rig.bone_names != joined:
        try:
            rig.bone_names = joined
        except (AttributeError, TypeError, RuntimeError):
            pass  # linked, not overridden: nothing of it can change here anyway
    return changed


def muscle_problem(armature, muscle) -> str:
    """A plain sentence saying what is wrong with a muscle's set-up, or ``""``."""
    bones = armature.data.bones
    for label, name in (("origin", muscle.origin_bone), ("insertion", muscle.insertion_bone),
                        ("skin", muscle.skin_bone)):
        if not name:
            return f"{muscle.name}: no {label} bone is set."
        if name not in bones:
            return (f"{muscle.name}: its {label} bone '{name}' is not in {armature.name} (renamed or deleted?); "
                    f"pick a bone in the muscle's panel.")
    o, i = muscle_endpoints(armature, muscle, posed=False)
    if (o - i).length * units.world_scale(armature) < 1e-4:
        return f"{muscle.name}: origin and insertion are at the same place; move one of them."
    return joint_problem(armature, muscle)
