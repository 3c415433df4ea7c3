"""A small limb that runs every kernel once: what ``kernel_cache.warm_up`` binds and plays.

Two bones along +x (``upper`` 0 -> 0.20 m, ``lower`` 0.20 -> 0.38 m), a capped tube of ``RINGS`` rings of
``AROUND`` vertices (radius 3 cm) weighted with a 3 cm blend at the joint, and two muscles crossing the joint
(front and back, as a biceps and a triceps). The bones' poses bend the joint towards +z. It takes the same types of
arrays as a real character, so the machine code compiled for it serves every character.
"""
from __future__ import annotations

import numpy as np

RINGS = 14
"""Rings of the tube."""
AROUND = 12
"""Vertices per ring."""
RADIUS = 0.03
"""Tube radius [m]."""
HEADS = np.array([[0.0, 0.0, 0.0], [0.20, 0.0, 0.0]])
"""Bone heads [m]; the tails are the next head and the end of the tube."""
TAILS = np.array([[0.20, 0.0, 0.0], [0.38, 0.0, 0.0]])
BLEND = 0.03
"""Half-width [m] of the weight blend at the joint."""


def limb_rig():
    """The tube as a :class:`core.rig.Rig`: ``2 + RINGS * AROUND`` vertices, 2 bones."""
    from ..rig import Rig, capped_tube_faces

    xs = np.linspace(-0.01, 0.39, RINGS)
    theta = np.linspace(0.0, 2.0 * np.pi, AROUND, endpoint=False)
    ring = np.stack([np.repeat(xs, AROUND), np.tile(RADIUS * np.cos(theta), RINGS),
                     np.tile(RADIUS * np.sin(theta), RINGS)], axis=1)
    vertices = np.concatenate([[[-0.02, 0.0, 0.0]], ring, [[0.40, 0.0, 0.0]]])
    t = np.clip((vertices[:, 0] - (HEADS[1, 0] - BLEND)) / (2.0 * BLEND), 0.0, 1.0)
    s = t * t * (3.0 - 2.0 * t)
    weights = np.stack([1.0 - s, s], axis=1)
    return Rig(vertices, capped_tube_faces(RINGS, AROUND), weights, HEADS.copy(), TAILS.copy(),
               np.array([-1, 0]), ("upper", "lower"))


def limb_muscles(particles: int = 6):
    """``(muscles, origin_bones, insertion_bones, skin_bones)``: a front and a back muscle across the joint."""
    from ..muscle.primitive import FusiformMuscle, MuscleShape

    front = FusiformMuscle((0.05, 0.0, 0.012), (0.24, 0.0, 0.010), width=0.009, particles=particles,
                           shape=MuscleShape(3, 3, 4, 7), origin_normal=(0.0, 1.0, 0.0),
                           insertion_normal=(0.0, 1.0, 0.0), name="front")
    back = FusiformMuscle((0.04, 0.0, -0.012), (0.22, 0.0, -0.012), width=0.009, particles=particles,
                          shape=MuscleShape(3, 3, 4, 6), origin_normal=(0.0, 1.0, 0.0),
                          insertion_normal=(0.0, 1.0, 0.0), name="back")
    ones = np.array([0, 0], dtype=np.int64)
    return [front, back], ones * 0, ones + 1, ones * 0


def limb_pose(degrees: float) -> np.ndarray:
    """``(2, 4, 4)`` rest -> posed transforms: the joint bent by ``degrees`` towards +z."""
    angle = np.radians(degrees)
    c, s = np.cos(angle), np.sin(angle)
    bend = np.eye(4)
    bend[:3, :3] = [[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]]
    bend[:3, 3] = HEADS[1] - bend[:3, :3] @ HEADS[1]
    return np.stack([np.eye(4), bend])
