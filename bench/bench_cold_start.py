"""Cold start in Blender 5.0: a fresh Blender user folder (an empty numba cache, as after an install), one process.

* cold: enable the add-on, compile every kernel as *Compile Muscle Kernels* and the compile after an install do
  (``blender/engine/compile_job.py``: two compile processes at once, at a lower priority, then the kernels loaded into
  Blender from the cache), with numba's compile time per entry kernel (its helpers included); then the real
  character (BCN_Epileptic, the scripting guide's script: biceps and triceps on both arms, every mesh bound) bound and its
  first frame shown;
* warm: a second process with the same user folder (the cache filled): enable, load the kernels, bind, first frame.

Each phase is timed on the wall clock and in CPU time (user + system, all threads of the child and, for the compile,
of its compile processes): on a shared machine the wall clock grows with the load, the CPU time much less.

The user folder is made for this run and deleted after it. Blender runs in child processes of this one
(``demo/addon_session.py``). Nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demo"))

import addon_session  # noqa: E402
from _common import REPO, table  # noqa: E402

REPO_MODULE = "im_cold"
"""Module name of the benchmark's extension repository: the add-on is ``bl_ext.im_cold.implicit_muscles``."""
CHARACTER = REPO / ".cache" / "character" / "bcn_epileptic.glb"
"""The real character (``make character``)."""
CHILD_TIMEOUT = 1800
TARGET_COMPILE_S = 60.0
"""Every kernel compiled, cold, on the benchmark machine (goal 20 s)."""
TARGET_FIRST_FRAME_S = 90.0
"""From a fresh install to the real character's first frame, compile included."""


def _fresh_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="implicit_muscles-cold-start-"))
    (folder / "config").mkdir()
    (folder / "source").mkdir()
    (folder / "source" / "implicit_muscles").symlink_to(REPO, target_is_directory=True)
    return folder


def _load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


def run() -> dict:
    if not CHARACTER.is_file():
        raise SystemExit(f"{CHARACTER.relative_to(REPO)} is missing: run `make character` first.")
    folder = _fresh_folder()
    try:
        load_before = _load()
        cold = addon_session.run_child(Path(__file__).resolve(), ["cold", str(CHARACTER)], folder, CHILD_TIMEOUT)
        warm = addon_session.run_child(Path(__file__).resolve(), ["warm", str(CHARACTER)], folder, CHILD_TIMEOUT)
        load_after = _load()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    first_cold = cold["compile_s"] + cold["bind_first_frame_s"]
    rows = [["cold (empty cache)", f"{cold['enable_s']:.1f}", f"{cold['compile_s']:.1f}",
             f"{cold['compile_cpu_s']:.1f}", f"{cold['bind_first_frame_s']:.1f}", f"{cold['bind_cpu_s']:.1f}",
             f"{first_cold:.1f}"],
            ["warm (cache filled)", f"{warm['enable_s']:.1f}", f"{warm['compile_s']:.2f}",
             f"{warm['compile_cpu_s']:.2f}", f"{warm['bind_first_frame_s']:.1f}", f"{warm['bind_cpu_s']:.1f}",
             f"{warm['compile_s'] + warm['bind_first_frame_s']:.1f}"]]
    head = ["start", "enable add-on s", "compile (or load) every kernel s", "its CPU time s",
            "bind BCN_Epileptic + first frame s", "its CPU time s", "to the first frame s"]
    kernels = sorted(cold["compile_seconds"].items(), key=lambda kv: -kv[1])
    per_kernel = table([[name, f"{s:.1f}"] for name, s in kernels], ["entry kernel (helpers included)", "compile s"])
    text = (f"{table(rows, head)}\n\nnumba's compile time per entry kernel, cold:\n\n{per_kernel}\n\n"
            f"The cold compile ran in {cold['compile_processes']} processes at once (CPU time each: "
            f"{', '.join(f'{c:.1f} s' for c in cold['compile_process_cpu_s'])}). "
            f"Machine load before: {load_before}; after: {load_after}.")
    return {"name": "cold_start", "title": "Cold start in Blender 5.0: compile every kernel, bind the real character",
            "table": text, "cold": cold, "warm": warm, "first_frame_cold_s": first_cold,
            "load_before": load_before, "load_after": load_after,
            "targets": {"compile_s": TARGET_COMPILE_S, "first_frame_s": TARGET_FIRST_FRAME_S},
            "meets_target": cold["compile_s"] <= TARGET_COMPILE_S and first_cold <= TARGET_FIRST_FRAME_S}


# --- child side ---------------------------------------------------------------------------------------------------

def _addon(sub):
    return addon_session.addon_module(REPO_MODULE, sub)


def _character(bpy, path):
    """The scripting guide's script up to the bind: BCN_Epileptic, biceps and triceps on both arms; returns the meshes."""
    bpy.ops.import_scene.gltf(filepath=path, bone_heuristic="TEMPERANCE")
    rig = next(o for o in bpy.context.scene.objects if o.type == 'ARMATURE')
    bpy.context.view_layer.objects.active = rig
    for preset in ("biceps", "triceps"):
        bpy.ops.implicit_muscles.add_muscle(origin_bone="B_UpperArm_Left", insertion_bone="B_ForeArm_Left",
                                            preset=preset, name=f"{preset}_Left", mirror=True)
    return [o for o in bpy.context.scene.objects if o.type == 'MESH' and o.find_armature() == rig]


def _child(mode: str, path: str) -> dict:
    import numpy as np

    t0 = time.perf_counter()
    bpy = addon_session.enable(REPO_MODULE, "Implicit Muscles cold start")
    enable_s = time.perf_counter() - t0
    if mode == "cold":
        result = _compile_in_background()
    else:  # the cache filled: the kernels load (as a Bind would load them)
        c0 = time.process_time()
        result = _addon("core.io.kernel_cache").warm_up()
        result["cpu_s"] = time.process_time() - c0
        result["processes"] = 0
    compile_cpu_s = result["cpu_s"]
    meshes = _character(bpy, path)
    runtime = _addon("blender.session.runtime")
    t0 = time.perf_counter()
    c0 = time.process_time()
    for mesh in meshes:
        bpy.context.view_layer.objects.active = mesh
        bpy.ops.implicit_muscles.bind_skin()
    scene = bpy.context.scene
    scene.frame_set(scene.frame_current)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for mesh in meshes:
        buf = np.empty(3 * len(mesh.data.vertices), dtype=np.float32)
        mesh.evaluated_get(depsgraph).data.vertices.foreach_get("co", buf)
    bind_first_frame_s = time.perf_counter() - t0
    bind_cpu_s = time.process_time() - c0
    if any(runtime.bound(m) is None for m in meshes):
        raise RuntimeError("a mesh of the character was not bound")
    return {"mode": mode, "enable_s": enable_s, "compile_s": result["seconds"], "compiled": result["compiled"],
            "compile_processes": result["processes"], "compile_process_cpu_s": result.get("process_cpu_s", []),
            "compile_seconds": result["compile_seconds"], "kernels": result["kernels"],
            "bind_first_frame_s": bind_first_frame_s, "compile_cpu_s": compile_cpu_s, "bind_cpu_s": bind_cpu_s,
            "meshes": len(meshes),
            "muscles": len(meshes[0].implicit_skin.armature.implicit_muscles.muscles),
            "vertices": sum(len(m.data.vertices) for m in meshes), "cache_dir": result["cache_dir"],
            "blender": bpy.app.version_string, "cores": os.cpu_count()}


def _compile_in_background() -> dict:
    """Every kernel compiled as Blender does after an install (``compile_job.start``), waited for; wall and CPU time
    (this process's and its compile processes')."""
    import resource

    job = _addon("blender.engine.compile_job")
    c0 = time.process_time()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    if not job.start():
        raise RuntimeError("the compile job did not start")
    job.wait()
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if job.status.error:
        raise RuntimeError(f"the compile failed: {job.status.error}")
    children = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"seconds": seconds, "compiled": job.status.compiled, "compile_seconds": dict(job.status.compile_seconds),
            "kernels": job.status.total, "cache_dir": _addon("blender.engine.numba_setup").status.cache_dir,
            "cpu_s": time.process_time() - c0 + children, "processes": job.status.processes,
            "process_cpu_s": list(job.status.cpu_seconds)}


def _child_main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2, required=True, metavar=("MODE", "PATH"))
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    addon_session.finish_child(args.result, _child(*args.child))


if __name__ == "__main__":
    if "--child" in sys.argv:
        raise SystemExit(_child_main(sys.argv[1:]))
    from _common import write_json
    res = run()
    print(res["table"])
    write_json(res["name"], res)
