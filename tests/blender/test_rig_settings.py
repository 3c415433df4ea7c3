"""The rig's simulation settings and the operators' context: the start frame follows the scene unless the artist
sets one, both it and the substeps are drawn, every operator says why it cannot run, and the sidebar's buttons work
on the active mesh's armature."""
import importlib
import types

import numpy as np
import pytest

import blender_session
from blender_scenes import animated_arm, bind, evaluated, make_arm


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _draw(bpy, panel):
    """Run ``panel``'s draw on a recording layout; return the layout (log and buttons)."""
    layout = blender_session.ContextRecordingLayout()
    getattr(bpy.types, panel).draw(types.SimpleNamespace(layout=layout), bpy.context)
    return layout


def _poll_refusal(bpy, idname, **override) -> str:
    """The sentence Blender gives when operator ``idname`` cannot run in the current context (with ``override``)."""
    module, name = idname.split(".")
    with bpy.context.temp_override(**override):
        with pytest.raises(RuntimeError) as refused:
            getattr(getattr(bpy.ops, module), name)()
    return str(refused.value)


def test_start_frame_follows_the_scene_unless_set(bpy):
    rig, _ = make_arm(bpy)
    scene, props = bpy.context.scene, rig.implicit_muscles
    start = _module("blender.scene.rig").simulation_start
    scene.frame_start = 1001
    assert props.use_scene_start and start(rig, scene) == 1001 and start(rig) == 1001
    props.start_frame = 990  # set by a script or in the panel: used from now on
    assert not props.use_scene_start and start(rig, scene) == 990
    props.use_scene_start = True
    assert start(rig, scene) == 1001


def test_turning_scene_start_off_starts_where_the_scene_does(bpy):
    rig, _ = make_arm(bpy)
    bpy.context.scene.frame_start = 1001
    rig.implicit_muscles.use_scene_start = False
    assert rig.implicit_muscles.start_frame == 1001


def test_a_shot_starting_at_1001_simulates_no_gap_on_first_view(bpy):
    rig, mesh = animated_arm(bpy)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1001, 1060
    scene.frame_set(1001)
    bind(bpy, mesh)
    scene.frame_set(1003)
    cached = sorted(_module("blender.session.runtime").bound(mesh).cache)
    assert cached and cached[0] >= 1001, cached[:5]  # nothing simulated before the shot's first frame


def test_a_new_scene_start_restarts_the_simulation_from_it(bpy):
    rig, mesh = animated_arm(bpy)
    scene = bpy.context.scene
    bind(bpy, mesh)
    for frame in range(1, 25):
        scene.frame_set(frame)
    from_1 = evaluated(bpy, mesh)
    scene.frame_start = 12
    scene.frame_set(23)
    scene.frame_set(24)
    moved_start = evaluated(bpy, mesh)
    assert bpy.ops.implicit_muscles.reset_simulation() == {'FINISHED'}
    scene.frame_set(24)
    fresh = evaluated(bpy, mesh)
    assert np.array_equal(moved_start, fresh)  # the states simulated from frame 1 were forgotten
    assert not np.array_equal(moved_start, from_1)


def test_the_panel_draws_the_start_frame_and_the_substeps(bpy):
    rig, _ = make_arm(bpy)
    bpy.context.scene.frame_start = 1001
    log = _draw(bpy, "IMPLICIT_MUSCLES_PT_muscles_data").log
    props = {entry[1] for entry in log if entry[0] == "prop"}
    assert {"use_scene_start", "substeps", "friction"} <= props and "start_frame" not in props
    assert any(entry[0] == "label" and "1001" in entry[1] for entry in log)
    rig.implicit_muscles.start_frame = 990
    props = {entry[1] for entry in _draw(bpy, "IMPLICIT_MUSCLES_PT_muscles_data").log if entry[0] == "prop"}
    assert {"use_scene_start", "start_frame", "substeps"} <= props


@pytest.mark.parametrize("module", ["operators.skin", "operators.engine", "operators.muscles"])
def test_every_operator_has_a_poll(bpy, module):
    operators = [cls for cls in _module(module).classes if issubclass(cls, bpy.types.Operator)]
    missing = [cls.bl_idname for cls in operators
               if not any("poll" in vars(base) for base in cls.__mro__ if base is not bpy.types.Operator)]
    assert not missing


def test_new_polls_say_why_the_operator_cannot_run(bpy):
    rig, (mesh,) = make_arm(bpy)
    assert "bind one first" in _poll_refusal(bpy, "implicit_muscles.reset_simulation")
    assert "Arm is not bound" in _poll_refusal(bpy, "implicit_muscles.unbind_skin", object=mesh)
    for idname in ("implicit_muscles.save_preset", "implicit_muscles.apply_preset"):
        assert "Rig has no muscle: add one first" in _poll_refusal(bpy, idname, object=rig)
        assert "Select an armature with muscles" in _poll_refusal(bpy, idname, object=None)
    engine = _module("blender.engine.numba_setup")
    status = engine.status
    engine.status = type(status)()  # as before the engine was set up
    try:
        assert "has not been set up" in _poll_refusal(bpy, "implicit_muscles.report_status")
    finally:
        engine.status = status


def test_sidebar_buttons_work_with_a_bound_mesh_active(bpy):
    rig, mesh = animated_arm(bpy)  # a biceps and a triceps
    ops = bpy.ops.implicit_muscles
    bind(bpy, mesh)  # leaves the mesh active
    assert bpy.types.IMPLICIT_MUSCLES_PT_muscles_view3d.poll(bpy.context)
    buttons = _draw(bpy, "IMPLICIT_MUSCLES_PT_muscles_view3d").buttons
    assert {"implicit_muscles.add_muscle", "implicit_muscles.mirror_muscle", "implicit_muscles.save_preset"} <= \
        {idname for idname, *_ in buttons}
    refused = []
    for idname, _, _, pointers in buttons:
        module, name = idname.split(".")
        with bpy.context.temp_override(**pointers):
            if not getattr(getattr(bpy.ops, module), name).poll():
                refused.append(idname)
    assert refused == ["implicit_muscles.muscle_from_mesh"]  # it needs a sculpted mesh selected: none is
    (duplicate,) = [pointers for idname, *_, pointers in buttons if idname == "implicit_muscles.duplicate_muscle"]
    with bpy.context.temp_override(**duplicate):
        assert ops.duplicate_muscle() == {'FINISHED'}
    assert len(rig.implicit_muscles.muscles) == 3 and bpy.context.object == mesh
