"""Copies of muscles: a unique name in the list, a copy of every setting, the other side's copy (``add_mirrored``)."""
from __future__ import annotations

from mathutils import Vector

from . import rig


def unique_name(collection, base):
    """``base``, or ``base.001``, ``base.002``... : the first name no item of ``collection`` has."""
    names = {m.name for m in collection}
    if base not in names:
        return base
    k = 1
    while f"{base}.{k:03d}" in names:
        k += 1
    return f"{base}.{k:03d}"


def copy_muscle(src, dst):
    """Set every property of muscle ``dst`` (but its name) from ``src``."""
    for key in src.bl_rna.properties.keys():
        if key in {"rna_type", "name"}:
            continue
        setattr(dst, key, getattr(src, key))


def mirror_point(armature, from_bone, to_bone, point):
    """A bone-frame point of ``from_bone`` mirrored across the armature's X = 0 plane into ``to_bone``'s frame."""
    bones = armature.data.bones
    world = bones[from_bone].matrix_local @ Vector(point)
    world.x = -world.x
    return bones[to_bone].matrix_local.inverted() @ world


CENTRE_TOLERANCE = 0.01
"""A bone lies on the mirror plane when its head and tail are within this fraction of its length of X = 0."""


def mirrored_bone(armature, name):
    """The other side's bone of ``name``: by name (``.L``/``.R``, ``_l``/``_r``, Left/Right), or the bone itself
    when it has no side and lies on the X = 0 plane (a spine or chest bone); None if neither."""
    other = rig.mirror_name(name)
    if other is not None:
        return other if other in armature.data.bones else None
    bone = armature.data.bones.get(name)
    if bone is None:
        return None
    reach = CENTRE_TOLERANCE * max(bone.length, 1e-6)
    return name if abs(bone.head_local.x) <= reach and abs(bone.tail_local.x) <= reach else None


def add_mirrored(armature, muscle):
    """Add the other side's copy of ``muscle`` (bones mirrored by name, a bone on the middle kept, points across
    X = 0); returns it or a sentence saying why not."""
    names = {}
    for key in ("origin_bone", "insertion_bone", "skin_bone"):
        other = mirrored_bone(armature, getattr(muscle, key))
        if other is None:
            return f"{muscle.name}: no mirrored bone for '{getattr(muscle, key)}' (names ending .L/.R, _l/_r or " \
                   f"containing Left/Right are mirrored; a bone on the middle, X = 0, is its own mirror)."
        names[key] = other

    muscles = armature.implicit_muscles.muscles
    new = muscles.add()
    copy_muscle(muscle, new)
    new.name = unique_name(muscles, rig.mirror_name(muscle.name) or f"{muscle.name}.mirror")
    for key, other in names.items():
        setattr(new, key, other)
    new.origin_point = mirror_point(armature, muscle.origin_bone, new.origin_bone, muscle.origin_point)
    new.insertion_point = mirror_point(armature, muscle.insertion_bone, new.insertion_bone, muscle.insertion_point)
    new.twist = -muscle.twist
    return new
