"""Every collision setting of the muscle panel does what it says: a new muscle settles
where it was placed and inside the skin; *Bones*, *Bone Radius*, *Muscles*, *Group* (the paper's overlapping
pectoral fibres, §5.3 Fig. 7), *Stay Under Skin* and the rig's *Substeps* and *Friction* each change what bind or playback
computes; the settings survive duplicate, mirror and save/reload, and changing one makes the bind stale."""
import importlib

import numpy as np
import pytest

import blender_session
from blender_scenes import bind, make_arm

PLACED_TOL = 0.002
"""Largest distance [m] of a settled axis particle from the segment the muscle was placed on: a new muscle settles
where it was placed."""
STILL_TOL = 1e-4
"""Largest distance [m] of a settled axis from its placed segment when nothing pushes it."""
PUSHED = 0.004
"""Smallest largest-move [m] of an axis that a bone or another muscle pushes at bind."""


def _module(name):
    import sys
    return sys.modules[f"{blender_session.ADDON}.{name}"]


def _segment_distance(points, a, b):
    """``(n,)`` distances [m] of ``points (n, 3)`` from the segment ``a``-``b``."""
    e = b - a
    t = np.clip((points - a) @ e / (e @ e), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * e), axis=1)


def _winding(points, vertices, faces):
    """Generalised winding number of a closed mesh at ``points (n, 3)``: 1 inside, 0 outside (van Oosterom and
    Strackee's solid angle, summed over the faces)."""
    out = np.zeros(len(points))
    tri = vertices[faces]
    for start in range(0, len(points), 256):
        p = points[start:start + 256]
        a, b, c = (tri[None, :, k, :] - p[:, None, :] for k in range(3))
        la, lb, lc = (np.linalg.norm(v, axis=2) for v in (a, b, c))
        det = np.einsum("pfi,pfi->pf", a, np.cross(b, c))
        div = la * lb * lc + np.einsum("pfi,pfi->pf", a, b) * lc + np.einsum("pfi,pfi->pf", b, c) * la \
            + np.einsum("pfi,pfi->pf", c, a) * lb
        out[start:start + 256] = np.arctan2(det, div).sum(axis=1) / (2.0 * np.pi)
    return out


def _settled_axes(mesh):
    """The bound character's settled rest axes, one ``(n, 3)`` array per fibre (armature space)."""
    character = _module("blender.session.runtime").bound(mesh).character
    x = character.model.settled_rest()[0]
    starts = character.model.pbd.axis_start
    return [x[starts[m]:starts[m + 1]] for m in range(len(starts) - 1)]


def _placed(rig, mesh):
    """The straight axes the fibres are placed on (``binding.describe``), one ``(n, 3)`` array per fibre."""
    return [m.axis for m in _module("blender.session.binding").describe(mesh, rig).muscles]


def _moves(rig, mesh):
    """``(fibres,)`` largest distance [m] of each settled axis from the segment its fibre was placed on."""
    return np.array([_segment_distance(s, p[0], p[-1]).max() for s, p in zip(_settled_axes(mesh), _placed(rig, mesh))])


def _rebind(bpy, rig, mesh):
    bind(bpy, mesh)
    bpy.context.view_layer.objects.active = rig


def _select(bpy, rig, names, active):
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='POSE')
    for pb in rig.pose.bones:
        owner = pb if "select" in pb.bl_rna.properties.keys() else pb.bone  # 5.0: pose bone; 4.2: bone
        owner.select = pb.name in names
    rig.data.bones.active = rig.data.bones[active]


@pytest.mark.parametrize("preset", ["", "biceps"])
def test_a_new_muscle_settles_where_it_was_placed_inside_the_skin(bpy, preset):
    """Added by selection, no handle moved: the settled axis is within 2 mm of where it was placed, and the whole
    settled muscle (its surface mesh) lies inside the rest skin."""
    from mathutils import Vector
    rig, (mesh,) = make_arm(bpy)
    _select(bpy, rig, ("shoulder", "elbow"), "elbow")
    assert bpy.ops.implicit_muscles.add_muscle(preset=preset) == {'FINISHED'}
    bpy.ops.object.mode_set(mode='OBJECT')
    m = rig.implicit_muscles.muscles[0]
    assert m.collide_bones and m.keep_inside and m.bone_radius == 0.0  # nothing set by hand
    _rebind(bpy, rig, mesh)
    moved = _moves(rig, mesh)
    character = _module("blender.session.runtime").bound(mesh).character
    surface = importlib.import_module(f"{blender_session.ADDON}.core.muscle.surface").muscle_surface(
        character.model.muscles[0], rings=48, sides=24)[0]
    winding = _winding(surface, character.model.rig.vertices, character.model.rig.faces)
    bone = rig.data.bones["shoulder"]
    o = Vector(m.origin_point)
    print(f"preset {preset or 'none'}: axis {o.z * 1000:.1f} mm from the bone, width {m.width * 1000:.1f} mm, settled "
          f"{moved.max() * 1000:.2f} mm from where it was placed, surface winding {winding.min():.3f} "
          f"to {winding.max():.3f}")
    assert bone.length > 0 and moved.max() < PLACED_TOL
    assert np.all(winding > 0.5)  # every surface point inside the rest skin


def _two_overlapping(bpy, rig, offset=0.006):
    """The default muscle and a duplicate moved ``offset`` [m] sideways (bone X), so the two overlap."""
    ops = bpy.ops.implicit_muscles
    assert ops.add_muscle(origin_bone="shoulder", insertion_bone="elbow") == {'FINISHED'}
    assert ops.duplicate_muscle() == {'FINISHED'}
    second = rig.implicit_muscles.muscles[1]
    second.origin_point.x += offset
    second.insertion_point.x += offset
    return rig.implicit_muscles.muscles


def test_bones_and_bone_radius(bpy):
    """A muscle placed close to its bone: the bone capsule pushes it out at bind; with *Bones* off, or a small
    *Bone Radius*, it stays where it was placed."""
    rig, (mesh,) = make_arm(bpy)
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="elbow") == {'FINISHED'}
    m = rig.implicit_muscles.muscles[0]
    m.origin_point.z *= 2.0 / 3.0  # 0.4 limb radii from the bone: into the automatic capsule (0.25 + 0.3)
    m.insertion_point.z *= 2.0 / 3.0
    results = {}
    for label, bones, radius in (("bones", True, 0.0), ("no bones", False, 0.0), ("thin bone", True, 0.001)):
        m.collide_bones, m.bone_radius = bones, radius
        _rebind(bpy, rig, mesh)
        results[label] = _moves(rig, mesh).max()
        character = _module("blender.session.runtime").bound(mesh).character
        if radius:
            assert np.all(character.model.capsule_radius[0] == pytest.approx(radius))
        if not bones:
            assert character.model.pbd.cap_start[-1] == 0  # no capsule at all
    print({k: f"{v * 1000:.2f} mm" for k, v in results.items()})
    assert results["bones"] > PUSHED
    assert results["no bones"] < STILL_TOL and results["thin bone"] < STILL_TOL


def test_muscles_and_group(bpy):
    """Two overlapping muscles on one skin bone push each other apart at bind; with *Muscles* off on one of them,
    or both in one *Group*, they keep overlapping where they were placed; in two groups they push again."""
    rig, (mesh,) = make_arm(bpy)
    first, second = _two_overlapping(bpy, rig)
    results = {}
    for label, collide, groups in (("collide", True, (0, 0)), ("muscles off", False, (0, 0)),
                                   ("one group", True, (3, 3)), ("two groups", True, (3, 4))):
        second.collide_muscles = collide
        first.collision_group, second.collision_group = groups
        _rebind(bpy, rig, mesh)
        results[label] = _moves(rig, mesh).max()
    print({k: f"{v * 1000:.2f} mm" for k, v in results.items()})
    assert results["collide"] > PUSHED and results["two groups"] > PUSHED
    assert results["muscles off"] < STILL_TOL and results["one group"] < STILL_TOL


def _fan(bpy, rig, groups):
    """A pectoral-like fan of four fibres, each a muscle of its own, from origins spread 4 cm across the upper arm
    to one insertion; ``groups``: each fibre's *Group*."""
    ops = bpy.ops.implicit_muscles
    for k, group in enumerate(groups):
        assert ops.add_muscle(origin_bone="shoulder", insertion_bone="elbow", name=f"fibre{k}") == {'FINISHED'}
        m = rig.implicit_muscles.muscles[k]
        m.origin_point.x += 0.04 * (k / (len(groups) - 1) - 0.5)
        m.width *= 0.7
        m.collision_group = group


@pytest.mark.parametrize("groups, overlap", [((1, 1, 1, 1), True), ((1, 2, 3, 4), False)])
def test_pectoral_fibres_in_one_group_overlap_where_placed(bpy, groups, overlap):
    """Paper §5.3, Fig. 7: fibres that share a group stay where they were placed, overlapping near the insertion;
    in groups of their own they push each other apart."""
    rig, (mesh,) = make_arm(bpy)
    _fan(bpy, rig, groups)
    _rebind(bpy, rig, mesh)
    moved = _moves(rig, mesh)
    axes = _settled_axes(mesh)
    inner = [a[1:-1] for a in axes]  # the fibres share their insertion point: leave the endpoints out
    closest = min(float(np.min(np.linalg.norm(inner[a][:, None] - inner[b][None], axis=2)))
                  for a in range(4) for b in range(a + 1, 4))
    reach = 0.3 * 0.7 * _module("blender.scene.rig").limb_radius(rig, "shoulder")  # each fibre's thickest half-width
    print(f"groups {groups}: largest move {moved.max() * 1000:.2f} mm, closest inner axis particles "
          f"{closest * 1000:.2f} mm, a fibre reaches {reach * 1000:.1f} mm")
    if overlap:
        assert moved.max() < STILL_TOL and closest < 0.5 * reach  # overlapping, as placed
    else:
        assert moved.max() > PUSHED


def test_pectoral_preset_fibres_overlap(bpy):
    """The shipped Pectoral preset is four fibres of one muscle: they never push each other, so they settle where
    the spread placed them (the preset's spread is a chest's, so on the arm some fibres pass through the bone and
    out of the skin: *Bones* and *Stay Under Skin* are off, and only the fibres could move each other)."""
    rig, (mesh,) = make_arm(bpy)
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="elbow",
                                               preset="Pectoral") == {'FINISHED'}
    m = rig.implicit_muscles.muscles[0]
    assert m.fibres == 4
    m.collide_bones = False
    m.keep_inside = False
    _rebind(bpy, rig, mesh)
    moved = _moves(rig, mesh)
    print(f"pectoral preset: {len(moved)} fibres, largest move {moved.max() * 1000:.3f} mm")
    assert len(moved) == 4 and moved.max() < STILL_TOL


def _play(bpy, rig, mesh, frames, bend=True):
    """With ``bend``, key the elbow 0 -> 130 degrees over frames 1-12 and hold; bind; play frames 1..``frames``;
    return the muscle state's particles ``(P, 3)`` after the last frame and the ``Bound``."""
    import math
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    if bend:
        elbow = rig.pose.bones["elbow"]
        elbow.rotation_mode = 'XYZ'
        for frame, angle in ((1, 0.0), (12, 130.0)):
            elbow.rotation_euler = (math.radians(angle), 0.0, 0.0)
            elbow.keyframe_insert("rotation_euler", frame=frame)
    scene.frame_set(1)
    bind(bpy, mesh)
    for f in range(1, frames + 1):
        scene.frame_set(f)
    b = _module("blender.session.runtime").bound(mesh)
    assert not b.last_error
    return b.state_for(frames).x.copy(), b


def _fresh_arm(bpy, **rig_settings):
    """A new session with the test arm, its rig's ``rig_settings`` (``rig.implicit_muscles``) set, and one muscle
    added from the shoulder to the elbow: ``(rig, mesh)``."""
    _module("blender.session.runtime").clear()
    blender_session.reset()
    rig, (mesh,) = make_arm(bpy)
    for name, value in rig_settings.items():
        setattr(rig.implicit_muscles, name, value)
    assert bpy.ops.implicit_muscles.add_muscle(origin_bone="shoulder", insertion_bone="elbow") == {'FINISHED'}
    return rig, mesh


def test_stay_under_skin(bpy):
    """A muscle whose handles were dragged out to 1.4 limb radii, its axis 1.5 cm outside the skin: kept under the
    skin, its axis is pulled back in from the shot's first frame; with *Stay Under Skin* off it stays where it was
    put."""
    results = {}
    for keep in (True, False):
        rig, mesh = _fresh_arm(bpy)
        m = rig.implicit_muscles.muscles[0]
        placed = 1.4 / 0.6 * m.origin_point.z
        m.origin_point.z = m.insertion_point.z = placed
        m.keep_inside = keep
        x, b = _play(bpy, rig, mesh, frames=4, bend=False)
        assert bool(b.character.model.pbd.skin_inv_mass.any()) == keep
        results[keep] = float(np.hypot(x[1:-1, 1], x[1:-1, 2]).max())  # the arm's bones lie along X
    print(f"placed {placed * 1000:.1f} mm from the bone; axis after 4 frames: kept under the skin "
          f"{results[True] * 1000:.1f} mm, not {results[False] * 1000:.1f} mm")
    assert results[True] < placed - 0.005
    assert results[False] == pytest.approx(placed, abs=5e-4)


def test_substeps(bpy):
    """The rig's *Substeps* reach the solver, and the muscles' motion in a bend differs with 2 and 20 of them."""
    results = {}
    for substeps in (2, 20):
        rig, mesh = _fresh_arm(bpy, substeps=substeps)
        x, b = _play(bpy, rig, mesh, frames=8)
        assert b.character.model.pbd.settings.substeps == substeps
        results[substeps] = x
    move = np.linalg.norm(results[2] - results[20], axis=1)
    print(f"2 vs 20 substeps: particles differ by up to {move.max() * 1000:.3f} mm")
    assert move.max() > 1e-4


def test_friction(bpy):
    """The rig's *Friction* reaches the solver (Coulomb's coefficient of the contacts), and a muscle pressed on its
    bone moves differently in a bend with 0 and 0.5."""
    results = {}
    for friction in (0.0, 0.5):
        rig, mesh = _fresh_arm(bpy, friction=friction)
        m = rig.implicit_muscles.muscles[0]
        m.origin_point.z *= 2.0 / 3.0  # into the bone's automatic capsule, as in test_bones_and_bone_radius
        m.insertion_point.z *= 2.0 / 3.0
        x, b = _play(bpy, rig, mesh, frames=16)
        assert b.character.model.pbd.settings.contact_friction == friction
        results[friction] = x
    move = np.linalg.norm(results[0.0] - results[0.5], axis=1)
    print(f"friction 0 vs 0.5: particles differ by up to {move.max() * 1000:.3f} mm")
    assert move.max() > 1e-4


SETTINGS = {"collide_bones": False, "collide_muscles": False, "keep_inside": False, "collision_group": 5,
            "bone_radius": 0.004}
"""Each per-muscle collision setting with a value other than its default."""


def test_settings_survive_duplicate_mirror_save_and_reload_and_stale_the_bind(bpy, tmp_path):
    rig, (left, right) = make_arm(bpy, sides=(".L", ".R"))
    ops = bpy.ops.implicit_muscles
    assert ops.add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L") == {'FINISHED'}
    m = rig.implicit_muscles.muscles[0]
    for key, value in SETTINGS.items():
        setattr(m, key, value)
    rig.implicit_muscles.substeps = 7
    assert ops.duplicate_muscle() == {'FINISHED'}
    rig.implicit_muscles.active_index = 0
    assert ops.mirror_muscle() == {'FINISHED'}
    path = str(tmp_path / "settings.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    rig = bpy.data.objects["Rig"]
    assert [m.name for m in rig.implicit_muscles.muscles] == ["shoulder_muscle.L", "shoulder_muscle.L.001",
                                                              "shoulder_muscle.R"]
    for m in rig.implicit_muscles.muscles:
        assert {k: getattr(m, k) for k in SETTINGS} == pytest.approx(SETTINGS)
    assert rig.implicit_muscles.substeps == 7
    # each setting, changed after bind, makes the bind stale; set back, it fits again
    mesh = bpy.data.objects["Arm.L"]
    runtime = _module("blender.session.runtime")
    bind(bpy, mesh)
    assert runtime.stored_stale(mesh) == ""
    m = rig.implicit_muscles.muscles[0]
    for key, value in SETTINGS.items():
        setattr(m, key, 0.0 if key == "bone_radius" else (1 if key == "collision_group" else not value))
        assert runtime.stored_stale(mesh), key
        setattr(m, key, value)
        assert runtime.stored_stale(mesh) == "", key
    rig.implicit_muscles.substeps = 8
    assert runtime.stored_stale(mesh)
