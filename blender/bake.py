"""Bake bound meshes to point caches played by Blender's Mesh Cache modifier (DESIGN.md §3, paper §7.2).

A bake plays the frames in order through the live evaluation (``blender/playback.py``: the muscles are simulated
from the armature's start frame, so a bake of frames 51-100 in a fresh process simulates 1-50 first) and writes
each mesh's positions (mesh local space) to ``//implicit_muscles_cache/<mesh>.pc2`` next to the .blend file
(``core/io/pc2.py``). Then a Mesh Cache modifier "Implicit Skinning Cache" (PC2, frame mode, its ``frame_start`` the
first baked frame, since the modifier ignores the file's own start) takes the place of the live evaluation: the
Armature and the live Geometry Nodes modifiers are switched off, so the file renders the same on a machine without
this add-on. ``clear`` switches back to the live evaluation and keeps the file.

Farms bake a long range as *parts*: ``bake_steps(..., part=True)`` writes ``<mesh>.<first>-<last>.pc2`` and sets
nothing up; ``merge`` joins the parts of a range into ``<mesh>.pc2`` (byte-identical to a single bake) and sets
the Mesh Cache up. ``bake_steps`` is a generator, one frame per step: the operator steps it from a timer with a
progress bar and ESC (``operators/bake.py``), background scripts and the command line drain it.
"""
from __future__ import annotations

import re
from pathlib import Path

import bpy

from . import modifiers, runtime

CACHE_FOLDER = "implicit_muscles_cache"
"""Folder next to the .blend file that holds the bakes."""


def cache_file(mesh_obj, first=None, last=None) -> str:
    """Blender-relative path (``//...``) of the mesh's bake, or of one part of it."""
    stem = bpy.path.clean_name(mesh_obj.name)
    name = f"{stem}.pc2" if first is None else f"{stem}.{first:06d}-{last:06d}.pc2"
    return f"//{CACHE_FOLDER}/{name}"


def _absolute(path: str) -> Path:
    return Path(bpy.path.abspath(path))


def bake_targets(scene, meshes=None) -> list:
    """The meshes to bake: ``meshes`` or every mesh of the scene whose Implicit Skinning is on and bound."""
    found = [obj for obj in (meshes if meshes is not None else scene.objects)
             if obj.type == 'MESH' and obj.implicit_skin.enabled and obj.implicit_skin.bound]
    if not found:
        raise ValueError("No mesh to bake: bind a mesh with Implicit Skinning first (Bind Skin), and keep it "
                         "enabled.")
    return found


def check(scene, frame_start: int, frame_end: int) -> None:
    """``ValueError`` with a plain sentence if a bake of this range cannot start."""
    if not bpy.data.filepath:
        raise ValueError("Save the .blend file first: the bake is written next to it, in "
                         f"//{CACHE_FOLDER}/, so renders and farms find it by a relative path.")
    if frame_end < frame_start:
        raise ValueError(f"The bake's last frame ({frame_end}) comes before its first ({frame_start}).")


def bake_steps(scene, frame_start: int, frame_end: int, meshes=None, part: bool = False):
    """Bake frames ``frame_start..frame_end`` of ``meshes`` (default: ``bake_targets``); yields ``(done, total)``
    after each frame. Closing the generator early (ESC) writes nothing and leaves an earlier bake in place.
    Returns (as ``StopIteration.value``) ``{mesh name: file}``."""
    from ..core.io.pc2 import PC2Writer

    check(scene, frame_start, frame_end)
    targets = bake_targets(scene, meshes)
    for obj in targets:
        reason = runtime.stale_reason(obj)
        if reason:
            raise ValueError(f"{obj.name}: {reason} Bind it again (Bind Skin) before baking.")
    was_baked = {obj.name_full: obj.implicit_skin.baked for obj in targets}
    for obj in targets:
        obj.implicit_skin.baked = False  # evaluate live while baking
        modifiers.set_active(obj, True)
    frame_before = scene.frame_current
    total = frame_end - frame_start + 1
    writers = {}
    try:
        for obj in targets:
            path = cache_file(obj, frame_start, frame_end) if part else cache_file(obj)
            writers[obj.name_full] = (obj, path, PC2Writer(_absolute(path), len(obj.data.vertices), frame_start,
                                                          total))
        for done, frame in enumerate(range(frame_start, frame_end + 1), start=1):
            scene.frame_set(frame)
            for obj, _, writer in writers.values():
                b = runtime.bound(obj)
                if b is None or b.last_frame != frame:
                    why = b.last_error if b is not None and b.last_error else "it could not be bound"
                    raise ValueError(f"Frame {frame}: {obj.name} could not be evaluated ({why}); nothing was "
                                     f"baked.")
                writer.write(b.last_local)
            yield done, total
        files = {name: (obj, path, writer.close()) for name, (obj, path, writer) in writers.items()}
    except BaseException:
        for _, _, writer in writers.values():
            writer.abort()
        for obj in targets:
            obj.implicit_skin.baked = was_baked[obj.name_full]
            modifiers.set_active(obj, obj.implicit_skin.enabled)
        raise
    finally:
        if scene.frame_current != frame_before:
            scene.frame_set(frame_before)
    if not part:
        for obj, path, _ in files.values():
            use_cache(obj, path, frame_start, frame_end)
    return {name: path for name, (_, path, _) in files.items()}


def bake(scene, frame_start: int, frame_end: int, meshes=None, part: bool = False) -> dict:
    """Run :func:`bake_steps` to the end (background mode, scripts, the command line)."""
    steps = bake_steps(scene, frame_start, frame_end, meshes, part)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


PART = re.compile(r"^(?P<stem>.+)\.(?P<first>\d{6})-(?P<last>\d{6})\.pc2$")


def merge(scene, frame_start: int, frame_end: int, meshes=None, keep_parts: bool = False) -> dict:
    """Join each mesh's part files that lie within ``frame_start..frame_end`` into its bake and set the Mesh Cache
    up (``core.io.pc2.merge`` checks, before writing, that they cover exactly the range without gaps); the parts are removed unless
    ``keep_parts``. Returns ``{mesh name: file}``."""
    from ..core.io import pc2

    check(scene, frame_start, frame_end)
    out = {}
    for obj in bake_targets(scene, meshes):
        folder = _absolute(cache_file(obj)).parent
        stem = bpy.path.clean_name(obj.name)
        parts = []
        for p in sorted(folder.glob(f"{stem}.*.pc2")) if folder.is_dir() else []:
            m = PART.match(p.name)
            if m and m["stem"] == stem and frame_start <= int(m["first"]) and int(m["last"]) <= frame_end:
                parts.append(p)
        if not parts:
            raise ValueError(f"No bake parts of {obj.name} for frames {frame_start}-{frame_end} in "
                             f"//{CACHE_FOLDER}/.")
        try:
            pc2.merge(parts, _absolute(cache_file(obj)), frame_start, frame_end)
        except ValueError as ex:
            raise ValueError(f"{obj.name}: {ex}") from None
        if not keep_parts:
            for p in parts:
                p.unlink()
        use_cache(obj, cache_file(obj), frame_start, frame_end)
        out[obj.name_full] = cache_file(obj)
    return out


def use_cache(mesh_obj, path: str, frame_start: int, frame_end: int) -> None:
    """Set up the Mesh Cache modifier for ``path`` where the live evaluation was, and switch to it."""
    mod = mesh_obj.modifiers.get(modifiers.CACHE_MODIFIER)
    if mod is None:
        mod = mesh_obj.modifiers.new(modifiers.CACHE_MODIFIER, 'MESH_CACHE')
        live = next((k for k, m in enumerate(mesh_obj.modifiers) if m.name == modifiers.MODIFIER), None)
        if live is not None:
            with bpy.context.temp_override(object=mesh_obj):
                bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=live + 1)
    mod.cache_format = 'PC2'
    mod.filepath = path
    mod.play_mode = 'SCENE'
    mod.time_mode = 'FRAME'
    mod.frame_start = float(frame_start)  # the modifier ignores the file's start frame
    mod.frame_scale = 1.0
    # shape keys and modifiers before it ride on the baked skin, turned by Blender with the mesh around them
    mod.deform_mode = 'INTEGRATE' if modifiers.has_offsets(mesh_obj) else 'OVERWRITE'
    mod.interpolation = 'LINEAR'  # exact on whole frames; in-between frames (motion blur) are interpolated
    mod.forward_axis, mod.up_axis = 'POS_Y', 'POS_Z'  # the file holds Blender's own axes
    skin = mesh_obj.implicit_skin
    skin.bake_file, skin.bake_start, skin.bake_end = path, frame_start, frame_end
    skin.baked = True
    modifiers.set_active(mesh_obj, skin.enabled)


def clear(mesh_obj) -> None:
    """Back to the live evaluation: remove the Mesh Cache modifier (the file on disk is kept)."""
    mod = mesh_obj.modifiers.get(modifiers.CACHE_MODIFIER)
    if mod is not None:
        mesh_obj.modifiers.remove(mod)
    skin = mesh_obj.implicit_skin
    skin.baked = False
    modifiers.set_active(mesh_obj, skin.enabled and skin.bound)
