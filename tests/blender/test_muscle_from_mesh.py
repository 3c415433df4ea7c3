"""Muscle from Mesh: a sculpted muscle mesh and the armature selected give an ordinary muscle on the
nearest bones, with the mesh's rest profile, flatness and volume, the fit error in the report; the mesh is never
changed; undo takes the muscle away again; bad input is refused with a sentence and adds nothing."""
import importlib
import importlib.util

import numpy as np
import pytest

import blender_session
from blender_scenes import make_arm, positions

ORIGIN = np.array([0.15, 0.0, 0.035])
INSERTION = np.array([0.45, 0.0, 0.035])  # past the elbow (x = 0.4): on the forearm bone
LONG_AXIS = np.array([0.0, 1.0, 0.0])
SHAPE = (2, 3, 0.5)
OFFSET = np.array([0.05, -0.02, 0.01])  # the mesh object's location: its data sit this far back


def _core(name):
    return importlib.import_module(f"{blender_session.ADDON}.core.muscle.{name}")


def _sculpt(bpy, name="BicepsSculpt", origin=ORIGIN, insertion=INSERTION, shape=SHAPE):
    """A mesh object holding the surface of a known muscle, placed by its object location."""
    primitive, surface = _core("primitive"), _core("surface")
    alpha, beta, e = shape
    muscle = primitive.FusiformMuscle(origin, insertion, width=0.02,
                                      shape=primitive.MuscleShape(alpha, beta, alpha, beta, e, e),
                                      origin_normal=LONG_AXIS, insertion_normal=LONG_AXIS)
    vertices, faces = surface.muscle_surface(muscle, rings=64, sides=32)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata((vertices - OFFSET).tolist(), [], faces.tolist())
    obj = bpy.data.objects.new(name, mesh)
    obj.location = OFFSET.tolist()
    bpy.context.scene.collection.objects.link(obj)
    return obj, muscle


def _select(bpy, objects, active):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj in objects)
    bpy.context.view_layer.objects.active = active


def _world(rig, bone, point):
    from mathutils import Vector
    return np.array(rig.data.bones[bone].matrix_local @ Vector(point))


def test_fitted_muscle_recovers_the_sculpt_and_leaves_it_alone(bpy, capfd):
    rig, (arm,) = make_arm(bpy)
    sculpt, truth = _sculpt(bpy)
    before = positions(sculpt.data).copy(), len(sculpt.data.polygons), tuple(sculpt.location)
    _select(bpy, [sculpt, rig], rig)
    assert bpy.ops.implicit_muscles.muscle_from_mesh() == {'FINISHED'}
    muscles = rig.implicit_muscles.muscles
    assert len(muscles) == 1
    m = muscles[0]
    assert (m.name, m.origin_bone, m.insertion_bone, m.skin_bone) == ("BicepsSculpt", "shoulder", "elbow",
                                                                      "shoulder")
    assert (m.alpha_rest, m.beta_rest) == SHAPE[:2]
    assert m.eccentricity_rest == pytest.approx(SHAPE[2], abs=0.02)
    assert (m.alpha_active, m.beta_active) == (3, 4)  # the rest pair sharpened by one
    assert m.width == pytest.approx(truth.width, rel=0.01)
    np.testing.assert_allclose(_world(rig, m.origin_bone, m.origin_point), ORIGIN, atol=1e-3)
    np.testing.assert_allclose(_world(rig, m.insertion_bone, m.insertion_point), INSERTION, atol=1e-3)
    # the muscle the core builds from it has its flat side where the sculpt has it
    reader = importlib.import_module(f"{blender_session.ADDON}.blender.scene.reader")
    (core_muscle,), *_ = reader.read_muscles(rig, tuple(b.name for b in rig.data.bones))
    normal = core_muscle.geometry().normals[0]
    assert abs(normal @ LONG_AXIS) == pytest.approx(1.0, abs=1e-3)
    report = capfd.readouterr()
    assert "fit error" in report.out + report.err and "mm RMS" in report.out + report.err
    # the sculpt is as it was
    np.testing.assert_array_equal(positions(sculpt.data), before[0])
    assert (len(sculpt.data.polygons), tuple(sculpt.location)) == before[1:]
    assert bpy.data.objects.get("BicepsSculpt") is sculpt and not sculpt.modifiers


def test_undo_steps_and_reloads_are_safe(bpy, tmp_path):
    """The operator pushes an undo step (Blender's undo restores the file's data as it was before, which needs a
    window; here the same data is reloaded from a saved file): after the reload the muscle is gone, the sculpt is
    there, and fitting again works on the reloaded data."""
    cls = getattr(bpy.types, "IMPLICIT_MUSCLES_OT_muscle_from_mesh")
    assert {'REGISTER', 'UNDO'} <= set(cls.bl_options)
    rig, _ = make_arm(bpy)
    sculpt, _ = _sculpt(bpy)
    _select(bpy, [sculpt, rig], rig)
    path = str(tmp_path / "before.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert bpy.ops.implicit_muscles.muscle_from_mesh() == {'FINISHED'}
    assert len(bpy.data.objects["Rig"].implicit_muscles.muscles) == 1
    bpy.ops.wm.open_mainfile(filepath=path)
    rig, sculpt = bpy.data.objects["Rig"], bpy.data.objects["BicepsSculpt"]
    assert len(rig.implicit_muscles.muscles) == 0 and len(sculpt.data.vertices)
    _select(bpy, [sculpt, rig], rig)
    assert bpy.ops.implicit_muscles.muscle_from_mesh(fibres=1) == {'FINISHED'}
    assert rig.implicit_muscles.muscles[0].name == "BicepsSculpt"


def test_fan_mesh_gives_fibres_in_one_group(bpy):
    rig, _ = make_arm(bpy)
    vertices, faces = _fan()
    mesh = bpy.data.meshes.new("Fan")
    mesh.from_pydata(vertices.tolist(), [], faces.tolist())
    obj = bpy.data.objects.new("Fan", mesh)
    bpy.context.scene.collection.objects.link(obj)
    _select(bpy, [rig], rig)
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="elbow",
                                               name="other") == {'FINISHED'}
    rig.implicit_muscles.muscles[0].collision_group = 1  # group 1 is taken: the fibres get group 2
    _select(bpy, [obj, rig], obj)
    assert bpy.ops.implicit_muscles.muscle_from_mesh() == {'FINISHED'}
    fibres = list(rig.implicit_muscles.muscles)[1:]
    assert len(fibres) >= 3
    assert [m.name for m in fibres] == [f"Fan fibre {k + 1}" for k in range(len(fibres))]
    assert {m.collision_group for m in fibres} == {2}
    assert {(m.origin_bone, m.insertion_bone) for m in fibres} == {("shoulder", "elbow")}
    # each fibre's flat side lies in the sheet (the sheet is thin along Z), and together they hold its volume
    reader = importlib.import_module(f"{blender_session.ADDON}.blender.scene.reader")
    core_fibres = reader.read_muscles(rig, tuple(b.name for b in rig.data.bones))[0][1:]
    for fibre in core_fibres:
        assert abs(fibre.geometry().normals[0][2]) < 0.5
    volume = _core("surface").mesh_volume(vertices, faces)
    assert sum(f.volume for f in core_fibres) == pytest.approx(volume, rel=1e-3)


def test_sculpt_made_in_blender_is_read_as_it_shows(bpy):
    """A UV sphere scaled into a flat spindle by its object, smoothed by a Subdivision Surface modifier: the muscle
    takes the evaluated mesh's volume, its flatness and its flat side, on the bones its ends lie on."""
    import bmesh
    rig, _ = make_arm(bpy)
    bpy.ops.mesh.primitive_uv_sphere_add(segments=24, ring_count=12, radius=1.0, location=(0.27, 0.0, 0.035))
    sculpt = bpy.context.object
    sculpt.name = "Spindle"
    sculpt.scale = (0.15, 0.03, 0.02)
    sculpt.modifiers.new("Smooth", 'SUBSURF').levels = 1
    bm = bmesh.new()
    bm.from_object(sculpt, bpy.context.evaluated_depsgraph_get())
    shown = bm.calc_volume() * 0.15 * 0.03 * 0.02
    bm.free()
    base = bpy.data.objects["Spindle"].data
    _select(bpy, [sculpt, rig], rig)
    assert bpy.ops.implicit_muscles.muscle_from_mesh() == {'FINISHED'}
    m = rig.implicit_muscles.muscles[0]
    assert (m.origin_bone, m.insertion_bone) == ("shoulder", "elbow")
    o, i = _world(rig, m.origin_bone, m.origin_point), _world(rig, m.insertion_bone, m.insertion_point)
    length = np.linalg.norm(i - o)
    assert np.pi * m.width ** 2 * length == pytest.approx(shown, rel=1e-4)  # bmesh sums in float32
    assert o[0] == pytest.approx(0.12, abs=0.01) and i[0] == pytest.approx(0.42, abs=0.01)
    assert m.alpha_rest == m.beta_rest  # symmetric
    assert m.eccentricity_rest == pytest.approx(np.sqrt(1.0 - (0.02 / 0.03) ** 2), abs=0.03)
    reader = importlib.import_module(f"{blender_session.ADDON}.blender.scene.reader")
    (core_muscle,), *_ = reader.read_muscles(rig, tuple(b.name for b in rig.data.bones))
    assert abs(core_muscle.geometry().normals[0][1]) == pytest.approx(1.0, abs=0.01)  # flat side along Y
    assert len(sculpt.modifiers) == 1 and len(base.vertices) == 24 * 11 + 2


def _fan():
    """A flat fan along the arm: 16 cm wide over the upper arm, 3 cm wide past the elbow (the core's fan)."""
    spec = importlib.util.spec_from_file_location(
        "fan_shapes", blender_session.REPO_ROOT / "tests" / "core" / "fit_shapes.py")
    shapes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shapes)
    vertices, faces = shapes.fan_mesh()
    # along +X from x = 0.16 to 0.46 (twice as long), 3.5 cm above the bones
    return np.stack([2.0 * vertices[:, 2] + 0.16, vertices[:, 0], vertices[:, 1] + 0.035], axis=1), faces


@pytest.mark.parametrize("case", ["open", "flat", "normals", "pieces", "no armature", "too far"])
def test_bad_input_is_refused_and_adds_nothing(bpy, case):
    rig, _ = make_arm(bpy)
    sculpt, _ = _sculpt(bpy)
    mesh = sculpt.data
    messages = {"open": "BicepsSculpt is not closed: 32 edges border a hole",
                "flat": "BicepsSculpt encloses no volume",
                "normals": "BicepsSculpt has faces whose normals point the other way: recalculate them",
                "pieces": "BicepsSculpt is made of 2 separate pieces: separate them",
                "no armature": "Select the muscle mesh, then the armature it belongs to",
                "too far": "BicepsSculpt lies too far from the bones of Rig"}
    if case == "open":
        import bmesh
        bm = bmesh.new()
        bm.from_mesh(mesh)
        bm.verts.ensure_lookup_table()
        bmesh.ops.delete(bm, geom=[bm.verts[len(bm.verts) - 1]], context='VERTS')  # the insertion's apex
        bm.to_mesh(mesh)
        bm.free()
    elif case == "flat":
        co = positions(mesh)
        co[:, 2] = 0.0
        mesh.vertices.foreach_set("co", co.astype(np.float32).ravel())
        mesh.update()
    elif case == "pieces":
        import bmesh
        bm = bmesh.new()
        bm.from_mesh(mesh)
        copy = bmesh.ops.duplicate(bm, geom=bm.verts[:] + bm.edges[:] + bm.faces[:])
        bmesh.ops.translate(bm, verts=[g for g in copy["geom"] if isinstance(g, bmesh.types.BMVert)],
                            vec=(0.0, 0.0, -0.07))
        bm.to_mesh(mesh)
        bm.free()
    elif case == "normals":
        mesh.polygons[0].flip()
        mesh.update()
    elif case == "too far":
        sculpt.location = (0.0, 2.0, 0.0)
    before = positions(mesh).copy(), [tuple(p.vertices) for p in mesh.polygons]
    _select(bpy, [sculpt] if case == "no armature" else [sculpt, rig], sculpt)
    with pytest.raises(RuntimeError, match=messages[case]):
        bpy.ops.implicit_muscles.muscle_from_mesh()
    assert len(rig.implicit_muscles.muscles) == 0
    np.testing.assert_array_equal(positions(mesh), before[0])
    assert [tuple(p.vertices) for p in mesh.polygons] == before[1]


def test_sidebar_button_fits_the_selected_mesh(bpy):
    import types
    rig, _ = make_arm(bpy)
    sculpt, _ = _sculpt(bpy)
    _select(bpy, [sculpt, rig], rig)
    layout = blender_session.ContextRecordingLayout()
    bpy.types.IMPLICIT_MUSCLES_PT_muscles_view3d.draw(types.SimpleNamespace(layout=layout), bpy.context)
    (pointers,) = [p for idname, _, _, p in layout.buttons if idname == "implicit_muscles.muscle_from_mesh"]
    with bpy.context.temp_override(**pointers):
        assert bpy.ops.implicit_muscles.muscle_from_mesh() == {'FINISHED'}
    assert [m.name for m in rig.implicit_muscles.muscles] == ["BicepsSculpt"]
