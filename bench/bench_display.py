"""Showing the muscles and the viewport's preview quality on the demo's real characters, inside Blender (the ``bpy``
module, Blender 5.0).

The characters are built as the demo builds its *muscles* copy (``demo/shots.py``: the glTF import, the muscles
added with the operator and presets, handles moved, mirrored, activation keyed from the joints' flexion), then every
mesh of the armature is bound. Per character, two passes over the same frames, sequential playback from the start
frame: the scene's *Viewport Quality* at Render and at Preview (``core/quality.py``; each quality simulates into its
own cache), interleaved frame by frame so that both see the same load. Per frame:

* ``frame``: ``scene.frame_set(f)`` and the evaluated positions of every bound mesh fetched (what one played frame
  costs end to end, the Armature modifiers and the add-on's handlers included);
* ``display``: ``blender/display/viewport.py`` ``refresh``: the muscles' triangles sampled again from the frame's
  simulated muscles (``blender/display/muscle_shapes.py``, one numba kernel) and compared with the last drawing, which
  is what the draw handler does once per changed frame before it uploads the GPU batch. Headless Blender has no GPU
  context, so the upload (``batch_for_shader`` of a few thousand vertices) and the draw call are not in this number.

Medians over the timed frames. Nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demo"))

import addon_session  # noqa: E402
from _common import table  # noqa: E402

REPO_MODULE = "im_bench"
"""The same extension repository (and Blender user folder, so the same kernel cache) as ``bench_blender.py``."""
FRAMES = 40
"""Timed frames per pass, after ``WARMUP`` untimed ones from the start frame."""
WARMUP = 4
CHARACTERS = ("character", "human")
"""``demo/shots.py`` specs: BCN_Epileptic (12 muscles) and the dense human (18 muscles)."""
TARGET_SHARE = 0.05
"""Showing the muscles: under this share of a played frame."""
CHILD_TIMEOUT = 1800


def run() -> dict:
    home = addon_session.home("bench-blender")
    rows, results = [], {}
    for name in CHARACTERS:
        res = addon_session.run_child(Path(__file__).resolve(), ["measure", name], home, CHILD_TIMEOUT)
        results[name] = res
        rows.append([res["title"], f"{res['frame_render_ms']:.1f}", f"{res['frame_preview_ms']:.1f}",
                     f"{res['core_render_ms']:.1f} / {res['core_preview_ms']:.1f}", f"{res['display_ms']:.2f}",
                     f"{100 * res['display_share']:.1f} %"])
    meets = all(r["display_share"] < TARGET_SHARE for r in results.values())
    return {"name": "display", "title": "Showing the muscles, and Preview against Render quality, in Blender 5.0",
            "table": table(rows, ["character", "played frame, Render [ms]", "played frame, Preview [ms]",
                                  "core Render / Preview [ms]", "muscles' triangles per frame [ms]",
                                  "share of the Render frame"]),
            "results": results, "target_share": TARGET_SHARE, "meets_target": meets}


# --- child side ----------------------------------------------------------------------------------------------------

def _child_measure(name: str) -> dict:
    import numpy as np

    bpy = addon_session.enable(REPO_MODULE, "Implicit Muscles bench")
    import shots

    spec = {"character": shots.BCN_EPILEPTIC, "human": shots.HUMAN}[name]
    rig_module = addon_session.addon_module(REPO_MODULE, "blender.scene.rig")
    display = addon_session.addon_module(REPO_MODULE, "blender.display.viewport")
    runtime = addon_session.addon_module(REPO_MODULE, "blender.session.runtime")
    bpy.ops.wm.read_homefile(use_empty=True)
    runtime.clear()
    armature, meshes = shots._import_character(bpy, spec, "muscles")
    items = shots._character_muscles(bpy, spec, armature, rig_module)
    scene = bpy.context.scene
    first, last = (int(round(f)) for f in armature.animation_data.action.frame_range)
    last = min(last, first + WARMUP + FRAMES)
    scene.frame_start, scene.frame_end = first, last
    for frame in range(first, last + 1, 4):  # activation from the joints' flexion, as the demo keys it
        scene.frame_set(frame)
        for k, item in enumerate(items):
            preset, side = item.name.rsplit("_", 1)
            joint, share = next(m[4:6] for m in spec.muscles if m[0] == preset)
            item.activation = share if joint is None else share * min(
                1.0, shots._flexion(spec, armature, joint, side) / shots.FULL_FLEXION)
            armature.keyframe_insert(f"implicit_muscles.muscles[{k}].activation", frame=frame)
    scene.frame_set(first)
    for mesh in meshes:
        bpy.context.view_layer.objects.active = mesh
        if bpy.ops.implicit_muscles.bind_skin() != {'FINISHED'}:
            raise RuntimeError(f"bind_skin on {mesh.name} failed")
    buffers = {m.name: np.empty(3 * len(m.data.vertices), dtype=np.float32) for m in meshes}
    out = {"title": f"{spec.name} ({sum(len(m.data.vertices) for m in meshes):,} vertices, "
                    f"{len(items)} muscles)", "muscles": len(items),
           "vertices": sum(len(m.data.vertices) for m in meshes)}
    display_mesh = addon_session.addon_module(REPO_MODULE, "blender.display.muscle_shapes")
    times = {q: ([], []) for q in ('RENDER', 'PREVIEW')}
    display_times = []
    for k, frame in enumerate(range(first, last + 1)):
        for quality in ('RENDER', 'PREVIEW'):  # interleaved: both see the same load; each has its own cache
            scene.implicit_muscles.viewport_quality = quality  # shows the frame before again at this quality
            t0 = time.perf_counter()
            scene.frame_set(frame)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            for mesh in meshes:
                mesh.evaluated_get(depsgraph).data.vertices.foreach_get("co", buffers[mesh.name])
            t1 = time.perf_counter()
            if any(runtime.bound(m).timings.get("quality") != quality.lower() for m in meshes):
                raise RuntimeError(f"frame {frame} was not evaluated at {quality} quality")
            if k < WARMUP:
                continue
            times[quality][0].append(t1 - t0)
            times[quality][1].append(sum(runtime.bound(m).timings.get("total", 0.0) for m in meshes))
            if quality == 'RENDER':
                display.mark_dirty()
                t2 = time.perf_counter()
                changed = display.refresh(scene)
                display_times.append(time.perf_counter() - t2)
                if armature.name_full not in changed:
                    raise RuntimeError(f"frame {frame}: the muscles' drawing did not change")
    for quality, (frame_times, core_times) in times.items():
        out[f"frame_{quality.lower()}_ms"] = 1e3 * statistics.median(frame_times)
        out[f"core_{quality.lower()}_ms"] = 1e3 * statistics.median(core_times)
    out["display_ms"] = 1e3 * statistics.median(display_times)
    out["display_share"] = out["display_ms"] / out["frame_render_ms"]
    out["simulated_muscles_drawn"] = len({int(i) for _, source in display_mesh._live_batches(armature, scene)
                                          for i in source})
    drawn = addon_session.addon_module(REPO_MODULE, "blender.display.muscle_shapes").rig_mesh(armature, scene)
    out["drawn_vertices"], out["drawn_triangles"] = len(drawn.vertices), len(drawn.faces)
    return out


def _child_main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2, required=True, metavar=("MODE", "NAME"))
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    mode, name = args.child
    if mode != "measure":
        raise SystemExit(f"unknown mode {mode}")
    addon_session.finish_child(args.result, _child_measure(name))


if __name__ == "__main__":
    if "--child" in sys.argv:
        raise SystemExit(_child_main(sys.argv[1:]))
    from _common import write_json
    res = run()
    print(res["table"])
    write_json(res["name"], res)
