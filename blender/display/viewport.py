"""Muscles in the viewport: one ``gpu`` draw handler (``SpaceView3D``, ``POST_VIEW``) draws every armature's muscle
surfaces from a GPU batch per armature. Nothing is added to the scene, so nothing is saved in the .blend, exported
or rendered.

* What is drawn: ``blender/display/muscle_shapes.py`` ``rig_mesh`` (the simulated muscles of a live bound mesh, or straight
  ones in the current pose), in the armature's space, placed by its world matrix.
* When it is rebuilt: frame changes, depsgraph updates and the display settings mark the drawing out of date
  (``mark_dirty``, a flag: no work in those handlers); the next redraw samples the muscles again and rebuilds an
  armature's GPU batch only if what it draws changed (``DrawMesh.key``). Redraws in between (orbiting the view)
  reuse the batches.
* How: *In Front* (``show_in_front``) draws over the skin, half transparent, back faces culled; off, the muscles
  are depth-tested and opaque (hidden by the skin, seen through it in X-Ray or Wireframe shading). Colours per
  muscle or by activation (``display_color``).
* Never in background mode: ``register`` adds the draw handler only when Blender has a user interface
  (``start``); renders never call viewport draw handlers.

Files saved by earlier versions hold a display mesh object ``<armature>.muscles`` per armature; ``remove_legacy``
deletes those on load (they were the add-on's own, never the user's).
"""
from __future__ import annotations

import sys

import bpy
from bpy.app.handlers import persistent

from ..session import render_state
from . import muscle_shapes

LEGACY_SUFFIX = ".muscles"
"""Name suffix of the display mesh objects that earlier versions saved in files."""
SHADER = 'SMOOTH_COLOR'
"""Builtin shader (attributes ``pos``, ``color``), named alike in Blender 4.2 and 5.0."""

_handle = None  # the SpaceView3D draw handler, while drawing
_dirty = True
_keys: dict = {}  # armature full name -> DrawMesh.key of what is drawn
_batches: dict = {}  # armature full name -> (GPUBatch, in_front)
_shader = None
_warned: set = set()


def mark_dirty(*_args) -> None:
    """The muscles may have changed (a frame change, an edit): the next redraw samples them again."""
    global _dirty
    _dirty = True


def drawing() -> bool:
    """True while the draw handler is registered."""
    return _handle is not None


def armatures(scene) -> list:
    """The scene's armatures whose muscles are shown."""
    return [obj for obj in scene.objects if obj.type == 'ARMATURE' and len(obj.implicit_muscles.muscles)
            and obj.implicit_muscles.show_muscles]


def refresh(scene) -> dict:
    """Sample every shown armature of ``scene`` again (``muscle_shapes.rig_mesh``); returns ``{armature full name:
    DrawMesh}`` of those whose drawing changed since the last refresh (the GPU batches to rebuild), and forgets the
    drawings of armatures no longer shown. Runs without a GPU (the tests call it headless)."""
    global _dirty
    changed = {}
    if render_state.rendering_elsewhere():  # a render thread owns the characters' states: keep the last drawing
        return changed
    shown = set()
    for armature in armatures(scene):
        name = armature.name_full
        mesh = muscle_shapes.rig_mesh(armature, scene)
        if mesh is None:
            continue
        shown.add(name)
        if _keys.get(name) != mesh.key:
            _keys[name] = mesh.key
            changed[name] = mesh
    for name in [n for n in _keys if n not in shown]:
        del _keys[name]
        _batches.pop(name, None)
    _dirty = False
    return changed


def _gpu_batch(mesh):
    """A GPU batch of ``mesh``'s triangles (needs a GPU context: the draw callback)."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    global _shader
    if _shader is None:
        _shader = gpu.shader.from_builtin(SHADER)
    return batch_for_shader(_shader, 'TRIS', {"pos": mesh.vertices, "color": mesh.colors}, indices=mesh.faces)


def _draw():
    """The draw callback: rebuild what changed, then draw every shown armature of the context's scene."""
    try:
        import gpu

        context = bpy.context
        scene = context.scene
        overlay = getattr(context.space_data, "overlay", None)
        if scene is None or (overlay is not None and not overlay.show_overlays):
            return  # overlays off: a clean view, as Blender's own overlays
        if _dirty:
            for name, mesh in refresh(scene).items():
                _batches[name] = (_gpu_batch(mesh), mesh.in_front)
        if not _batches:
            return
        for armature in armatures(scene):
            entry = _batches.get(armature.name_full)
            if entry is None or not armature.visible_get():
                continue
            batch, in_front = entry
            gpu.state.depth_test_set('NONE' if in_front else 'LESS_EQUAL')
            gpu.state.depth_mask_set(not in_front)
            gpu.state.blend_set('ALPHA' if in_front else 'NONE')
            gpu.state.face_culling_set('BACK' if in_front else 'NONE')
            with gpu.matrix.push_pop():
                gpu.matrix.multiply_matrix(armature.matrix_world)
                batch.draw(_shader)
        gpu.state.depth_test_set('NONE')
        gpu.state.depth_mask_set(False)
        gpu.state.blend_set('NONE')
        gpu.state.face_culling_set('NONE')
    except Exception as ex:  # noqa: BLE001 - a draw callback must never raise: one message per problem
        if str(ex) not in _warned:
            _warned.add(str(ex))
            print(f"Implicit Muscles: could not draw the muscles: {ex}", file=sys.stderr)


def start(background: bool | None = None) -> bool:
    """Add the draw handler, unless Blender runs without a user interface (``background``, default
    ``bpy.app.background``) or it is added already; returns whether it is registered."""
    global _handle
    if background is None:
        background = bpy.app.background
    if _handle is None and not background:
        _handle = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_VIEW')
        mark_dirty()
    return _handle is not None


def stop() -> None:
    """Remove the draw handler and forget the GPU batches."""
    global _handle, _shader
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, 'WINDOW')
        _handle = None
    _batches.clear()
    _keys.clear()
    _shader = None
    _warned.clear()


def remove_legacy() -> int:
    """Delete the display mesh objects (``<armature>.muscles``) that earlier versions saved, and their meshes;
    returns how many objects. Only mesh objects named after an armature, never rendered, not selectable and drawn
    with their wireframe (as those versions made them) are removed."""
    removed = 0
    for obj in list(bpy.data.objects):
        if obj.type != 'MESH' or not obj.name.endswith(LEGACY_SUFFIX) or obj.library is not None:
            continue
        owner = bpy.data.objects.get(obj.name[:-len(LEGACY_SUFFIX)])
        if owner is None or owner.type != 'ARMATURE' or not (obj.hide_render and obj.hide_select and obj.show_wire):
            continue
        mesh = obj.data
        bpy.data.objects.remove(obj)
        if mesh.users == 0:
            bpy.data.meshes.remove(mesh)
        removed += 1
    return removed


@persistent
def _on_load_post(*_):
    remove_legacy()
    _batches.clear()
    _keys.clear()
    mark_dirty()


_HANDLERS = (("frame_change_post", persistent(mark_dirty)), ("depsgraph_update_post", persistent(mark_dirty)),
             ("load_post", _on_load_post))


def register():
    for name, fn in _HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)
    start()


def unregister():
    stop()
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while fn in handlers:
            handlers.remove(fn)
