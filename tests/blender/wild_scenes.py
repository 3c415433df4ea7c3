"""Characters as they come from the wild, made by code from the family's members (``tests/family.py``): appended or
linked from their .blend, laid out as Blender's FBX importer leaves a Mixamo or game-engine character (data in
centimetres, the armature object scaled 0.01 and turned 90 degrees about X), their bones renamed the Mixamo way, and
the 22 limb muscles an artist adds with the add-on's presets and *Mirror*."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from family import member  # noqa: E402

LIMB_PRESETS = (
    # (preset, origin bone, insertion bone) by the family's semantic bone map, the left side; the side of the limb
    # in the world (the bodies face -Y, their left is +X) its handles go to, and where along the origin and the
    # insertion bone (the demo's placement, demo/shots.py)
    ("biceps", "upper_arm.L", "forearm.L", (0.0, -1.0, 0.0), 0.25, 0.15),
    ("triceps", "upper_arm.L", "forearm.L", (0.0, 1.0, 0.0), 0.25, 0.03),
    ("brachialis", "upper_arm.L", "forearm.L", (1.0, -1.0, 0.0), 0.45, 0.1),
    ("brachioradialis", "upper_arm.L", "forearm.L", (1.0, 0.0, 0.0), 0.6, 0.3),
    ("deltoid", "clavicle.L", "upper_arm.L", (1.0, 0.0, 0.0), 0.6, 0.35),
    ("forearm flexors", "forearm.L", "hand.L", (0.0, -1.0, 0.0), 0.25, 0.15),
    ("forearm extensors", "forearm.L", "hand.L", (0.0, 1.0, 0.0), 0.25, 0.15),
    ("gluteus", "pelvis", "thigh.L", (0.0, 1.0, 0.0), 0.5, 0.2),
    ("quadriceps", "thigh.L", "shin.L", (0.0, -1.0, 0.0), 0.25, 0.15),
    ("hamstrings", "thigh.L", "shin.L", (0.0, 1.0, 0.0), 0.25, 0.15),
    ("gastrocnemius", "shin.L", "foot.L", (0.0, 1.0, 0.0), 0.25, 0.15),
)
"""The eleven limb presets of the scale test, each mirrored: 22 muscles."""
DEPTH = 0.6
"""Limb radii out from the bone where the handles go (the operator's own depth)."""

MIXAMO_NAMES = {"pelvis": "Hips", "spine_01": "Spine", "spine_02": "Spine1", "spine_03": "Spine2",
                "neck_01": "Neck", "head": "Head", "clavicle": "Shoulder", "upperarm": "Arm",
                "lowerarm": "ForeArm", "hand": "Hand", "thigh": "UpLeg", "calf": "Leg", "foot": "Foot",
                "ball": "ToeBase"}
"""The game-engine rig's bone stems and their Mixamo names (``mixamorig:LeftForeArm`` for ``lowerarm_l``)."""


def mixamo_name(name: str) -> str:
    """A game-engine bone's Mixamo-style name: ``upperarm_l`` -> ``mixamorig:LeftArm``, ``pelvis`` ->
    ``mixamorig:Hips``; bones without a Mixamo name keep theirs behind the prefix."""
    stem, side = name, ""
    if name[-2:] in ("_l", "_r"):
        stem, side = name[:-2], "Left" if name[-1] == "l" else "Right"
    return f"mixamorig:{side}{MIXAMO_NAMES.get(stem, stem)}"


def append_member(bpy, name: str, link: bool = False, suffix: str = ""):
    """Append (or link, with a library override) the family member ``name``'s armature and meshes into the
    current scene: ``(armature, [meshes], member)``. The armature plays the member's ``bend``. ``suffix``
    renames the appended objects (two copies in one file)."""
    m = member(name)
    with bpy.data.libraries.load(str(m.path), link=link) as (src, dst):
        dst.objects = list(src.objects)
        dst.actions = list(src.actions)
    scene = bpy.context.scene
    objects = [o for o in dst.objects if o is not None]
    if link:
        collection = bpy.data.collections.new(f"{name} linked{suffix}")
        scene.collection.children.link(collection)
        for obj in objects:
            collection.objects.link(obj)
        overridden = []
        for obj in objects:
            overridden.append(obj.override_create(remap_local_usages=True))
        for obj in objects:
            collection.objects.unlink(obj)
        objects = overridden
        for obj in objects:
            if obj.name not in collection.objects:
                collection.objects.link(obj)
    else:
        for obj in objects:
            scene.collection.objects.link(obj)
            if suffix:
                obj.name = obj.name + suffix
    armature = next(o for o in objects if o.type == 'ARMATURE')
    for obj in objects:
        if obj.type == 'MESH' and obj.parent is not None and obj.parent.name.startswith(armature.name.split(".")[0]):
            obj.parent = armature
        for mod in getattr(obj, "modifiers", ()):
            if mod.type == 'ARMATURE':
                mod.object = armature
    meshes = [o for o in objects if o.type == 'MESH']
    bend = next(a for a in dst.actions if a is not None and a.name.startswith("bend"))
    if armature.animation_data is None:
        armature.animation_data_create()
    armature.animation_data.action = bend
    if hasattr(armature.animation_data, "action_slot") and getattr(bend, "slots", None):
        armature.animation_data.action_slot = bend.slots[0]
    scene.frame_start, scene.frame_end = 1, 109
    scene.render.fps = 24
    bpy.context.view_layer.update()
    return armature, meshes, m


def fbx_layout(bpy, armature, meshes, units: float = 100.0, turn: bool = True) -> None:
    """Lay ``armature`` and its ``meshes`` out as Blender's FBX importer leaves a character, seen the same in the
    world: bones, meshes and location keys in ``units`` per metre (centimetres), Y up inside the armature, the
    armature object scaled ``1 / units`` and (``turn``) turned 90 degrees about X. Meshes become children of the
    armature with no transform of their own."""
    from mathutils import Matrix

    M = (Matrix.Rotation(-math.pi / 2, 4, 'X') if turn else Matrix.Identity(4)) @ Matrix.Scale(units, 4)
    arm_world = armature.matrix_world.copy()
    for mesh in meshes:
        to_data = M @ arm_world.inverted() @ mesh.matrix_world
        mesh.data.transform(to_data)
        mesh.parent = armature
        mesh.matrix_parent_inverse = Matrix.Identity(4)
        mesh.matrix_basis = Matrix.Identity(4)
    armature.data.transform(M)
    armature.matrix_world = arm_world @ M.inverted()
    action = armature.animation_data.action if armature.animation_data else None
    for fc in _fcurves(action):
        if fc.data_path.endswith(".location"):
            for key in fc.keyframe_points:
                key.co.y *= units
                key.handle_left.y *= units
                key.handle_right.y *= units
    bpy.context.view_layer.update()


def _fcurves(action):
    """Every F-curve of ``action`` (its layered channelbags on Blender 4.4+)."""
    if action is None:
        return []
    if hasattr(action, "layers") and len(action.layers):
        out = []
        for layer in action.layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    out.extend(bag.fcurves)
        return out
    return list(action.fcurves)


def rename_mixamo(bpy, armature, meshes) -> dict:
    """Rename ``armature``'s bones (and the meshes' vertex groups, which Blender renames with them) the Mixamo way
    (``mixamo_name``); returns ``{old: new}``."""
    renames = {b.name: mixamo_name(b.name) for b in armature.data.bones}
    for bone in armature.data.bones:
        bone.name = renames[bone.name]
    bpy.context.view_layer.update()
    return renames


def add_limb_muscles(bpy, armature, bone_map: dict, presets=LIMB_PRESETS, mirror: bool = True) -> list:
    """Add the limb presets on the member's bones with the add-on's operator, move each one's ends to its side of
    the limb (``presets``' world directions, ``DEPTH`` limb radii out, as the demo's handles go) and *Mirror* it;
    returns the muscles' names."""
    from mathutils import Vector

    addon = sys.modules[_addon() + ".blender.scene.rig"]
    units = sys.modules[_addon() + ".blender.scene.units"]
    bpy.context.view_layer.objects.active = armature
    items = armature.implicit_muscles.muscles
    s, turn = units.similarity(armature.matrix_world)
    for preset, origin, insertion, side, origin_t, insertion_t in presets:
        origin, insertion = bone_map[origin], bone_map[insertion]
        result = bpy.ops.implicit_muscles.add_muscle(origin_bone=origin, insertion_bone=insertion, preset=preset)
        if result != {'FINISHED'}:
            raise RuntimeError(f"add_muscle {preset}: {result}")
        item = items[-1]
        radius = addon.limb_radius(armature, origin) / s  # armature units
        side = Vector((turn.T @ np.asarray(side, dtype=np.float64)).tolist())
        for bone_name, attr, t in ((origin, "origin_point", origin_t), (insertion, "insertion_point", insertion_t)):
            bone = armature.data.bones[bone_name]
            axis = (bone.tail_local - bone.head_local).normalized()
            out = side - axis * side.dot(axis)
            point = bone.head_local.lerp(bone.tail_local, t) + out.normalized() * (DEPTH * radius)
            setattr(item, attr, units.point_in_bone(bone.matrix_local, point, s))
        if mirror and bpy.ops.implicit_muscles.mirror_muscle() != {'FINISHED'}:
            raise RuntimeError(f"mirror_muscle {preset}")
    return [m.name for m in items]


def _addon() -> str:
    import blender_session
    return blender_session.ADDON


def world_positions(bpy, mesh) -> np.ndarray:
    """``(V, 3)`` the evaluated mesh's vertices in world space."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = mesh.evaluated_get(depsgraph)
    data = evaluated.to_mesh()
    try:
        co = np.empty(3 * len(data.vertices))
        data.vertices.foreach_get("co", co)
    finally:
        evaluated.to_mesh_clear()
    world = np.array(evaluated.matrix_world)
    return co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]


def play(bpy, mesh, frames) -> dict:
    """``{frame: (V, 3) world positions}`` of ``mesh`` played frame by frame from the scene's start to the last of
    ``frames`` (every frame in between simulated)."""
    scene = bpy.context.scene
    out = {}
    for f in range(scene.frame_start, max(frames) + 1):
        scene.frame_set(f)
        if f in frames:
            out[f] = world_positions(bpy, mesh)
    return out
