"""Bad and awkward input (docs/bad-input.md lists each entry with its outcome and test).

Every entry ends in one of two ways, with the user's data untouched (the rest mesh, its weights, the modifiers'
order): binding stops with a sentence that names the object and the fix (``RuntimeError`` from the operator,
Blender's report), or the frame falls back to the plain Armature result with one warning, and the next good frame
is Implicit Skinning again. Entries covered elsewhere: the armature deleted while bound and a file opened with the
extension disabled (test_evaluation.py), several characters on one armature (test_evaluation_stack.py), a muscle
whose bone was deleted before bind (test_authoring.py).
"""
import math
import sys

import numpy as np
import pytest

import blender_session
from blender_scenes import animated_arm, bind, evaluated, make_arm, positions, start_scene

SAME_TOL = 1e-6
"""The same frame computed twice [m] (positions go through float32 attributes)."""
WARNING = "shows its plain Armature result"


def _runtime():
    return sys.modules[f"{blender_session.ADDON}.blender.session.runtime"]


def _play(bpy, frames):
    for f in frames:
        bpy.context.scene.frame_set(f)


def _live(mesh) -> bool:
    """Implicit Skinning shows (not the plain Armature fallback)."""
    ours = mesh.modifiers.get("Implicit Skinning (Linked Mesh)") or mesh.modifiers["Implicit Skinning"]
    return ours.show_viewport and not mesh.modifiers["Armature"].show_viewport


def _snapshot(mesh):
    """The user's data of ``mesh``: rest positions, every vertex's weights, the modifier stack."""
    weights = [sorted((g.group, round(g.weight, 6)) for g in v.groups) for v in mesh.data.vertices]
    return positions(mesh.data), weights, [(m.name, m.type) for m in mesh.modifiers]


def _same_snapshot(a, b):
    return np.array_equal(a[0], b[0]) and a[1] == b[1] and a[2] == b[2]


def _refuses(bpy, mesh, match):
    """Bind Skin on ``mesh`` stops with a message matching ``match``; nothing of the mesh changed."""
    before = _snapshot(mesh)
    with pytest.raises(RuntimeError, match=match):
        bind(bpy, mesh)
    assert not mesh.implicit_skin.bound and _runtime().bound(mesh) is None
    assert _same_snapshot(_snapshot(mesh), before)


def _edit_mesh(mesh, edit):
    import bmesh
    bm = bmesh.new()
    bm.from_mesh(mesh.data)
    edit(bm)
    bm.to_mesh(mesh.data)
    bm.free()
    mesh.data.update()


def _plain(bpy, mesh):
    """The plain Armature result of the current frame (the effect switched off and on again)."""
    mesh.implicit_skin.enabled = False
    out = evaluated(bpy, mesh)
    mesh.implicit_skin.enabled = True
    return out


# --- bind refuses, naming the fix ---------------------------------------------------------------------------------

def test_mesh_without_weights_or_weighted_to_no_bone(bpy):
    """Vertices with no weight on a bone (here only in a non-bone group 'pin') are named; the Nearest Bone setting
    binds them to their nearest bone instead; a mesh with no bone groups at all is named too."""
    rig, mesh = animated_arm(bpy)
    for group in mesh.vertex_groups:
        group.remove([0, 1, 2])
    mesh.vertex_groups.new(name="pin").add([0, 1, 2], 1.0, 'REPLACE')
    _refuses(bpy, mesh, r"Arm: 3 vertices have no weight on a bone of Rig, the first is vertex 0 \(it is only in "
                        r"pin, not a bone\): weight them in Weight Paint, or set Unweighted Vertices to Nearest Bone")
    mesh.implicit_skin.unweighted = 'NEAREST'
    bind(bpy, mesh)
    _play(bpy, range(1, 21))
    assert _live(mesh) and np.isfinite(evaluated(bpy, mesh)).all()
    bpy.ops.implicit_muscles.unbind_skin()
    mesh.vertex_groups.clear()
    _refuses(bpy, mesh, "Arm has no vertex group named after a bone of Rig: weight it to the armature first")


def test_origin_equal_to_insertion(bpy):
    rig, mesh = animated_arm(bpy)
    m = rig.implicit_muscles.muscles[0]
    m.insertion_bone = m.origin_bone
    m.insertion_point = m.origin_point
    _refuses(bpy, mesh, "biceps: origin and insertion are at the same place; move one of them")


def test_shape_values_out_of_range_set_through_python(bpy):
    """Through the properties, Blender clamps to the allowed range; written as raw ID properties (past the range),
    binding names the muscle, the value and the range."""
    rig, mesh = animated_arm(bpy)
    m = rig.implicit_muscles.muscles[0]
    m.alpha_rest, m.beta_active, m.eccentricity_rest = 20, 0, 1.5
    assert (m.alpha_rest, m.beta_active, m.eccentricity_rest) == (9, 1, pytest.approx(0.99))
    m["alpha_rest"] = 20
    _refuses(bpy, mesh, r"biceps: alpha_rest must be a whole number from 1 to 9, got 20\.")
    m["alpha_rest"] = 3
    m["width"] = -0.01
    _refuses(bpy, mesh, r"biceps: muscle width must be greater than 0, got -0\.01\.")
    m["width"] = 0.03
    rig.implicit_muscles.muscles[1].eccentricity_active = 1.0  # the slider's end: 0.99 in float32, just above 0.99
    bind(bpy, mesh)
    _play(bpy, range(1, 31))
    assert _live(mesh) and _runtime().bound(mesh).last_error == ""


def test_muscle_bone_deleted_after_bind_and_bone_count_changed(bpy, capfd):
    """Deleting a bone after bind: the frame falls back with one warning naming the armature and the fix; binding
    again names what is now missing (the hand's vertices only weighted to the deleted bone's group)."""
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    _play(bpy, range(1, 6))
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='EDIT')
    rig.data.edit_bones.remove(rig.data.edit_bones["wrist"])
    bpy.ops.object.mode_set(mode='OBJECT')
    _play(bpy, range(6, 10))
    err = capfd.readouterr().err
    assert err.count(WARNING) == 1 and "Traceback" not in err
    assert "Rig has 2 bones now and had 3 when Arm was bound: bind it again" in err
    assert not _live(mesh) and "changed since bind" in _runtime().stale_reason(mesh)
    _refuses_rebind = "vertices have no weight on a bone of Rig.*it is only in wrist, not a bone"
    with pytest.raises(RuntimeError, match=_refuses_rebind):
        bind(bpy, mesh)


def test_renamed_bones_are_followed_by_their_muscles(bpy):
    """Renaming a bone (Blender renames its vertex group too) renames it in the muscles: the bind stays valid, a
    new bind gives the same result."""
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    _play(bpy, range(1, 21))
    before = evaluated(bpy, mesh)
    rig.data.bones["elbow"].name = "forearm"
    bpy.context.view_layer.update()  # what Blender's event loop does after an edit in the interface
    _play(bpy, [21])
    muscles = rig.implicit_muscles.muscles
    assert [m.insertion_bone for m in muscles] == ["forearm", "forearm"]
    assert "forearm" in mesh.vertex_groups and _runtime().stale_reason(mesh) == ""
    bind(bpy, mesh)
    bpy.ops.implicit_muscles.reset_simulation()
    _play(bpy, range(1, 21))
    assert _live(mesh) and np.abs(evaluated(bpy, mesh) - before).max() < SAME_TOL


# --- awkward meshes and rigs that work ----------------------------------------------------------------------------

def test_loose_duplicate_non_manifold_vertices_and_zero_area_faces(bpy):
    """A loose vertex, faces split off at the elbow (duplicate vertices), a fin triangle on an edge (non-manifold)
    and a face collapsed to a point (zero area) bind and play; split vertices stay together."""
    from mathutils import Vector

    rig, mesh = animated_arm(bpy)
    V = len(mesh.data.vertices)

    def edit(bm):
        import bmesh
        bm.verts.new((0.4, 0.0, 0.0))  # loose, inside the arm at the elbow
        near_elbow = [f for f in bm.faces if abs(f.calc_center_median().x - 0.4) < 0.02]
        bmesh.ops.split(bm, geom=near_elbow[:6])  # duplicates the split faces' boundary vertices
        bm.edges.ensure_lookup_table()
        bm.faces.ensure_lookup_table()
        e = bm.edges[10]
        fin = bm.verts.new(e.verts[0].co + Vector((0.0, 0.0, 0.03)))
        bm.faces.new((e.verts[0], e.verts[1], fin))
        bm.faces.ensure_lookup_table()
        collapsed = bm.faces[400]
        centre = collapsed.calc_center_median()
        for v in collapsed.verts:
            v.co = centre

    _edit_mesh(mesh, edit)
    count = len(mesh.data.vertices)
    assert count > V + 2
    rest = positions(mesh.data)
    for i in range(V, count):  # a new vertex takes the weights of the nearest original one
        nearest = mesh.data.vertices[int(np.argmin(np.linalg.norm(rest[:V] - rest[i], axis=1)))]
        for g in nearest.groups:
            mesh.vertex_groups[g.group].add([i], g.weight, 'REPLACE')
    bind(bpy, mesh)
    _play(bpy, range(1, 31))
    ours = evaluated(bpy, mesh)
    assert _live(mesh) and np.isfinite(ours).all()
    same = np.linalg.norm(rest[:, None] - rest[None], axis=2) < 1e-9
    i, j = np.nonzero(np.triu(same, 1))
    assert len(i) > 6  # the split and the collapsed face
    assert np.abs(ours[i] - ours[j]).max() < 1e-4
    assert np.abs(ours - _plain(bpy, mesh)).max() < 0.05
    assert np.array_equal(positions(mesh.data), rest)


def test_a_rig_without_muscles_binds_implicit_skinning_alone(bpy):
    """No muscle on the armature (a rig before muscles), or none on this mesh (a character's head): Implicit
    Skinning alone binds and plays; it is not the Armature result at a bent elbow, and the rest pose gives back the
    rest mesh."""
    rig, (mesh,) = make_arm(bpy)
    start_scene(bpy)
    rest = positions(mesh.data)
    bind(bpy, mesh)
    assert len(_runtime().bound(mesh).character.model.muscles) == 0
    assert np.abs(evaluated(bpy, mesh) - rest).max() < 1e-5
    elbow = rig.pose.bones["elbow"]
    elbow.rotation_mode = 'XYZ'
    for frame, angle in ((1, 0.0), (20, 110.0)):
        elbow.rotation_euler = (math.radians(angle), 0.0, 0.0)
        elbow.keyframe_insert("rotation_euler", frame=frame)
    _play(bpy, range(1, 21))
    shown = evaluated(bpy, mesh)
    assert _live(mesh) and np.isfinite(shown).all() and _runtime().bound(mesh).last_error == ""
    assert np.abs(shown - _plain(bpy, mesh)).max() > 1e-3


def test_a_bone_with_no_vertices_and_extreme_settings(bpy):
    """A bone that weights no vertex (an IK target) is fine; so are the smallest and largest particle counts,
    substeps and stiffness (keyed from 0 to 1)."""
    rig, mesh = animated_arm(bpy)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='EDIT')
    target = rig.data.edit_bones.new("ik_target")
    target.head, target.tail = (1.0, 0.5, 0.0), (1.0, 0.6, 0.0)
    bpy.ops.object.mode_set(mode='OBJECT')
    muscles = rig.implicit_muscles.muscles
    for particles, substeps in ((3, 1), (60, 100)):
        for k, m in enumerate(muscles):
            m.particles = particles
            for frame, stiffness in ((1, 0.0), (30, 1.0)):
                m.stiffness = stiffness
                rig.keyframe_insert(f"implicit_muscles.muscles[{k}].stiffness", frame=frame)
        rig.implicit_muscles.substeps = substeps
        bind(bpy, mesh)
        _play(bpy, range(1, 31))
        assert _live(mesh) and np.isfinite(evaluated(bpy, mesh)).all(), (particles, substeps)
        assert _runtime().bound(mesh).last_error == ""


def test_scaled_or_parented_armature(bpy, capfd):
    """Scaling the armature object (uniformly or not) or parenting it to a moving empty moves the mesh with it:
    the result in the mesh's space is unchanged. A mesh moved relative to its armature (unparented) no longer fits
    its bind: one warning, the plain result."""
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    _play(bpy, range(1, 21))
    reference = evaluated(bpy, mesh)
    empty = bpy.data.objects.new("Mover", None)
    bpy.context.scene.collection.objects.link(empty)
    for scale, parent in (((2.0, 2.0, 2.0), None), ((1.0, 2.0, 0.5), None), ((1.0, 1.0, 1.0), empty)):
        rig.scale = scale
        rig.parent = parent
        empty.location, empty.rotation_euler = (3.0, 1.0, 0.0), (0.3, 0.2, 0.1)
        _play(bpy, [19, 20])
        assert _live(mesh) and np.abs(evaluated(bpy, mesh) - reference).max() < SAME_TOL, (scale, parent)
    mesh.parent = None
    _play(bpy, [21, 22])
    err = capfd.readouterr().err
    assert err.count(WARNING) == 1 and "Arm moved relative to Rig since bind" in err
    assert not _live(mesh)


def test_nan_and_huge_bone_transforms(bpy, capfd):
    """A NaN rotation or a bone thrown a thousand kilometres: the frame falls back with one warning naming the bone;
    a pose 100 m away (within reach) is Implicit Skinning; the next sane frame is too."""
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    _play(bpy, range(1, 11))
    good = evaluated(bpy, mesh)
    elbow, shoulder = rig.pose.bones["elbow"], rig.pose.bones["shoulder"]
    elbow.rotation_mode = 'QUATERNION'
    elbow.rotation_quaternion = (float("nan"), 0.0, 0.0, 0.0)
    _play(bpy, [11])
    assert not _live(mesh)
    elbow.rotation_mode = 'XYZ'
    shoulder.location = (0.0, 1e6, 0.0)
    _play(bpy, [12])
    assert not _live(mesh)
    err = capfd.readouterr().err
    assert err.count(WARNING) == 2 and "Traceback" not in err
    assert "the pose of elbow contains NaN" in err and "the pose moves shoulder 1e+06 m away" in err
    shoulder.location = (0.0, 0.0, 0.0)
    _play(bpy, [10])
    assert _live(mesh) and np.abs(evaluated(bpy, mesh) - good).max() < SAME_TOL
    shoulder.location = (0.0, 100.0, 0.0)  # along the shoulder bone's Y: 100 m off in the armature
    _play(bpy, [11])
    assert _live(mesh) and np.isfinite(evaluated(bpy, mesh)).all()


def test_topology_edited_after_bind(bpy, capfd):
    rig, mesh = animated_arm(bpy)
    bind(bpy, mesh)
    _play(bpy, range(1, 6))
    _edit_mesh(mesh, lambda bm: bm.verts.new((0.4, 0.0, 0.0)))
    _play(bpy, range(6, 9))
    err = capfd.readouterr().err
    assert err.count(WARNING) == 1 and "Arm has 2173 vertices now and had 2172 at bind: bind it again" in err
    assert not _live(mesh) and _runtime().stale_reason(mesh).startswith("The mesh has 2173 vertices now")
    mesh.vertex_groups["elbow"].add([2172], 1.0, 'REPLACE')
    bind(bpy, mesh)
    _play(bpy, [9])
    assert _live(mesh)


def _in_a_collection(bpy, rig, mesh):
    """Move ``rig`` and ``mesh`` into a collection "Character" (what a shot links)."""
    collection = bpy.data.collections.new("Character")
    bpy.context.scene.collection.children.link(collection)
    for obj in (rig, mesh):
        bpy.context.scene.collection.objects.unlink(obj)
        collection.objects.link(obj)


def _linked_into_a_new_shot(bpy, library):
    """A new empty file that links "Character" from ``library`` and makes it a library override: ``(scene, mesh,
    rig)`` of the shot (frames 1-60)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(library), link=True) as (_, data_to):
        data_to.collections = ["Character"]
    instance = bpy.data.objects.new("Character", None)
    instance.instance_type, instance.instance_collection = 'COLLECTION', data_to.collections[0]
    scene = bpy.context.scene
    scene.collection.objects.link(instance)
    bpy.context.view_layer.objects.active = instance
    instance.select_set(True)
    assert bpy.ops.object.make_override_library() == {'FINISHED'}
    scene.frame_start, scene.frame_end = 1, 60
    return (scene, next(o for o in scene.objects if o.type == 'MESH'),
            next(o for o in scene.objects if o.type == 'ARMATURE'))


def _bound_then_linked(bpy, rig, mesh, tmp_path):
    """``rig`` and ``mesh`` put in a collection, bound and played to frame 30, saved as a library and linked into a
    new shot: ``(positions at frame 30 in its own file, the library's path, its bytes, (scene, mesh, rig) of the
    shot)``."""
    _in_a_collection(bpy, rig, mesh)
    bind(bpy, mesh)
    _play(bpy, range(1, 31))
    own = evaluated(bpy, mesh)
    library = tmp_path / "character.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library))
    return own, library, library.read_bytes(), _linked_into_a_new_shot(bpy, library)


def test_library_linked_character_with_overrides(bpy, tmp_path):
    """A character linked from another file into a shot and made a library override: it binds on first use and
    plays as it does in its own file; activation set on the override is used; the library file is not written."""
    own, library, written, (scene, mesh, rig) = _bound_then_linked(bpy, *animated_arm(bpy), tmp_path)
    assert mesh.override_library is not None and mesh.data.library is not None  # the mesh data stays linked
    _play(bpy, range(1, 31))
    live = mesh.modifiers["Implicit Skinning (Linked Mesh)"]
    assert live.show_viewport and not mesh.modifiers["Implicit Skinning"].show_viewport
    assert not mesh.modifiers["Armature"].show_viewport and _runtime().bound(mesh).last_error == ""
    assert np.abs(evaluated(bpy, mesh) - own).max() < SAME_TOL
    _play(bpy, [20])
    assert np.abs(evaluated(bpy, mesh) - own).max() > 0.01  # live, not the library's frozen attribute
    rig.animation_data.action = None  # the shot's own animation: hold the pose, drive the biceps by hand
    rig.implicit_muscles.muscles[0].activation = 0.0
    _play(bpy, [31])
    relaxed = evaluated(bpy, mesh)
    rig.implicit_muscles.muscles[0].activation = 1.0
    bpy.ops.implicit_muscles.reset_simulation()
    _play(bpy, [31])
    assert np.abs(evaluated(bpy, mesh) - relaxed).max() > 1e-3
    assert library.read_bytes() == written


def test_library_linked_mesh_with_a_modifier_after_the_armature(bpy, tmp_path, capfd):
    """A linked mesh whose library stack has a Subdivision after the Armature modifier: an override cannot put
    Implicit Skinning between them, so the shot shows the plain Armature result (subdivided), with one warning
    that names the modifier and the way out."""
    rig, mesh = animated_arm(bpy)
    mesh.modifiers.new("Subdivision", 'SUBSURF').levels = 1
    _in_a_collection(bpy, rig, mesh)
    bind(bpy, mesh)
    library = tmp_path / "character.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library))
    scene, mesh, _ = _linked_into_a_new_shot(bpy, library)
    _play(bpy, range(1, 6))
    err = capfd.readouterr().err
    assert err.count(WARNING) == 1 and "has 'Subdivision' after the Armature modifier" in err
    assert mesh.modifiers["Armature"].show_viewport and not _live(mesh)
