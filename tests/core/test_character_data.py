"""The real test characters (from Debian's assimp-testmodels) load into sane numpy arrays.

BCN_Epileptic's file is made by the set-up step ``python3 tools/fetch_character.py``, the dense human's by
``make character`` (that, then ``tools/rig_human.py``); without them these tests skip and say so. Loading needs the
bpy module (Blender's glTF importer), imported only inside the loaders. The counts asserted are these files', the
same with Blender 5.0 and 4.2: BCN_Epileptic has 3014 vertices (three unwelded meshes: head 1196, legs 648, torso
1170), 5126 triangles, 54 bones; the human 13,380 vertices (one closed welded surface), 26,756 triangles, 21 bones
and three actions.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from characters import (CHARACTER_PATH, FETCH_COMMAND, HUMAN_COMMAND, HUMAN_PATH, load_animation,  # noqa: E402
                        load_character)

VERTICES, TRIANGLES, BONES = 3014, 5126, 54


@pytest.fixture(scope="module")
def character():
    if not CHARACTER_PATH.is_file():
        pytest.skip(f"{CHARACTER_PATH.relative_to(CHARACTER_PATH.parents[2])} is missing: the set-up step "
                    f"`{FETCH_COMMAND}` fetches the character from Debian's packages and converts it")
    return load_character(CHARACTER_PATH)


def test_shapes_and_types(character):
    c = character
    assert c.vertices.shape == (VERTICES, 3) and c.vertices.dtype == np.float64
    assert c.faces.shape == (TRIANGLES, 3) and c.faces.dtype == np.int64
    assert c.weights.shape == (VERTICES, BONES) and c.weights.dtype == np.float64
    assert c.heads.shape == c.tails.shape == (BONES, 3)
    assert c.parents.shape == (BONES,) and c.parents.dtype == np.int64
    assert len(c.names) == len(set(c.names)) == BONES
    assert c.mesh_names == ("Head.001", "Legs.001", "Torso.001")
    assert np.bincount(c.vertex_mesh).tolist() == [1196, 648, 1170]
    for array in (c.vertices, c.weights, c.heads, c.tails):
        assert np.isfinite(array).all()


def test_faces_are_triangles_of_one_mesh(character):
    faces = character.faces
    assert faces.min() == 0 and faces.max() == VERTICES - 1
    assert (faces[:, 0] != faces[:, 1]).all() and (faces[:, 1] != faces[:, 2]).all()
    assert (faces[:, 2] != faces[:, 0]).all()
    owner = character.vertex_mesh[faces]
    assert (owner == owner[:, :1]).all(), "a triangle joins vertices of two meshes"


def test_every_vertex_is_weighted_and_every_bone_used(character):
    weights = character.weights
    assert (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)  # no unweighted vertex, rows already sum to 1
    assert np.count_nonzero(weights, axis=1).max() <= 4
    owned = np.bincount(np.argmax(weights, axis=1), minlength=BONES)
    assert (owned > 0).all(), [name for name, n in zip(character.names, owned) if n == 0]


def test_skeleton_is_one_tree_in_bone_order(character):
    parents = character.parents
    assert np.count_nonzero(parents == -1) == 1 and parents[0] == -1
    assert (parents[1:] >= 0).all() and (parents[1:] < np.arange(1, BONES)).all(), "a parent after its child"
    lengths = np.linalg.norm(character.tails - character.heads, axis=1)
    assert (lengths > 0.01).all()
    # the importer's tails point at the only child (within 1 cm) for all but one bone of this rig
    children = [np.flatnonzero(parents == b) for b in range(BONES)]
    gaps = [np.linalg.norm(character.tails[b] - character.heads[k[0]]) for b, k in enumerate(children) if len(k) == 1]
    assert np.count_nonzero(np.array(gaps) > 0.01) <= 2


def test_metres_z_up_facing_minus_y(character):
    c = character
    low, high = c.vertices.min(axis=0), c.vertices.max(axis=0)
    size = high - low
    assert 1.7 < size[2] < 1.9, f"height {size[2]:.3f} m: expected a 1.81 m human in metres"
    assert size[2] > 2.5 * max(size[0], size[1]), "Z is not the up axis"
    assert (c.heads >= low - 0.01).all() and (c.heads <= high + 0.01).all(), "a bone outside the body's box"
    index = {name: b for b, name in enumerate(c.names)}
    assert c.heads[index["B_Hip_Left"], 0] > 0 > c.heads[index["B_Hip_Right"], 0], "left is not +X"
    assert c.heads[index["B_Eye_Left"], 1] < c.heads[index["B_Neck"], 1], "the face does not look towards -Y"
    assert c.heads[index["B_Neck"], 2] > c.heads[index["B_Hip_Left"], 2] > c.heads[index["B_Ankle_Left"], 2]


def test_triangles_wind_outwards_and_volume_is_a_humans(character):
    """Signed volume of each (open) mesh about its own centroid: positive = counter-clockwise seen from outside.
    Head 0.005, legs 0.028, torso 0.037 m^3: 0.069 m^3 in all, a 70 kg human's volume in metres."""
    volumes = []
    for mesh in range(len(character.mesh_names)):
        faces = character.faces[character.vertex_mesh[character.faces[:, 0]] == mesh]
        points = character.vertices - character.vertices[character.vertex_mesh == mesh].mean(axis=0)
        a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
        volumes.append(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)
    assert min(volumes) > 0, f"inward-wound mesh: volumes {volumes}"
    assert 0.05 < sum(volumes) < 0.09, f"volume {sum(volumes):.4f} m^3"


# --- the dense human (tools/rig_human.py) -------------------------------------------------------------------------
# Made by the set-up step `make character` (fetch_character.py, then rig_human.py with Blender 5.0); without it these
# tests skip and say so. Counts are this file's, the same with Blender 5.0 and 4.2.

HUMAN_VERTICES, HUMAN_TRIANGLES = 13380, 26756
HUMAN_BONES = ("pelvis", "spine", "chest", "neck", "head") + tuple(
    f"{bone}.{side}" for side in "LR" for bone in ("clavicle", "upper_arm", "forearm", "hand")) + tuple(
    f"{bone}.{side}" for side in "LR" for bone in ("thigh", "shin", "foot", "toe"))
HUMAN_ACTIONS = {"jump": 688, "climb": 1128, "boxing": 921}
"""Action -> frames (1..N at 30 fps): CMU 01_01 and 01_03 at 120 fps and Boxing_Toes at 100 fps, resampled."""


def _need_human():
    if not HUMAN_PATH.is_file():
        pytest.skip(f"{HUMAN_PATH.relative_to(HUMAN_PATH.parents[2])} is missing: the set-up step `{HUMAN_COMMAND}` "
                    f"fetches the body and the captures, then rigs and animates it")


@pytest.fixture(scope="module")
def human():
    _need_human()
    return load_character(HUMAN_PATH)


@pytest.fixture(scope="module")
def animations():
    _need_human()
    return {name: load_animation(HUMAN_PATH, name) for name in HUMAN_ACTIONS}


def _skin(character, transforms):
    """Linear blend skinning of the character's rest vertices by one frame's (B, 4, 4) transforms."""
    blended = np.einsum("vb,bij->vij", character.weights, transforms)
    return np.einsum("vij,vj->vi", blended[:, :3, :3], character.vertices) + blended[:, :3, 3]


def test_human_is_the_welded_body_alone(human):
    """The eyes are parented to the head bone, not skinned: only the body comes back, welded (no UVs in the file)."""
    h = human
    assert h.vertices.shape == (HUMAN_VERTICES, 3) and h.faces.shape == (HUMAN_TRIANGLES, 3)
    assert h.mesh_names == ("Body",) and (h.vertex_mesh == 0).all()
    assert h.names == HUMAN_BONES and h.armature_name == "HumanRig"
    assert np.unique(h.vertices, axis=0).shape[0] == HUMAN_VERTICES, "two vertices at one position: not welded"
    for array in (h.vertices, h.weights, h.heads, h.tails):
        assert np.isfinite(array).all()


def test_human_is_one_closed_surface(human):
    """Every edge joins exactly two triangles (no border), and V - E + F = 2 (one closed genus-0 surface)."""
    faces = human.faces
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, uses = np.unique(edges, axis=0, return_counts=True)
    assert (uses == 2).all(), f"{np.count_nonzero(uses == 1)} border edges, {np.count_nonzero(uses > 2)} non-manifold"
    assert HUMAN_VERTICES - len(uses) + HUMAN_TRIANGLES == 2


def test_human_every_vertex_weighted_every_bone_used(human):
    weights = human.weights
    assert (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    assert np.count_nonzero(weights, axis=1).max() <= 4
    owned = np.bincount(np.argmax(weights, axis=1), minlength=len(HUMAN_BONES))
    assert (owned > 0).all(), [name for name, n in zip(human.names, owned) if n == 0]


def test_human_skeleton(human):
    parents = {name: human.names[p] if p >= 0 else None for name, p in zip(human.names, human.parents)}
    assert parents["pelvis"] is None and list(parents.values()).count(None) == 1
    assert (human.parents[1:] < np.arange(1, len(HUMAN_BONES))).all(), "a parent after its child"
    assert parents["thigh.L"] == parents["spine"] == "pelvis" and parents["clavicle.R"] == "chest"
    assert parents["toe.R"] == "foot.R" and parents["hand.L"] == "forearm.L"


def test_human_metres_z_up_facing_minus_y(human):
    h = human
    low, high = h.vertices.min(axis=0), h.vertices.max(axis=0)
    assert abs((high - low)[2] - 1.659) < 0.005 and abs(low[2]) < 0.005, "1.66 m, feet on z = 0"
    index = {name: b for b, name in enumerate(h.names)}
    assert h.heads[index["thigh.L"], 0] > 0 > h.heads[index["thigh.R"], 0], "left is not +X"
    assert h.tails[index["toe.L"], 1] < h.heads[index["foot.L"], 1] - 0.05, "the feet do not point to -Y"
    assert h.heads[index["head"], 2] > h.heads[index["neck"], 2] > h.heads[index["pelvis"], 2] > h.heads[
        index["shin.L"], 2] > h.heads[index["foot.L"], 2]


def test_human_actions_and_frames(animations):
    for name, frames in HUMAN_ACTIONS.items():
        a = animations[name]
        assert a.names == tuple(HUMAN_ACTIONS) and a.action == name and a.fps == 30.0
        assert a.bones == HUMAN_BONES and a.armature_name == "HumanRig"
        assert a.frames.tolist() == list(range(1, frames + 1))
        assert a.transforms.shape == (frames, len(HUMAN_BONES), 4, 4) and a.transforms.dtype == np.float64


def test_human_transforms_rigid_and_finite(animations):
    for name, a in animations.items():
        t = a.transforms
        assert np.isfinite(t).all(), name
        np.testing.assert_array_equal(t[..., 3, :], np.broadcast_to([0.0, 0.0, 0.0, 1.0], t[..., 3, :].shape))
        rotations = t[..., :3, :3]
        skew = np.abs(np.swapaxes(rotations, -1, -2) @ rotations - np.eye(3)).max()
        assert skew < 1e-6 and (np.linalg.det(rotations) > 0).all(), (name, skew)
        assert a.skew < 1e-5, f"{name}: Blender's own matrices are {a.skew:.1e} off orthonormal"


def test_human_first_frames_stand_on_the_floor(human, animations):
    """Each clip starts with the skinned body's lowest point on the floor (the rest feet's height, z = 0.0005) and
    both feet within a few cm of it (climb starts mid-step: right foot 4.8 cm up)."""
    owner = np.argmax(human.weights, axis=1)
    index = {name: b for b, name in enumerate(human.names)}
    for name, a in animations.items():
        posed = _skin(human, a.transforms[0])
        assert abs(posed[:, 2].min() - human.vertices[:, 2].min()) < 0.005, name
        for side in "LR":
            foot = np.isin(owner, [index[f"foot.{side}"], index[f"toe.{side}"]])
            assert posed[foot, 2].min() < 0.06, (name, side, posed[foot, 2].min())


def test_human_motions_are_the_captures(human, animations):
    """The pelvis follows each capture: jumps leave the floor again and again, the climb gets onto a 0.8 m
    obstacle, the boxer ends up on the floor."""
    pelvis = human.names.index("pelvis")
    head = np.append(human.heads[pelvis], 1.0)
    height = {name: (a.transforms[:, pelvis] @ head)[:, 2] for name, a in animations.items()}
    up = height["jump"] > height["jump"][0] + 0.12
    assert np.count_nonzero(up[1:] & ~up[:-1]) >= 6, "fewer than 6 jumps"
    assert height["climb"].max() > height["climb"][0] + 0.6
    assert height["boxing"].min() < 0.3


def test_load_animation_stride_and_unknown_action():
    _need_human()
    a = load_animation(HUMAN_PATH, "boxing", stride=10)
    assert a.frames.tolist() == list(range(1, HUMAN_ACTIONS["boxing"] + 1, 10)) and len(a.transforms) == 93
    with pytest.raises(KeyError):
        load_animation(HUMAN_PATH, "walk")


def test_bcn_epileptic_animation(character):
    """BCN_Epileptic's one action (Epileptisch, 3.3 s at 30 fps), in load_character's bone order."""
    a = load_animation(CHARACTER_PATH)
    assert a.names == ("Epileptisch",) and a.action == "Epileptisch" and a.fps == 30.0
    assert a.bones == character.names and a.frames.tolist() == list(range(100))
    rotations = a.transforms[..., :3, :3]
    assert np.isfinite(a.transforms).all() and a.skew < 1e-4
    assert np.abs(np.swapaxes(rotations, -1, -2) @ rotations - np.eye(3)).max() < 1e-6
    assert np.abs(a.transforms[1:] - a.transforms[:1]).max() > 0.05, "the action does not move"
