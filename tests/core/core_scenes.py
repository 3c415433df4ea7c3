"""Small analytic muscle configurations shared by the core tests."""
import numpy as np

from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape

LENGTH = 0.3
"""Rest length of the test muscles [m] (a biceps-sized muscle)."""
WIDTH = 0.03
"""Rest width of the test muscles [m]."""


def arc_axis(count: int, bend_degrees: float, length: float = LENGTH) -> np.ndarray:
    """``count`` points on a circular arc of the given total bend and arc length, in the xz plane, from the origin."""
    if bend_degrees == 0:
        return np.stack([np.zeros(count), np.zeros(count), np.linspace(0, length, count)], 1)
    angle = np.radians(bend_degrees)
    radius = length / angle
    t = np.linspace(0.0, angle, count)
    return np.stack([radius * (1 - np.cos(t)), np.zeros(count), radius * np.sin(t)], 1)


def bent_muscle(bend_degrees=60.0, particles=30, shape=None, activation=0.0, **kw) -> FusiformMuscle:
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=particles,
                       shape=shape or MuscleShape(), activation=activation, **kw)
    m.set_axis(arc_axis(particles + 2, bend_degrees))
    return m


def twisted_muscle() -> FusiformMuscle:
    """A bent, twisted, eccentric muscle: endpoint normals 90 degrees apart, 3D axis."""
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=12,
                       shape=MuscleShape(2, 5, 4, 7, 0.6, 0.9), activation=0.35,
                       origin_normal=(1, 0, 0), insertion_normal=(0, 1, 0))
    t = np.linspace(0, 1, 14)
    m.set_axis(np.stack([0.05 * np.sin(3 * t), 0.04 * t ** 2, LENGTH * t], 1))
    return m
