"""Copies of muscles: a unique name in the list, a duplicate (``add_duplicate``) and the other side's copy
(``add_mirrored``: its bones, points, twist, name and joint mirrored; ``mirror_muscle`` adds it or, when the other
side has it already, updates it with the keys).

``muscles.add()`` may move every item of the list to new memory, so a muscle read before it is stale after it:
these functions read a muscle into plain values (``muscle_values``) and address muscles by index, never by a
reference kept across ``add()``. Everything that can fail is checked before anything is added.
"""
from __future__ import annotations

import numpy as np
from mathutils import Vector

from ..scene import animation, names, rig, units
from ..scene.joint import AXES


def unique_name(collection, base):
    """``base``, or ``base.001``, ``base.002``... : the first name no item of ``collection`` has."""
    taken = {m.name for m in collection}
    if base not in taken:
        return base
    k = 1
    while f"{base}.{k:03d}" in taken:
        k += 1
    return f"{base}.{k:03d}"


def muscle_values(muscle) -> dict:
    """Every setting of ``muscle``, its name included, as plain Python values (vectors as tuples): a copy that stays
    valid when the list grows."""
    out = {}
    for prop in muscle.bl_rna.properties:
        if prop.identifier == "rna_type" or prop.is_readonly or prop.type in {'POINTER', 'COLLECTION'}:
            continue
        value = getattr(muscle, prop.identifier)
        out[prop.identifier] = tuple(value) if getattr(prop, "is_array", False) else value
    return out


def append_muscle(armature, values: dict) -> int:
    """Add a muscle with ``values`` (``muscle_values``) at the end of the armature's list; returns its index."""
    muscles = armature.implicit_muscles.muscles
    new = muscles.add()
    for key, value in values.items():
        setattr(new, key, value)
    return len(muscles) - 1


def add_duplicate(armature, index: int) -> int:
    """Add a copy of muscle ``index`` (every setting, not its keys) named like it (``biceps.001``); returns the
    copy's index."""
    muscles = armature.implicit_muscles.muscles
    values = muscle_values(muscles[index])
    values["name"] = unique_name(muscles, values["name"])
    return append_muscle(armature, values)


def mirror_point(armature, from_bone, to_bone, point):
    """A bone-frame point of ``from_bone`` mirrored across the armature's X = 0 plane into ``to_bone``'s frame
    (world units, as stored: ``blender/scene/units.py``)."""
    bones = armature.data.bones
    s = units.world_scale(armature)
    local = units.bone_point(bones[from_bone].matrix_local, point, s)
    local.x = -local.x
    return units.point_in_bone(bones[to_bone].matrix_local, local, s)


CENTRE_SHARE = 0.003
"""A bone with no side in its name lies on the mirror plane, and is its own mirror, when its head and tail are
within this share of the rig's size (``rig_size``) of X = 0: 5 mm on a 1.7 m character, whatever its units. Real
rigs are not exactly centred (a Mixamo ``Hips`` 1.1 mm off), and a spine bone's length says nothing of that."""


def rig_size(armature) -> float:
    """The size of ``armature``'s skeleton at rest, armature units: the diagonal of its bones' heads' and tails'
    bounding box."""
    bones = armature.data.bones
    if not len(bones):
        return 1.0
    ends = np.array([b.head_local[:] for b in bones] + [b.tail_local[:] for b in bones])
    return max(float(np.linalg.norm(ends.max(axis=0) - ends.min(axis=0))), 1e-9)


def mirrored_bone(armature, name) -> tuple[str | None, str]:
    """The other side's bone of ``name`` (``names.flip_side``), or else the bone itself when it lies on the X = 0
    plane (a spine or chest bone, ``CENTRE_SHARE``): ``(bone, "")``, or ``(None, why not)``."""
    bones = armature.data.bones
    other = names.flip_side(name)
    if other is not None and other in bones:
        return other, ""
    bone = bones[name]
    reach = CENTRE_SHARE * rig_size(armature)
    if abs(bone.head_local.x) <= reach and abs(bone.tail_local.x) <= reach:
        return name, ""
    if other is not None:
        return None, f"{armature.name} has no bone '{other}'"
    s = units.world_scale(armature)
    return None, (f"its name has no side (.L/.R, _l/_r, Left/Right...) and it lies "
                  f"{max(abs(bone.head_local.x), abs(bone.tail_local.x)) * s * 1000:.3g} mm off the middle (X = 0), "
                  f"more than {reach * s * 1000:.2g} mm")


def mirrored_values(armature, index: int, update: bool = False) -> dict | str:
    """The settings of muscle ``index``'s mirrored copy (bones mirrored by name, a bone on the middle kept, points
    across X = 0, the twist reversed, the name's side flipped), or a sentence saying why there is none: a bone
    without a mirror, a name without a side on bones without one, or (unless ``update``: the copy's settings are
    for the muscle of that name) a mirrored name the list has already. ``values["joint_flipped"]`` says whether the
    joint angles changed sign (``mirrored_joint``)."""
    muscles = armature.implicit_muscles.muscles
    muscle = muscles[index]
    problem = rig.muscle_problem(armature, muscle)
    if problem:
        return problem
    values = muscle_values(muscle)
    for key in rig.BONE_FIELDS:
        other, why = mirrored_bone(armature, values[key])
        if other is None:
            return f"{muscle.name}: no mirrored bone for '{values[key]}': {why}."
        values[key] = other
    name = names.mirrored_name(muscle.name, [values[key] for key in rig.BONE_FIELDS])
    if name is None:
        return (f"{muscle.name}: neither its name nor its bones have a side, so its mirror would have no name of "
                f"its own; rename it with a side (like {muscle.name}.L) and mirror it again.")
    if name in muscles and not update:
        return f"{muscle.name}: its mirror '{name}' exists already; remove or rename it to mirror {muscle.name} again."
    values["name"] = name
    values["origin_point"] = tuple(mirror_point(armature, muscle.origin_bone, values["origin_bone"],
                                                muscle.origin_point))
    values["insertion_point"] = tuple(mirror_point(armature, muscle.insertion_bone, values["insertion_bone"],
                                                   muscle.insertion_point))
    values["twist"] = -muscle.twist
    problem = mirrored_joint(armature, values)
    return problem or values


def mirrored_joint(armature, values: dict) -> str:
    """Give a mirrored copy's ``values`` (``mirrored_values``) the other side's joint bone and angles of the
    same sense: a turn mirrored across X = 0 turns about the axis ``(x, -y, -z)`` by the same angle, so the angles
    change sign where the other bone's local axis points the other way (the bone by ``mirrored_bone``); returns
    ``""`` or a sentence."""
    name = values.get("joint_bone", "")
    if not name or name not in armature.data.bones:
        return ""
    other, why = mirrored_bone(armature, name)
    if other is None:
        return f"{values['name']}: no mirrored bone for its joint bone '{name}': {why}."
    bones = armature.data.bones
    k = AXES.index(values["joint_axis"])
    a = np.array(bones[name].matrix_local)[:3, k]
    b = np.array(bones[other].matrix_local)[:3, k]
    values["joint_bone"] = other
    values["joint_flipped"] = float(b @ (a * (1.0, -1.0, -1.0))) < 0.0
    if values["joint_flipped"]:
        values["joint_angle_rest"] = -values["joint_angle_rest"]
        values["joint_angle_active"] = -values["joint_angle_active"]
    return ""


def add_mirrored(armature, index: int) -> int | str:
    """Add the other side's copy of muscle ``index`` (``mirrored_values``); returns its index, or a sentence saying
    why there is none (then nothing was added)."""
    values = mirrored_values(armature, index)
    if isinstance(values, str):
        return values
    values.pop("joint_flipped", None)
    return append_muscle(armature, values)


MIRRORED_KEYS_NEGATED = ("joint_angle_rest", "joint_angle_active")
"""The animated settings whose keys change sign on the other side when the joint's angles do."""


def mirror_muscle(armature, index: int) -> tuple[int, bool] | str:
    """Muscle ``index``'s mirror, as rigify's *Copy Mirror Parameters* does: added if the list has no muscle of the
    mirrored name, else that muscle updated (every setting mirrored, its handles kept) with its keys replaced by
    ``index``'s mirrored keys in every action (``animation.copy_item_keys``). Returns ``(mirror's index,
    updated)``, or a sentence saying why there is none (then nothing changed)."""
    muscles = armature.implicit_muscles.muscles
    values = mirrored_values(armature, index, update=True)
    if isinstance(values, str):
        return values
    flipped = values.pop("joint_flipped", False)
    target = muscles.find(values["name"])
    if target < 0:
        new = append_muscle(armature, values)
        animation.copy_item_keys(armature, index, new, MIRRORED_KEYS_NEGATED if flipped else ())
        return new, False
    if target == index:
        return f"{muscles[index].name}: it is its own mirror (its bones lie on the middle and its name has no side)."
    animation.copy_item_keys(armature, index, target, MIRRORED_KEYS_NEGATED if flipped else ())  # may refuse first
    mirror = muscles[target]
    for key, value in values.items():
        if key != "name":
            setattr(mirror, key, value)
    return target, True
