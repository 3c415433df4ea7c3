"""The real test character (BCN_Epileptic from Debian's assimp-testmodels) loads into sane numpy arrays.

The character file is made by the set-up step ``python3 tools/fetch_character.py``; without it these tests skip
and say so. Loading needs the bpy module (Blender's glTF importer), imported only inside the fixture. The counts
asserted are this pinned file's, the same with Blender 5.0 and 4.2: 3014 vertices (three unwelded meshes: head
1196, legs 648, torso 1170), 5126 triangles, 54 bones.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from characters import CHARACTER_PATH, FETCH_COMMAND, load_character  # noqa: E402

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
