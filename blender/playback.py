"""Per-frame evaluation of bound skins (paper §7.2, DESIGN.md §3): one path for playback, jumps, gaps and bakes.

``evaluate_mesh`` deforms one bound mesh for the scene's current frame:

1. ``advance_to`` brings the muscles' PBD state to the end of the previous frame: from the state cached for it, or
   by simulating the frames in between from the last state cached before (``core/frame_cache.py``), setting each
   frame in turn to read its pose (the handlers ignore these frame changes, ``busy``). The simulation starts at the
   start frame (``rig.simulation_start``), where the muscles first settle into that frame's pose (``settle``).
2. It reads the *evaluated* armature (pose matrices with ``foreach_get``, the muscles' animated values), so playback,
   scripts and animation renders see the same values, and runs Implicit Skinning (``core/character.py``).
3. It caches the frame's muscle state and writes the positions for the modifier (``blender/modifiers.py``).

A frame that fails (a scaled, NaN or far-flung pose, a non-finite result, a mesh whose vertex count, armature's bone
count or place relative to its armature changed since bind) shows the plain Armature result, with one warning printed
per problem (``evaluate_safely``); the next frame that evaluates switches Implicit Skinning back on. Each frame's
stage times [s] are kept in ``Bound.timings``: ``simulate gap``, ``read``, the core's stages, ``write``, ``total``.
"""
from __future__ import annotations

import sys
import time
import traceback

import bpy
import numpy as np

from . import modifiers, rig, runtime

_busy = False
_warned: set = set()


def busy() -> bool:
    """True while ``advance_to`` sets frames to read their poses: handlers ignore those frame changes."""
    return _busy


def bone_transforms(armature_eval, rest_inverse) -> np.ndarray:
    """``B_j = M_j M_ref_j^-1`` ``(B, 4, 4)`` from the evaluated pose (armature space)."""
    bones = armature_eval.pose.bones
    buf = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix", buf)
    M = buf.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)  # foreach_get gives column-major matrices
    return M @ rest_inverse


def muscle_values(armature_eval, source):
    """The evaluated muscles' animated inputs ``(fibres,)`` per core fibre, as one
    :class:`core.pbd.control.MuscleInputs`: activation, stiffness, width scale, and the eccentricity of the animated
    rest and active flatness mixed by the activation (paper §5.2)."""
    from ..core.pbd.control import muscle_inputs

    muscles = armature_eval.implicit_muscles.muscles
    n = len(muscles)
    out = []
    for name in ("activation", "stiffness", "width_scale", "eccentricity_rest", "eccentricity_active"):
        buf = np.empty(n, dtype=np.float32)
        muscles.foreach_get(name, buf)
        out.append(buf.astype(np.float64)[source])
    act, stiff, scale, e0, e1 = out
    return muscle_inputs(act, stiff, scale, eccentricity_rest=e0, eccentricity_active=e1)


def _fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def _read(bound, armature, depsgraph) -> tuple:
    """``(B, inputs)`` of the evaluated armature: bone transforms and :func:`muscle_values`."""
    arm_eval = armature.evaluated_get(depsgraph)
    return bone_transforms(arm_eval, bound.rest_inverse), muscle_values(arm_eval, bound.source)


def advance_to(bound, scene, armature, frame: int, preview: bool = False) -> bool:
    """Put ``bound.character``'s muscle state at the end of ``frame - 1`` (module docstring); returns True if
    ``frame`` is at or before the start frame (the frame starts from rest and settles). ``preview``: only a state
    at hand is used (rest, or the cached previous frame), no gap is simulated."""
    global _busy
    start = rig.simulation_start(armature, scene)
    ch = bound.character
    first, state = bound.cache.resume(frame, start)
    if preview and first < frame:
        return False
    if state is None:
        ch.reset()
    else:
        ch.restore(state)
    if first == frame:
        return frame <= start
    _busy = True
    try:
        dt = 1.0 / _fps(scene)
        for f in range(first, frame):
            scene.frame_set(f)
            B, inputs = _read(bound, armature, bpy.context.evaluated_depsgraph_get())
            if f == start:
                ch.settle(B, dt=dt, inputs=inputs)
            ch.step_muscles(B, dt=dt, inputs=inputs)
            bound.cache.store(f, ch.state())
        scene.frame_set(frame)
    finally:
        _busy = False
    return False


def evaluate_mesh(mesh_obj, scene, depsgraph, preview: bool = False) -> bool:
    """Deform one bound mesh for the scene's current frame (module docstring); returns True if written.

    ``preview``: an edit between frame changes (posing): step from the cached previous frame if there is one,
    show the result, cache nothing and forget the cached states from this frame on.
    """
    bound = runtime.bound(mesh_obj)
    skin = mesh_obj.implicit_skin
    if bound is None or not skin.enabled or skin.baked:
        return False
    armature = skin.armature
    if armature is None or armature.type != 'ARMATURE':
        raise ValueError(f"{mesh_obj.name}'s armature is gone (deleted or unlinked): pick one in its Implicit "
                         f"Skinning panel and bind again, or turn Implicit Skinning off.")
    frame = scene.frame_current
    ch = bound.character
    t0 = time.perf_counter()
    bound.check_scene(mesh_obj, armature, depsgraph)
    if modifiers.is_linked(mesh_obj):
        modifiers.check_linked_stack(mesh_obj)
    fresh = advance_to(bound, scene, armature, frame, preview=preview)
    t1 = time.perf_counter()
    dt = 1.0 / _fps(scene)
    B, inputs = _read(bound, armature, depsgraph)
    if fresh:
        ch.settle(B, dt=dt, inputs=inputs)
    t2 = time.perf_counter()
    ch.deformer.keep_volume = skin.keep_volume  # switched live, no new bind
    ch.deformer.land_on_contact = skin.land_on_contact
    ch.deformer.limit_correction = skin.limit_correction
    positions = ch.frame(B, dt=dt, frame=frame, inputs=inputs)
    t3 = time.perf_counter()
    if preview:
        bound.cache.invalidate(frame)
    else:
        bound.cache.store(frame, ch.state())
    turns = ch.offset_turns() if modifiers.has_offsets(mesh_obj) else None  # shape keys ride on the result
    bound.own_write = modifiers.write_positions(mesh_obj, positions, bound, turns)  # its mesh update is not an edit
    bound.last_frame, bound.last_error = frame, ""
    modifiers.set_active(mesh_obj, True)  # back from a frame that fell back to the Armature result
    t4 = time.perf_counter()
    bound.timings = {"frame": frame, "simulate gap": t1 - t0, "read": t2 - t1, **ch.timings, "write": t4 - t3,
                     "total": t4 - t0}
    return True


def evaluate_safely(obj, scene, depsgraph, preview: bool = False) -> None:
    """Evaluate one mesh, binding it again first if the session lost its bind (a reopened file); a failing frame
    shows the plain Armature result with one warning per problem."""
    try:
        if runtime.bound(obj) is None and obj.implicit_skin.bound:
            runtime.rebind(obj)
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


def live_meshes(scene) -> list:
    """The scene's meshes with Implicit Skinning on and not playing a bake."""
    return [obj for obj in scene.objects
            if obj.type == 'MESH' and obj.implicit_skin.enabled and not obj.implicit_skin.baked]
