"""What comes into the Implicit Skinning modifier on top of the rest mesh reaches its result (issue "Production paths
in Blender", item 1): shape keys, a corrective key driven by the elbow, a modifier before the Armature modifier,
and a bake of a mesh with shape keys. The offset is turned by each vertex's skinning rotation, so away from the
joints the bound result equals the Armature result with the same keys; at the bent elbow a key keeps its effect
and slides on the contact surface instead of pushing through it."""
import importlib
import math
import sys
from pathlib import Path

import numpy as np

import blender_session
from blender_scenes import animated_arm, bind, evaluated, positions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from mesh_checks import deep_crossings  # noqa: E402

ARMATURE_TOL = 5e-4
"""Away from joints and muscles (the hand), bound result vs Armature result with the same keys [m]."""
KEY = 0.03
"""The forearm key's move [m]."""
ELBOW_KEY = 0.005
"""The corrective key's move at the elbow [m]."""
CROSSING_DEPTH = 1e-3
"""Skins crossing each other by more than this [m] count as an intersection (tests/core/mesh_checks.py)."""
CROSSING_LEFT = 6
"""Triangles the tracking may leave crossing the other side of the elbow where the two skins part at the crease's
end (tests/core/test_tracking.py); a key must not add more."""


def _runtime():
    return importlib.import_module(f"{blender_session.ADDON}.blender.session.runtime")


def _add_key(mesh, name, move, where):
    """A shape key ``name`` (and the Basis, if the mesh has none) moving the vertices where ``where (V,)`` is True by
    ``move (3,)`` [m]."""
    if mesh.data.shape_keys is None:
        mesh.shape_key_add(name="Basis", from_mix=False)
    key = mesh.shape_key_add(name=name, from_mix=False)
    co = positions(mesh.data)
    co[where] += move
    key.data.foreach_set("co", np.ascontiguousarray(co, dtype=np.float32).ravel())
    key.value = 1.0
    return key


def _play(bpy, frames):
    for f in frames:
        bpy.context.scene.frame_set(f)


def _plain(bpy, mesh, frame):
    """The Armature modifier's result at ``frame`` (Implicit Skinning switched off, then on again)."""
    mesh.implicit_skin.enabled = False
    bpy.context.scene.frame_set(frame)
    out = evaluated(bpy, mesh)
    mesh.implicit_skin.enabled = True
    return out


def _bound_hand_as_armature(bpy, mesh, rest):
    """Bind ``mesh``, play frames 1-30 and check that its hand (rest x > 0.72) equals the Armature result there to
    ``ARMATURE_TOL``: ``(positions at frame 30, the hand's mask)``."""
    bind(bpy, mesh)
    _play(bpy, range(1, 31))
    ours = evaluated(bpy, mesh)
    hand = rest[:, 0] > 0.72
    plain = _plain(bpy, mesh, 30)
    assert np.abs(ours[hand] - plain[hand]).max() < ARMATURE_TOL
    return ours, hand


def test_a_shape_key_rides_on_the_bound_result(bpy):
    """A key moving the forearm 30 mm: at frame 30 (elbow at 110 degrees) the hand of the bound result equals the
    Armature result with the key to 0.5 mm, and the key moves the bound forearm by its own 30 mm, turned with it."""
    rig, mesh = animated_arm(bpy)
    rest = positions(mesh.data)
    forearm = rest[:, 0] > 0.55
    key = _add_key(mesh, "Forearm", np.array([0.0, 0.0, KEY]), forearm)
    ours, hand = _bound_hand_as_armature(bpy, mesh, rest)
    key.value = 0.0
    bpy.context.scene.frame_set(30)
    without = evaluated(bpy, mesh)
    moved = np.linalg.norm(ours - without, axis=1)
    assert np.abs(moved[hand] - KEY).max() < 1e-4  # the whole key, turned (a rotation keeps its length)
    assert moved[rest[:, 0] < 0.3].max() < 1e-6  # the upper arm has no key
    assert np.array_equal(positions(mesh.data), rest)  # the rest mesh is never written


def _driven_elbow_key(bpy, rig, mesh, where):
    """A corrective key moving ``where`` by ``ELBOW_KEY`` along +Z, its value driven by the elbow's bend (1 at
    110 degrees)."""
    key = _add_key(mesh, "Elbow", np.array([0.0, 0.0, ELBOW_KEY]), where)
    fcurve = key.driver_add("value")
    driver = fcurve.driver
    driver.type = 'SCRIPTED'
    var = driver.variables.new()
    var.name, var.type = "bend", 'TRANSFORMS'
    target = var.targets[0]
    target.id = rig
    target.bone_target = "elbow"
    target.transform_type = 'ROT_X'
    target.transform_space = 'LOCAL_SPACE'
    driver.expression = f"bend / {math.radians(110.0)!r}"
    return key


def _crossings(positions, faces, rest):
    """Triangles of the upper arm and the forearm on either side of the elbow that the other side passes through."""
    cx = rest[faces].mean(axis=1)[:, 0]
    upper, fore = np.flatnonzero((cx > 0.26) & (cx < 0.37)), np.flatnonzero((cx > 0.43) & (cx < 0.54))
    return int(sum(h.sum() for h in deep_crossings(positions, faces, upper, fore, CROSSING_DEPTH)))


def test_a_corrective_key_at_the_bent_elbow_keeps_its_effect_and_the_contact(bpy):
    """A key driven by the elbow moves the skin around it 5 mm: with the elbow at 110 degrees its effect is the
    key's move turned with the skin away from the crease, only along the contact surface where the tracking stopped
    the skin there and a ring around it, and the two sides of the elbow cross no more than without the key."""
    tracking = importlib.import_module(f"{blender_session.ADDON}.core.skin.tracking")
    rig, mesh = animated_arm(bpy)
    rest = positions(mesh.data)
    band = np.abs(rest[:, 0] - 0.4) < 0.07
    key = _driven_elbow_key(bpy, rig, mesh, band)
    bind(bpy, mesh)
    _play(bpy, range(1, 31))
    ours = evaluated(bpy, mesh)
    value = key.value
    assert abs(value - 1.0) < 0.01  # the driver follows the bend
    ch = _runtime().bound(mesh).character
    contact = ch.model.weld.expand(ch.deformer.scratch.state[:, None])[:, 0] == tracking.STATE_CONTACT
    normal = ch.model.weld.expand(ch.deformer.scratch.normal)
    turns = ch.offset_turns()
    key.mute = True
    bpy.context.scene.frame_set(30)
    without = evaluated(bpy, mesh)
    key.mute = False
    effect = ours - without
    expected = np.where(band[:, None], value * turns @ np.array([0.0, 0.0, ELBOW_KEY]), 0.0)
    assert np.abs(effect - expected).max() < 1e-5  # the key's move, turned (float32 attributes)
    assert (contact & band).sum() > 10  # the crease is in the keyed band
    free = band & (np.abs(np.linalg.det(turns) - 1.0) < 1e-9)  # away from the crease: a rotation
    assert free.sum() > 0.25 * band.sum()
    assert np.abs(np.linalg.norm(effect[free], axis=1) - value * ELBOW_KEY).max() < 1e-5
    assert np.abs(np.einsum("ij,ij->i", effect[contact], normal[contact])).max() < 1e-5
    faces = np.array([p.vertices[:] for p in mesh.data.polygons if len(p.vertices) == 3])
    # at most the few triangles the tracking itself may leave crossed where the skins part at the crease's end
    assert _crossings(ours, faces, rest) <= max(_crossings(without, faces, rest), CROSSING_LEFT)


def test_a_modifier_before_the_armature_reaches_the_bound_result(bpy):
    """A Displace modifier before the Armature modifier moves the whole arm 5 mm along its local Z: the bound
    hand equals the Armature result with it to 0.5 mm."""
    rig, mesh = animated_arm(bpy)
    rest = positions(mesh.data)
    displace = mesh.modifiers.new("Displace", 'DISPLACE')
    displace.direction, displace.strength, displace.mid_level = 'Z', 0.01, 0.5
    with bpy.context.temp_override(object=mesh):
        bpy.ops.object.modifier_move_to_index(modifier=displace.name, index=0)
    ours, hand = _bound_hand_as_armature(bpy, mesh, rest)
    displace.show_viewport = False
    bpy.context.scene.frame_set(30)
    assert np.abs(np.linalg.norm(ours - evaluated(bpy, mesh), axis=1)[hand] - 0.005).max() < 1e-4


def test_a_bake_of_a_mesh_with_shape_keys_plays_as_the_live_result(bpy, tmp_path):
    """Baked (frames 1-30) with the forearm key on: the Mesh Cache result at frame 30 equals the live result to
    0.5 mm on the keyed forearm away from the elbow, and the key still moves it after the bake."""
    bake = importlib.import_module(f"{blender_session.ADDON}.blender.session.bake")
    rig, mesh = animated_arm(bpy)
    rest = positions(mesh.data)
    key = _add_key(mesh, "Forearm", np.array([0.0, 0.0, KEY]), rest[:, 0] > 0.55)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "keys.blend"))
    bind(bpy, mesh)
    _play(bpy, range(1, 31))
    live = evaluated(bpy, mesh)
    bake.bake(bpy.context.scene, 1, 30, [mesh])
    bpy.context.scene.frame_set(30)
    baked = evaluated(bpy, mesh)
    far = rest[:, 0] > 0.6
    assert np.abs(baked[far] - live[far]).max() < ARMATURE_TOL
    key.value = 0.0
    bpy.context.scene.frame_set(30)
    assert np.linalg.norm(baked - evaluated(bpy, mesh), axis=1)[rest[:, 0] > 0.72].min() > 0.9 * KEY


def test_a_linked_character_keeps_its_shape_keys(bpy, tmp_path):
    """The arm with its forearm key, linked into a shot as a library override: its helper object carries the turned
    key too, so the shot shows frame 30 as the character's own file does; the library file is not written."""
    from test_catalogue import SAME_TOL, _bound_then_linked

    rig, mesh = animated_arm(bpy)
    rest = positions(mesh.data)
    _add_key(mesh, "Forearm", np.array([0.0, 0.0, KEY]), rest[:, 0] > 0.55)
    own, library, written, (scene, mesh, rig) = _bound_then_linked(bpy, rig, mesh, tmp_path)
    assert mesh.data.library is not None and mesh.data.shape_keys is not None
    _play(bpy, range(1, 31))
    assert _runtime().bound(mesh).last_error == ""
    assert np.abs(evaluated(bpy, mesh) - own).max() < SAME_TOL
    assert library.read_bytes() == written


NORMAL_KEY = 0.01
"""The key along the normals near the crease [m] (a belly or a biceps corrective's size)."""
NEAR_CREASE_TOL = 1e-3
"""Away from the contact surface, the bound key's effect vs the Armature modifier's (the offset turned by the vertex's
skinning rotation) [m]."""


def test_a_key_along_the_normals_keeps_its_effect_next_to_the_crease(bpy):
    """A key moving the skin around the elbow 10 mm out along its normals, driven by the elbow: at 110 degrees it
    moves every vertex away from the contact surface (from two rings off it on, ``CREASE_RINGS``) as the Armature
    modifier moves it, to 1 mm; on the contact surface only along it, and the two sides cross no more than
    without it."""
    character = importlib.import_module(f"{blender_session.ADDON}.core.character")
    tracking = importlib.import_module(f"{blender_session.ADDON}.core.skin.tracking")
    rig, mesh = animated_arm(bpy)
    rest = positions(mesh.data)
    band = np.abs(rest[:, 0] - 0.4) < 0.07
    normals = np.empty(3 * len(rest))
    mesh.data.vertices.foreach_get("normal", normals)
    normals = normals.reshape(-1, 3)
    key = _driven_elbow_key(bpy, rig, mesh, band)
    co = rest.copy()
    co[band] += NORMAL_KEY * normals[band]
    key.data.foreach_set("co", np.ascontiguousarray(co, dtype=np.float32).ravel())
    bind(bpy, mesh)
    _play(bpy, range(1, 31))
    ours = evaluated(bpy, mesh)
    value = key.value
    ch = _runtime().bound(mesh).character
    contact = ch.model.weld.expand(ch.deformer.scratch.state[:, None])[:, 0] == tracking.STATE_CONTACT
    normal = ch.model.weld.expand(ch.deformer.scratch.normal)
    rotations = ch.model.weld.expand(ch.deformer.rotations)
    d = ch.deformer
    _, weight = character._crease_normals(d.scratch.state == tracking.STATE_CONTACT, d.scratch.normal,
                                          d.rings.start, d.rings.neighbour)
    near = ch.model.weld.expand(weight[:, None])[:, 0] > 0.0  # the contact surface and the rings that share its drop
    key.mute = True
    bpy.context.scene.frame_set(30)
    without = evaluated(bpy, mesh)
    key.mute = False
    effect = ours - without
    armature = value * np.einsum("vij,vj->vi", rotations, co - rest)  # how the Armature modifier moves the key
    assert (contact & band).sum() > 10  # the crease is in the keyed band
    off = band & ~near
    assert off.sum() > 0.5 * band.sum()
    assert np.linalg.norm(effect[off] - armature[off], axis=1).max() < NEAR_CREASE_TOL
    assert np.abs(np.einsum("ij,ij->i", effect[contact], normal[contact])).max() < 1e-5
    faces = np.array([p.vertices[:] for p in mesh.data.polygons if len(p.vertices) == 3])
    assert _crossings(ours, faces, rest) <= max(_crossings(without, faces, rest), CROSSING_LEFT)
