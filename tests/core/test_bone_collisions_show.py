"""Paper Fig. 15: without bone collisions a part of an inflating muscle grows inside the bone. The paper's arm
(``scenes.paper``) at 110 degrees, the biceps fully active, one second: with bone collisions on, the biceps' belly
and its surface lie further out from the humerus, the triceps, which wraps the bent elbow, stays out of the bone
instead of cutting through it, and the skin over the biceps is pushed further out (issue 20 item 6)."""
import copy

import numpy as np
import pytest

from implicit_muscles.core.muscle.surface import muscle_surface
from implicit_muscles.core.pbd.collisions import MuscleCollisions
from implicit_muscles.scenes import paper as scenes

LEAST_FURTHER = 0.002
"""[m] how much further out from the humerus the active biceps' belly must lie with bone collisions on."""
OVER_BICEPS = 40
"""Skin vertices over the biceps: the ones nearest its belly's middle (with bone collisions off)."""
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
            skin = arm.frame(pose, activation=[1.0, 0.0, 0.8, 0.3], dt=1 / 24)
        out[bones] = (skin.copy(), arm.state().x, arm)
    return out


def _per_muscle(arm, x) -> dict:
    return {name: x[arm.model.axis_start[m]:arm.model.axis_start[m + 1]] for m, name in enumerate(arm.model.names)}


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
    probe = copy.deepcopy(arm.muscles[0])
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


@pytest.mark.xfail(strict=True, reason=(
    "issue 20 item 6, not met: the biceps and its surface lie 2-3 mm further out with bone collisions on, but the "
    "skin over it 1 mm further in (45.0 against 46.0 mm from the humerus): the skin shows the change from the bind "
    "shape, and the bind biceps settled with the capsule lies further out still (docs/design-notes.md, The skin "
    "follows a muscle's change)"))
def test_bone_collisions_push_the_skin_over_the_biceps_out(runs):
    """Issue 20 item 6: the skin over the active biceps lies further out with bone collisions on than off (the
    same vertices, the ``OVER_BICEPS`` nearest the belly's middle with them off)."""
    skin_off = runs[False][0]
    biceps = _per_muscle(runs[False][2], runs[False][1])["biceps"]
    over = np.argsort(np.linalg.norm(skin_off - biceps[len(biceps) // 2], axis=1))[:OVER_BICEPS]
    on, off = _humerus_distance(runs[True][0][over]), _humerus_distance(skin_off[over])
    print(f"skin over the biceps from the humerus: {on.mean() * 1000:.2f} mm with bone collisions, "
          f"{off.mean() * 1000:.2f} mm without")
    assert on.mean() > off.mean()
