"""Fat joined to its skin part (thesis ch. 6, Fig. 6.1 and 6.13): the composed field's kernel against its numpy
reference with a moved fat, the rest pose giving the rest mesh, and a jiggling fat moving the skin over it."""
import numpy as np
import pytest

from implicit_muscles.scenes import paper as scenes
from implicit_muscles.core.character import MuscledCharacter
from implicit_muscles.core.fat import FatPrimitive
from implicit_muscles.core.fat.batch import FatBatch
from implicit_muscles.core.muscle.batch import pack_muscles
from implicit_muscles.core.skin.field import bind_skin_field, place_reference

KERNEL_TOL = 1e-9
"""Composed field, kernel vs numpy reference (as tests/core/test_skin_field.py)."""
REST_TOL = 5e-4
"""The rest pose against the rest mesh [m]."""
MOVES_SKIN = 1e-3
"""[m] the least a jiggling fat must move the skin over it between two frames of one held pose."""


def _fat(stiffness=0.5, damping=0.1):
    """Soft tissue under the back of the upper arm, clear of the bone's capsule (1.1 cm), just under the skin (4.7
    cm from the bone there) and short of the elbow's joint-volume region (10 cm around the elbow): skin a fat moves
    inside that region changes the volume the joint gives back at its crease (design notes)."""
    return FatPrimitive(center=(0.11, 0.0, -0.031), axes=(0.055, 0.024, 0.015), stiffness=stiffness,
                        damping=damping, name="arm fat")


@pytest.fixture(scope="module")
def arm():
    return scenes.arm_rig()


@pytest.fixture(scope="module")
def fatted(arm):
    muscles, bones = scenes.arm_muscles()
    return bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                           muscles=pack_muscles(muscles), muscle_bones=bones, bone_names=arm.names,
                           fats=FatBatch.of([_fat()]), fat_bones=[0])


@pytest.mark.parametrize("shift", [(0.0, 0.0, 0.0), (0.004, 0.006, -0.008)])
def test_kernel_matches_reference_with_a_moved_fat(arm, fatted, shift):
    fat = _fat()
    B = scenes.arm_pose(40.0)
    moved = FatBatch((B[0, :3, :3] @ fat.center + B[0, :3, 3] + shift)[None], (B[0, :3, :3] @ fat.frame)[None],
                     fat.axes[None])
    placed = fatted.place(B, fats=moved)
    rng = np.random.default_rng(4)
    q = moved.center[0] + rng.normal(scale=0.03, size=(3000, 3))
    F, G = placed.evaluate(q)
    RF, RG = placed.evaluate_reference(q)
    np.testing.assert_allclose(F, RF, atol=KERNEL_TOL)
    np.testing.assert_allclose(G, RG, atol=KERNEL_TOL)
    _, bounds, _ = place_reference(fatted, B, fats=moved)
    np.testing.assert_allclose(placed.node_bounds, bounds, atol=1e-12)
    # the fat is seen: its part's field differs from the same skin without the fat near it
    plain = bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                            muscles=fatted.muscles, muscle_bones=[0, 0, 1, 1], bone_names=arm.names)
    F0, _ = plain.place(B).evaluate(q)
    assert np.abs(F - F0).max() > 0.05
    with pytest.raises(ValueError, match="bound with 1 fats, got 0"):
        fatted.place(B, fats=FatBatch.empty())


def _characters(arm, fat):
    muscles, bones = scenes.arm_muscles(particles=10)
    o = np.array([0, 0, 0, 1]), np.array([1, 1, 1, 1])
    return MuscledCharacter(arm, muscles, o[0], o[1], bones, fats=[fat] if fat else None,
                            fat_bones=[0] if fat else None)


def test_rest_pose_gives_the_rest_mesh(arm):
    character = _characters(arm, _fat())
    rest = np.broadcast_to(np.eye(4), (3, 4, 4))
    for _ in range(3):
        x = character.frame(rest)
    assert np.abs(x - arm.vertices).max() < REST_TOL
    assert np.array_equal(character.state().fat.x, character.fat_model.center)


def test_a_jiggling_fat_moves_the_skin_over_it(arm):
    """The arm shaken for a second then held: without the fat the skin barely moves on the held frames (the muscles
    settling); with it the skin over the fat keeps moving, and only there."""
    runs = {}
    for name, fat in (("plain", None), ("fat", _fat(stiffness=1.0, damping=0.05))):
        character = _characters(arm, fat)
        frames = [character.frame(scenes.arm_shake(f), dt=1 / 24).copy() for f in range(36)]
        runs[name] = np.array(frames)
    held = slice(30, 36)  # the pose is held from frame 24 on
    steps = {k: np.linalg.norm(np.diff(v[held], axis=0), axis=2).max(axis=0) for k, v in runs.items()}
    reach, _ = _fat().field(arm.vertices)               # each rest vertex's distance-like field of the fat [m]
    over, far = reach < 0.01, reach > 0.04              # the skin over the fat; beyond its support
    print("largest step while held [mm], over the fat: plain", 1e3 * steps["plain"][over].max(),
          "with the fat", 1e3 * steps["fat"][over].max(), "; away from it", 1e3 * steps["plain"][far].max(),
          1e3 * steps["fat"][far].max())
    assert steps["fat"][over].max() > MOVES_SKIN
    assert steps["fat"][over].max() > 5 * steps["plain"][over].max()
    # away from the fat the skin moves as without it
    assert steps["fat"][far].max() < steps["plain"][far].max() + 0.2 * MOVES_SKIN
    # the state after a frame restores to the same next frame (the per-frame cache's contract)
    character = _characters(arm, _fat(stiffness=1.0, damping=0.05))
    for f in range(20):
        character.frame(scenes.arm_shake(f))
    snapshot = character.state()
    a = character.frame(scenes.arm_shake(20)).copy()
    character.frame(scenes.arm_shake(21))
    character.restore(snapshot)
    np.testing.assert_array_equal(character.frame(scenes.arm_shake(20)), a)


def test_correction_kernel_counts_the_fat_push_as_its_reference_does(arm):
    """The limited correction's cap grows by how far the part's muscles and fats pushed a vertex out: kernel against
    ``core/skin/trust.limit_correction_reference`` with the push from the numpy reference of the leaves."""
    from implicit_muscles.core.skin.trust import contact_distance_reference, limit_correction_reference
    from implicit_muscles.kernels.skin_correction import limit_correction

    character = _characters(arm, _fat(stiffness=0.2, damping=0.0))
    for f in range(12):
        character.frame(scenes.arm_shake(f))
    d = character.deformer
    x, start, m = d.tracked.copy(), d.dqs_positions.copy(), d._correction_mesh
    passed, distance = contact_distance_reference(d.placement, start, d.own_part, d.settings.landing_angle)
    values, _, grids, _ = d.placement.leaf_reference(x, details=True)
    rows = np.arange(len(x))
    f, h = np.array(values)[d.own_part, rows], np.array([v for v, _ in grids])[d.own_part, rows]
    g = np.linalg.norm(np.array([g for _, g in grids])[d.own_part, rows], axis=1)
    push = np.where((f > h) & (g > 1e-12), (f - h) / np.maximum(g, 1e-12), 0.0)
    reach, _ = _fat().field(arm.vertices)
    assert np.count_nonzero(push[reach < 0.01] > 1e-4) > 20       # the fat pushes the skin over it
    expected = limit_correction_reference(x, start, passed, distance, m.trust, m.cap, m.ring_start,
                                          m.ring_neighbour, m.sweeps, push)
    out, hold = x.copy(), np.zeros(len(x), dtype=bool)
    limit_correction(out, start, np.full(len(x), np.nan), m, *d.placement.kernel_args, np.empty_like(x),
                     np.empty_like(x), hold)
    assert np.abs(out - expected).max() < KERNEL_TOL
