"""Characters from the wild (docs/bad-input.md): a character laid out as Blender's FBX importer leaves it, or with
only its armature object scaled, gives the world-space result it gives in metres; Mirror on real rigs; corrective
keys at creases; Mixamo and game-engine names; linked characters and several in one file."""
import math

import numpy as np
import pytest

import blender_session
import wild_scenes

MEMBER = "game_engine/heavy"
FRAMES = (1, 5, 9)
"""Frames of the family's ``bend`` compared: the settled first pose, then on the way to the deep bend."""
SAME_TOL = 1e-4
"""[m] A vertex of a layout is where the metres layout puts it when this close."""
SAME_SHARE = 0.99
"""Share of the vertices within ``SAME_TOL`` on every frame. The others are the tracking's own sensitivity: the
float32 pose of a rig in centimetres differs from the one in metres by about 1e-7 m, and the tracking's stops turn
that into up to a few millimetres on a few dozen of 13,380 vertices, as the same noise added to the metres rig's
pose does (docs/design-notes.md, *World units at the Blender boundary*)."""
MUSCLE_TOL = 1e-4
"""[m] The muscles' simulated particles of a layout vs the metres layout's, in the world (the issue's bound for the
skin: the keep-inside step reads the float32 skin grids, placed through each layout's own transforms)."""


def _bound_world(bpy, layout: str):
    """``({frame: world positions}, {frame: muscle particles in the world}, [(muscle, width)], timings)`` of the
    member with the 22 limb muscles, bound in ``layout``: ``"metres"`` as built, ``"fbx"`` (centimetres, the object
    scaled 0.01 and turned about X) or ``"scaled"`` (centimetres, the object scaled 0.01)."""
    import sys

    blender_session.reset()
    armature, (mesh,), m = wild_scenes.append_member(bpy, MEMBER)
    if layout != "metres":
        wild_scenes.fbx_layout(bpy, armature, [mesh], turn=layout == "fbx")
    wild_scenes.add_limb_muscles(bpy, armature, m.bone_map)
    assert len(armature.implicit_muscles.muscles) == 22
    scene = bpy.context.scene
    scene.frame_set(1)
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.bind_skin() == {'FINISHED'}
    bound = sys.modules[blender_session.ADDON + ".blender.session.runtime"].bound(mesh)
    to_world = np.array(armature.matrix_world) @ np.linalg.inv(bound.core)
    skin, muscles, timings = {}, {}, []
    for f in range(1, max(FRAMES) + 1):
        scene.frame_set(f)
        assert bound.last_error == ""
        timings.append(bound.timings.get("total", 0.0))
        if f in FRAMES:
            skin[f] = wild_scenes.world_positions(bpy, mesh)
            x = bound.character.current.x
            muscles[f] = x @ to_world[:3, :3].T + to_world[:3, 3]
    return skin, muscles, [(mm.name, mm.width) for mm in armature.implicit_muscles.muscles], timings


def test_scale_and_layout_do_not_matter(bpy):
    """The game-engine body with 22 preset muscles bound in metres, in the FBX layout and with only its armature
    object scaled: the same widths (world units), the same muscles to 0.01 mm and the same skin to 0.1 mm (all of
    it on the settled first frame, 99 % of it while it bends)."""
    metres, metres_muscles, widths, _ = _bound_world(bpy, "metres")
    for layout in ("fbx", "scaled"):
        skin, muscles, other_widths, _ = _bound_world(bpy, layout)
        assert [n for n, _ in other_widths] == [n for n, _ in widths]
        np.testing.assert_allclose([w for _, w in other_widths], [w for _, w in widths], rtol=1e-5)
        for f in FRAMES:
            assert np.abs(muscles[f] - metres_muscles[f]).max() < MUSCLE_TOL, (layout, f)
            gap = np.linalg.norm(skin[f] - metres[f], axis=1)
            print(layout, f, f"{gap.max() * 1000:.4f} mm max, {np.median(gap) * 1000:.5f} median, "
                             f"{(gap > SAME_TOL).sum()} vertices over 0.1 mm")
            assert np.mean(gap < SAME_TOL) >= SAME_SHARE, (layout, f, np.mean(gap < SAME_TOL))
            if f == FRAMES[0]:
                assert gap.max() < SAME_TOL, (layout, f, gap.max())


def _hips_rig(bpy, off_x: float):
    """The mirrored arm with a ``Hips`` bone (no side in its name) ``off_x`` [m] off X = 0, 0.1 m long."""
    from blender_scenes import make_arm

    rig, meshes = make_arm(bpy, sides=(".L", ".R"))
    bpy.ops.object.mode_set(mode='EDIT')
    hips = rig.data.edit_bones.new("Hips")
    hips.head, hips.tail = (off_x, 0.0, 0.3), (off_x, 0.0, 0.4)
    bpy.ops.object.mode_set(mode='OBJECT')
    return rig, meshes


def test_mirror_takes_an_off_centre_hips_bone_as_its_own_mirror(bpy):
    """A Mixamo ``Hips`` lies 1.1 mm off X = 0: more than 1 % of its length, far less than the rig's size calls
    off-centre. A muscle from it mirrors onto it; a bone 5 cm off is still refused."""
    rig, _ = _hips_rig(bpy, 0.0011)
    ops = bpy.ops.implicit_muscles
    assert ops.add_muscle(origin_bone="Hips", insertion_bone="shoulder.L", name="quadriceps.L",
                          mirror=True) == {'FINISHED'}
    left, right = rig.implicit_muscles.muscles
    assert (right.name, right.origin_bone, right.insertion_bone) == ("quadriceps.R", "Hips", "shoulder.R")
    hips = rig.data.bones["Hips"]
    a = hips.matrix_local @ __import__("mathutils").Vector(left.origin_point)
    b = hips.matrix_local @ __import__("mathutils").Vector(right.origin_point)
    assert (a.x, a.y, a.z) == pytest.approx((-b.x, b.y, b.z), abs=1e-6)

    blender_session.reset()
    rig, _ = _hips_rig(bpy, 0.05)
    with pytest.raises(RuntimeError, match=r"no mirrored bone for 'Hips': its name has no side .* 50 mm off"):
        ops.add_muscle(origin_bone="Hips", insertion_bone="shoulder.L", name="quadriceps.L", mirror=True)
    assert len(rig.implicit_muscles.muscles) == 0


def test_mirror_again_updates_the_mirror(bpy):
    """Mirror, edit the left muscle (width, shape, points, keys), Mirror again: the right one takes the edit,
    mirrored, with its keys; its handles and place in the list stay."""
    from blender_scenes import make_arm

    rig, _ = make_arm(bpy, sides=(".L", ".R"))
    ops = bpy.ops.implicit_muscles
    assert ops.add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L", preset="biceps",
                          mirror=True) == {'FINISHED'}
    muscles = rig.implicit_muscles.muscles
    left = muscles[0]
    left.width, left.alpha_rest, left.twist = 0.041, 5, 0.3
    left.origin_point = (0.01, 0.05, 0.02)
    for frame, value in ((1, 0.0), (20, 0.8)):
        left.activation = value
        assert rig.keyframe_insert("implicit_muscles.muscles[0].activation", frame=frame)
    rig.implicit_muscles.active_index = 0
    assert ops.mirror_muscle() == {'FINISHED'}
    assert [m.name for m in muscles] == ["biceps.L", "biceps.R"]
    right = muscles[1]
    assert (right.width, right.alpha_rest, right.twist) == pytest.approx((0.041, 5, -0.3))
    from mathutils import Vector
    a = rig.data.bones["shoulder.L"].matrix_local @ Vector(left.origin_point)
    b = rig.data.bones["shoulder.R"].matrix_local @ Vector(right.origin_point)
    assert (a.x, a.y, a.z) == pytest.approx((-b.x, b.y, b.z), abs=1e-6)
    sys_anim = __import__("sys").modules[blender_session.ADDON + ".blender.scene.animation"]
    curves = {fc.data_path: fc for fc in sys_anim.fcurves(rig)}
    keyed = curves["implicit_muscles.muscles[1].activation"]
    assert [c for k in keyed.keyframe_points for c in k.co] == pytest.approx([1.0, 0.0, 20.0, 0.8])
    assert rig.implicit_muscles.active_index == 1


HIPS_OFF = 0.0011
"""[m] How far a Mixamo ``Hips`` bone lies off X = 0 (the family's rigs are exactly centred)."""


@pytest.mark.parametrize("names", ["game_engine", "mixamo"])
def test_game_engine_and_mixamo_names_everywhere(bpy, tmp_path, names):
    """The game-engine body (``upperarm_l``), or renamed the Mixamo way (``mixamorig:LeftArm``), in the FBX layout
    with its hips 1.1 mm off centre: presets name the muscles with the rig's side, Mirror finds the other side and
    takes the hips as their own mirror, Follow Joint finds the elbow and mirrors with the muscle, and the farm
    command bakes what playback shows."""
    import importlib
    import os
    import subprocess
    import sys
    from pathlib import Path

    armature, (mesh,), m = wild_scenes.append_member(bpy, MEMBER)
    bone_map = dict(m.bone_map)
    if names == "mixamo":
        renames = wild_scenes.rename_mixamo(bpy, armature, [mesh])
        bone_map = {k: renames[v] for k, v in bone_map.items() if isinstance(v, str)}
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode='EDIT')
    hips = armature.data.edit_bones[bone_map["pelvis"]]
    hips.head.x += HIPS_OFF
    hips.tail.x += HIPS_OFF
    bpy.ops.object.mode_set(mode='OBJECT')
    wild_scenes.fbx_layout(bpy, armature, [mesh])
    presets = [p for p in wild_scenes.LIMB_PRESETS if p[0] in ("biceps", "gluteus")]
    wild_scenes.add_limb_muscles(bpy, armature, bone_map, presets, mirror=False)
    muscles = armature.implicit_muscles.muscles
    side = "Left" if names == "mixamo" else "l"
    other = "Right" if names == "mixamo" else "r"
    assert [mm.name for mm in muscles] == [f"biceps_{side}", f"gluteus_{side}"]
    armature.implicit_muscles.active_index = 0
    assert bpy.ops.implicit_muscles.follow_joint() == {'FINISHED'}
    assert muscles[0].joint_bone == bone_map["forearm.L"]
    for k in (0, 1):
        armature.implicit_muscles.active_index = k
        assert bpy.ops.implicit_muscles.mirror_muscle() == {'FINISHED'}
    by_name = {mm.name: mm for mm in muscles}
    right = by_name[f"biceps_{other}"]
    assert (right.origin_bone, right.insertion_bone, right.joint_bone) == \
        (bone_map["upper_arm.R"], bone_map["forearm.R"], bone_map["forearm.R"])
    glute = by_name[f"gluteus_{other}"]
    assert (glute.origin_bone, glute.insertion_bone) == (bone_map["pelvis"], bone_map["thigh.R"])

    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 6
    scene.frame_set(1)
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.bind_skin() == {'FINISHED'}
    live = wild_scenes.play(bpy, mesh, range(1, 7))
    blend = tmp_path / "wild.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    runner = Path(__file__).with_name("run_cli.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(runner.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(runner), str(blend), "--frames", "1-6"], env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    pc2 = importlib.import_module(blender_session.ADDON + ".core.io.pc2")
    stem = importlib.import_module(blender_session.ADDON + ".blender.session.bake").mesh_stem(mesh)
    start, baked = pc2.read(tmp_path / "implicit_muscles_cache" / "wild" / f"{stem}.pc2")
    assert start == 1 and baked.shape == (6, len(mesh.data.vertices), 3)
    world = np.array(mesh.matrix_world)
    for f in range(1, 7):
        at = baked[f - 1] @ world[:3, :3].T + world[:3, 3]
        assert np.abs(at - live[f]).max() < 1e-4, f


LINKED_TOL = 1e-5
"""[m] A character linked, appended or baked (float32 point caches) shows what it shows alone, live, this close."""
LINKED_FRAMES = (10, 30)


def _character_library(bpy, tmp_path):
    """The animated arm in a collection "Character", bound and saved as a library (an asset set up in its own
    file): ``(path, {frame: positions it shows alone there}, the same of its variant with a ``WIDER`` biceps)``."""
    from blender_scenes import animated_arm, bind, evaluated

    rig, mesh = animated_arm(bpy)
    collection = bpy.data.collections.new("Character")
    bpy.context.scene.collection.children.link(collection)
    for obj in (rig, mesh):
        bpy.context.scene.collection.objects.unlink(obj)
        collection.objects.link(obj)
    library = tmp_path / "character.blend"
    alone = []
    for width in (1.0, WIDER):
        rig.implicit_muscles.muscles[0].width *= width
        bind(bpy, mesh)
        out = {}
        for f in range(1, max(LINKED_FRAMES) + 1):
            bpy.context.scene.frame_set(f)
            if f in LINKED_FRAMES:
                out[f] = evaluated(bpy, mesh)
        alone.append(out)
        if width == 1.0:
            bpy.context.scene.frame_set(1)
            bpy.ops.wm.save_as_mainfile(filepath=str(library))
    assert np.abs(alone[0][30] - alone[1][30]).max() > 1e-3  # the variant shows
    return library, alone[0], alone[1]


WIDER = 1.3
"""The appended copy's biceps is this much wider than the linked one's: the two must not mix."""


def _shot(bpy, library):
    """A new file linking "Character" from ``library`` as a library override and appending a second copy of it
    whose biceps is ``WIDER``: ``(linked mesh, appended mesh)``, both bound with Bind Skin."""
    from blender_scenes import bind, start_scene

    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(library), link=True) as (_, linked):
        linked.collections = ["Character"]
    instance = bpy.data.objects.new("Character", None)
    instance.instance_type, instance.instance_collection = 'COLLECTION', linked.collections[0]
    scene = bpy.context.scene
    scene.collection.objects.link(instance)
    bpy.context.view_layer.objects.active = instance
    instance.select_set(True)
    assert bpy.ops.object.make_override_library() == {'FINISHED'}
    with bpy.data.libraries.load(str(library), link=False) as (_, appended):
        appended.collections = ["Character"]
    scene.collection.children.link(appended.collections[0])
    start_scene(bpy)
    meshes = [o for o in scene.objects if o.type == 'MESH']
    linked_mesh = next(o for o in meshes if o.override_library is not None)
    appended_mesh = next(o for o in meshes if o.override_library is None and o.library is None)
    assert linked_mesh.data.library is not None and appended_mesh.data.library is None
    appended_mesh.parent.implicit_muscles.muscles[0].width *= WIDER
    for mesh in (linked_mesh, appended_mesh):
        bind(bpy, mesh)
    return linked_mesh, appended_mesh


def _shown(bpy, meshes) -> list:
    """``[{frame: positions}]`` of ``meshes`` played from frame 1 to the last of ``LINKED_FRAMES``."""
    from blender_scenes import evaluated

    out = [{} for _ in meshes]
    for f in range(1, max(LINKED_FRAMES) + 1):
        bpy.context.scene.frame_set(f)
        if f in LINKED_FRAMES:
            for shown, mesh in zip(out, meshes):
                shown[f] = evaluated(bpy, mesh)
    return out


def _same(shown, alone, tol=LINKED_TOL):
    for f in LINKED_FRAMES:
        assert np.abs(shown[f] - alone[f]).max() < tol, (f, np.abs(shown[f] - alone[f]).max())


def test_a_linked_and_an_appended_character_bind_play_bake_and_reopen(bpy, tmp_path):
    """A character bound in its own file, linked into a shot as a library override, and a copy of it appended
    with a wider biceps: both bind in the shot and each plays what it plays alone; saved and reopened, they play
    it again; baked together, each bakes to its own file and plays its own result, also after saving and
    reopening; the library file is never written."""
    library, alone, wider = _character_library(bpy, tmp_path)
    written = library.read_bytes()
    linked, appended = _shot(bpy, library)
    names = linked.name, appended.name
    for shown, own in zip(_shown(bpy, [linked, appended]), (alone, wider)):
        _same(shown, own)
    shot = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(shot))
    bpy.ops.wm.open_mainfile(filepath=str(shot))
    meshes = [bpy.data.objects[n] for n in names]
    for shown, own in zip(_shown(bpy, meshes), (alone, wider)):
        _same(shown, own)
    scene = bpy.context.scene
    assert bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=max(LINKED_FRAMES)) == {'FINISHED'}
    files = {m.implicit_skin.bake_file for m in meshes}
    assert len(files) == 2 and all(m.implicit_skin.baked for m in meshes)
    for shown, own in zip(_shown(bpy, meshes), (alone, wider)):
        _same(shown, own)
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(shot))
    meshes = [bpy.data.objects[n] for n in names]
    assert all(m.implicit_skin.baked and m.modifiers["Implicit Skinning Cache"].show_viewport for m in meshes)
    for shown, own in zip(_shown(bpy, meshes), (alone, wider)):
        _same(shown, own)
    assert scene is not None and library.read_bytes() == written


def test_one_mesh_bound_in_two_scenes_does_not_share_state(bpy):
    """The arm's mesh data used by a second object in a second scene, on a copy of the rig holding another pose,
    both bound: each scene shows its own result, whichever played last."""
    from blender_scenes import animated_arm, evaluated

    rig, mesh = animated_arm(bpy)
    first = bpy.context.scene
    view_first = first.view_layers[0]
    second = bpy.data.scenes.new("Second")
    other_rig = rig.copy()
    other_rig.animation_data_clear()
    other_mesh = mesh.copy()  # the same mesh data
    other_mesh.parent = other_rig
    other_mesh.modifiers["Armature"].object = other_rig
    for obj in (other_rig, other_mesh):
        second.collection.objects.link(obj)
    other_rig.pose.bones["elbow"].rotation_mode = 'XYZ'
    other_rig.pose.bones["elbow"].rotation_euler = (math.radians(60.0), 0.0, 0.0)
    second.frame_start, second.frame_end = 1, 60
    view_second = second.view_layers[0]
    assert other_mesh.data == mesh.data
    for scene, view, obj in ((first, view_first, mesh), (second, view_second, other_mesh)):
        with bpy.context.temp_override(scene=scene, view_layer=view, object=obj, active_object=obj):
            assert bpy.ops.implicit_muscles.bind_skin() == {'FINISHED'}
    assert other_mesh.implicit_skin.armature == other_rig
    runtime = __import__("sys").modules[blender_session.ADDON + ".blender.session.runtime"]
    assert runtime.bound(mesh) is not runtime.bound(other_mesh)

    def shows(scene, view, obj, frames):
        for f in frames:
            scene.frame_set(f)
        view.update()
        return evaluated(bpy, obj, view.depsgraph)

    ours = shows(first, view_first, mesh, range(1, 31))
    theirs = shows(second, view_second, other_mesh, range(1, 11))
    assert np.abs(ours - theirs).max() > 0.01  # 110 and 60 degrees
    assert np.abs(shows(first, view_first, mesh, []) - ours).max() < 1e-6
    assert np.abs(shows(second, view_second, other_mesh, []) - theirs).max() < 1e-6
    assert runtime.bound(mesh).last_error == "" and runtime.bound(other_mesh).last_error == ""
