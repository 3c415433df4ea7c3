"""Fat joined to its skin part (thesis ch. 6, Fig. 6.1 and 6.13) as a displacement of the part's field by the fat's
change: the composed field's kernel against its numpy reference and against finite differences with a moved fat, the
rest pose giving the rest mesh, a fat moved by ``d`` moving the skin over it by about ``d``, and a jiggling fat
moving the skin over it."""
import numpy as np
import pytest

from implicit_muscles.scenes import paper as scenes
from implicit_muscles.core.character import CharacterSetup, MuscledCharacter
from implicit_muscles.core.fat import FatPrimitive
from implicit_muscles.core.fat.batch import FatBatch
from implicit_muscles.core.muscle.batch import pack_muscles
from implicit_muscles.core.skin.field import FAT_FIELD, FAT_NEAR, bind_skin_field, place_reference
from implicit_muscles.core.fat.field import fat_field_reference
from implicit_muscles.kernels.fat import REACH_FULL

KERNEL_TOL = 1e-9
"""Composed field, kernel vs numpy reference (as tests/core/test_skin_field.py)."""
ROUNDING = 1e-14
"""The same field compiled in two kernels (fused multiply-adds placed differently)."""
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


def _moved(B, shift):
    """The arm's fat carried by bone 0 of pose ``B`` and moved from there by ``shift (3,)`` [m]."""
    fat = _fat()
    carried = B[0, :3, :3] @ fat.center + B[0, :3, 3]
    return FatBatch((carried + shift)[None], (B[0, :3, :3] @ fat.frame)[None], fat.axes[None], carried[None])


@pytest.fixture(scope="module")
def plain(arm, fatted):
    return bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                           muscles=fatted.muscles, muscle_bones=[0, 0, 1, 1], bone_names=arm.names)


@pytest.mark.parametrize("shift", [(0.0, 0.0, 0.0), (0.004, 0.006, -0.008)])
def test_kernel_matches_reference_with_a_moved_fat(arm, fatted, plain, shift):
    B = scenes.arm_pose(40.0)
    moved = _moved(B, np.array(shift))
    placed = fatted.place(B, fats=moved)
    rng = np.random.default_rng(4)
    q = moved.center[0] + rng.normal(scale=0.03, size=(3000, 3))
    F, G = placed.evaluate(q)
    RF, RG = placed.evaluate_reference(q)
    np.testing.assert_allclose(F, RF, atol=KERNEL_TOL)
    np.testing.assert_allclose(G, RG, atol=KERNEL_TOL)
    _, bounds, _ = place_reference(fatted, B, fats=moved)
    np.testing.assert_allclose(placed.node_bounds, bounds, atol=1e-12)
    # a fat where its bone carries it changes nothing: the part's own field, exactly; moved, it changes the field
    F0, G0 = plain.place(B).evaluate(q)
    if not np.any(shift):
        np.testing.assert_allclose(F, F0, atol=ROUNDING)
        np.testing.assert_allclose(G, G0, atol=ROUNDING * 100)
    else:
        assert np.abs(F - F0).max() > 0.05
    with pytest.raises(ValueError, match="bound with 1 fats, got 0"):
        fatted.place(B, fats=FatBatch.empty())


GRADIENT_TOL = 1e-6
"""The displacement's gradient against central differences (step 1e-7 m), absolute [1/m]."""


def test_gradient_of_the_displacement_matches_finite_differences(fatted):
    """A fat moved off where its bone carries it, through its reach's fall-off: the displacement's analytic gradient
    (the reference the kernel matches above) against central differences of its value. (The composed field's
    gradient is the part grid's interpolated gradient, not the derivative of its interpolated value, so the test is
    on the term this change adds.)"""
    from implicit_muscles.core.fat.field import fat_displacement_reference

    B = scenes.arm_pose(40.0)
    m = _moved(B, np.array([0.002, -0.003, -0.006]))
    slope = fatted.fat_slope[0]
    rng = np.random.default_rng(7)
    q = m.carried[0] + rng.normal(scale=0.025, size=(4000, 3))
    args = (m.center[0], m.carried[0], m.frame[0], m.axes[0], slope)
    d, g = fat_displacement_reference(q, *args)
    h = 1e-7
    num = np.empty_like(g)
    for c in range(3):
        e = np.zeros(3)
        e[c] = h
        num[:, c] = (fat_displacement_reference(q + e, *args)[0] - fat_displacement_reference(q - e, *args)[0]) / (2 * h)
    # the weight's fall-off is crossed, and the centres (no gradient) are avoided
    from implicit_muscles.core.fat.field import fat_field_reference, reach_weight_reference

    f0, _ = fat_field_reference(q, m.carried[0], m.frame[0], m.axes[0])
    lam, _ = reach_weight_reference(f0, m.axes[0].min())
    assert ((lam > 0.05) & (lam < 0.95)).sum() > 200 and (lam == 1).sum() > 200
    away = (np.linalg.norm(q - m.center[0], axis=1) > 1e-3) & (np.linalg.norm(q - m.carried[0], axis=1) > 1e-3)
    np.testing.assert_allclose(g[away], num[away], atol=GRADIENT_TOL * slope)


FOLLOW_MIN, FOLLOW_MAX = 0.85, 1.15
"""The skin right over a fat moved by ``d`` towards it moves out by this share of ``d`` along its normal (median)."""


def test_a_fat_moved_towards_the_skin_moves_the_skin_over_it_by_as_much(arm, fatted):
    """The fat moved 5 mm along its shortest semi-axis, out through the skin (the back of the arm): the iso-surface
    on each rest vertex's normal over it moves out by about 5 mm, and away from its reach it does not move (the rest
    pose giving the rest mesh is the test above)."""
    from implicit_muscles.core.skin.parts import vertex_normals

    fat = _fat()
    out = -fat.frame[:, 2]                              # the shortest semi-axis, towards the back of the arm's skin
    rest = np.broadcast_to(np.eye(4), (3, 4, 4))
    normals = vertex_normals(arm.vertices, arm.faces)
    f0, g0 = fat.field(arm.vertices)
    # right over it: where the fat's own normal is within 20 degrees of the move and its change is fully taken
    # (the skin over its flanks follows its surface's normal motion, d cos, less)
    facing = (g0 / np.linalg.norm(g0, axis=1)[:, None]) @ out > np.cos(np.radians(20))
    over = np.flatnonzero((f0 < REACH_FULL * fat.support) & facing & (normals @ out > np.cos(np.radians(30))))
    far = np.flatnonzero(f0 > 2 * fat.support)

    def iso_offset(placed, index):
        """Each vertex's signed distance along its normal to the iso-surface (0.5), by bisection in +-2 cm."""
        lo, hi = np.full(len(index), -0.02), np.full(len(index), 0.02)
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            inside = placed.evaluate(arm.vertices[index] + mid[:, None] * normals[index])[0] > 0.5
            lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
        return 0.5 * (lo + hi)

    d = 0.005
    at_rest = iso_offset(fatted.place(rest, fats=_moved(rest, np.zeros(3))), over)
    moved = iso_offset(fatted.place(rest, fats=_moved(rest, d * out)), over)
    share = (moved - at_rest) / d
    print(f"skin over the fat moved out by {np.median(share):.0%} of the fat's move (median, {len(over)} vertices, "
          f"range {share.min():.0%}..{share.max():.0%})")
    assert FOLLOW_MIN < np.median(share) < FOLLOW_MAX
    assert len(over) >= 10
    F_far, _ = fatted.place(rest, fats=_moved(rest, d * out)).evaluate(arm.vertices[far])
    F_rest, _ = fatted.place(rest).evaluate(arm.vertices[far])
    np.testing.assert_allclose(F_far, F_rest, atol=ROUNDING)


def _characters(arm, fat):
    muscles, bones = scenes.arm_muscles(particles=10)
    o = np.array([0, 0, 0, 1]), np.array([1, 1, 1, 1])
    return MuscledCharacter.bind(CharacterSetup(arm, tuple(muscles), o[0], o[1], bones, fats=(fat,) if fat else (),
                                                fat_bones=[0] if fat else ()))


def test_rest_pose_gives_the_rest_mesh(arm):
    character = _characters(arm, _fat())
    rest = np.broadcast_to(np.eye(4), (3, 4, 4))
    for _ in range(3):
        x = character.frame(rest)
    assert np.abs(x - arm.vertices).max() < REST_TOL
    assert np.array_equal(character.state().fat.x, character.model.fat_model.center)


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
    # and so does a copy of it, which keeps the fats' state
    character.frame(scenes.arm_shake(21))
    for copied in (snapshot.copy(), snapshot.snapshot()):
        character.restore(copied)
        np.testing.assert_array_equal(character.frame(scenes.arm_shake(20)), a)


def test_correction_kernel_counts_the_fat_push_as_its_reference_does(arm):
    """The limited correction's cap grows by how far the part's fats pushed a vertex out (the muscles' change is
    smoothed like the rest; where a correction is still too long, its cap grows by the muscles' and fats' push):
    kernel against ``core/skin/trust.limit_correction_reference`` with the push from the numpy reference of the
    leaves, the muscles' change taken out (their current batch replaced by the carried one), and the change's push
    from ``change_push_reference``."""
    import dataclasses

    from implicit_muscles.core.skin.trust import (change_push_reference, contact_distance_reference,
                                                  limit_correction_reference)
    from implicit_muscles.kernels.skin_correction import limit_correction

    character = _characters(arm, _fat(stiffness=0.2, damping=0.0))
    for f in range(12):
        character.frame(scenes.arm_shake(f))
    d = character.deformer
    x, start, m = d.tracked.copy(), d.dqs_positions.copy(), d._correction_mesh
    passed, distance = contact_distance_reference(d.placement, start, d.own_part, d.settings.landing_angle)
    fats_only = dataclasses.replace(d.placement, muscles=d.placement.carried)
    values, _, grids, _ = fats_only.leaf_reference(x, details=True)
    rows = np.arange(len(x))
    f, h = np.array(values)[d.own_part, rows], np.array([v for v, _ in grids])[d.own_part, rows]
    g = np.linalg.norm(np.array([g for _, g in grids])[d.own_part, rows], axis=1)
    push = np.where((f > h) & (g > 1e-12), (f - h) / np.maximum(g, 1e-12), 0.0)
    reach, _ = _fat().field(arm.vertices)
    assert np.count_nonzero(push[reach < 0.01] > 1e-4) > 20       # the fat pushes the skin over it
    expected = limit_correction_reference(x, start, passed, distance, m.trust, m.cap, m.ring_start,
                                          m.ring_neighbour, m.sweeps, push,
                                          change_push_reference(d.placement, x, d.own_part))
    out, hold = x.copy(), np.zeros(len(x), dtype=bool)
    limit_correction(out, start, np.full(len(x), np.nan), m, *d.placement.kernel_args, np.empty_like(x),
                     np.empty_like(x), hold)
    assert np.abs(out - expected).max() < KERNEL_TOL


SAME_MOVE = 0.05
"""Relative: a fat's change in the field of a part meeting its skin against the change in its skin's own part."""


def test_a_fat_moves_the_part_whose_field_meets_its_skin(arm):
    """A fat on the upper arm 6 cm short of the elbow: no forearm vertex lies where its change is fully taken, but the
    forearm's field reaches that skin (the elbow's crease). The fat moves the forearm's field with the upper arm's,
    by the same slope, so the contact between the two sees both moved alike
    (docs/design-notes.md#a-fat-moves-every-part-whose-field-meets-its-skin)."""
    fat = FatPrimitive(center=(0.24, 0.0, -0.031), axes=(0.03, 0.024, 0.015), stiffness=0.5, damping=0.1,
                       name="fat by the elbow")
    model = bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                            fats=FatBatch.of([fat]), fat_bones=[0])
    upper, fore = (int(np.flatnonzero(model.part_bone == b)[0]) for b in (0, 1))
    f0, _ = fat_field_reference(arm.vertices, fat.center, fat.frame, fat.axes)
    near = f0 <= REACH_FULL * fat.axes.min()
    assert np.count_nonzero(near & (model.labels == 1)) < FAT_NEAR <= np.count_nonzero(near & (model.labels == 0))
    B = np.tile(np.eye(4), (3, 1, 1))
    rest = model.place(B).leaf_reference(arm.vertices[near])[0]
    moved = FatBatch((fat.center + np.array([0.0, 0.0, -0.006]))[None], fat.frame[None], fat.axes[None],
                     fat.center[None])
    after = model.place(B, fats=moved).leaf_reference(arm.vertices[near])[0]
    meets = (rest[fore] >= FAT_FIELD) & (after[fore] < 1.0) & (after[upper] < 1.0)
    assert np.count_nonzero(meets) >= FAT_NEAR
    change_upper = after[upper][meets] - rest[upper][meets]
    change_fore = after[fore][meets] - rest[fore][meets]
    assert change_upper.max() > 0.05
    np.testing.assert_allclose(change_fore, change_upper, rtol=SAME_MOVE, atol=1e-3)
