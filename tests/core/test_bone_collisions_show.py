"""Paper Fig. 15: without bone collisions a part of an inflating muscle grows inside the bone. The paper's arm
(``scenes.paper``) at 110 degrees, the biceps fully active, one second: with bone collisions on, the biceps' belly
and its surface lie further out from the humerus, the triceps, which wraps the bent elbow, stays out of the bone
instead of cutting through it, and the skin over the biceps is pushed further out (paper Fig. 15)."""
import copy

import numpy as np
import pytest

from implicit_muscles.core.muscle.surface import muscle_surface
from implicit_muscles.core.pbd.collisions import MuscleCollisions
from implicit_muscles.core.pbd.control import MuscleInputs
from implicit_muscles.scenes import paper as scenes

LEAST_FURTHER = 0.002
"""[m] how much further out from the humerus the active biceps' belly must lie with bone collisions on."""
OVER_BICEPS = 40
"""Skin vertices over the biceps: the ones nearest its belly's middle (with bone collisions off)."""
SIDE = 30.0
"""[deg] The upper arm's skin over the biceps: its vertices within this angle of the biceps' side (+z)."""
NEAR_MIDDLE = 0.03
"""[m] the part of the biceps' surface whose top is compared: within this of its belly's middle."""


def _humerus_distance(p) -> np.ndarray:
    """Distances [m] of the points ``p (n, 3)`` from the humerus's axis (the upper arm does not move in
    ``arm_pose``)."""
    head, tail = scenes.ARM_HEADS[0], scenes.ARM_TAILS[0]
    t = np.clip((p - head) @ (tail - head) / ((tail - head) @ (tail - head)), 0.0, 1.0)
    return np.linalg.norm(p - (head + t[:, None] * (tail - head)), axis=1)


@pytest.fixture(scope="module")
def runs() -> dict:
    """Per bone-collision setting: ``(skin (V, 3), axes (P, 3), character)`` after one second at 110 degrees."""
    out = {}
    for bones in (True, False):
        arm = scenes.arm_character(collisions=MuscleCollisions(bones=[bones] * 4))
        pose = scenes.arm_pose(110.0)
        for _ in range(24):
            skin = arm.frame(pose, MuscleInputs(activation=[1.0, 0.0, 0.8, 0.3]), dt=1 / 24)
        out[bones] = (skin.copy(), arm.state().x, arm)
    return out


SETTLE_MOVES = 0.002
"""[m] how far settling may move a muscle of the paper's arm from where it is placed (a muscle settles where it
was put)."""


@pytest.mark.parametrize("bones", [True, False])
def test_the_arm_muscles_fit_between_bone_and_skin(bones):
    """The premise of the comparison: the paper's arm binds nearly the same rest either way, its biceps and triceps
    placed where they fit: the rest settle moves neither by more than ``SETTLE_MOVES``, and over their bellies they
    lie outside the humerus's capsule and inside the skin."""
    arm = scenes.arm_character(collisions=MuscleCollisions(bones=[bones] * 4))
    placed = {m.name: m for m in scenes.arm_muscles()[0]}
    settled = _per_muscle(arm, arm.state().x)
    rest = arm.model.rig.vertices
    capsule = arm.model.capsule_radius[0, 0]
    for name in ("biceps", "triceps"):
        assert np.linalg.norm(settled[name] - placed[name].axis, axis=1).max() < SETTLE_MOVES, name
        probe = placed[name]
        probe.set_axis(settled[name])
        vertices, _ = muscle_surface(probe, rings=48, sides=24)
        side = np.sign(probe.axis[len(probe.axis) // 2, 2])
        over = rest[side * rest[:, 2] > 0.9 * np.linalg.norm(rest[:, 1:], axis=1)]  # the skin on the muscle's side
        for x in np.arange(0.10, 0.26, 0.01):  # its belly, a centimetre at a time
            here = vertices[np.abs(vertices[:, 0] - x) < 0.005]
            skin = over[np.abs(over[:, 0] - x) < 0.01]
            assert _humerus_distance(here).min() > capsule - 0.001, (name, x)
            assert _humerus_distance(here).max() < _humerus_distance(skin).min(), (name, x)


def _per_muscle(arm, x) -> dict:
    pbd = arm.model.pbd
    return {name: x[pbd.axis_start[m]:pbd.axis_start[m + 1]] for m, name in enumerate(pbd.names)}


def test_bone_collisions_keep_the_muscles_out_of_the_bone(runs):
    on, off = (_per_muscle(runs[b][2], runs[b][1]) for b in (True, False))
    on, off = ({n: _humerus_distance(p) for n, p in axes.items()} for axes in (on, off))
    mid = len(on["biceps"]) // 2
    print(f"biceps belly from the humerus: {on['biceps'][mid] * 1000:.1f} mm with bone collisions, "
          f"{off['biceps'][mid] * 1000:.1f} mm without; triceps closest {on['triceps'].min() * 1000:.1f} / "
          f"{off['triceps'].min() * 1000:.1f} mm")
    assert on["biceps"][mid] > off["biceps"][mid] + LEAST_FURTHER
    assert off["triceps"].min() < 0.005 < 0.010 < on["triceps"].min()


def _biceps_top(run, middle) -> float:
    """Largest distance [m] from the humerus of the biceps' surface within ``NEAR_MIDDLE`` of ``middle``."""
    _, x, arm = run
    probe = copy.deepcopy(arm.model.muscles[0])
    probe.set_axis(_per_muscle(arm, x)["biceps"])
    probe.activation = 1.0
    vertices, _ = muscle_surface(probe, rings=48, sides=24)
    return float(_humerus_distance(vertices[np.linalg.norm(vertices - middle, axis=1) < NEAR_MIDDLE]).max())


def test_bone_collisions_push_the_biceps_surface_out(runs):
    biceps = _per_muscle(runs[False][2], runs[False][1])["biceps"]
    middle = biceps[len(biceps) // 2]
    on, off = _biceps_top(runs[True], middle), _biceps_top(runs[False], middle)
    print(f"biceps surface top from the humerus: {on * 1000:.1f} mm with bone collisions, {off * 1000:.1f} mm "
          f"without")
    assert on > off + LEAST_FURTHER


def test_bone_collisions_push_the_skin_over_the_biceps_out(runs):
    """Paper Fig. 15: the skin over the active biceps lies further out with bone collisions on than off: on average
    over the ``OVER_BICEPS`` vertices nearest its belly's middle (with them off), and at the top of its bulge (the
    upper arm's skin on the biceps' side, ``SIDE`` of it)."""
    skin_off = runs[False][0]
    biceps = _per_muscle(runs[False][2], runs[False][1])["biceps"]
    over = np.argsort(np.linalg.norm(skin_off - biceps[len(biceps) // 2], axis=1))[:OVER_BICEPS]
    on, off = _humerus_distance(runs[True][0][over]), _humerus_distance(skin_off[over])
    rest = runs[False][2].deformer.rest
    side = ((rest[:, 0] > scenes.ARM_MUSCLES["biceps"][0][0]) & (rest[:, 0] < scenes.ARM_HEADS[1][0])
            & (rest[:, 2] > np.cos(np.radians(SIDE)) * np.linalg.norm(rest[:, 1:], axis=1)))
    top_on, top_off = (_humerus_distance(runs[b][0][side]).max() for b in (True, False))
    print(f"skin over the biceps from the humerus: {on.mean() * 1000:.2f} mm with bone collisions, "
          f"{off.mean() * 1000:.2f} mm without; the bulge's top {top_on * 1000:.2f} / {top_off * 1000:.2f} mm")
    assert on.mean() > off.mean()
    assert top_on > top_off
