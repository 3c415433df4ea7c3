"""Subframes and renders without a bake (issue "Production paths in Blender", items 4 and 5).

A subframe (motion blur) shows the muscles between two whole frames and caches nothing; no handler sets a frame: the
frames a time needs are simulated before it on Blender's main thread, also for a render whose handlers run on its own
thread (a render started from the interface, played here by a worker thread)."""
import importlib
import threading
import time

import numpy as np

import blender_session
from blender_scenes import animated_arm, bind, evaluated
from test_bake import _live
from test_evaluation import SAME_TOL
from test_evaluation_stack import _render_animation, _render_setup


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _bound_arm(bpy):
    """The animated arm bound at frame 1, its simulation starting there whatever the scene's frame range (the
    armature's own start frame): ``(rig, mesh, its Bound)``."""
    rig, mesh = animated_arm(bpy)
    rig.implicit_muscles.start_frame = 1
    bind(bpy, mesh)
    return rig, mesh, _module("blender.session.runtime").bound(mesh)


def _states(bound, frames):
    """Copies of the cached muscle states ``{frame: (positions, velocities)}`` of ``frames`` (those cached)."""
    return {f: (s.x.copy(), s.v.copy()) for f in frames if (s := bound.cache.get(f)) is not None}


def _same_states(bound, kept):
    """Whether the cache still holds the states ``kept`` (``_states``), bit for bit."""
    now = _states(bound, kept)
    return now.keys() == kept.keys() and all(np.array_equal(now[f][k], kept[f][k]) for f in kept for k in (0, 1))


def _subframe_expected(bpy, rig, bound, frame, subframe):
    """Positions at ``frame + subframe`` computed with the core: the state cached after ``frame``, one PBD step of
    ``subframe / fps`` with the pose and muscle values evaluated at ``frame + subframe``, Implicit Skinning."""
    frame_inputs = _module("blender.scene.frame_inputs")
    scene = bpy.context.scene
    scene.frame_set(frame, subframe=subframe)
    arm_eval = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    B = frame_inputs.bone_transforms(arm_eval, bound.rest_inverse)
    inputs = frame_inputs.muscle_values(arm_eval, bound.source)
    bound.character.restore(bound.cache.get(frame))
    return bound.character.frame(B, inputs, dt=subframe / scene.render.fps).astype(np.float32)


def test_a_subframe_caches_nothing_and_the_next_frame_is_unchanged(bpy):
    """Visiting 29.5 shows the muscles half a step after frame 29 with the pose at 29.5, and caches nothing: frame
    29's state is kept bit for bit and frame 30 is the frame played without the visit (it moved by 0.11 mm when a
    subframe overwrote frame 29)."""
    rig, mesh, bound = _bound_arm(bpy)
    scene = bpy.context.scene
    played = _live(bpy, mesh, range(1, 31))
    kept = _states(bound, range(1, 31))
    scene.frame_set(29)
    scene.frame_set(29, subframe=0.5)
    shown = evaluated(bpy, mesh)
    assert _same_states(bound, kept)
    # in between: the arm moves between the frames, and the subframe is a good share of the way from each
    step = np.abs(played[30] - played[29]).max()
    assert step > 1e-3
    assert np.abs(shown - played[29]).max() > 0.25 * step and np.abs(shown - played[30]).max() > 0.25 * step
    scene.frame_set(30)
    assert np.abs(evaluated(bpy, mesh) - played[30]).max() < SAME_TOL
    assert _same_states(bound, kept)
    expected = _subframe_expected(bpy, rig, bound, 29, 0.5)
    assert np.abs(shown - expected).max() < SAME_TOL


def test_a_motion_blur_render_keeps_the_whole_frames_and_blurs_the_simulated_motion(bpy, tmp_path, monkeypatch):
    """A Cycles render of frame 30 with motion blur (background, 32 x 32 pixels, 2 samples, shutter 0.5 frame
    centred): Cycles renders frame 30 as playback shows it, then visits 29.75 and 30.25, where the mesh shows the
    simulated muscles between the frames (from frame 29's and 30's cached states); afterwards every cached state is
    as it was and frames 31-34 play as before. The mesh counts as deforming for Cycles, so the motion steps'
    positions make its blur."""
    rig, mesh, bound = _bound_arm(bpy)
    scene = bpy.context.scene
    _render_setup(bpy, scene, tmp_path)
    scene.cycles.samples = 2
    scene.render.use_motion_blur = True
    scene.render.motion_blur_shutter = 0.5
    scene.render.motion_blur_position = 'CENTER'
    played = _live(bpy, mesh, range(1, 35))
    kept = _states(bound, range(1, 35))
    scene.frame_set(30)
    seen = []

    def record(scene_, depsgraph=None):
        seen.append((scene_.frame_current, round(scene_.frame_subframe, 4), depsgraph.mode, bound.last_error,
                     bound.last_local.copy()))

    bpy.app.handlers.frame_change_post.append(record)
    try:
        rendered = _render_frame(bpy, monkeypatch, mesh)
    finally:
        bpy.app.handlers.frame_change_post.remove(record)
    assert np.abs(rendered - played[30]).max() < SAME_TOL  # what Cycles syncs as the frame itself
    shown = {(f, s): (error, positions) for f, s, mode, error, positions in seen if mode == 'RENDER'}
    assert {(29, 0.75), (30, 0.0), (30, 0.25)} <= set(shown)
    assert all(error == "" for error, _ in shown.values())
    assert _same_states(bound, kept)
    assert mesh.is_deform_modified(scene, 'RENDER')
    for f, s in ((29, 0.75), (30, 0.25)):
        positions = shown[(f, s)][1]
        assert np.abs(positions - played[30]).max() > 1e-4  # the mesh moves within the shutter (0.6 mm)
        assert np.abs(positions - _subframe_expected(bpy, rig, bound, f, s)).max() < SAME_TOL
    assert _same_states(bound, kept)
    for f in range(31, 35):
        scene.frame_set(f)
        assert np.abs(evaluated(bpy, mesh) - played[f]).max() < SAME_TOL, f


def _render_frame(bpy, monkeypatch, mesh):
    """Render the current frame (``render.render()``, as ``blender -b -f``); returns ``mesh``'s positions read from
    the depsgraph Cycles renders, inside Cycles' own ``render(depsgraph)`` call."""
    import cycles
    seen = []
    original = cycles.CyclesRender.render

    def render(engine, depsgraph):
        seen.append(evaluated(bpy, mesh, depsgraph))
        original(engine, depsgraph)

    with monkeypatch.context() as patch:
        patch.setattr(cycles.CyclesRender, "render", render)
        assert bpy.ops.render.render() == {'FINISHED'}
    assert len(seen) == 1
    return seen[0]


def test_an_animation_render_right_after_bind_equals_playback_frame_for_frame(bpy, tmp_path, monkeypatch):
    """A background animation render of frames 20-25 (``render.render(animation=True)``, as ``blender -b -a``) right
    after bind, when only frame 1 is cached: frames 1-19 are simulated in ``render_pre`` before frame 20 renders,
    without setting a frame (the frame-change handlers see the rendered frames only), and every rendered frame equals
    playback."""
    rig, mesh, bound = _bound_arm(bpy)
    scene = bpy.context.scene
    _render_setup(bpy, scene, tmp_path)
    scene.frame_start, scene.frame_end, scene.frame_step = 20, 25, 1
    changes = []

    def record(scene_, depsgraph=None):
        changes.append((scene_.frame_current, depsgraph.mode))

    bpy.app.handlers.frame_change_post.append(record)
    try:
        rendered = _render_animation(bpy, monkeypatch, mesh)
    finally:
        bpy.app.handlers.frame_change_post.remove(record)
    assert changes == [(f, 'RENDER') for f in range(20, 26)] + [(1, 'VIEWPORT')]  # then back to frame 1
    assert sorted(rendered) == list(range(20, 26))
    assert bpy.ops.implicit_muscles.reset_simulation() == {'FINISHED'}
    played = _live(bpy, mesh, range(1, 26))
    for f in range(20, 26):
        assert np.abs(rendered[f] - played[f]).max() < SAME_TOL, f


def _render_thread_frame(bpy, scene, serve: bool):
    """Play a render started from the interface on frame 20 of ``scene``: a worker thread runs the render handlers
    and the frame handler, the way Blender's render job does on its own thread, while the main thread runs the
    timer that serves it (``serve``) or waits. Returns the threads on which the depsgraph was updated meanwhile."""
    handlers = _module("blender.session.handlers")
    renders, render_state = _module("blender.session.renders"), _module("blender.session.render_state")
    scene.frame_current = 20
    bpy.context.view_layer.update()  # the render's frame evaluated, no frame handler run
    depsgraph = bpy.context.view_layer.depsgraph
    updates, errors = [], []

    def record(*_):
        updates.append(threading.current_thread().name)

    def render_job():
        try:
            handlers.on_render_init(scene)
            handlers.on_render_pre(scene)
            handlers.on_frame_change(scene, depsgraph)
            handlers.on_render_end(scene)
        except Exception as ex:  # noqa: BLE001 - reported below
            errors.append(ex)

    worker = threading.Thread(target=render_job, name="render job")
    bpy.app.handlers.depsgraph_update_post.append(record)
    try:
        worker.start()
        while worker.is_alive():
            if serve:
                renders.serve_render_requests()
            time.sleep(0.01)
        worker.join()
    finally:
        bpy.app.handlers.depsgraph_update_post.remove(record)
    assert not errors and not render_state.rendering()
    return set(updates)


def test_a_render_thread_has_its_gap_simulated_on_the_main_thread(bpy):
    """Frame 20 rendered right after bind by a render whose handlers run on its own thread: that thread sets no
    frame and updates no depsgraph; the main thread simulates frames 1-19 for it (``serve_render_requests``) to the
    states playback reaches, bit for bit, and the frame equals playback."""
    rig, mesh, bound = _bound_arm(bpy)
    scene = bpy.context.scene
    played = _live(bpy, mesh, range(1, 21))
    kept = _states(bound, range(1, 21))
    scene.frame_set(1)
    assert bpy.ops.implicit_muscles.reset_simulation() == {'FINISHED'}
    assert sorted(bound.cache) == [1]
    assert _render_thread_frame(bpy, scene, serve=True) == {threading.main_thread().name}
    assert _same_states(bound, kept)  # poses read without frame_set: the states of playback, bit for bit
    assert np.abs(evaluated(bpy, mesh) - played[20]).max() < SAME_TOL


def test_a_render_thread_without_the_main_thread_falls_back_and_says_to_bake(bpy, capfd, monkeypatch):
    """The same render when the main thread does not take the work over (``HANDOFF_START_TIMEOUT``, shortened): the
    render thread gives up without setting a frame, frame 20 shows the plain Armature result with one sentence
    saying to bake, and the withdrawn request is never run."""
    renders = _module("blender.session.renders")
    monkeypatch.setattr(renders, "HANDOFF_START_TIMEOUT", 0.2)
    rig, mesh, bound = _bound_arm(bpy)
    scene = bpy.context.scene
    assert _render_thread_frame(bpy, scene, serve=False) == set()
    err = capfd.readouterr().err
    assert err.count("shows its plain Armature result") == 1 and "bake the mesh" in err and "Traceback" not in err
    assert mesh.modifiers["Armature"].show_render and not mesh.modifiers["Implicit Skinning"].show_render
    renders.serve_render_requests()
    assert sorted(bound.cache) == [1]
