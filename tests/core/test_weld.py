"""Welding coincident vertices (core/skin/weld.py): a mesh split at a seam deforms as the unsplit mesh, and its two
sides move as one."""
import numpy as np

from implicit_muscles.core.pbd.control import MuscleInputs
from implicit_muscles.scenes import paper as scenes
from implicit_muscles.core.character import CharacterSetup, MuscledCharacter
from implicit_muscles.core.skin.weld import weld

SPLIT_TOL = 1e-12
"""Split vertices against each other and against the unsplit mesh [m]: the same computation, bit for bit up to
the order of summation."""


def _split_ring(rig, x0=0.4):
    """The arm with its faces on one side of the ring nearest ``x0`` given their own copies of the ring's vertices
    (a seam, as an import split at a UV border makes)."""
    v, f, w = rig.vertices, rig.faces, rig.weights
    ring = np.flatnonzero(np.abs(v[:, 0] - v[np.argmin(np.abs(v[:, 0] - x0)), 0]) < 1e-9)
    copies = np.arange(len(v), len(v) + len(ring))
    remap = np.arange(len(v))
    remap[ring] = copies
    beyond = v[f].mean(axis=1)[:, 0] > v[ring[0], 0]
    f2 = f.copy()
    f2[beyond] = remap[f[beyond]]
    v2 = np.concatenate([v, v[ring]])
    w2 = np.concatenate([w, w[ring]])
    return scenes.Rig(v2, f2, w2, rig.heads, rig.tails, rig.parents, rig.names), ring, copies


def test_weld_merges_coincident_vertices_and_drops_collapsed_faces():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0]], dtype=float)
    f = np.array([[0, 1, 2], [3, 4, 2], [0, 5, 1], [5, 3, 2]])
    w = np.array([[1, 0], [0, 1], [1, 0], [0, 0.5], [0, 1], [1, 0]], dtype=float)
    out = weld(v, f, w)
    assert not out.identity and len(out.vertices) == 4
    assert out.inverse.tolist() == [0, 1, 2, 1, 3, 0]
    assert out.faces.tolist() == [[0, 1, 2], [1, 3, 2]]  # [0, 5, 1] collapsed, [5, 3, 2] repeats [0, 1, 2]
    assert np.allclose(out.weights[1], [0, 0.75])
    x = np.arange(12, dtype=float).reshape(4, 3)
    assert np.array_equal(out.expand(x), x[out.inverse])
    assert weld(v[:3], f[:1], w[:3]).identity


def test_a_mesh_split_at_a_seam_deforms_as_one_piece():
    muscles, skin_bones = scenes.arm_muscles()
    plain = scenes.arm_character()
    split_rig, ring, copies = _split_ring(scenes.arm_rig())
    muscles, skin_bones = scenes.arm_muscles()
    split = MuscledCharacter.bind(CharacterSetup(split_rig, tuple(muscles), [0] * 4, [1] * 4, skin_bones))
    assert split.vertex_count == len(split_rig.vertices)
    for f in range(12):
        B, act = scenes.biceps_curl(f + 12, 24)
        a = plain.frame(B, MuscleInputs(activation=act), dt=1 / 24)
        b = split.frame(B, MuscleInputs(activation=act), dt=1 / 24)
    assert np.abs(b[ring] - b[copies]).max() == 0.0
    assert np.abs(b[:len(a)] - a).max() < SPLIT_TOL
