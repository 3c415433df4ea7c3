"""Kernels ready without a freeze (blender/engine/compile_job.py): the warm-up compiles every kernel that Bind, playback
and Bake use; a separate process compiles into an empty cache with its progress shown, while Bind waits for it and
bound meshes show the plain Armature result; when it ends, the waiting Bind runs and the frame shows again. Two
processes run at once, their progress summed, and the failure of either is the job's."""
import importlib
import sys

import numpy as np
import pytest

import blender_session
from blender_scenes import animate_arm, animated_arm, bind, evaluated, make_arm, start_scene

STAGES = ("skinning", "skin")
"""The reduced kernel set the background test compiles into an empty cache: two processes (``skinning``, 3 entry
kernels, and ``skin``, 6)."""


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


@pytest.fixture
def warm(bpy):
    """The add-on enabled and every kernel loaded (or compiled) in this session by the warm-up."""
    _module("core.io.kernel_cache").warm_up()
    return bpy


def test_after_the_warm_up_bind_playback_and_bake_compile_nothing(warm, tmp_path):
    bpy = warm
    kernel_cache = _module("core.io.kernel_cache")
    before = kernel_cache.compiled_signatures()
    assert [name for name in kernel_cache.entry_kernels() if before[name] == 0] == []
    rig, mesh = animated_arm(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "arm.blend"))
    bind(bpy, mesh)
    for frame in (1, 2, 3, 12, 30):
        bpy.context.scene.frame_set(frame)
    assert bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=3) == {'FINISHED'}
    after = kernel_cache.compiled_signatures()
    assert {name: (before[name], after[name]) for name in after if after[name] != before[name]} == {}


def test_background_compile_shows_progress_while_bind_and_frames_wait(warm, tmp_path, monkeypatch):
    bpy = warm
    job = _module("blender.engine.compile_job")
    engine = _module("blender.engine.numba_setup")
    status_panel = _module("panels.status")
    monkeypatch.setattr(job, "interactive", lambda: True)  # Bind waits as with the interface
    monkeypatch.setattr(job, "kernels_loaded", lambda: False)  # a session that has no kernels yet
    rig, (mesh, other) = make_arm(bpy, sides=(".L", ".R"))
    animate_arm(bpy, rig, (".L", ".R"))
    start_scene(bpy)
    bind(bpy, mesh)
    bpy.context.scene.frame_set(30)
    live = evaluated(bpy, mesh)

    cache = tmp_path / "empty_cache"
    assert job.start(STAGES, cache_dir=str(cache))
    try:
        assert job.status.running and (job.status.done, job.status.total) == (0, 9)
        assert job.status.processes == 2 and len(job._processes) == 2
        assert job.waiting() == "The muscle kernels are compiling (0/9)"
        assert not job.start(STAGES, cache_dir=str(cache))  # one at a time
        assert not bpy.ops.implicit_muscles.compile_kernels.poll()
        # the panel and the status bar show the progress
        texts = [entry[1] for entry in blender_session.draw_panel(status_panel.IMPLICIT_MUSCLES_PT_status)]
        assert "Compiling kernels 0/9" in texts, texts
        bar = blender_session.RecordingLayout()
        status_panel.draw_status_bar(type("Header", (), {"layout": bar})(), bpy.context)
        assert [entry[1] for entry in bar.log] == ["Muscle kernels 0/9"]
        # Bind waits: reported, queued, nothing bound yet
        bpy.context.view_layer.objects.active = other
        assert bpy.ops.implicit_muscles.bind_skin() == {'FINISHED'}
        assert job.status.pending == [other.name_full] and not other.implicit_skin.bound
        # a bound mesh shows its plain Armature result meanwhile; nothing is simulated
        bpy.context.scene.frame_set(31)
        armature_only = {m.name: m.show_viewport for m in mesh.modifiers}
        assert armature_only == {"Armature": True, "Implicit Skinning": False}
        assert not bpy.ops.implicit_muscles.bake.poll()
        seen = set()
        while job.status.running:
            for process in list(job._processes):
                process.wait(timeout=600)
            job.poll()
            seen.add((job.status.done, job.status.total))
    finally:
        if job.status.running:
            job.unregister()
    assert (9, 9) in seen, seen
    assert job.status.error == "" and not job.status.running and job.status.compiled
    assert {"skinning.dual_quaternion_skinning", "skin_field.skin_field"} <= set(job.status.compile_seconds)
    index = {p.name.split("-")[0] for p in cache.rglob("*.nbi")}
    assert {"skinning.rigid_status", "skinning.bone_dual_quaternions", "skinning.dual_quaternion_skinning",
            "skin_field.skin_field", "tracking.contact_passed"} <= index, index
    assert engine.status.kernels_compiled
    # the waiting Bind ran, and the bound mesh shows Implicit Skinning again
    assert other.implicit_skin.bound and job.status.pending == []
    assert {m.name: m.show_viewport for m in mesh.modifiers} == {"Armature": False, "Implicit Skinning": True}
    bpy.context.scene.frame_set(30)
    assert np.array_equal(evaluated(bpy, mesh), live)


def test_a_failed_compile_process_is_the_jobs_error(warm, tmp_path, monkeypatch):
    bpy = warm
    job = _module("blender.engine.compile_job")
    engine = _module("blender.engine.numba_setup")
    compile_process = _module("core.io.compile_process")
    commands = compile_process.commands

    def second_fails(*args, **kwargs):
        first, second = commands(*args, **kwargs)
        return [first, compile_process.command(args[0], args[1], args[2], ("bake",), nice=kwargs.get("nice", 0))]

    monkeypatch.setattr(compile_process, "commands", second_fails)
    for name in ("kernels_compiled", "kernels_message"):  # restored for the next tests
        monkeypatch.setattr(engine.status, name, getattr(engine.status, name))
    assert job.start(("skinning", "skin"), cache_dir=str(tmp_path / "cache"))
    try:
        assert job.status.processes == 2
        job.wait()
    finally:
        if job.status.running:
            job.unregister()
    assert not job.status.running
    assert job.status.error.startswith("ValueError: unknown warm-up stage 'bake'"), job.status.error
    assert engine.status.kernels_message == f"Could not compile the muscle kernels: {job.status.error}"


def test_compile_after_an_install_starts_once_and_never_in_background_mode(bpy, monkeypatch):
    blender_session.enable()
    job = _module("blender.engine.compile_job")
    assert bpy.app.background and not bpy.app.timers.is_registered(job._auto_start)
    job.start_if_needed()  # blender -b never compiles in the background unless asked
    assert not job.status.running
    monkeypatch.setattr(job, "interactive", lambda: True)
    monkeypatch.setattr(job, "kernels_loaded", lambda: False)
    monkeypatch.setattr(job, "_cache_is_warm", lambda: True)  # a complete warm-up for these sources: nothing to do
    job.start_if_needed()
    assert not job.status.running
    monkeypatch.setattr(job, "_cache_is_warm", lambda: False)  # as after an install or an update
    try:
        job.start_if_needed()
        assert job.status.running and job.status.total == len(_module("core.io.kernel_cache").entry_kernels())
    finally:
        job.unregister()  # stops the process
    assert not job.status.running
