"""Volume law (paper eq. 3) measured on the muscle's surface mesh: closed form, activation, eccentricity, bending."""
import numpy as np
import pytest

from implicit_muscles.core.muscle import FusiformMuscle, MuscleShape
from implicit_muscles.core.surface import mesh_volume, muscle_surface

from core_scenes import LENGTH, WIDTH, bent_muscle

VOLUME_TOL = 0.005
"""Relative tolerance on volumes (the issue's 0.5 %)."""
RINGS, SIDES = 256, 64
POLYGON_FACTOR = np.sin(2 * np.pi / SIDES) / (2 * np.pi / SIDES)
"""Area ratio of a ring's inscribed polygon to its ellipse (rings are uniform in the parametric angle)."""


def _volume(m):
    v, f = muscle_surface(m, rings=RINGS, sides=SIDES)
    return mesh_volume(v, f)


def test_straight_muscle_volume_is_pi_w2_l():
    m = FusiformMuscle((0, 0, 0), (0.1, 0.2, 0.2), width=WIDTH)
    assert _volume(m) == pytest.approx(np.pi * WIDTH ** 2 * m.length, rel=VOLUME_TOL)


@pytest.mark.parametrize("shape", [MuscleShape(3, 3, 4, 7), MuscleShape(1, 3, 9, 9), MuscleShape(9, 2, 2, 9)])
def test_volume_constant_across_activation_and_eccentricity(shape):
    reference = np.pi * WIDTH ** 2 * LENGTH
    for a in np.linspace(0, 1, 6):
        for e in (0.0, 0.5, 0.8, 0.95):
            m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, activation=a,
                               shape=MuscleShape(shape.alpha_rest, shape.beta_rest, shape.alpha_active,
                                                 shape.beta_active, e, e))
            assert _volume(m) == pytest.approx(reference, rel=VOLUME_TOL), (a, e)


def test_width_scale_multiplies_volume_by_its_square():
    base = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH)
    big = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, width_scale=1.3)
    assert _volume(big) / _volume(base) == pytest.approx(1.69, rel=1e-9)


def test_shortened_muscle_keeps_its_volume_and_bulges():
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH)
    v0 = _volume(m)
    m.set_axis(np.linspace([0, 0, 0], [0, 0, 0.6 * LENGTH], m.particle_count + 2))
    assert m.width == pytest.approx(WIDTH / np.sqrt(0.6))
    assert _volume(m) == pytest.approx(v0, rel=1e-9)


def test_bent_axis_volume_drift(record_property):
    """Paper §8.2: drift under 3 % for a bent axis (30 particles, 60 degree bend). Reported."""
    straight = _volume(bent_muscle(0.0))
    for shape in (MuscleShape(3, 3, 4, 7), MuscleShape(2, 3, 4, 8, 0.9, 0.9)):
        for a in (0.0, 1.0):
            m = bent_muscle(60.0, shape=shape, activation=a)
            exact = np.pi * m.width ** 2 * m.length
            drift = _volume(m) / (exact * POLYGON_FACTOR) - 1.0
            record_property(f"volume_drift_{shape.alpha_rest}{shape.beta_rest}_a{a:g}", drift)
            print(f"bent 60 deg, shape {shape}, a={a}: volume drift {100 * drift:+.3f} %")
            assert abs(drift) < 0.03
    assert straight / (np.pi * WIDTH ** 2 * LENGTH) == pytest.approx(POLYGON_FACTOR, rel=1e-3)


def test_surface_vertices_lie_on_the_field_zero_set():
    m = bent_muscle(60.0, activation=0.5, shape=MuscleShape(3, 3, 4, 7, 0.3, 0.8))
    v, f = muscle_surface(m, rings=64, sides=32)
    values, _ = m.field(v[:-2])
    assert np.abs(values).max() < 1e-9
    # the snap moves vertices only a little off the analytic ring (the bend is gentle)
    v0, _ = muscle_surface(m, rings=64, sides=32, snap=False)
    assert np.abs(v - v0).max() < 0.05 * m.width


def test_mesh_is_closed_and_outward():
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, shape=MuscleShape(1, 3, 1, 3))
    v, f = muscle_surface(m, rings=16, sides=12)
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert np.all(counts == 2)  # every edge shared by exactly two triangles
    assert mesh_volume(v, f) > 0
