"""The kernel warm-up: it compiles every kernel the core's bind and frames use, with progress, in this process or
in a separate one that fills an empty cache (core/io/kernel_cache.py, core/io/compile_process.py)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from implicit_muscles.core.io import compile_process, kernel_cache, warm_up_scene
from implicit_muscles.core.pbd.control import MuscleInputs
from implicit_muscles.scenes import paper as scenes


def test_warm_up_compiles_every_kernel_a_bind_and_its_frames_use():
    import numba

    result = kernel_cache.warm_up()
    before = kernel_cache.compiled_signatures()
    assert result["kernels"] == len(kernel_cache.entry_kernels())
    assert kernel_cache.is_warm(numba.config.CACHE_DIR)  # a complete warm-up marks its folder
    assert [name for name in kernel_cache.entry_kernels() if before[name] == 0] == []
    # another character than the warm-up's: the paper's arm, bound, settled, played, its muscles' surfaces
    from implicit_muscles.core.muscle.surface import batch_surfaces, muscle_surface
    arm = scenes.arm_character()
    arm.settle(scenes.arm_pose(20.0))
    for frame in range(3):
        bones, activation = scenes.biceps_curl(frame, frames=24)
        arm.frame(bones, MuscleInputs(activation=activation, stiffness=[0.5] * 4), dt=1 / 24)
    muscle_surface(arm.model.muscles[0], rings=24, sides=12)
    batch_surfaces(arm.muscle_batch, rings=16, sides=12)  # the viewport's drawing
    after = kernel_cache.compiled_signatures()
    assert {name: (before[name], after[name]) for name in after if after[name] != before[name]} == {}


SHARED_HELPERS = ("fusiform._field_arrays", "fusiform._project", "fusiform._closest_segment", "axis._one_axis",
                  "profile._profile_one")
"""Helpers called from several kernels with arguments of different types (literals, read-only globals, unsigned
parallel indices): each is compiled for one signature."""


def test_helpers_shared_by_several_kernels_are_compiled_once(tmp_path):
    """The muscle field, the profiles, the axes and the PBD substeps (with its muscle-muscle contact) compiled into
    an empty cache by the compile process: one machine-code file per shared helper (numba writes one per signature)."""
    import implicit_muscles

    args = compile_process.command("implicit_muscles", implicit_muscles.__path__[0], str(tmp_path),
                                   ("muscles", "dynamics"))
    run = subprocess.run(args, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stderr
    files = {}
    for path in tmp_path.rglob("*.nbc"):
        name = path.name.split("-")[0]
        files[name] = files.get(name, 0) + 1
    assert {name: files.get(name, 0) for name in SHARED_HELPERS if files.get(name, 0) != 1} == {}


def test_progress_counts_entry_kernels_up_to_all_of_them():
    seen = []
    result = kernel_cache.warm_up(("skinning",), progress=lambda done, total, name: seen.append((done, total)))
    assert result["kernels"] == 3
    assert seen[-1] == (3, 3)
    assert all(total == 3 for _, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_unknown_stage_is_refused_with_the_stages_named():
    with pytest.raises(ValueError, match="unknown warm-up stage 'bake': the stages are skinning, muscles"):
        kernel_cache.entry_kernels(("bake",))


def test_compile_process_fills_an_empty_cache_and_reports_progress(tmp_path):
    import implicit_muscles

    args = compile_process.command("implicit_muscles", implicit_muscles.__path__[0], str(tmp_path), ("skinning",))
    run = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    progress = [(line["done"], line["total"]) for line in lines if "done" in line]
    assert progress[0] == (0, 3) and progress[-1] == (3, 3)
    assert lines[-1]["result"]["kernels"] == 3 and lines[-1]["result"]["compiled"]
    index = {p.name.split("-")[0] for p in tmp_path.rglob("*.nbi")}
    assert {"skinning.rigid_status", "skinning.bone_dual_quaternions",
            "skinning.dual_quaternion_skinning"} <= index, index
    assert not kernel_cache.is_warm(tmp_path)  # only a complete warm-up marks the folder warm


def test_compile_process_reports_a_failure_in_one_line(tmp_path):
    import implicit_muscles

    args = compile_process.command("implicit_muscles", implicit_muscles.__path__[0], str(tmp_path), ("bake",))
    run = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1
    assert json.loads(run.stdout.splitlines()[-1]) == {
        "error": "ValueError: unknown warm-up stage 'bake': the stages are skinning, muscles, dynamics, skin, frames, "
                 "muscled."}


def test_process_groups_split_the_stages_in_two_without_repeats():
    groups = kernel_cache.process_groups()
    assert len(groups) == 2 and groups[1] == kernel_cache.SKIN_GROUP
    assert sorted(sum(groups, ())) == sorted(kernel_cache.STAGES)
    assert set(kernel_cache.entry_kernels(groups[0])).isdisjoint(kernel_cache.entry_kernels(groups[1]))
    assert kernel_cache.process_groups(("skinning",)) == (("skinning",),)
    assert kernel_cache.process_groups(("frames", "skinning")) == (("skinning",), ("frames",))
    with pytest.raises(ValueError, match="unknown warm-up stage 'bake'"):
        kernel_cache.process_groups(("bake",))


LOAD_AND_PLAY = """
import json, sys
import numpy as np
from implicit_muscles.core.io import kernel_cache
from implicit_muscles.core.pbd.control import MuscleInputs
from implicit_muscles.scenes import paper as scenes
result = kernel_cache.warm_up()
arm = scenes.arm_character()
arm.settle(scenes.arm_pose(20.0))
bones, activation = scenes.biceps_curl(3, frames=24)
x = arm.frame(bones, MuscleInputs(activation=activation, stiffness=[0.5] * 4), dt=1 / 24)
print(json.dumps({"compiled": sorted(result["compile_seconds"]), "finite": bool(np.isfinite(x).all()),
                  "warm": kernel_cache.is_warm(result["cache_dir"])}))
"""


def test_two_compile_processes_fill_one_cache_that_a_third_loads_and_plays(tmp_path):
    """Every stage compiled by the two processes a host runs at once (``compile_process.commands``) into one empty
    cache; a third process then loads every kernel from it, compiling nothing, and plays the paper's arm."""
    import implicit_muscles

    runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for args in compile_process.commands("implicit_muscles", implicit_muscles.__path__[0], str(tmp_path),
                                                 kernel_cache.STAGES)]
    outputs = [run.communicate(timeout=1800) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    results = [json.loads(out.splitlines()[-1])["result"] for out, _ in outputs]
    groups = kernel_cache.process_groups()
    assert [r["kernels"] for r in results] == [len(kernel_cache.entry_kernels(g)) for g in groups]
    # the skin group's kernels need none of the muscle group's: each process compiled its own entry kernels
    for group, result in zip(groups, results):
        own = set(kernel_cache.entry_kernels(group)) - set(kernel_cache.ENTRY_KERNELS["muscled"])
        assert own <= set(result["compile_seconds"]), own - set(result["compile_seconds"])
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([os.path.dirname(implicit_muscles.__path__[0]), *sys.path]))
    third = subprocess.run([sys.executable, "-X", "faulthandler", "-c", LOAD_AND_PLAY], env=env, capture_output=True,
                           text=True, timeout=1200)
    assert third.returncode == 0, third.stdout + third.stderr
    assert json.loads(third.stdout.splitlines()[-1]) == {"compiled": [], "finite": True, "warm": True}


def test_warm_up_limb_is_a_closed_two_bone_tube_bent_by_its_pose():
    rig = warm_up_scene.limb_rig()
    edges = np.sort(np.concatenate([rig.faces[:, [0, 1]], rig.faces[:, [1, 2]], rig.faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert np.all(counts == 2)  # every edge shared by two faces: closed
    assert np.allclose(rig.weights.sum(axis=1), 1.0)
    B = warm_up_scene.limb_pose(90.0)
    tip = B[1] @ np.array([*rig.tails[1], 1.0])
    assert np.allclose(tip[:3], [0.20, 0.0, 0.18])  # the lower bone turned to +z about the joint
