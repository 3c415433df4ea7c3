"""The fat primitive's field (thesis ch. 6): the ellipsoid's region and volume, the distance-like field, gradient
against finite differences, kernel against its numpy reference, compact support and its box."""
import math

import numpy as np
import pytest

from implicit_muscles.core.fat import FatPrimitive
from implicit_muscles.core.fat.batch import FatBatch
from implicit_muscles.core.fat.field import compact_fat_reference, fat_field_reference

KERNEL_TOL = 1e-12
"""Kernel vs numpy reference, value [m] and gradient, absolute (same formula, different order)."""
FD_STEP = 1e-6
"""Central finite-difference step [m]."""
FD_TOL = 1e-6
"""Gradient vs finite differences, absolute, at points 1 mm or more from the centre."""
VOLUME_TOL = 0.005
"""Volume of ``f < 0`` by midpoint quadrature on a 160^3 grid against ``4/3 pi a b c``, relative."""


def _rotation(angle_deg, axis):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    a = np.radians(angle_deg)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


BELLY = dict(center=(0.02, -0.12, 1.05), axes=(0.14, 0.07, 0.11), frame=_rotation(35.0, (1.0, 2.0, 0.5)))


def test_volume_of_the_region_inside_is_the_ellipsoids():
    fat = FatPrimitive(**BELLY)
    n = 160
    half = fat.axes.max() * 1.05
    ticks = (np.arange(n) + 0.5) / n * 2 * half - half
    X, Y, Z = np.meshgrid(ticks, ticks, ticks, indexing="ij")
    pts = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1) + fat.center
    f, _ = fat.field(pts)
    volume = np.count_nonzero(f < 0) * (2 * half / n) ** 3
    assert fat.volume == pytest.approx(4 / 3 * math.pi * 0.14 * 0.07 * 0.11)
    assert volume == pytest.approx(fat.volume, rel=VOLUME_TOL)


def test_field_is_the_distance_along_each_semi_axis_and_unit_on_the_surface():
    fat = FatPrimitive(**BELLY)
    for j in range(3):
        t = np.linspace(0.2, 2.0, 10) * fat.axes[j]
        pts = fat.center + t[:, None] * fat.frame[:, j]
        f, g = fat.field(pts)
        np.testing.assert_allclose(f, t - fat.axes[j], atol=1e-12)
        np.testing.assert_allclose(g, np.broadcast_to(fat.frame[:, j], g.shape), atol=1e-12)
    rng = np.random.default_rng(1)
    u = rng.normal(size=(200, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    surface = fat.center + (u * fat.axes) @ fat.frame.T
    f, g = fat.field(surface)
    np.testing.assert_allclose(f, 0.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-12)
    inside, _ = fat.field(fat.center + 0.5 * (surface - fat.center))
    assert (inside < 0).all()


def _queries(fat, n=400, seed=0):
    rng = np.random.default_rng(seed)
    pts = fat.center + rng.uniform(-2.5, 2.5, (n, 3)) * fat.axes.max()
    return pts[np.linalg.norm(pts - fat.center, axis=1) > 1e-3]


def test_gradient_matches_finite_differences():
    fat = FatPrimitive(**BELLY)
    pts = _queries(fat)
    _, g = fat.field(pts)
    fd = np.empty_like(g)
    for c in range(3):
        e = np.zeros(3)
        e[c] = FD_STEP
        fd[:, c] = (fat.field(pts + e)[0] - fat.field(pts - e)[0]) / (2 * FD_STEP)
    np.testing.assert_allclose(g, fd, atol=FD_TOL)


def test_kernel_matches_the_numpy_reference():
    fat = FatPrimitive(**BELLY)
    pts = _queries(fat, seed=3)
    f, g = fat.field(pts)
    rf, rg = fat_field_reference(pts, fat.center, fat.frame, fat.axes)
    np.testing.assert_allclose(f, rf, atol=KERNEL_TOL)
    np.testing.assert_allclose(g, rg, atol=KERNEL_TOL)


def test_compact_field_is_one_inside_half_on_the_surface_and_zero_outside_its_box():
    fat = FatPrimitive(**BELLY)
    batch = FatBatch.of([fat])
    for offset in (0.0, 0.01):
        box = batch.bounds([fat.support - offset])[0]
        pts = _queries(fat, n=4000, seed=5)
        k, _ = compact_fat_reference(pts, fat.center, fat.frame, fat.axes, offset)
        outside = np.any((pts < box[:3]) | (pts > box[3:]), axis=1)
        assert outside.any() and (k[outside] == 0).all()
        assert (k[~outside] > 0).any()
    # the smallest semi-axis is the support: the field tends to 1 at the centre from every direction (continuous)
    for radius, tol in ((1e-3, 1e-4), (1e-5, 1e-9)):
        near = fat.center + np.random.default_rng(2).normal(size=(100, 3)) * radius
        k, _ = compact_fat_reference(near, fat.center, fat.frame, fat.axes)
        np.testing.assert_allclose(k, 1.0, atol=tol)
    k, _ = compact_fat_reference(fat.center + fat.axes[0] * fat.frame[:, 0], fat.center, fat.frame, fat.axes)
    assert k[0] == pytest.approx(0.5)


@pytest.mark.parametrize("bad, message", [
    (dict(axes=(0.1, 0.0, 0.1)), "semi-axes must be finite and greater than 0"),
    (dict(axes=(0.1, np.nan, 0.1)), "semi-axes must be finite and greater than 0"),
    (dict(frame=np.diag([1.0, 1.0, -1.0])), "frame must be a rotation"),
    (dict(stiffness=1.5), "stiffness must be from 0 to 1"),
    (dict(center=(0.0, np.inf, 0.0)), "NaN or infinite"),
])
def test_bad_fat_is_refused_with_a_sentence(bad, message):
    args = dict(BELLY, name="belly")
    args.update(bad)
    with pytest.raises(ValueError, match=message):
        FatPrimitive(**args)
