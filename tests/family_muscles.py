"""Twenty-two preset muscles on a family member, added in Blender as an artist adds them (not shipped).

``LIMB_MUSCLES`` names eleven limb muscles by the member's semantic bone map (``tests/family.py``): each is added
with ``implicit_muscles.add_muscle`` from its origin to its insertion bone with its preset, at the operator's own
placement, and mirrored to the other side (``mirror=True``): 22 muscles. ``open_member`` opens a member's .blend
file (its armature object at the origin, unturned: armature space is world space)."""
from __future__ import annotations

LIMB_MUSCLES = (
    ("biceps", "upper_arm", "forearm"),
    ("triceps", "upper_arm", "forearm"),
    ("brachialis", "upper_arm", "forearm"),
    ("brachioradialis", "forearm", "hand"),
    ("deltoid", "clavicle", "upper_arm"),
    ("forearm_flexors", "forearm", "hand"),
    ("forearm_extensors", "forearm", "hand"),
    ("gluteus", "pelvis", "thigh"),
    ("quadriceps", "thigh", "shin"),
    ("hamstrings", "thigh", "shin"),
    ("gastrocnemius", "shin", "foot"),
)
"""(preset, origin segment, insertion segment) of the left side's muscles; a segment without a side (the pelvis)
is the bone map's own."""


def bone(bone_map: dict, segment: str, side: str = "L") -> str:
    """The member's bone of ``segment`` on ``side``."""
    value = bone_map.get(f"{segment}.{side}", bone_map.get(segment))
    if value is None:
        raise KeyError(f"the bone map has no {segment}")
    return value[0] if isinstance(value, (list, tuple)) else value


def open_member(bpy, member):
    """Open ``member``'s .blend file; return ``(armature object, skinned mesh objects)``."""
    bpy.ops.wm.open_mainfile(filepath=str(member.path))
    armature = next(o for o in bpy.data.objects if o.type == 'ARMATURE')
    meshes = [o for o in bpy.data.objects if o.type == 'MESH'
              and any(m.type == 'ARMATURE' and m.object == armature for m in o.modifiers)]
    return armature, meshes


def add_limb_muscles(bpy, armature, bone_map: dict) -> list:
    """Add ``LIMB_MUSCLES`` on the left and mirror each (22 muscles); return the muscles' names."""
    bpy.context.view_layer.objects.active = armature
    for preset, origin, insertion in LIMB_MUSCLES:
        result = bpy.ops.implicit_muscles.add_muscle(origin_bone=bone(bone_map, origin),
                                                     insertion_bone=bone(bone_map, insertion), preset=preset,
                                                     mirror=True)
        if result != {'FINISHED'}:
            raise RuntimeError(f"add_muscle {preset} on {origin} -> {insertion}: {result}")
    return [m.name for m in armature.implicit_muscles.muscles]
