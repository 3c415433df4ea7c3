"""Bake bound meshes to point caches played by Blender's Mesh Cache modifier (docs/design.md#writing-the-result, paper
§7.2).

A bake plays the frames in order through the live evaluation (``blender/session/playback.py``: the muscles are simulated
from the armature's start frame, so a bake of frames 51-100 in a fresh process simulates 1-50 first), always at
render quality (``blender/session/quality.py``), and writes
each mesh's positions (mesh local space) to a ``.pc2`` file (``core/io/pc2.py``). Then a Mesh Cache modifier
"Implicit Skinning Cache" (PC2, frame mode, its ``frame_start`` the first baked frame, since the modifier ignores
the file's own start) takes the place of the live evaluation: the Armature and the live Geometry Nodes modifiers
are switched off, so the file renders the same on a machine without this add-on. ``clear`` switches back to the
live evaluation and keeps the file.

Where a bake goes: ``//implicit_muscles_cache/<blend name>/<mesh stem>.pc2`` next to the .blend file, the folder
named after the .blend as Blender's own ``//blendcache_<file>/`` is (``shot_010.blend`` and ``shot_020.blend`` of
one folder never share a file), the stem the mesh's cleaned name and a hash of its full name (``Body.L`` and
``Body_L`` clean alike but get two files). An unsaved file bakes into Blender's temporary folder
(``<temporary folder>/implicit_muscles_cache/untitled/``). An existing file is written only if it is this mesh's
own bake (its stored ``bake_file``) and no other object of the file plays or stores it; otherwise the bake takes
the next free name (``<mesh stem>-2.pc2``, ...) and the report says so. Files baked elsewhere, and by earlier
versions (``//implicit_muscles_cache/<mesh>.pc2``), are never written and keep playing from their stored path.

Farms bake a long range as *parts*: ``bake_steps(..., part=True)`` writes ``<mesh stem>.<first>-<last>.pc2`` in the
same folder and sets nothing up (a part file of the same mesh and range is written over: a farm task may run
again); ``merge`` joins the parts of a range into the mesh's bake (byte-identical to a single bake) and sets the
Mesh Cache up. ``bake_steps`` is a generator, one frame per step: the operator steps it from a timer with a
progress bar and ESC (``operators/bake.py``), background scripts and the command line drain it.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import re
import tempfile
from pathlib import Path

import bpy

from . import modifiers, quality, runtime

CACHE_FOLDER = "implicit_muscles_cache"
"""Folder next to the .blend file that holds a subfolder of bakes per .blend file."""
UNSAVED_FOLDER = "untitled"
"""Subfolder of ``CACHE_FOLDER`` in Blender's temporary folder for the bakes of an unsaved file."""
NAME_HASH_DIGITS = 8
"""Hex digits of the SHA-1 of an object's full name in its bake's file name."""


def shot_folder() -> str:
    """Folder of this .blend file's bakes, without a trailing slash: ``//implicit_muscles_cache/<blend name>``
    (Blender-relative) for a saved file; for an unsaved one, the absolute ``implicit_muscles_cache/untitled`` in the
    temporary folder of Blender's preferences (or the system's)."""
    if bpy.data.filepath:
        return f"//{CACHE_FOLDER}/{Path(bpy.data.filepath).stem}"
    temporary = bpy.context.preferences.filepaths.temporary_directory
    root = temporary if temporary and os.path.isdir(bpy.path.abspath(temporary)) else tempfile.gettempdir()
    return (Path(bpy.path.abspath(root)) / CACHE_FOLDER / UNSAVED_FOLDER).as_posix()


def mesh_stem(mesh_obj) -> str:
    """File stem of a mesh's bake: its name cleaned for file systems and the first ``NAME_HASH_DIGITS`` hex digits
    of the SHA-1 of its full name, e.g. ``Body_L_<hash>``: two names that clean alike get two stems."""
    digest = hashlib.sha1(mesh_obj.name_full.encode("utf-8")).hexdigest()[:NAME_HASH_DIGITS]
    return f"{bpy.path.clean_name(mesh_obj.name)}_{digest}"


def part_file(mesh_obj, first: int, last: int) -> str:
    """Path of the part of a farm bake of ``mesh_obj`` holding frames ``first..last``."""
    return f"{shot_folder()}/{mesh_stem(mesh_obj)}.{first:06d}-{last:06d}.pc2"


def _absolute(path: str) -> Path:
    """``path`` (Blender-relative or absolute) as an absolute path."""
    return Path(bpy.path.abspath(path))


def _key(path: str, library=None) -> str:
    """``path`` (Blender-relative to the file, or to ``library``) normalised, to compare two paths to one file."""
    return os.path.normcase(os.path.normpath(bpy.path.abspath(path, library=library)))


def _stored_by_others(mesh_obj) -> set:
    """Keys (:func:`_key`) of the point caches that the file's other objects play (any Mesh Cache modifier) or
    store as their bake."""
    keys = set()
    for obj in bpy.data.objects:
        if obj == mesh_obj:
            continue
        stored = [m.filepath for m in obj.modifiers if m.type == 'MESH_CACHE'] + [obj.implicit_skin.bake_file]
        keys.update(_key(p, obj.library) for p in stored if p)
    return keys


def bake_file(mesh_obj, taken=frozenset()) -> str:
    """Where a whole bake (or a merge) of ``mesh_obj`` goes: ``<shot folder>/<mesh stem>.pc2``, or the first of
    ``<mesh stem>-2.pc2``, ``-3``, ... if that file belongs to another. A file belongs to this mesh if it does not
    exist yet, or is this mesh's stored bake; it belongs to another if another object of the file plays or stores
    it, or if it exists and this mesh never baked it (another shot of the same name, or a bake that was not
    saved). ``taken``: keys (:func:`_key`) of the files given to other meshes of the same bake."""
    folder, stem = shot_folder(), mesh_stem(mesh_obj)
    own = mesh_obj.implicit_skin.bake_file
    own = _key(own) if own else None
    others = _stored_by_others(mesh_obj) | set(taken)
    for k in itertools.count(1):
        path = f"{folder}/{stem}.pc2" if k == 1 else f"{folder}/{stem}-{k}.pc2"
        key = _key(path)
        if key not in others and (key == own or not _absolute(path).exists()):
            return path


def notes(files: dict) -> list:
    """Sentences for the report of a bake or merge that wrote ``files`` (``{object full name: path}``): each mesh
    whose usual file belongs to another, and where an unsaved file's bake went."""
    out = []
    for obj in (o for o in bpy.data.objects if o.name_full in files):
        path, usual = files[obj.name_full], f"{shot_folder()}/{mesh_stem(obj)}.pc2"
        if path != usual and not PART.match(Path(path).name):
            out.append(f"{obj.name}: {usual} belongs to another bake (another object, or another shot of this "
                       f"name), so this bake went to {Path(path).name}.")
    if files and not bpy.data.filepath:
        out.append(f"This file is not saved, so the bake went to the temporary folder {shot_folder()}: save the "
                   f"file and bake again to keep the bake next to it.")
    return out


def bake_targets(scene, meshes=None) -> list:
    """The meshes to bake: ``meshes`` or every mesh of the scene whose Implicit Skinning is on and bound."""
    found = [obj for obj in (meshes if meshes is not None else scene.objects) if is_target(obj)]
    if not found:
        raise ValueError(NO_TARGET)
    return found


def is_target(obj) -> bool:
    """``obj`` is a mesh whose Implicit Skinning is on and bound."""
    return obj.type == 'MESH' and obj.implicit_skin.enabled and obj.implicit_skin.bound


NO_TARGET = "No mesh to bake: bind a mesh with Implicit Skinning first (Bind Skin), and keep it enabled."


def check(scene, frame_start: int, frame_end: int) -> None:
    """``ValueError`` with a plain sentence if a bake of this range cannot start."""
    if frame_end < frame_start:
        raise ValueError(f"The bake's last frame ({frame_end}) comes before its first ({frame_start}).")


def _writers(targets, frame_start: int, total: int, part: bool) -> dict:
    """``{object full name: (object, path, PC2Writer)}``: a file for each target that belongs to no other."""
    from ...core.io.pc2 import PC2Writer

    writers, taken = {}, set()
    try:
        for obj in targets:
            path = part_file(obj, frame_start, frame_start + total - 1) if part else bake_file(obj, taken)
            taken.add(_key(path))
            writers[obj.name_full] = (obj, path, PC2Writer(_absolute(path), len(obj.data.vertices), frame_start,
                                                          total))
    except OSError as ex:
        for _, _, writer in writers.values():
            writer.abort()
        raise ValueError(_os_sentence(ex)) from None
    return writers


def _os_sentence(ex: OSError) -> str:
    """A plain sentence for a file system error while writing a bake."""
    return f"The bake could not be written: {ex.strerror or ex} ({ex.filename}). Nothing was baked."


def _frame_positions(mesh_obj, frame: int):
    """The positions ``(V, 3)`` [m, mesh space] the live evaluation gave ``mesh_obj`` on ``frame``; ``ValueError``
    if it could not evaluate it."""
    b = runtime.bound(mesh_obj)
    if b is None or b.last_frame != frame:
        why = b.last_error if b is not None and b.last_error else "it could not be bound"
        raise ValueError(f"Frame {frame}: {mesh_obj.name} could not be evaluated ({why}); nothing was baked.")
    return b.last_local


def bake_steps(scene, frame_start: int, frame_end: int, meshes=None, part: bool = False):
    """Bake frames ``frame_start..frame_end`` of ``meshes`` (default: ``bake_targets``); yields ``(done, total)``
    after each frame. Closing the generator early (ESC) writes nothing and leaves an earlier bake in place.
    Returns (as ``StopIteration.value``) ``{object full name: file}``."""
    check(scene, frame_start, frame_end)
    targets = bake_targets(scene, meshes)
    for obj in targets:
        reason = runtime.stale_reason(obj)
        if reason:
            raise ValueError(f"{obj.name}: {reason} Bind it again (Bind Skin) before baking.")
    total = frame_end - frame_start + 1
    writers = _writers(targets, frame_start, total, part)
    was_baked = {obj.name_full: obj.implicit_skin.baked for obj in targets}
    for obj in targets:
        obj.implicit_skin.baked = False  # evaluate live while baking
        modifiers.set_active(obj, True)
    frame_before = scene.frame_current
    try:
        try:
            for done, frame in enumerate(range(frame_start, frame_end + 1), start=1):
                with quality.render_quality():  # a bake is always at render quality
                    scene.frame_set(frame)
                for obj, _, writer in writers.values():
                    writer.write(_frame_positions(obj, frame))
                yield done, total
            files = {name: (obj, path, writer.close()) for name, (obj, path, writer) in writers.items()}
        except OSError as ex:  # a full disk, a folder made read-only during the bake
            raise ValueError(_os_sentence(ex)) from None
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
"""File name of a farm bake's part: ``<mesh stem>.<first>-<last>.pc2``."""


def _parts(mesh_obj, frame_start: int, frame_end: int) -> list:
    """The part files of ``mesh_obj`` in this file's bake folder that lie within ``frame_start..frame_end``."""
    folder, stem = _absolute(shot_folder()), mesh_stem(mesh_obj)
    parts = []
    for p in sorted(folder.glob(f"{stem}.*.pc2")) if folder.is_dir() else []:
        m = PART.match(p.name)
        if m and m["stem"] == stem and frame_start <= int(m["first"]) and int(m["last"]) <= frame_end:
            parts.append(p)
    return parts


def merge(scene, frame_start: int, frame_end: int, meshes=None, keep_parts: bool = False) -> dict:
    """Join each mesh's part files that lie within ``frame_start..frame_end`` into its bake (:func:`bake_file`)
    and set the Mesh Cache up (``core.io.pc2.merge`` checks, before writing, that they cover exactly the range
    without gaps); the parts are removed unless ``keep_parts``. Returns ``{object full name: file}``."""
    from ...core.io import pc2

    check(scene, frame_start, frame_end)
    out, taken = {}, set()
    for obj in bake_targets(scene, meshes):
        parts = _parts(obj, frame_start, frame_end)
        if not parts:
            raise ValueError(f"No bake parts of {obj.name} for frames {frame_start}-{frame_end} in "
                             f"{shot_folder()}/.")
        path = bake_file(obj, taken)
        taken.add(_key(path))
        try:
            pc2.merge(parts, _absolute(path), frame_start, frame_end)
            if not keep_parts:
                for p in parts:
                    p.unlink()
        except ValueError as ex:
            raise ValueError(f"{obj.name}: {ex}") from None
        except OSError as ex:
            raise ValueError(f"{obj.name}: {_os_sentence(ex)}") from None
        use_cache(obj, path, frame_start, frame_end)
        out[obj.name_full] = path
    return out


def use_cache(mesh_obj, path: str, frame_start: int, frame_end: int) -> None:
    """Set up the Mesh Cache modifier for ``path`` where the live evaluation was, and switch to it. A linked mesh
    (a library override) keeps it at the end of its stack, where its live modifier is too: an override cannot move
    a modifier of its own before the library's."""
    mod = mesh_obj.modifiers.get(modifiers.CACHE_MODIFIER)
    if mod is None:
        mod = mesh_obj.modifiers.new(modifiers.CACHE_MODIFIER, 'MESH_CACHE')
        name = modifiers.live_modifier_name(mesh_obj)
        live = next((k for k, m in enumerate(mesh_obj.modifiers) if m.name == name), None)
        if live is not None and not modifiers.is_linked(mesh_obj):
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
