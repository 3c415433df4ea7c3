"""A muscle from a painted patch on the generated arm: a vertex group painted over the front of
the upper arm and the shoulder and elbow bones give a muscle inside the rest skin (checked by the winding number of
the arm's mesh), whose surface comes within a few mm of the patch, under it; the arm binds and plays with it; an
empty patch or a missing group is refused with a sentence and adds nothing."""
import importlib
import math

import numpy as np
import pytest

import blender_session
from blender_scenes import bind, evaluated, make_arm, positions, start_scene

UNDER_TOL = 0.005
"""[m] the muscle's surface comes at least this close to the patch ("a few mm under it")."""
INSIDE = 0.5
"""Winding number above which a point is inside the skin."""


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _paint_patch(mesh, name="biceps_patch", x_range=(0.15, 0.38), half_angle=40.0, weight=1.0):
    """A vertex group of the vertices on the arm's front (+Z) within ``half_angle`` degrees, in ``x_range``."""
    co = positions(mesh.data)
    nor = np.empty(len(co) * 3, dtype=np.float32)
    mesh.data.vertices.foreach_get("normal", nor)
    nor = nor.reshape(-1, 3)
    keep = (nor[:, 2] >= math.cos(math.radians(half_angle))) & (co[:, 0] >= x_range[0]) & (co[:, 0] <= x_range[1])
    group = mesh.vertex_groups.new(name=name)
    for i in np.flatnonzero(keep):
        group.add([int(i)], weight, 'REPLACE')
    return np.flatnonzero(keep)


def _winding(points, vertices, faces):
    """Generalised winding number of a closed triangle mesh at ``points`` (van Oosterom and Strackee)."""
    out = np.zeros(len(points))
    tri = vertices[faces]
    for start in range(0, len(points), 200):
        p = points[start:start + 200]
        a, b, c = (tri[None, :, k, :] - p[:, None, :] for k in range(3))
        la, lb, lc = (np.linalg.norm(v, axis=2) for v in (a, b, c))
        det = np.einsum("pfi,pfi->pf", a, np.cross(b, c))
        den = la * lb * lc + np.einsum("pfi,pfi->pf", a, b) * lc + np.einsum("pfi,pfi->pf", b, c) * la \
            + np.einsum("pfi,pfi->pf", c, a) * lb
        out[start:start + 200] = np.arctan2(det, den).sum(axis=1) / (2.0 * np.pi)
    return out


def test_a_painted_patch_gives_a_muscle_inside_the_skin_just_under_it(bpy):
    rig, (mesh,) = make_arm(bpy)
    patch = _paint_patch(mesh)
    assert bpy.ops.implicit_muscles.add_muscle_from_patch(mesh="Arm", vertex_group="biceps_patch",
                                                          origin_bone="shoulder", insertion_bone="elbow",
                                                          preset="biceps") == {'FINISHED'}
    muscles = rig.implicit_muscles.muscles
    assert len(muscles) == 1 and muscles[0].name == "biceps" and muscles[0].skin_bone == "shoulder"
    core, *_ = _module("blender.scene.reader").read_muscles(rig, tuple(b.name for b in rig.data.bones))
    surface, _ = _module("core.muscle.surface").muscle_surface(core[0], rings=48, sides=24, snap=False)
    rest = positions(mesh.data)  # the mesh is parented at the armature's origin: armature space
    faces = np.array([p.vertices[:] for p in mesh.data.polygons])
    winding = _winding(surface, rest, faces)
    assert winding.min() > INSIDE  # nowhere outside the rest skin
    near = np.linalg.norm(surface[:, None, :] - rest[None, :, :], axis=2)
    closest = np.argmin(near.min(axis=1))
    assert near.min() < UNDER_TOL  # within a few mm of the skin
    assert np.argmin(near[closest]) in set(patch.tolist())  # and that nearest skin is the patch
    assert np.linalg.norm(surface[:, None, :] - rest[None, patch, :], axis=2).min() < UNDER_TOL
    # an ordinary muscle: the arm binds with it and plays it
    elbow = rig.pose.bones["elbow"]
    elbow.rotation_mode = 'XYZ'
    for frame, degrees in ((1, 0.0), (20, 100.0)):
        elbow.rotation_euler = (math.radians(degrees), 0.0, 0.0)
        elbow.keyframe_insert("rotation_euler", frame=frame)
    start_scene(bpy)
    bind(bpy, mesh)
    bpy.context.scene.frame_set(20)
    shown = evaluated(bpy, mesh)
    assert np.isfinite(shown).all() and _module("blender.session.runtime").bound(mesh).last_error == ""


def test_an_empty_patch_or_a_missing_group_is_refused_and_adds_nothing(bpy):
    rig, (mesh,) = make_arm(bpy)
    _paint_patch(mesh, weight=0.2)  # painted, but lighter than the operator's 0.5
    ops = bpy.ops.implicit_muscles
    with pytest.raises(RuntimeError, match="Arm: the vertex group 'biceps_patch' has no vertex painted with a "
                                           "weight of 0.5 or more: paint the patch where the muscle should bulge"):
        ops.add_muscle_from_patch(mesh="Arm", vertex_group="biceps_patch", origin_bone="shoulder",
                                  insertion_bone="elbow")
    with pytest.raises(RuntimeError, match="Arm has no vertex group 'pecs'"):
        ops.add_muscle_from_patch(mesh="Arm", vertex_group="pecs", origin_bone="shoulder", insertion_bone="elbow")
    with pytest.raises(RuntimeError, match="Give the muscle's origin bone, or select its two pose bones"):
        ops.add_muscle_from_patch(mesh="Arm", vertex_group="biceps_patch")
    assert len(rig.implicit_muscles.muscles) == 0
    # the same light patch taken from weight 0.1 up is a patch
    assert ops.add_muscle_from_patch(mesh="Arm", vertex_group="biceps_patch", origin_bone="shoulder",
                                     insertion_bone="elbow", threshold=0.1) == {'FINISHED'}
    assert len(rig.implicit_muscles.muscles) == 1
