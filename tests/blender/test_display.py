"""The muscles drawn by a ``gpu`` draw handler (registered only with a user interface, nothing
in the .blend), handles that follow their muscle, and the viewport's preview quality against render quality for
renders and bakes. The drawing itself needs a GPU context, which background mode has not: the tests check the
handler's registration and the triangles it would draw (``display.refresh``)."""
import numpy as np
import pytest

import blender_session
from blender_scenes import animated_arm, bind, evaluated, make_arm


def _module(name):
    import importlib
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _ops(bpy):
    return bpy.ops.implicit_muscles


def _ids(bpy):
    return {(kind, d.name) for kind in ("objects", "meshes", "collections", "node_groups")
            for d in getattr(bpy.data, kind)}


def test_draw_handler_only_with_an_interface_and_removed_on_disable(bpy):
    display = _module("blender.display.viewport")
    assert bpy.app.background and not display.drawing()  # enabled in background mode: no draw handler
    assert display.start(background=False) and display.drawing()
    assert display.start(background=False)  # added once
    blender_session.disable()
    try:
        assert not display.drawing()  # unregister removed it
    finally:
        blender_session.enable()
    assert not _module("blender.display.viewport").drawing()


def test_drawn_triangles_follow_activation_settings_and_rebuild_only_on_change(bpy):
    rig, _ = make_arm(bpy)
    assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", preset="biceps") == {'FINISHED'}
    assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", preset="triceps") == {'FINISHED'}
    display, display_mesh = _module("blender.display.viewport"), _module("blender.display.muscle_shapes")
    scene = bpy.context.scene
    first = display.refresh(scene)[rig.name_full]
    block = (display_mesh.RINGS + 2) * display_mesh.SIDES + 2
    assert first.vertices.shape == (2 * block, 3) and first.colors.shape == (2 * block, 4)
    assert first.faces.max() == 2 * block - 1 and first.vertices.dtype == np.float32
    assert not np.allclose(first.colors[0, :3], first.colors[block, :3])  # a colour per muscle
    assert first.in_front and np.allclose(first.colors[:, 3], display_mesh.IN_FRONT_ALPHA)
    assert display.refresh(scene) == {}  # nothing changed: the GPU batch is kept
    rig.implicit_muscles.muscles[0].activation = 1.0
    active = display.refresh(scene)[rig.name_full]
    assert np.abs(active.vertices[:block] - first.vertices[:block]).max() > 1e-3  # the belly moved
    assert np.array_equal(active.vertices[block:], first.vertices[block:])  # the triceps did not
    rig.implicit_muscles.display_color = 'ACTIVATION'
    by_activation = display.refresh(scene)[rig.name_full]
    red, blue = by_activation.colors[:block, :3].mean(0), by_activation.colors[block:, :3].mean(0)
    assert red[0] > red[2] and blue[2] > blue[0]  # the active biceps red, the relaxed triceps blue
    rig.implicit_muscles.show_in_front = False
    assert np.allclose(display.refresh(scene)[rig.name_full].colors[:, 3], 1.0)  # depth-tested, opaque
    rig.implicit_muscles.show_muscles = False
    assert display.refresh(scene) == {} and rig.name_full not in display._keys


def test_a_bound_rig_draws_its_simulated_muscles(bpy):
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    scene = bpy.context.scene
    for frame in range(2, 20):
        scene.frame_set(frame)
    display = _module("blender.display.viewport")
    from_core = _module("blender.session.runtime").bound(mesh).character.muscle_batch
    drawn = display.refresh(scene)[rig.name_full]
    surface = _module("core.muscle.surface")
    expected, _, _ = surface.batch_surfaces(from_core, _module("blender.display.muscle_shapes").RINGS,
                                            _module("blender.display.muscle_shapes").SIDES)
    assert np.array_equal(drawn.vertices, expected)  # the PBD axes, not the straight set-up
    straight, _ = _module("blender.display.muscle_shapes").straight_batch(rig, [0, 1])
    unsimulated, _, _ = surface.batch_surfaces(straight, _module("blender.display.muscle_shapes").RINGS,
                                               _module("blender.display.muscle_shapes").SIDES)
    assert np.abs(unsimulated - drawn.vertices).max() > 1e-4


def test_the_display_writes_nothing_to_the_file_and_old_display_objects_go(bpy, tmp_path):
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    before = _ids(bpy)
    display = _module("blender.display.viewport")
    for frame in (5, 6, 7):
        bpy.context.scene.frame_set(frame)
        assert display.refresh(bpy.context.scene)
    assert _ids(bpy) == before
    legacy = bpy.data.objects.new("Rig.muscles", bpy.data.meshes.new("Rig.muscles"))  # as earlier versions saved
    bpy.context.scene.collection.objects.link(legacy)
    legacy.hide_render = legacy.hide_select = legacy.show_wire = True
    path = str(tmp_path / "shot.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert _ids(bpy) == before  # the old display object and its mesh are gone, nothing new came
    assert "Rig.muscles" not in bpy.data.objects and "Rig.muscles" not in bpy.data.meshes


def test_handles_are_selected_follow_a_rename_and_write_points_back(bpy):
    from mathutils import Matrix, Vector
    rig, _ = make_arm(bpy)
    bpy.context.view_layer.objects.active = rig
    assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", preset="biceps") == {'FINISHED'}
    handles = _module("blender.authoring.handles")
    assert _ops(bpy).edit_handles() == {'FINISHED'}
    m = rig.implicit_muscles.muscles[0]
    origin, insertion = m.origin_handle, m.insertion_handle
    assert (origin.name, insertion.name) == ("biceps.origin", "biceps.insertion")
    assert (origin.parent_bone, insertion.parent_bone) == ("shoulder", "elbow")
    assert origin.select_get() and insertion.select_get() and not rig.select_get()
    assert bpy.context.view_layer.objects.active == origin
    assert _module("blender.scene.rig").armature_of(origin) == rig  # the Muscles tab stays on the rig
    assert rig.name_full in handles.watching()
    m.name = "biceps_long"
    origin.matrix_world = Matrix.Translation(origin.matrix_world.translation + Vector((0.0, 0.01, 0.0)))
    before = Vector(m.origin_point)
    assert handles.sync(rig) == 1
    assert (Vector(m.origin_point) - before).length == pytest.approx(0.01, abs=1e-6)
    assert (origin.name, insertion.name) == ("biceps_long.origin", "biceps_long.insertion")
    assert handles.sync(rig) == 0  # unmoved: nothing written
    assert _ops(bpy).clear_handles() == {'FINISHED'}
    assert m.origin_handle is None and not [o for o in bpy.data.objects if o.type == 'EMPTY']


def test_preview_quality_in_the_viewport_render_quality_for_bakes(bpy, tmp_path):
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    scene = bpy.context.scene
    runtime, quality = _module("blender.session.runtime"), _module("blender.session.quality")
    core_quality = _module("core.quality")
    assert quality.viewport_quality(scene) is core_quality.RENDER  # the default: the viewport shows the render
    render = {}
    for frame in range(2, 31):
        scene.frame_set(frame)
        render[frame] = evaluated(bpy, mesh)
    assert runtime.bound(mesh).timings["quality"] == "render"
    scene.implicit_muscles.viewport_quality = 'PREVIEW'
    preview = {}
    for frame in range(2, 31):
        scene.frame_set(frame)
        preview[frame] = evaluated(bpy, mesh)
    assert runtime.bound(mesh).timings["quality"] == "preview"
    layout = blender_session.RecordingLayout()
    _module("panels.muscles").draw_skin(layout, bpy.context, mesh)
    assert any(entry[0] == "label" and entry[1].endswith("ms, Preview quality") for entry in layout.log)
    gap = np.stack([np.linalg.norm(preview[f] - render[f], axis=1) for f in render])
    assert gap.max() > 1e-6  # fewer substeps and iterations: another result ...
    assert np.median(gap) < 1e-4 and np.percentile(gap, 99) < 0.005  # ... close to the render's
    scene.implicit_muscles.viewport_quality = 'RENDER'
    scene.render.use_simplify = True  # the scene's Simplify gives Preview too
    assert quality.viewport_quality(scene) is core_quality.PREVIEW
    with quality.render_quality():
        assert quality.frame_quality(scene) is core_quality.RENDER
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    scene = bpy.context.scene
    mesh = bpy.data.objects[mesh.name]
    bake = _module("blender.session.bake")
    bake.bake(scene, 25, 30)  # Simplify still on: a bake is at render quality all the same
    pc2 = _module("core.io.pc2")
    frames = pc2.read(bake._absolute(mesh.implicit_skin.bake_file))[1]
    for k, frame in enumerate(range(25, 31)):
        assert np.abs(frames[k] - render[frame]).max() < 1e-5  # the render quality's frames, not the preview's


def test_the_panel_draws_the_display_and_quality_settings(bpy):
    import types
    make_arm(bpy)
    layout = blender_session.ContextRecordingLayout()
    bpy.types.IMPLICIT_MUSCLES_PT_muscles_data.draw(types.SimpleNamespace(layout=layout), bpy.context)
    props = {entry[1] for entry in layout.log if entry[0] == "prop"}
    assert {"show_muscles", "show_in_front", "display_color", "viewport_quality"} <= props
    assert not any("Simplify" in entry[1] for entry in layout.log if entry[0] == "label")
    bpy.context.scene.render.use_simplify = True
    layout = blender_session.ContextRecordingLayout()
    bpy.types.IMPLICIT_MUSCLES_PT_muscles_data.draw(types.SimpleNamespace(layout=layout), bpy.context)
    assert any("Simplify is on" in entry[1] for entry in layout.log if entry[0] == "label")
