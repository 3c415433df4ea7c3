"""Activation from a joint angle (core/muscle/joint_drive.py): the angle is the twist of the bone's local rotation
relative to rest about its axis, checked against an independent swing-twist decomposition of quaternions; the
range maps to 0..1 through its curve; keys add on top (at most 1) or replace the joint; bad ranges are refused."""
import numpy as np
import pytest

from implicit_muscles.core.muscle.joint_drive import (CURVES, curve_value, driven_activation, joint_activation,
                                                      joint_angles, joint_drive)
from implicit_muscles.core.skin.skinning import quaternion_from_matrix

ANGLE_TOL = 1e-9
"""[rad] float64 round-off of the closed form against the quaternion reference."""


def rotation(axis, angle):
    """Rodrigues: the rotation by ``angle`` about the unit ``axis``."""
    a = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def rigid(R, t=(0.0, 0.0, 0.0)):
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = R, t
    return out


def random_rotation(rng):
    return rotation(rng.normal(size=3), rng.uniform(-np.pi, np.pi))


def two_bones(rng, basis_parent, basis_child):
    """``(B (2, 4, 4), rest frames (2, 4, 4))`` of a parent and a child posed by local rotations ``basis_*`` in
    their own rest frames (as Blender's ``matrix_basis``): ``M = M_parent (M_ref_p^-1 M_ref_c) basis``."""
    ref = np.stack([rigid(random_rotation(rng), rng.normal(size=3)) for _ in range(2)])
    M_p = ref[0] @ rigid(basis_parent)
    M_c = M_p @ np.linalg.inv(ref[0]) @ ref[1] @ rigid(basis_child)
    M = np.stack([M_p, M_c])
    return M @ np.linalg.inv(ref), ref


def twist_reference(R_local, axis_local):
    """Twist angle of ``R_local`` about ``axis_local`` from its quaternion (w >= 0): ``2 atan2(v . a, w)``."""
    q = quaternion_from_matrix(R_local)[0]
    if q[0] < 0:
        q = -q
    return 2.0 * np.arctan2(q[1:] @ axis_local, q[0])


@pytest.mark.parametrize("seed", range(6))
def test_angle_is_the_local_twist_about_the_bone_axis_whatever_the_parent_and_rest_frames(seed):
    rng = np.random.default_rng(seed)
    local_axis = np.eye(3)[seed % 3]
    for angle in (-2.5, -0.7, 0.0, 0.3, 1.2, 2.9):
        # a turn about the local axis after a swing about another direction, under a parent turned anyhow
        basis = rotation(local_axis, angle) @ rotation(rng.normal(size=3), 0.4 * rng.uniform())
        B, ref = two_bones(rng, random_rotation(rng), basis)
        drive = joint_drive([1], [0], [ref[1, :3, :3] @ local_axis], [0.0], [1.0])
        got = joint_angles(B, drive)[0]
        assert abs(got - twist_reference(basis, local_axis)) < ANGLE_TOL


def test_a_pure_turn_reads_its_angle_and_the_parents_own_turn_does_not_count():
    rng = np.random.default_rng(7)
    for angle in np.linspace(-3.0, 3.0, 13):
        B, ref = two_bones(rng, random_rotation(rng), rotation((1, 0, 0), angle))
        drive = joint_drive([1, 0], [0, -1], [ref[1, :3, :3] @ (1, 0, 0), (1, 0, 0)], [0.0, 0.0], [1.0, 1.0])
        assert abs(joint_angles(B, drive)[0] - angle) < ANGLE_TOL


def test_range_maps_to_zero_one_through_each_curve():
    angles = np.radians([-30.0, 0.0, 30.0, 60.0, 90.0, 120.0, 150.0])
    B = np.stack([rigid(rotation((1, 0, 0), a)) for a in angles])  # each bone turned about X from the armature
    M = len(angles)
    for c, name in enumerate(CURVES):
        drive = joint_drive(np.arange(M), [-1] * M, [(1, 0, 0)] * M, [0.0] * M, [np.radians(120.0)] * M, curve=name)
        got = joint_activation(B, drive)
        t = np.clip(angles / np.radians(120.0), 0, 1)
        expected = {"linear": t, "smooth": 3 * t ** 2 - 2 * t ** 3, "ease_in": t ** 2,
                    "ease_out": 1 - (1 - t) ** 2}[name]
        assert np.allclose(got, expected, atol=1e-12), name
        assert got[0] == 0.0 and got[-1] == 1.0 and np.all(np.diff(got) >= 0)
    # a reversed range (flexion as a negative turn) counts the other way
    drive = joint_drive(np.arange(M), [-1] * M, [(1, 0, 0)] * M, [0.0] * M, [np.radians(-60.0)] * M)
    assert np.allclose(joint_activation(B, drive), [0.5, 0, 0, 0, 0, 0, 0])


def test_keys_add_on_top_at_most_one_or_replace_the_joint():
    B = np.stack([rigid(rotation((1, 0, 0), np.radians(60.0)))] * 3)
    drive = joint_drive([0, 1, -1], [-1, -1, -1], [(1, 0, 0)] * 3, [0.0] * 3, [np.radians(120.0)] * 3,
                        mode=["add", "replace", "add"])
    keyed = np.array([0.3, 0.3, 0.3])
    assert np.allclose(driven_activation(keyed, B, drive), [0.8, 0.3, 0.3])
    assert np.allclose(driven_activation([0.7, 0.0, 0.0], B, drive), [1.0, 0.0, 0.0])  # at most 1


def test_curve_value_clamps():
    assert np.allclose(curve_value([-1.0, 2.0], [0, 1]), [0.0, 1.0])


def test_bad_ranges_and_names_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="biceps: its joint angles at rest and fully active are both 30 degrees"):
        joint_drive([1], [0], [(1, 0, 0)], [np.radians(30.0)], [np.radians(30.0)], names=["biceps"])
    with pytest.raises(ValueError, match="biceps: its joint axis has no direction"):
        joint_drive([1], [0], [(0, 0, 0)], [0.0], [1.0], names=["biceps"])
    with pytest.raises(ValueError, match="curve must be one of linear, smooth, ease_in, ease_out"):
        joint_drive([1], [0], [(1, 0, 0)], [0.0], [1.0], curve="wobbly")
    with pytest.raises(ValueError, match="mode must be one of add, replace"):
        joint_drive([1], [0], [(1, 0, 0)], [0.0], [1.0], mode=3)
    # a muscle without a joint needs no range
    assert joint_drive([-1], [-1], [(0, 0, 0)], [0.0], [0.0]).bone[0] == -1
