"""Paper Fig. 15: without bone collisions a part of an inflating muscle grows inside the bone. The paper's arm
(``scenes.paper``) at 110 degrees, the biceps fully active: with bone collisions on, the biceps' belly lies further
out from the humerus, and the triceps, which wraps the bent elbow, stays out of the bone instead of cutting
through it."""
import numpy as np

from implicit_muscles.core.pbd.collisions import MuscleCollisions
from implicit_muscles.scenes import paper as scenes

LEAST_FURTHER = 0.002
"""[m] how much further out from the humerus the active biceps' belly must lie with bone collisions on."""


def _distances_to_humerus(bones: bool) -> dict:
    """Per muscle, its particles' distances [m] to the humerus's axis (the upper arm does not move in
    ``arm_pose``), after one second at 110 degrees."""
    arm = scenes.arm_character(collisions=MuscleCollisions(bones=[bones] * 4))
    pose = scenes.arm_pose(110.0)
    for _ in range(24):
        arm.frame(pose, activation=[1.0, 0.0, 0.8, 0.3], dt=1 / 24)
    x, out = arm.state().x, {}
    head, tail = scenes.ARM_HEADS[0], scenes.ARM_TAILS[0]
    for m, name in enumerate(arm.model.names):
        p = x[arm.model.axis_start[m]:arm.model.axis_start[m + 1]]
        t = np.clip((p - head) @ (tail - head) / ((tail - head) @ (tail - head)), 0.0, 1.0)
        out[name] = np.linalg.norm(p - (head + t[:, None] * (tail - head)), axis=1)
    return out


def test_bone_collisions_keep_the_muscles_out_of_the_bone():
    on, off = _distances_to_humerus(True), _distances_to_humerus(False)
    mid = len(on["biceps"]) // 2
    print(f"biceps belly from the humerus: {on['biceps'][mid] * 1000:.1f} mm with bone collisions, "
          f"{off['biceps'][mid] * 1000:.1f} mm without; triceps closest {on['triceps'].min() * 1000:.1f} / "
          f"{off['triceps'].min() * 1000:.1f} mm")
    assert on["biceps"][mid] > off["biceps"][mid] + LEAST_FURTHER
    assert off["triceps"].min() < 0.005 < 0.010 < on["triceps"].min()
