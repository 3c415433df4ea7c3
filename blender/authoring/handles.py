"""Handles: two empties per muscle that move its origin and insertion with the mouse.

``add_handles`` makes a sphere empty at the muscle's origin and one at its insertion, parented to their bones (so
they follow the pose), selected, the origin one active, ready for G. The muscle points at them
(``origin_handle``, ``insertion_handle``), so they stay its own when the muscle is renamed (their names follow:
``<muscle>.origin``), moved in the list or mirrored (a copy gets no handles).

Moving a handle writes the point back into its muscle, in its bone's rest frame (``sync``): a timer checks the
handles of the armatures that have some, five times a second (``WATCH_INTERVAL``), and writes only the points whose
handle moved; before anything reads the points (bind, *Clear Handles*, saving the file) ``sync`` runs too. No
depsgraph handler is involved, and the check costs nothing per edit or frame. Empties rather than gizmos: a gizmo
group only exists in a drawn 3D View, so nothing of it could be checked headless, while empties, their parenting and
the write-back run the same in background mode and in the tests.
"""
from __future__ import annotations

import bpy
from bpy.app.handlers import persistent
from mathutils import Matrix, Vector

from ..scene import rig as rig_utils, units

HANDLE_KEY = "implicit_muscles_handle"
"""Custom property on a handle empty: ``"origin"`` or ``"insertion"``. Files saved by earlier versions hold
``"<muscle name>|origin"``; ``adopt_legacy`` links those to their muscles."""
ENDS = ("origin", "insertion")
WATCH_INTERVAL = 0.2
"""Seconds between two checks of the handles (``sync``) while some exist."""
TOLERANCE = 1e-7
"""[world units] A handle farther than this from its muscle's point has moved."""

_watched: set = set()  # full names of armatures whose handles the timer checks


def handles_of(muscle) -> list:
    """``[(end, empty)]`` of the muscle's handles that exist."""
    out = []
    for end in ENDS:
        empty = getattr(muscle, f"{end}_handle")
        if empty is not None and empty.name in bpy.data.objects:
            out.append((end, empty))
    return out


def add_handles(armature, index: int, select: bool = True) -> list:
    """Two empties at muscle ``index``'s origin and insertion (module docstring), replacing any it had; selected
    (the origin active) if ``select``. Returns them."""
    remove_handles(armature, [index])
    out = []
    for end in ENDS:
        muscle = armature.implicit_muscles.muscles[index]
        bone_name, point = getattr(muscle, f"{end}_bone"), Vector(getattr(muscle, f"{end}_point"))
        empty = bpy.data.objects.new(f"{muscle.name}.{end}", None)
        empty.empty_display_type = 'SPHERE'
        empty.empty_display_size = max(muscle.width * 0.5, 0.005)
        empty[HANDLE_KEY] = end
        for collection in armature.users_collection:
            collection.objects.link(empty)
        empty.parent = armature
        empty.parent_type = 'BONE'
        empty.parent_bone = bone_name
        world = armature.matrix_world @ units.bone_point(rig_utils.bone_frame(armature, bone_name, posed=True),
                                                         point, units.world_scale(armature))
        empty.matrix_world = Matrix.Translation(world)
        setattr(armature.implicit_muscles.muscles[index], f"{end}_handle", empty)
        out.append(empty)
    if select:
        view_layer = bpy.context.view_layer
        for obj in view_layer.objects:
            obj.select_set(False)
        for empty in out:
            if empty.name in view_layer.objects:
                empty.select_set(True)
        if out[0].name in view_layer.objects:
            view_layer.objects.active = out[0]
    watch(armature)
    return out


def remove_handles(armature, indices=None) -> int:
    """Remove the handles of the armature's muscles ``indices`` (default: all, and any handle of the armature no
    muscle points at); returns how many empties."""
    muscles = armature.implicit_muscles.muscles
    doomed = []
    for k in (range(len(muscles)) if indices is None else indices):
        for end, empty in handles_of(muscles[k]):
            doomed.append(empty)
            setattr(muscles[k], f"{end}_handle", None)
    if indices is None:
        doomed += [obj for obj in bpy.data.objects
                   if obj.get(HANDLE_KEY) is not None and obj.parent == armature and obj not in doomed]
    for empty in doomed:
        bpy.data.objects.remove(empty)
    return len(doomed)


def sync(armature) -> int:
    """Write the points of the armature's moved handles back into their muscles (bone rest frame) and name each
    handle after its muscle; returns how many points changed."""
    written = 0
    to_armature = armature.matrix_world.inverted()
    scale = units.world_scale(armature)
    for muscle in armature.implicit_muscles.muscles:
        for end, empty in handles_of(muscle):
            name = f"{muscle.name}.{end}"
            if not empty.name.startswith(name):
                empty.name = name
            bone = getattr(muscle, f"{end}_bone")
            if bone not in armature.data.bones:
                continue
            local = units.point_in_bone(rig_utils.bone_frame(armature, bone, posed=True),
                                        to_armature @ empty.matrix_world.translation, scale)
            if (Vector(getattr(muscle, f"{end}_point")) - local).length > TOLERANCE:
                setattr(muscle, f"{end}_point", local)
                written += 1
    return written


def has_handles(armature) -> bool:
    return any(handles_of(m) for m in armature.implicit_muscles.muscles)


def sync_all() -> int:
    """:func:`sync` every armature of the file that has handles."""
    return sum(sync(obj) for obj in bpy.data.objects if obj.type == 'ARMATURE' and has_handles(obj))


def adopt_legacy() -> int:
    """Link handle empties saved by earlier versions (``"<muscle name>|<end>"``) to their muscles; returns how
    many."""
    adopted = 0
    for empty in bpy.data.objects:
        key = empty.get(HANDLE_KEY)
        if not isinstance(key, str) or "|" not in key or empty.parent is None or empty.parent.type != 'ARMATURE':
            continue
        name, end = key.rsplit("|", 1)
        muscle = empty.parent.implicit_muscles.muscles.get(name)
        if muscle is None or end not in ENDS:
            continue
        setattr(muscle, f"{end}_handle", empty)
        empty[HANDLE_KEY] = end
        watch(empty.parent)
        adopted += 1
    return adopted


def _check_handles() -> float | None:
    """The timer (module docstring): sync the watched armatures; stops when none has handles left."""
    for name in list(_watched):
        armature = bpy.data.objects.get(name)
        if armature is None or armature.type != 'ARMATURE' or not has_handles(armature):
            _watched.discard(name)
            continue
        try:
            sync(armature)
        except Exception as ex:  # noqa: BLE001 - a timer must never raise; the handle keeps its place
            print(f"Implicit Muscles: could not read {name}'s muscle handles: {ex}")
            _watched.discard(name)
    return WATCH_INTERVAL if _watched else None


def watch(armature) -> None:
    """Have the timer check ``armature``'s handles (started if it was not running)."""
    _watched.add(armature.name_full)
    if not bpy.app.timers.is_registered(_check_handles):
        bpy.app.timers.register(_check_handles, first_interval=WATCH_INTERVAL)


def watching() -> set:
    """Full names of the armatures whose handles the timer checks."""
    return set(_watched)


@persistent
def _on_save_pre(*_):
    sync_all()


@persistent
def _on_load_post(*_):
    _watched.clear()
    adopt_legacy()
    for obj in bpy.data.objects:
        if obj.type == 'ARMATURE' and has_handles(obj):
            watch(obj)


_HANDLERS = (("save_pre", _on_save_pre), ("load_post", _on_load_post))


def register():
    for name, fn in _HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)


def unregister():
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while fn in handlers:
            handlers.remove(fn)
    if bpy.app.timers.is_registered(_check_handles):
        bpy.app.timers.unregister(_check_handles)
    _watched.clear()
