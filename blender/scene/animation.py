"""Keyframes and drivers of muscles: rewrite their data paths when muscles move in the list or are removed
(docs/design.md#keys-and-presets), and read the keys for the frame cache.

Keys on a collection item use index paths (``implicit_muscles.muscles[3].activation``): when muscle 3 moves to
index 2 its F-curves and drivers must be renamed too, or the animation jumps to another muscle (fats alike).
``remap_indices`` does it in every action and slot that animates the armature (its active action and its NLA
strips' actions), in its drivers and in every driver variable of the file that reads a muscle. Works with the
legacy action API (Blender 4.2: ``action.fcurves``) and slotted actions (4.4+, the only API in 5.0: the channel
bags of the slot, in each layer and strip). ``fcurves`` gives the curves of the active action's slot and the
drivers; ``key_snapshot`` gives those keys as arrays for ``core.frame_cache.FrameCache.update_keys``.
"""
from __future__ import annotations

import re

import numpy as np
from bpy.utils import escape_identifier


def item_path(collection: str) -> re.Pattern:
    """The data path of an item of the rig's ``collection`` (``"muscles"``, ``"fats"``) and the rest of the path:
    ``implicit_muscles.fats[2].stiffness`` gives ``("2", ".stiffness")``."""
    return re.compile(rf"^implicit_muscles\.{collection}\[(\d+)\](.*)$")


PATH = item_path("muscles")


def fcurves(obj) -> list:
    """The F-curves animating ``obj`` (its action, this object's slot), then its drivers."""
    out = []
    ad = obj.animation_data
    if ad is None:
        return out
    action = ad.action
    if action is not None:
        slot = getattr(ad, "action_slot", None)
        if slot is not None:
            from bpy_extras import anim_utils
            bag = anim_utils.action_get_channelbag_for_slot(action, slot)
            if bag is not None:
                out.extend(bag.fcurves)
        elif hasattr(action, "fcurves"):
            out.extend(action.fcurves)
    out.extend(ad.drivers)
    return out


def _slot_by_handle(action, handle):
    """The slot of ``action`` with ``handle``, or None (always on Blender before 4.4, which has no slots)."""
    for slot in getattr(action, "slots", ()):
        if slot.handle == handle:
            return slot
    return None


def _strip_actions(strips):
    """``(action, slot)`` of each NLA strip in ``strips`` and of the strips inside meta strips."""
    for strip in strips:
        if strip.action is not None:
            yield strip.action, getattr(strip, "action_slot", None)
        yield from _strip_actions(strip.strips)


def actions_of(obj) -> list:
    """``(action, slot)`` pairs that animate ``obj``: its active action, the active action kept aside while an NLA
    strip is tweaked, and the actions of its NLA strips (meta strips and stashed takes included). The slot is None
    on Blender before 4.4 (no slots) and for an action assigned without one."""
    ad = obj.animation_data
    if ad is None:
        return []
    out = []
    if ad.action is not None:
        out.append((ad.action, getattr(ad, "action_slot", None)))
    kept = ad.action_tweak_storage
    if kept is not None:
        out.append((kept, _slot_by_handle(kept, getattr(ad, "action_slot_handle_tweak_storage", None))))
    for track in ad.nla_tracks:
        out.extend(_strip_actions(track.strips))
    return out


def curve_lists(action, slot) -> list:
    """The F-curve collections through which ``action`` animates with ``slot``: that slot's channel bags in every
    layer and strip (slotted actions, Blender 4.4+; none without a slot), or ``action.fcurves`` (Blender 4.2)."""
    if not hasattr(action, "layers"):
        return [action.fcurves]
    if slot is None:
        return []
    return [bag.fcurves for layer in action.layers for strip in layer.strips
            for bag in getattr(strip, "channelbags", ()) if bag.slot_handle == slot.handle]


def _item_curves(obj, collection: str) -> list:
    """``(owner ID, collection, F-curve, item index, rest of the path)`` of every F-curve and driver of ``obj``
    that animates an item of its ``collection``, each once: the keys in every action and slot that animates it
    (``actions_of``), then its drivers."""
    path = item_path(collection)
    lists = [(action, curves) for action, slot in actions_of(obj) for curves in curve_lists(action, slot)]
    if obj.animation_data is not None:
        lists.append((obj, obj.animation_data.drivers))
    out, seen = [], set()
    for owner, curves in lists:
        for fc in curves:
            m = path.match(fc.data_path)
            if m and fc.as_pointer() not in seen:
                seen.add(fc.as_pointer())
                out.append((owner, curves, fc, int(m.group(1)), m.group(2)))
    return out


def _data_with_drivers():
    """Every data-block of the file that can have drivers, embedded node trees (a material's) included."""
    import bpy
    for prop in bpy.data.bl_rna.properties:
        if prop.type != 'COLLECTION':
            continue
        for data in getattr(bpy.data, prop.identifier):
            if hasattr(data, "animation_data"):
                yield data
            tree = getattr(data, "node_tree", None)
            if tree is not None and tree.is_embedded_data:
                yield tree


def _item_readers(obj, collection: str) -> list:
    """``(owner ID, driver F-curve, driver target, item index, rest of the path)`` of every driver variable in the
    file that reads an item of ``obj``'s ``collection``."""
    path = item_path(collection)
    out = []
    for owner in _data_with_drivers():
        ad = owner.animation_data
        if ad is None:
            continue
        for fc in ad.drivers:
            for var in fc.driver.variables:
                for target in var.targets:
                    m = path.match(target.data_path) if target.id == obj else None
                    if m:
                        out.append((owner, fc, target, int(m.group(1)), m.group(2)))
    return out


def _library_problem(owners) -> str:
    """A sentence naming the first of ``owners`` that is linked or a library override (a change made here would not
    be kept), or ``""``."""
    for owner in owners:
        if owner.library is not None or owner.override_library is not None:
            return (f"The muscles' keys or drivers in '{owner.name}' come from a library and cannot be changed "
                    f"here: make it local (Object > Relations > Make Local, or in the Outliner), then try again.")
    return ""


def remap_indices(obj, mapping: dict, collection: str = "muscles") -> list:
    """Give the keys and drivers of item ``old`` of ``obj``'s ``collection`` (``"muscles"``, ``"fats"``) the index
    ``mapping[old]`` (``None``: the item is being removed), wherever they are: its F-curves in every action and slot
    that animates ``obj`` (``actions_of``) and its drivers are renamed, or deleted for a removed item, and every
    driver variable in the file that reads it is pointed at its new index (at a removed item's name, so it reads
    nothing and its driver shows an error). Call it before the list changes. Raises ValueError, having changed
    nothing, when one of them comes from a library. Returns the drivers left reading a removed item
    (``"Gauge: location[2]"``). Renames go through a temporary name so swaps do not collide."""
    curves = [c for c in _item_curves(obj, collection) if c[3] in mapping]
    deleted = {c[2].as_pointer() for c in curves if mapping[c[3]] is None}
    readers = [r for r in _item_readers(obj, collection) if r[3] in mapping and r[1].as_pointer() not in deleted]
    problem = _library_problem([c[0] for c in curves] + [r[0] for r in readers])
    if problem:
        raise ValueError(problem)
    items = getattr(obj.implicit_muscles, collection)
    orphans = []
    for owner, fc, target, old, rest in readers:
        if mapping[old] is None:
            name = escape_identifier(items[old].name)
            target.data_path = f'implicit_muscles.{collection}["{name}"]{rest}'
            orphan = f"{owner.name}: {fc.data_path}[{fc.array_index}]"
            if orphan not in orphans:
                orphans.append(orphan)
        else:
            target.data_path = f"implicit_muscles.{collection}[{mapping[old]}]{rest}"
    for _, _, fc, old, rest in curves:
        if mapping[old] is not None:
            fc.data_path = f"implicit_muscles.__moving__[{mapping[old]}]{rest}"
    for _, curve_list, fc, old, rest in curves:
        if mapping[old] is None:
            curve_list.remove(fc)
        else:
            fc.data_path = f"implicit_muscles.{collection}[{mapping[old]}]{rest}"
    return orphans


def remap_muscle_indices(obj, mapping: dict) -> list:
    """:func:`remap_indices` of the rig's muscles."""
    return remap_indices(obj, mapping, "muscles")


def removal_mapping(index: int, count: int) -> dict:
    """The ``remap_indices`` mapping that removes item ``index`` of ``count``: it goes, the later ones move down."""
    return {index: None, **{k: k - 1 for k in range(index + 1, count)}}


KEY_FIELDS = ("co", "handle_left", "handle_right")
_INTERPOLATION = {"CONSTANT": 0.0, "LINEAR": 1.0, "BEZIER": 2.0}


def key_snapshot(obj) -> dict:
    """``{(data path, index): (keys, 7) float64}`` of ``obj``'s F-curves (drivers excluded), one row per key sorted
    by frame: frame, value, both handles, and the interpolation (0 constant, 1 linear, 2 Bezier, -1 any other)."""
    out = {}
    drivers = {d.as_pointer() for d in obj.animation_data.drivers} if obj.animation_data else set()
    for fc in fcurves(obj):
        if fc.as_pointer() in drivers:
            continue
        points = fc.keyframe_points
        cols = []
        for name in KEY_FIELDS:
            buf = np.empty(2 * len(points), dtype=np.float64)
            points.foreach_get(name, buf)
            cols.append(buf.reshape(-1, 2))
        modes = np.array([_INTERPOLATION.get(k.interpolation, -1.0) for k in points], dtype=np.float64)
        out[(fc.data_path, fc.array_index)] = np.column_stack(cols + [modes])
    return out


def copy_item_keys(obj, source: int, target: int, negate=(), collection: str = "muscles") -> int:
    """Give item ``target`` of ``obj``'s ``collection`` the keys of item ``source`` in every action and slot that
    animates ``obj`` (``actions_of``; drivers are left alone): ``target``'s own F-curves of those properties are
    replaced, and the values of the properties named in ``negate`` (``joint_angle_rest``) change sign. Raises
    ValueError, having changed nothing, when an action comes from a library. Returns how many F-curves it wrote."""
    path = item_path(collection)
    lists, seen = [], set()
    for action, slot in actions_of(obj):
        pair = (action.as_pointer(), getattr(slot, "handle", None))
        if pair not in seen:  # an action on the active slot and on an NLA strip too
            seen.add(pair)
            lists.extend(curve_lists(action, slot))
    owners = [action for action, slot in actions_of(obj) if curve_lists(action, slot)]
    problem = _library_problem(owners)
    if problem:
        raise ValueError(problem)
    written = 0
    for curves in lists:
        sources, targets = [], []
        for fc in curves:
            m = path.match(fc.data_path)
            if m and int(m.group(1)) == source:
                sources.append(fc)
            elif m and int(m.group(1)) == target:
                targets.append(fc)
        if not sources:
            continue
        keyed = {(fc.data_path.split("]", 1)[1], fc.array_index) for fc in sources}
        for fc in targets:
            if (fc.data_path.split("]", 1)[1], fc.array_index) in keyed:
                curves.remove(fc)
        for fc in sources:
            rest = fc.data_path.split("]", 1)[1]
            sign = -1.0 if rest.lstrip(".") in negate else 1.0
            new = curves.new(f"implicit_muscles.{collection}[{target}]{rest}", index=fc.array_index)
            new.extrapolation = fc.extrapolation
            new.keyframe_points.add(len(fc.keyframe_points))
            for k, key in zip(new.keyframe_points, fc.keyframe_points):
                k.co = (key.co.x, sign * key.co.y)
                k.handle_left = (key.handle_left.x, sign * key.handle_left.y)
                k.handle_right = (key.handle_right.x, sign * key.handle_right.y)
                k.interpolation, k.easing = key.interpolation, key.easing
                k.handle_left_type, k.handle_right_type = key.handle_left_type, key.handle_right_type
            new.update()
            written += 1
    return written
