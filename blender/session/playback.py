"""Per-frame evaluation of bound skins (paper §7.2, docs/design.md#data-flow-per-frame): one path for playback, jumps,
gaps, subframes, renders and bakes.

A frame's muscles start from their state at the end of the frame before, kept per frame in ``Bound.cache``
(``core/frame_cache.py``; one cache per evaluation quality, ``Bound.cache_for``: renders and bakes at Render,
the rest at the viewport's quality, ``blender/session/quality.py``). The simulation starts at the start frame
(``rig.simulation_start``), where the muscles first settle into that frame's pose (``settle``). The work is split
in two, so that no handler ever sets a frame:

1. ``simulate_gaps`` fills the cache with the states a time needs, frame by frame from the last state kept before
   (a jump, a gap, a file just opened). It reads each frame's pose by putting the scene on that frame and updating
   the view layer's depsgraph: no ``frame_set``, so no frame-change handler runs (ours or another add-on's), and
   ``busy`` makes our depsgraph handler ignore these updates; then it puts the scene back on its time. It runs only
   on Blender's main thread, before the time is evaluated: in ``frame_change_pre`` (playback, scrubbing, scripts,
   bakes: ``prepare_frame``), after binding or loading (``show_current_frame``), and before each frame of a render
   (``blender/session/renders.py``, which also hands the work over to the main thread for a render on its own thread).
2. ``evaluate_mesh`` (``frame_change_post``, on whatever thread the frame change runs) deforms one mesh for the
   scene's current time and never changes it. ``advance_to`` restores the state it starts from, from the cache only.
   A whole frame ``f`` takes one PBD step of ``dt`` from the state after ``f - 1`` with ``f``'s evaluated pose and
   muscle values (read from the depsgraph the handler is given: playback, scripts and renders see the same values),
   runs Implicit Skinning (``core/character.py``), caches the state it reaches if that frame is not cached yet, and
   writes the positions for the modifier (``blender/session/modifiers.py``). A subframe ``f + s`` (motion blur,
   ``scene.frame_subframe`` > 0) takes one step of ``s * dt`` from the state after ``f`` with the pose at ``f + s``
   and caches nothing, so it never changes a whole frame.

A frame that fails (a scaled, NaN or far-flung pose, a non-finite result, a mesh whose vertex count, armature's bone
count or place relative to its armature changed since bind, a state that was not simulated) shows the plain Armature
result, with one warning printed per problem (``evaluate_safely``); the next frame that evaluates switches Implicit
Skinning back on. Each frame's stage times [s] are kept in ``Bound.timings`` (with its ``frame`` and ``quality``
name): ``simulate gap``, ``read``, the core's stages, ``write``, ``total``.
"""
from __future__ import annotations

import math
import sys
import time
import traceback
from dataclasses import dataclass

import bpy

from ..engine import compile_job
from ..scene import frame_inputs, rig, units
from ..scene.live import live_meshes, on_main_thread
from . import modifiers, quality as qualities, runtime

_busy = False
_warned: set = set()
_gap_errors: dict = {}  # mesh name -> why the states it needs could not be simulated
_gap_seconds: dict = {}  # mesh name -> time spent simulating its last gap [s]


class FramesNotSimulated(ValueError):
    """The state a time starts from is not cached: the frames before it were not simulated (``frame``: the last
    frame whose state is needed)."""

    def __init__(self, frame: int):
        super().__init__(f"the muscles were not simulated up to frame {frame}.")
        self.frame = frame


def busy() -> bool:
    """True while ``simulate_gaps`` updates the depsgraph to read poses: handlers ignore those updates."""
    return _busy


def state_needed(time_: float) -> int:
    """The frame whose end state the time ``time_`` [frames] steps from: ``f - 1`` for a whole frame ``f``, ``f``
    for ``f + s`` with ``0 < s < 1``."""
    return math.ceil(time_) - 1


def _fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def _read(bound, armature, depsgraph) -> tuple:
    """``(B, inputs)`` of the evaluated armature: bone transforms in the bind's core frame (``blender/scene/units.py``)
    and the frame's animated values, the muscles' and the fats' (``blender/scene/frame_inputs.py``), as one
    ``core.pbd.control.MuscleInputs``."""
    arm_eval = armature.evaluated_get(depsgraph)
    fats = frame_inputs.fat_values(arm_eval, bound.fat_source) if bound.character.model.fat_model is not None \
        else None
    B = frame_inputs.bone_transforms(arm_eval, bound.rest_inverse)
    inputs = frame_inputs.muscle_values(arm_eval, bound.source, B, fats)  # joints read the armature's own frames
    return units.transforms_to_core(bound.core, B), inputs


def _keep(cache, character, frame: int) -> None:
    """Cache ``character``'s state in ``cache`` as the state after ``frame``, unless that frame is cached already
    (the same state: keeping the cache as it is keeps the frames after it)."""
    if frame not in cache:
        cache.store(frame, character.state())


def advance_to(bound, scene, armature, frame: int, preview: bool = False, quality=None) -> bool:
    """Put ``bound.character``'s muscle state at the end of ``frame - 1`` from what is at hand, never simulating:
    the rest state if ``frame`` is at or before the start frame (``rig.simulation_start``; returns True: the frame
    settles from rest), else the state cached for ``frame - 1`` at ``quality`` (default: render). Without it,
    ``preview`` continues from the character's current state; otherwise :class:`FramesNotSimulated`
    (``simulate_gaps`` fills the cache beforehand)."""
    from ...core.quality import RENDER

    start = rig.simulation_start(armature, scene)
    ch = bound.character
    # forgets the states simulated from another start frame
    first, state = bound.cache_for(quality or RENDER).resume(frame, start)
    if frame <= start:
        ch.reset()
        return True
    if first == frame:
        ch.restore(state)
    elif not preview:
        raise FramesNotSimulated(frame - 1)
    return False


@dataclass
class _Gap:
    """One mesh's frames to simulate, ``first`` to ``last``, from ``state`` (None: rest at the ``start`` frame), at
    ``quality`` (``core/quality.py``) into ``cache``."""

    mesh: object
    bound: object
    armature: object
    start: int
    first: int
    last: int
    state: object
    quality: object
    cache: object
    failed: bool = False


def _bound(obj):
    """The mesh's bind in this session, bound again first if the session lost it (a reopened file); or None."""
    bound = runtime.bound(obj)
    if bound is None and obj.implicit_skin.bound:
        bound = runtime.rebind(obj)
    return bound


def _plan(obj, scene, first_state: int, last_state: int, quality):
    """The :class:`_Gap` that caches ``obj``'s states after frames ``first_state..last_state`` (those at or after the
    start frame) at ``quality``, or None if they are all cached or the mesh cannot be evaluated (its frame handler
    says why)."""
    try:
        bound = _bound(obj)
    except Exception:  # noqa: BLE001 - a bind that fails is reported by the mesh's frame handler
        return None
    armature = obj.implicit_skin.armature
    if bound is None or armature is None or armature.type != 'ARMATURE':
        return None
    start = rig.simulation_start(armature, scene)
    first_state = max(first_state, start)
    cache = bound.cache_for(quality)
    cache.resume(first_state, start)  # forgets the states simulated from another start frame
    missing = next((f for f in range(first_state, last_state + 1) if f not in cache), None)
    if missing is None:
        return None
    first, state = cache.resume(missing, start)
    return _Gap(obj, bound, armature, start, first, last_state, state, quality, cache)


def _view_layer(scene):
    """The view layer whose depsgraph reads poses for ``scene``: the context's, or the scene's first."""
    context = bpy.context
    if context.scene == scene and context.view_layer is not None:
        return context.view_layer
    return scene.view_layers[0]


def _show_time(scene, view_layer, frame: int, subframe: float) -> None:
    """Put ``scene`` on ``frame + subframe`` and evaluate ``view_layer``'s depsgraph there (no frame-change
    handlers run)."""
    scene.frame_current = frame
    scene.frame_subframe = subframe
    view_layer.update()


def _step_gap(gap: _Gap, frame: int, depsgraph, dt: float) -> None:
    """Simulate ``frame`` for ``gap``'s mesh from its character's state and cache the result."""
    B, inputs = _read(gap.bound, gap.armature, depsgraph)
    ch = gap.bound.character
    if frame == gap.start:
        ch.settle(B, inputs, dt=dt, quality=gap.quality)
    ch.advance(B, inputs, dt=dt, quality=gap.quality)
    _keep(gap.cache, ch, frame)


def _gap_failed(gap: _Gap, ex: Exception) -> None:
    """Remember why ``gap`` stopped (its frame handler reports it); print the traceback of a bug of ours once."""
    gap.failed = True
    _gap_errors[gap.mesh.name_full] = str(ex)
    if not isinstance(ex, (ValueError, RuntimeError)):
        key = (gap.mesh.name_full, str(ex))
        if key not in _warned:
            _warned.add(key)
            traceback.print_exc()


def simulate_gaps(scene, meshes, first_state: int, last_state: int, quality=None) -> None:
    """Cache each of ``meshes``' muscle states after frames ``first_state..last_state`` (module docstring, step 1)
    at ``quality`` (default: ``quality.frame_quality`` of the scene now): the frames missing are simulated in order
    from the last state kept before them, all meshes together. Main thread only, outside a depsgraph evaluation. A
    mesh whose frames fail keeps the reason for its frame handler."""
    global _busy
    if compile_job.waiting():
        return  # the frames show the Armature result until the background compile ends
    if quality is None:
        quality = qualities.frame_quality(scene)
    gaps = [gap for gap in (_plan(obj, scene, first_state, last_state, quality) for obj in meshes)
            if gap is not None]
    if not gaps:
        return
    t0 = time.perf_counter()
    for gap in gaps:
        _gap_errors.pop(gap.mesh.name_full, None)
        if gap.state is None:
            gap.bound.character.reset()
        else:
            gap.bound.character.restore(gap.state)
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    view_layer = _view_layer(scene)
    dt = 1.0 / _fps(scene)
    _busy = True
    try:
        for frame in range(min(g.first for g in gaps), max(g.last for g in gaps) + 1):
            active = [g for g in gaps if g.first <= frame <= g.last and not g.failed]
            if not active:
                continue
            _show_time(scene, view_layer, frame, 0.0)
            for gap in active:
                try:
                    _step_gap(gap, frame, view_layer.depsgraph, dt)
                except Exception as ex:  # noqa: BLE001 - reported by the mesh's frame handler
                    _gap_failed(gap, ex)
    finally:
        _show_time(scene, view_layer, frame0, subframe0)
        _busy = False
    seconds = (time.perf_counter() - t0) / len(gaps)
    for gap in gaps:
        _gap_seconds[gap.mesh.name_full] = seconds


def prepare_frame(scene, meshes=None) -> None:
    """Simulate what the scene's current time needs for ``meshes`` (default: every live mesh of the scene), on the
    main thread before the time is evaluated (``frame_change_pre``, ``load_post``, ``show_current_frame``)."""
    needed = state_needed(scene.frame_current + scene.frame_subframe)
    simulate_gaps(scene, live_meshes(scene) if meshes is None else meshes, needed, needed)


def show_current_frame(mesh_obj, scene) -> bool:
    """Deform ``mesh_obj`` for the scene's current time now, simulating the frames it needs first (operators and
    property updates: main thread, outside a frame change); returns True if written."""
    prepare_frame(scene, [mesh_obj])
    return evaluate_mesh(mesh_obj, scene, bpy.context.evaluated_depsgraph_get())


def _not_simulated(mesh_obj, frame: int, needed: int) -> str:
    """The sentence for a ``frame`` whose state (after ``needed``) is not cached."""
    reason = _gap_errors.get(mesh_obj.name_full)
    if reason:
        return reason
    if not on_main_thread():
        return (f"{mesh_obj.name}: frame {frame} needs the muscles simulated up to frame {needed}, which a render "
                f"started from the interface cannot do on its own thread: bake the mesh (Bake, in its Implicit "
                f"Skinning panel) or render from the command line.")
    return (f"{mesh_obj.name}: frame {frame} needs the muscles simulated up to frame {needed} first; show the "
            f"frame again, or bake the mesh (Bake, in its Implicit Skinning panel).")


def evaluate_mesh(mesh_obj, scene, depsgraph, preview: bool = False) -> bool:
    """Deform one bound mesh for the scene's current time (module docstring, step 2); returns True if written.

    ``preview``: an edit between frame changes (posing): step from the cached previous state if there is one,
    show the result, cache nothing and forget the cached states from this time on.
    """
    bound = runtime.bound(mesh_obj)
    skin = mesh_obj.implicit_skin
    if bound is None or not skin.enabled or skin.baked:
        return False
    armature = skin.armature
    if armature is None or armature.type != 'ARMATURE':
        raise ValueError(f"{mesh_obj.name}'s armature is gone (deleted or unlinked): pick one in its Implicit "
                         f"Skinning panel and bind again, or turn Implicit Skinning off.")
    frame, subframe = scene.frame_current, scene.frame_subframe
    ch = bound.character
    t0 = time.perf_counter()
    bound.check_scene(mesh_obj, armature, depsgraph)
    if modifiers.is_linked(mesh_obj):
        modifiers.check_linked_stack(mesh_obj)
    before = state_needed(frame + subframe)
    quality = qualities.frame_quality(scene, depsgraph)
    try:
        fresh = advance_to(bound, scene, armature, before + 1, preview=preview, quality=quality)
    except FramesNotSimulated:
        raise ValueError(_not_simulated(mesh_obj, frame, before)) from None
    t1 = time.perf_counter()
    dt = 1.0 / _fps(scene)
    B, inputs = _read(bound, armature, depsgraph)
    if fresh:
        ch.settle(B, inputs, dt=dt, quality=quality)
    t2 = time.perf_counter()
    ch.deformer.keep_volume = skin.keep_volume  # switched live, no new bind
    ch.deformer.land_on_contact = skin.land_on_contact
    ch.deformer.limit_correction = skin.limit_correction
    step = dt * subframe if subframe else dt
    positions = ch.frame(B, inputs, dt=step, quality=quality, frame=None if subframe else frame)
    t3 = time.perf_counter()
    _gap_errors.pop(mesh_obj.name_full, None)
    if preview:
        for cache in bound.caches:  # the interactive pose is in neither quality's animation
            cache.invalidate(before + 1)
    elif not subframe:
        _keep(bound.cache_for(quality), ch, frame)
    turns = ch.offset_turns() if modifiers.has_offsets(mesh_obj) else None  # shape keys ride on the result
    if not units.is_identity(bound.core):  # from the core frame back into armature space
        positions = units.points_from_core(bound.core, positions)
        if turns is not None:
            r = units.rotation(bound.core)
            turns = r.T @ turns @ r
    bound.own_write = modifiers.write_positions(mesh_obj, positions, bound, turns)  # its mesh update is not an edit
    shown = frame + subframe if subframe else frame
    bound.last_frame, bound.last_error = shown, ""
    modifiers.set_active(mesh_obj, True)  # back from a frame that fell back to the Armature result
    t4 = time.perf_counter()
    bound.timings = {"frame": shown, "quality": quality.name,
                     "simulate gap": _gap_seconds.pop(mesh_obj.name_full, 0.0), "read": t2 - t1,
                     **ch.timings, "write": t4 - t3, "total": t4 - t0}
    return True


def evaluate_safely(obj, scene, depsgraph, preview: bool = False) -> None:
    """Evaluate one mesh, binding it again first if the session lost its bind (a reopened file); a failing frame
    shows the plain Armature result with one warning per problem, and so does every frame while the kernels
    compile in the background (``compile_job.waiting()``, said in the *Muscles* tab and the status bar)."""
    if compile_job.waiting():
        modifiers.set_active(obj, False)
        return
    try:
        _bound(obj)
        evaluate_mesh(obj, scene, depsgraph, preview=preview)
    except Exception as ex:  # noqa: BLE001 - a frame handler must never raise: one warning, then the fallback
        modifiers.set_active(obj, False)
        bound = runtime.bound(obj)
        if bound is not None:
            bound.last_error = str(ex)
        key = (obj.name_full, str(ex))
        if key not in _warned:
            _warned.add(key)
            print(f"Implicit Muscles: {obj.name} shows its plain Armature result this frame: {ex}",
                  file=sys.stderr)
            if not isinstance(ex, (ValueError, RuntimeError)):  # a bug of ours: keep its traceback, once
                traceback.print_exc()


def forget_warnings() -> None:
    """Print each problem again the next time it happens."""
    _warned.clear()
    _gap_errors.clear()
