"""End-to-end per-frame time inside Blender (the ``bpy`` module, Blender 5.0): ``scene.frame_set`` with the
add-on's frame handler evaluating the bound skin, next to the same ``frame_set`` with only the Armature modifier,
in the same process; the handler's overhead over the core's own time; the first frame after opening a file; and a
long shot: the arm's animation looped over ``LONG_RUN_FRAMES`` frames in one process, reporting fallbacks,
resident memory and the muscle-state cache (reported, not a target).

Targets: reading the pose and writing the result cost under 10 % of the frame, under 2 ms for the full body;
the first frame after opening a file (compiled kernels cached) under 3 s.

Scenes, built in Blender from ``scenes/paper.py`` by ``demo/blender_rig.py`` (armature, weighted skin mesh with an
Armature modifier, muscle items):

* **arm**: ``arm_rig()`` (2172 vertices, 3 bones) and the four ``arm_muscles()``, added with the public operator
  ``implicit_muscles.add_muscle`` (origin and insertion bones, skin bone, preset) and then set to the core muscles'
  end points, rest widths, shape exponents, eccentricities, particles and cross-section direction (``twist``).
  Animation: the elbow keyed 0 -> 110 -> 20 degrees at frames 1, 30, 60 with the biceps' activation 0 -> 1 -> 0 and
  the brachialis' 0 -> 0.8 -> 0 (``tests/blender/test_evaluation.py``'s arm, with the core's muscles).
* **full body**: ``body_rig()`` (19,498 vertices, 14 bones) and the 50 ``body_muscles()`` as muscle items (origin,
  insertion and skin bone = the muscle's bone). Animation: ``bench_deform``'s run-like swing, the thighs and upper
  arms keyed on every frame (``+-0.6 sin(2 pi 1.5 t)`` rad about X), shins and forearms held bent 0.8 rad.

What differs from the headless scenes: the Blender muscle items carry what the add-on reads
(``blender/scene/reader.py``): the stiffness stays the item's default or the preset's (0.5, the core's default too); the muscles on one skin bone
push each other in both (no muscle has a *Group*); the cross-section direction is the reader's default turned by
``twist`` onto the core muscle's origin normal (for the body muscles, whose core normal is automatic, this is the
core's automatic choice); the skin settings are the mesh's defaults (``implicit_skin``), which are the
core's defaults. Poses come from keyframes (bone-local quaternions), so they are the headless poses up to float32.

Measured per frame, sequential playback (the previous frame's PBD state cached), in rounds that alternate
(a) ``implicit_skin.enabled = False`` (the Armature modifier alone; the handlers run and skip the mesh) and
(b) enabled, on the same frames:

* ``frame_set``: ``scene.frame_set(f)`` (the depsgraph evaluation of the frame and the frame_change_post handlers);
* ``fetch``: then ``obj.evaluated_get(depsgraph).data.vertices.foreach_get('co')`` (identical in both cases; in
  (b) this is where Blender evaluates the mesh again after the handler wrote the attribute);
* ``frame`` = ``frame_set`` + ``fetch``: what one played frame costs end to end;
* ``handlers``: the add-on's own frame_change_post / depsgraph_update_post handlers (wrapped with a timer);
* ``core``: ``bound.character.timings['total']`` (PBD, pose, field, tracking: ``core/character.py``);
* ``pose read``: ``frame_inputs.bone_transforms`` + ``frame_inputs.muscle_values``; ``write``:
  ``modifiers.write_positions`` (wrapped with a timer in this process; ``blender/`` is not modified);
* overhead = handlers - core (pose read, write, and the rest of the handler: state restore and store, checks);
* Blender in ``frame_set`` = ``frame_set`` - handlers (the depsgraph evaluation of the frame).

A sanity check goes into the JSON: on the last frame the fetched mesh equals the positions the handler wrote and
differs from the Armature modifier's result.

First frame after opening a file: the bound scenes are saved at the start frame; a fresh process (same
environment, same Blender user folder, so the same numba cache folder and kernel source paths) enables the add-on,
opens the file and times the first ``frame_set`` + fetch, which binds again (``runtime.rebind``, timed on its own)
and evaluates; then the next frame. Medians of three such processes per scene; one more runs first to warm the
cache and is not reported. "Bind in the session" is the Bind Skin operator in the measuring process, for comparison.

Blender runs in child processes of this one (``python bench/bench_blender.py --child ...``, ``demo/addon_session.py``
says why and how), with a Blender user folder fixed per checkout, so the kernels compile only on the first run ever.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demo"))

import addon_session  # noqa: E402
from _common import REPO, table  # noqa: E402

REPO_MODULE = "im_bench"
"""Module name of the benchmark's extension repository: the add-on is ``bl_ext.im_bench.implicit_muscles``."""
ADDON = addon_session.addon_name(REPO_MODULE)

ARM_FRAMES = range(2, 49)
"""Timed frames of the arm (frame 1, the simulation start, is set untimed before each pass)."""
BODY_FRAMES = range(2, 18)
"""Timed frames of the full body."""
ROUNDS = 3
"""Alternating (Armature only, Implicit Skinning) passes per scene."""
ARM_KEYS = ((1, 0.0, 0.0), (30, 110.0, 1.0), (60, 20.0, 0.0))
"""Arm animation: (frame, elbow flexion [deg], biceps activation); the brachialis follows at 0.8x."""
BODY_KEY_FRAMES = 24
"""The body's swing is keyed on frames 1..24 (one and a half strides at 24 fps)."""

TARGET_SHARE = 0.10
"""Pose read + write under this share of the frame (both scenes)."""
TARGET_BODY_MS = 2.0
"""Pose read + write of the full body under this [ms]."""
TARGET_FIRST_S = 3.0
"""First frame after opening a file [s]."""
TARGET_CROWD_RATIO = 3.0
"""Three full bodies in one scene: at most this many times the frame of one."""
FIRST_FRAME_RUNS = 3
"""Fresh processes timed per scene for the first frame after opening (after one that warms the cache)."""
CHILD_TIMEOUT = 900
LONG_RUN_FRAMES = int(os.environ.get("IMPLICIT_MUSCLES_LONG_RUN_FRAMES", "10000"))
"""Frames of the long shot in Blender (the arm; the full body's long run is the core's, bench_long_run.py)."""


# --- parent side -------------------------------------------------------------------------------------------------

def _home() -> Path:
    return addon_session.home("bench-blender")


def _child(args: list, home: Path) -> dict:
    return addon_session.run_child(Path(__file__).resolve(), args, home, CHILD_TIMEOUT)


def _median_runs(runs: list) -> dict:
    """Per key, the median over runs of a child's numbers; ``runs`` keeps every run."""
    out = {k: statistics.median(r[k] for r in runs) for k, v in runs[0].items() if isinstance(v, (int, float))}
    out["runs"] = runs
    return out


def _ms(x):
    return f"{x:.2f}"


def run() -> dict:
    home = _home()
    files = Path(tempfile.mkdtemp(prefix="files-", dir=home))
    try:
        t0 = time.perf_counter()
        measured = _child(["measure", str(files)], home)
        t1 = time.perf_counter()
        _child(["first-frame", str(files / "arm.blend")], home)  # warms the cache; not reported
        first = {name: _median_runs([_child(["first-frame", str(files / f"{name}.blend")], home)
                                     for _ in range(FIRST_FRAME_RUNS)])
                 for name in ("arm", "full body")}
        t2 = time.perf_counter()
        long = _child(["long-run", str(files / "arm.blend")], home)
        t3 = time.perf_counter()
    finally:
        shutil.rmtree(files, ignore_errors=True)

    rows, where, first_rows, meets = [], [], [], True
    for name, m in measured["scenes"].items():
        a, b = m["armature"], m["handler"]
        pose_write = b["pose_read"] + b["write"]
        share = pose_write / b["frame"]
        ok = share < TARGET_SHARE and (name != "full body" or pose_write < TARGET_BODY_MS)
        f = first[name]
        shown = f["open_s"] + f["first_frame_s"]  # the bind happens while the file opens (handlers.on_load_post)
        ok_first = shown < TARGET_FIRST_S
        meets = meets and ok and ok_first
        rows.append([name, f"{m['vertices']} / {m['bones']} / {m['muscles']}", _ms(a["frame"]), _ms(b["frame"]),
                     f"{b['frame'] / a['frame']:.0f}x", _ms(b["core"]), _ms(b["overhead"]),
                     f"{100 * b['overhead'] / b['frame']:.1f} %", _ms(pose_write), f"{100 * share:.2f} %",
                     "met" if ok else "NOT met"])
        where.append([name, _ms(a["blender"]), _ms(b["blender"]), _ms(b["core"]), _ms(b["pose_read"]),
                      _ms(b["write"]), _ms(b["glue"]), _ms(a["fetch"]), _ms(b["fetch"])])
        first_rows.append([name, f"{f['enable_s']:.2f}", f"{shown:.2f}", f"{f['open_s']:.2f}",
                           f"{f['rebind_during_open_s'] + f['rebind_s']:.2f}", f"{f['first_frame_s']:.2f}",
                           _ms(f["next_frame_ms"]), f"{m['bind_s']:.2f}", "met" if ok_first else "NOT met"])
    frame_table = table(rows, [
        "scene", "vertices / bones / muscles", "Armature only ms", "Implicit Skinning ms", "IS / Armature",
        "core ms", "handler overhead ms (handlers - core)", "overhead / frame", "pose read + write ms",
        "pose read + write / frame", f"target (< {TARGET_SHARE:.0%}; body < {TARGET_BODY_MS:.0f} ms)"])
    where_table = table(where, [
        "scene", "Blender in frame_set ms (Armature only)", "Blender in frame_set ms (IS)", "core ms",
        "pose read ms", "write ms", "rest of the handler ms", "fetch ms (Armature only)", "fetch ms (IS)"])
    first_table = table(first_rows, [
        "scene", "import bpy + enable add-on s", "open to first frame shown s", "of which opening s",
        "of which the bind s (while opening)", "of which the first frame_set s", "next frame ms",
        "bind in the session s", f"target (< {TARGET_FIRST_S:.0f} s)"])
    numba_from = ("the bundled wheel, installed by Blender into the user folder"
                  if "extensions" in measured["numba_path"] else "the environment's")
    note = (f"Medians over {ROUNDS} alternating passes of frames {ARM_FRAMES.start}-{ARM_FRAMES.stop - 1} (arm) and "
            f"{BODY_FRAMES.start}-{BODY_FRAMES.stop - 1} (full body); a frame is frame_set + fetch of the evaluated "
            f"mesh. Blender in frame_set = frame_set minus the add-on's handlers (the depsgraph evaluation). "
            f"First frame: median of {FIRST_FRAME_RUNS} fresh processes. Blender {measured['blender']}, numba "
            f"{measured['numba']} ({numba_from}), {measured['numba_threads']} threads. Measured in {t1 - t0:.0f} s, "
            f"first frames in {t2 - t1:.0f} s.")
    long_table = table([[long["frames"], "yes" if long["finite"] else "NO", long["fallbacks"],
                         f"{long['resident_mb'][0]:.0f} -> {long['resident_mb'][-1]:.0f} MB",
                         f"{long['cache_states']} ({long['cache_mb']:.1f} MB)", _ms(long["frame_ms"]),
                         f"{t3 - t2:.0f} s"]],
                       ["arm frames played", "finite", "frames fallen back", f"resident memory at frame "
                        f"{long['resident_at'][0]} -> {long['resident_at'][-1]}", "cached muscle states",
                        "median frame ms", "time"])
    crowd = measured["crowd"]
    crowd_table = table([[crowd["bodies"], _ms(crowd["one_live_ms"]), _ms(crowd["three_live_ms"]),
                          f"{crowd['ratio']:.2f}x", "met" if crowd["ratio"] <= TARGET_CROWD_RATIO else "NOT met"]],
                        ["full bodies in the scene", "frame ms, the first one live (the others on their Armature "
                         "modifier)", "frame ms, all three live", "three / one",
                         f"target (<= {TARGET_CROWD_RATIO:.0f}x)"])
    return {
        "name": "blender",
        "long_run": long,
        "crowd": crowd,
        "title": "End-to-end per frame in Blender: frame_set with the handler vs the Armature modifier alone",
        "scenes": measured["scenes"],
        "blender_version": measured["blender"],
        "first_frame": first,
        "medians": {name: {"armature_ms": m["armature"], "handler_ms": m["handler"]}
                    for name, m in measured["scenes"].items()},
        "ratios": {name: {"frame_is_over_armature": m["handler"]["frame"] / m["armature"]["frame"],
                          "pose_read_write_share": (m["handler"]["pose_read"] + m["handler"]["write"])
                          / m["handler"]["frame"],
                          "overhead_share": m["handler"]["overhead"] / m["handler"]["frame"]}
                   for name, m in measured["scenes"].items()},
        "targets": {"pose_read_write_share": TARGET_SHARE, "body_pose_read_write_ms": TARGET_BODY_MS,
                    "first_frame_s": TARGET_FIRST_S, "crowd_ratio": TARGET_CROWD_RATIO},
        "meets_target": bool(meets),
        "table": f"{frame_table}\n\nWhere the Implicit Skinning frame goes:\n\n{where_table}\n\n"
                 f"First frame after opening the saved file (fresh process, kernels cached):\n\n{first_table}\n\n"
                 f"A long shot: the arm's animation looping (Cycles F-curve modifiers), played frame by frame in one "
                 f"Blender process:\n\n{long_table}\n\nSeveral characters: three full bodies with their 50 "
                 f"muscles on separate armatures in one scene, played frame by frame (the add-on's frame handler "
                 f"evaluates the bound meshes one after the other; each mesh's kernels use every core):"
                 f"\n\n{crowd_table}\n\n{note}",
    }


# --- child side: Blender ---------------------------------------------------------------------------------------

class _Timer:
    """Accumulated wall time and call count per wrapped function, reset per frame."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)

    def reset(self):
        self.seconds.clear()
        self.calls.clear()

    def wrap(self, fn, key):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[key] += time.perf_counter() - t0
                self.calls[key] += 1
        timed.__name__ = getattr(fn, "__name__", key)
        timed.__wrapped__ = fn
        return timed

    def wrap_attribute(self, module, name, key=None):
        setattr(module, name, self.wrap(getattr(module, name), key or name))

    def wrap_handlers(self, bpy, prefix):
        """Wrap the add-on's frame_change_post and depsgraph_update_post handlers (kept persistent)."""
        for kind in ("frame_change_post", "depsgraph_update_post"):
            handlers = getattr(bpy.app.handlers, kind)
            for k, fn in enumerate(handlers):
                if getattr(fn, "__module__", "").startswith(prefix) and not hasattr(fn, "__wrapped__"):
                    handlers[k] = bpy.app.handlers.persistent(self.wrap(fn, f"handler:{kind}"))


def _blender():
    """``bpy`` with the add-on enabled from this source tree (a user extension repository ``im_bench``)."""
    return addon_session.enable(REPO_MODULE, "Implicit Muscles bench")


def _addon(sub):
    return addon_session.addon_module(REPO_MODULE, sub)


def _fetch(bpy, obj, buf):
    depsgraph = bpy.context.evaluated_depsgraph_get()
    obj.evaluated_get(depsgraph).data.vertices.foreach_get("co", buf)


def _arm_scene(bpy, scenes, blender_rig):
    rig = scenes.arm_rig()
    armature, skin = blender_rig.build_rig(rig, "Rig", "Arm")
    items = blender_rig.add_arm_muscles(armature, scenes)
    elbow = armature.pose.bones["elbow"]
    elbow.rotation_mode = 'QUATERNION'
    for frame, degrees, act in ARM_KEYS:
        elbow.rotation_quaternion = blender_rig.bone_rotation(armature, "elbow", (0.0, -1.0, 0.0),
                                                              math.radians(degrees))
        elbow.keyframe_insert("rotation_quaternion", frame=frame)
        for k, share in ((0, 1.0), (2, 0.8)):
            items[k].activation = share * act
            armature.keyframe_insert(f"implicit_muscles.muscles[{k}].activation", frame=frame)
    return armature, skin, len(items)


def _body_scene(bpy, scenes, blender_rig, suffix="", offset=0.0):
    import numpy as np

    rig = scenes.body_rig()
    armature, skin = blender_rig.build_rig(rig, "Rig" + suffix, "Body" + suffix)
    armature.location.x = offset
    muscles, _, owner = scenes.body_muscles()  # contact sets are the skin bones on both sides: no Group needed
    blender_rig.add_muscles(armature, muscles, owner, owner, owner)
    names = list(rig.names)
    swing = [n for n in names if n.startswith(("thigh", "upper_arm"))]
    bent = [n for n in names if n.startswith(("shin", "forearm"))]
    for n in swing + bent:
        armature.pose.bones[n].rotation_mode = 'QUATERNION'
    for n in bent:
        pb = armature.pose.bones[n]
        pb.rotation_quaternion = blender_rig.bone_rotation(armature, n, (1.0, 0.0, 0.0), 0.8)
        pb.keyframe_insert("rotation_quaternion", frame=1)
    for frame in range(1, BODY_KEY_FRAMES + 1):
        t = (frame - 1) / 24.0
        for n in swing:
            sign = 1.0 if n.endswith(".L") else -1.0
            pb = armature.pose.bones[n]
            pb.rotation_quaternion = blender_rig.bone_rotation(armature, n, (1.0, 0.0, 0.0),
                                                               sign * 0.6 * np.sin(2 * np.pi * 1.5 * t))
            pb.keyframe_insert("rotation_quaternion", frame=frame)
    return armature, skin, len(muscles)


def _pass(bpy, scene, skin, frames, timer, bound, buf, rows, last):
    scene.frame_set(frames[0] - 1)  # the simulation start (or the frame before): untimed
    for f in frames:
        timer.reset()
        t0 = time.perf_counter()
        scene.frame_set(f)
        t1 = time.perf_counter()
        handlers_frame_set = sum(v for k, v in timer.seconds.items() if k.startswith("handler:"))
        _fetch(bpy, skin, buf)
        t2 = time.perf_counter()
        s = timer.seconds
        row = {"frame_set": t1 - t0, "fetch": t2 - t1, "frame": t2 - t0,
               "handlers": sum(v for k, v in s.items() if k.startswith("handler:")),
               "handlers_frame_set": handlers_frame_set,
               "evaluate": s["evaluate_mesh"], "evaluate_calls": timer.calls["evaluate_mesh"],
               "pose_read": s["bone_transforms"] + s["muscle_values"], "write": s["write_positions"]}
        row["blender"] = row["frame_set"] - handlers_frame_set
        if bound is not None:
            row["core"] = bound.character.timings.get("total", 0.0)
            row["overhead"] = row["handlers"] - row["core"]
            row["glue"] = row["overhead"] - row["pose_read"] - row["write"]
        rows.append(row)
    last[:] = buf


def _median(rows):
    keys = rows[0].keys()
    out = {k: statistics.median(r[k] for r in rows) for k in keys}
    return {k: (v if k.endswith("_calls") else 1e3 * v) for k, v in out.items()}


def _measure_scene(bpy, name, build, frames, timer, files):
    import numpy as np

    runtime = _addon("blender.session.runtime")
    scenes = _addon("scenes.paper")
    sys.path.insert(0, str(REPO / "demo"))
    import blender_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    runtime.clear()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    t0 = time.perf_counter()
    armature, skin, muscle_count = build(bpy, scenes, blender_rig)
    build_s = time.perf_counter() - t0
    scene.frame_start, scene.frame_end = 1, frames[-1] + 1
    V = len(skin.data.vertices)
    buf = np.empty(3 * V, dtype=np.float32)
    plain, ours = np.empty_like(buf), np.empty_like(buf)
    _pass(bpy, scene, skin, frames[:3], timer, None, buf, [], plain)  # warm-up, Armature only
    scene.frame_set(1)
    bpy.context.view_layer.objects.active = skin
    t0 = time.perf_counter()
    result = bpy.ops.implicit_muscles.bind_skin()
    bind_s = time.perf_counter() - t0
    if result != {'FINISHED'}:
        raise RuntimeError(f"bind_skin on {skin.name}: {result}")
    bound = runtime.bound(skin)
    _pass(bpy, scene, skin, frames[:3], timer, bound, buf, [], ours)  # warm-up (kernels already compiled by bind)
    arm_rows, is_rows = [], []
    for _ in range(ROUNDS):
        skin.implicit_skin.enabled = False
        _pass(bpy, scene, skin, frames, timer, None, buf, arm_rows, plain)
        skin.implicit_skin.enabled = True
        _pass(bpy, scene, skin, frames, timer, bound, buf, is_rows, ours)
    last_local = getattr(bound, "last_local", None)  # the working tree's Bound keeps the last written positions
    written = None if last_local is None else np.array(last_local, dtype=np.float32).ravel()
    scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=str(Path(files) / f"{name}.blend"), copy=True)
    return {
        "vertices": V, "muscles": muscle_count, "bones": len(armature.data.bones), "build_s": build_s,
        "bind_s": bind_s, "frames": [frames[0], frames[-1]], "rounds": ROUNDS,
        "armature": _median(arm_rows), "handler": _median(is_rows),
        # sanity: the fetched mesh is Implicit Skinning's result, not the Armature modifier's
        "last_frame_is_vs_armature_max_mm": float(1e3 * np.abs(ours - plain).max()),
        "last_frame_fetched_vs_written_max_mm": (float(1e3 * np.abs(ours - written).max())
                                                 if written is not None and written.size == ours.size else None),
    }


def _measure_crowd(bpy, frames, timer):
    """Three full bodies on their own armatures in one scene: the frame with all three bound and live against the
    frame with only the first one live (the other two on their Armature modifier), alternating passes."""
    import numpy as np

    runtime = _addon("blender.session.runtime")
    scenes = _addon("scenes.paper")
    import blender_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    runtime.clear()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    skins = [_body_scene(bpy, scenes, blender_rig, suffix, 1.5 * k)[1] for k, suffix in enumerate(("", ".B", ".C"))]
    scene.frame_start, scene.frame_end = 1, frames[-1] + 1
    scene.frame_set(1)
    for skin in skins:
        bpy.context.view_layer.objects.active = skin
        if bpy.ops.implicit_muscles.bind_skin() != {'FINISHED'}:
            raise RuntimeError(f"bind_skin on {skin.name} failed")
    buf = np.empty(3 * len(skins[0].data.vertices), dtype=np.float32)
    rows = {1: [], 3: []}
    for rnd in range(ROUNDS + 1):  # the first round warms up
        for live in (1, 3):
            for k, skin in enumerate(skins):
                skin.implicit_skin.enabled = k < live
            _pass(bpy, scene, skins[0], frames, timer, runtime.bound(skins[0]), buf, rows[live] if rnd else [],
                  buf.copy())
    one, three = _median(rows[1]), _median(rows[3])
    return {"bodies": len(skins), "one_live_ms": one["frame"], "three_live_ms": three["frame"],
            "ratio": three["frame"] / one["frame"], "handlers_one_ms": one["handlers"],
            "handlers_three_ms": three["handlers"]}


def _child_measure(files) -> dict:
    bpy = _blender()
    import numba

    frame_inputs, playback = _addon("blender.scene.frame_inputs"), _addon("blender.session.playback")
    timer = _Timer()
    for fn in ("bone_transforms", "muscle_values"):
        timer.wrap_attribute(frame_inputs, fn)
    timer.wrap_attribute(playback, "evaluate_mesh")
    timer.wrap_attribute(_addon("blender.session.modifiers"), "write_positions")
    timer.wrap_handlers(bpy, ADDON)
    scenes = {"arm": _measure_scene(bpy, "arm", _arm_scene, ARM_FRAMES, timer, files),
              "full body": _measure_scene(bpy, "full body", _body_scene, BODY_FRAMES, timer, files)}
    crowd = _measure_crowd(bpy, BODY_FRAMES, timer)
    engine = _addon("blender.engine.numba_setup").status
    return {"scenes": scenes, "crowd": crowd, "blender": bpy.app.version_string,
            "numba_threads": numba.get_num_threads(),
            "numba": engine.numba_version, "numba_path": engine.numba_path, "numba_cache": engine.cache_dir}


def _child_first_frame(path) -> dict:
    import numpy as np

    t0 = time.perf_counter()
    bpy = _blender()
    enable_s = time.perf_counter() - t0
    runtime = _addon("blender.session.runtime")
    playback = _addon("blender.session.playback")
    timer = _Timer()
    timer.wrap_attribute(runtime, "rebind")
    timer.wrap_attribute(playback, "evaluate_mesh")
    t0 = time.perf_counter()
    bpy.ops.wm.open_mainfile(filepath=path)
    open_s = time.perf_counter() - t0
    rebind_during_open = timer.seconds["rebind"]
    scene = bpy.context.scene
    skin = next(o for o in scene.objects if o.type == 'MESH' and o.implicit_skin.bound)
    buf = np.empty(3 * len(skin.data.vertices), dtype=np.float32)
    timer.reset()
    t0 = time.perf_counter()
    scene.frame_set(scene.frame_current)
    _fetch(bpy, skin, buf)
    first_s = time.perf_counter() - t0
    rebind_s, evaluate_s = timer.seconds["rebind"], timer.seconds["evaluate_mesh"]
    if runtime.bound(skin) is None:
        raise RuntimeError(f"{skin.name} was not bound again by the first frame")
    t0 = time.perf_counter()
    scene.frame_set(scene.frame_current + 1)
    _fetch(bpy, skin, buf)
    next_ms = 1e3 * (time.perf_counter() - t0)
    return {"enable_s": enable_s, "open_s": open_s, "rebind_during_open_s": rebind_during_open,
            "first_frame_s": first_s, "rebind_s": rebind_s, "first_evaluate_s": evaluate_s,
            "next_frame_ms": next_ms, "vertices": len(skin.data.vertices)}


def _child_long_run(path) -> dict:
    """Play the saved arm's animation looped over ``LONG_RUN_FRAMES`` frames: finite, fallbacks, resident memory
    every 1000 frames, the muscle-state cache at the end."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from long_run import resident_mb

    bpy = _blender()
    runtime = _addon("blender.session.runtime")
    animation = _addon("blender.scene.animation")
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = bpy.context.scene
    skin = next(o for o in scene.objects if o.type == 'MESH' and o.implicit_skin.bound)
    rig = skin.implicit_skin.armature
    for fc in animation.fcurves(rig):
        fc.modifiers.new('CYCLES')
    scene.frame_start, scene.frame_end = 1, LONG_RUN_FRAMES
    buf = np.empty(3 * len(skin.data.vertices), dtype=np.float32)
    finite, fallbacks, resident, at, times = True, 0, [], [], []
    for f in range(1, LONG_RUN_FRAMES + 1):
        t0 = time.perf_counter()
        scene.frame_set(f)
        _fetch(bpy, skin, buf)
        times.append(time.perf_counter() - t0)
        finite = finite and bool(np.isfinite(buf).all())
        fallbacks += bool(runtime.bound(skin).last_error)
        if f % 1000 == 0 or f == LONG_RUN_FRAMES:
            resident.append(resident_mb())
            at.append(f)
    cache = runtime.bound(skin).cache
    state_bytes = next(iter(cache.states.values())).nbytes
    return {"frames": LONG_RUN_FRAMES, "finite": finite, "fallbacks": fallbacks, "resident_mb": resident,
            "resident_at": at, "cache_states": len(cache), "cache_mb": len(cache) * state_bytes / 2 ** 20,
            "frame_ms": 1e3 * statistics.median(times)}


def _child_main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2, required=True, metavar=("MODE", "PATH"))
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    mode, path = args.child
    if mode == "measure":
        out = _child_measure(path)
    elif mode == "first-frame":
        out = _child_first_frame(path)
    elif mode == "long-run":
        out = _child_long_run(path)
    else:
        raise SystemExit(f"unknown mode {mode}")
    addon_session.finish_child(args.result, out)


if __name__ == "__main__":
    if "--child" in sys.argv:
        raise SystemExit(_child_main(sys.argv[1:]))
    from _common import write_json
    res = run()
    print(res["table"])
    write_json(res["name"], res)
