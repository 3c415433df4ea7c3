"""Keyframes and drivers of muscles: rewrite their data paths when muscles move in the list (DESIGN.md §3).

Keys on a collection item use index paths (``implicit_muscles.muscles[3].activation``): when muscle 3 moves to
index 2 its F-curves and drivers must be renamed too, or the animation jumps to another muscle. Works with the
legacy action API (Blender 4.2: ``action.fcurves``) and slotted actions (4.4+, the only API in 5.0: the channel bag
of the object's action slot, ``bpy_extras.anim_utils.action_get_channelbag_for_slot``). ``key_snapshot`` gives
the keys as arrays for ``core.frame_cache.FrameCache.update_keys``.
"""
from __future__ import annotations

import re

import numpy as np

PATH = re.compile(r"^implicit_muscles\.muscles\[(\d+)\](.*)$")


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


def remap_muscle_indices(obj, mapping: dict) -> int:
    """Rename every F-curve and driver of muscle ``old`` to ``mapping[old]`` (``None``: delete its curves).
    Returns how many curves changed. Renames go through a temporary name so swaps do not collide."""
    changed = []
    for fc in fcurves(obj):
        m = PATH.match(fc.data_path)
        if m and int(m.group(1)) in mapping:
            changed.append((fc, mapping[int(m.group(1))], m.group(2)))
    for fc, new, rest in changed:
        if new is None:
            continue
        fc.data_path = f"implicit_muscles.__moving__[{new}]{rest}"
    for fc, new, rest in changed:
        if new is None:
            _remove(obj, fc)
        else:
            fc.data_path = f"implicit_muscles.muscles[{new}]{rest}"
    return len(changed)


def _remove(obj, fc):
    ad = obj.animation_data
    if fc in list(ad.drivers):
        ad.drivers.remove(fc)
        return
    action = ad.action
    slot = getattr(ad, "action_slot", None)
    if slot is not None:
        from bpy_extras import anim_utils
        bag = anim_utils.action_get_channelbag_for_slot(action, slot)
        bag.fcurves.remove(fc)
    else:
        action.fcurves.remove(fc)


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
