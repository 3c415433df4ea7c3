"""The persistent application handlers of Implicit Skinning (docs/design.md#handlers-and-threads), and their
register/unregister.

No handler sets a frame (``scene.frame_set``): a render started from the interface runs the frame-change and render
handlers on its own thread, where that crashes. The frames a time needs are simulated beforehand, on the main thread
(``blender/session/playback.py``, ``blender/session/renders.py``):

* ``frame_change_pre``: on the main thread with no render running, simulate what the new time needs
  (``playback.prepare_frame``: a jump, a gap, a frame dropped in playback).
* ``frame_change_post``: deform every live mesh for the new time from the cached states
  (``playback.evaluate_safely``; a subframe of motion blur steps from the whole frame before it and caches nothing).
  While a render started from the interface runs, the main thread leaves the meshes alone (the render writes them).
* ``render_init`` / ``render_complete`` / ``render_cancel`` mark a render running; ``render_pre`` simulates what the
  frame about to render needs, its motion-blur shutter included (``renders.prepare_render_frame``), on the main
  thread: directly for background and script renders, handed over by the render's thread for a render started
  from the interface (``renders.serve_render_requests``, a timer polling on the main thread).
* ``depsgraph_update_post``, edits between frame changes: posing an armature re-evaluates its meshes for display
  (``preview``: its muscle state is not cached, so the cache keeps describing the animation, and the states from the
  current frame on are forgotten); editing keys of the armature's action forgets the cached states from the key
  before the earliest edited key (``FrameCache.update_keys``); renamed bones are followed by their muscles
  (``rig.follow_renames``); an edited mesh or armature has its bind's staleness checked again (``runtime``).
* ``load_pre`` forgets the session's binds (they are keyed by object name); ``load_post`` switches a file's live
  meshes back on, binds them again and shows the current frame, simulating the frames before it
  (``playback.prepare_frame``).
* ``undo_post``, ``redo_post``: every bound mesh's staleness is checked again.
* once the kernels compiled in the background are ready (``compile_job.on_ready``), the current frame is shown
  again (``on_kernels_ready``): its frames showed the plain Armature result while they compiled.
* ``save_pre`` stores live meshes showing the plain Armature result, so a file opened without the add-on plays its
  Armature modifier, never a frozen frame; ``save_post`` switches them back on. Baked meshes keep their Mesh Cache.

A baked mesh plays its Mesh Cache modifier and is not evaluated here (``blender/session/bake.py``).
"""
from __future__ import annotations

import sys

import bpy
from bpy.app.handlers import persistent

from ..engine import compile_job
from ..scene import animation, rig
from ..scene.live import live_meshes, on_main_thread
from . import modifiers, playback, render_state, renders, runtime


def _bound_meshes(scene) -> list:
    """The scene's meshes bound in this session."""
    return [obj for obj in scene.objects if obj.type == 'MESH' and runtime.bound(obj) is not None]


def _check_staleness(check, obj) -> None:
    """Run one staleness check (``runtime.on_mesh_changed``, ``on_armature_changed`` or ``stale_reason``) on ``obj``;
    a handler never raises, so a failure is printed once and the panel keeps its last sentence."""
    try:
        check(obj)
    except Exception as ex:  # noqa: BLE001 - e.g. an armature deleted while the update was in flight
        print(f"Implicit Muscles: could not check {obj.name}'s bind against the scene: {ex}", file=sys.stderr)


@persistent
def on_frame_change_pre(scene, *_):
    """Simulate what the new time needs, on the main thread outside renders (module docstring)."""
    if playback.busy() or not render_state.may_simulate():
        return
    playback.prepare_frame(scene)


@persistent
def on_frame_change(scene, depsgraph=None):
    if playback.busy():
        return
    if on_main_thread() and render_state.rendering_elsewhere():
        return  # a render started from the interface evaluates the meshes on its own thread
    if render_state.rendering_here() and (depsgraph is None or depsgraph.mode == 'VIEWPORT'):
        render_state.render_ended()  # back on the viewport: a render of this thread that did not say it ended
    if depsgraph is None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
    for obj in live_meshes(scene):
        playback.evaluate_safely(obj, scene, depsgraph)


@persistent
def on_render_init(*_):
    render_state.render_started()


@persistent
def on_render_pre(scene, *_):
    """Simulate what the frame about to render needs, before the render evaluates it (module docstring)."""
    try:
        renders.prepare_render_frame(scene)
    except Exception as ex:  # noqa: BLE001 - a render handler must never raise; the frame falls back and says why
        print(f"Implicit Muscles: could not simulate the muscles before rendering frame {scene.frame_current}: "
              f"{ex}", file=sys.stderr)


@persistent
def on_render_end(*_):
    """``render_complete`` and ``render_cancel``."""
    render_state.render_ended()


@persistent
def on_depsgraph_update(scene, depsgraph):
    """Edits between frame changes (module docstring)."""
    if playback.busy() or (on_main_thread() and render_state.rendering_elsewhere()):
        return
    posed, actions, armatures, meshes = set(), set(), set(), set()
    for update in depsgraph.updates:
        id_ = update.id.original if update.id is not None else None
        if isinstance(id_, bpy.types.Object) and id_.type == 'ARMATURE':
            posed.add(id_.name_full)
        elif isinstance(id_, bpy.types.Action):
            actions.add(id_.name_full)
        elif isinstance(id_, bpy.types.Armature):
            armatures.add(id_.name_full)
        elif isinstance(id_, bpy.types.Mesh):
            meshes.add(id_.name_full)
    if armatures:  # a bone may have been renamed: its muscles follow
        for obj in scene.objects:
            if obj.type == 'ARMATURE' and len(obj.implicit_muscles.muscles):
                rig.follow_renames(obj)
    if not (posed or actions or armatures or meshes):
        return
    for obj in _bound_meshes(scene):
        armature = obj.implicit_skin.armature
        if obj.data.name_full in meshes:
            bound = runtime.bound(obj)
            if bound.own_write:
                bound.own_write = False
            else:
                _check_staleness(runtime.on_mesh_changed, obj)
        data = getattr(armature, "data", None)
        if armature is not None and (armature.name_full in posed or getattr(data, "name_full", None) in armatures):
            _check_staleness(runtime.on_armature_changed, obj)
    if not posed and not actions:
        return
    for obj in live_meshes(scene):
        bound = runtime.bound(obj)
        armature = obj.implicit_skin.armature
        if bound is None or armature is None:
            continue
        action = armature.animation_data.action if armature.animation_data else None
        if action is not None and action.name_full in actions:
            keys = animation.key_snapshot(armature)
            for cache in bound.caches:
                cache.update_keys(keys)
        if armature.name_full in posed or (action is not None and action.name_full in actions):
            playback.evaluate_safely(obj, scene, depsgraph, preview=True)


@persistent
def on_load_pre(*_):
    """Another file is being opened: its meshes bind again on first use (binds are keyed by object name)."""
    runtime.clear()
    playback.forget_warnings()
    render_state.render_ended()


@persistent
def on_load_post(*_):
    """Switch the file's live meshes back on (``on_save_pre``) and show the current frame (this binds them again and
    simulates the frames before it)."""
    scene = bpy.context.scene
    if scene is None:
        return
    meshes = [obj for obj in live_meshes(scene) if obj.implicit_skin.bound]
    if not meshes:
        return
    # evaluated first: a file just read has every object's world matrix at the identity until then, and a bind
    # reads the armature object's scale and turn (blender/scene/units.py)
    bpy.context.evaluated_depsgraph_get()
    playback.prepare_frame(scene, meshes)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for obj in meshes:
        playback.evaluate_safely(obj, scene, depsgraph)


@persistent
def on_undo_redo(*_):
    """An undo or redo may give back an older mesh or armature without a depsgraph update naming it: check every
    bound mesh's staleness again."""
    scene = bpy.context.scene
    if scene is None:
        return
    for obj in _bound_meshes(scene):
        _check_staleness(runtime.stale_reason, obj)


@persistent
def on_save_pre(*_):
    """Store live meshes showing the plain Armature result (module docstring)."""
    for scene in bpy.data.scenes:
        for obj in live_meshes(scene):
            modifiers.set_active(obj, False)


@persistent
def on_save_post(*_):
    for scene in bpy.data.scenes:
        for obj in live_meshes(scene):
            if obj.implicit_skin.bound:
                modifiers.set_active(obj, True)


def on_kernels_ready() -> None:
    """The background compile has ended: simulate and show the current frame of every live mesh (module docstring).
    Never raises: the next frame change tries again."""
    scene = bpy.context.scene
    if scene is None:
        return
    try:
        playback.prepare_frame(scene)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for obj in live_meshes(scene):
            playback.evaluate_safely(obj, scene, depsgraph)
    except Exception as ex:  # noqa: BLE001 - the next frame change tries again
        print(f"Implicit Muscles: could not show the frame after the kernels compiled: {ex}", file=sys.stderr)


_HANDLERS = (("frame_change_pre", on_frame_change_pre), ("frame_change_post", on_frame_change),
             ("render_init", on_render_init), ("render_pre", on_render_pre), ("render_complete", on_render_end),
             ("render_cancel", on_render_end), ("depsgraph_update_post", on_depsgraph_update),
             ("load_pre", on_load_pre), ("load_post", on_load_post), ("save_pre", on_save_pre),
             ("save_post", on_save_post), ("undo_post", on_undo_redo), ("redo_post", on_undo_redo))


def register():
    for name, fn in _HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)
    compile_job.on_ready(on_kernels_ready)
    if not bpy.app.background:  # renders started from the interface hand their simulation to the main thread
        bpy.app.timers.register(renders.serve_render_requests, first_interval=renders.POLL_IDLE, persistent=True)


def unregister():
    for handlers, fn in ((getattr(bpy.app.handlers, name), fn) for name, fn in _HANDLERS):
        while fn in handlers:
            handlers.remove(fn)
    compile_job.remove_on_ready(on_kernels_ready)
    if bpy.app.timers.is_registered(renders.serve_render_requests):
        bpy.app.timers.unregister(renders.serve_render_requests)
    playback.forget_warnings()
