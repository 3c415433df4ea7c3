"""A muscle fitted under a painted patch (core/muscle/patch_fit.py) on a cylinder limb, where inside and the depth
under the skin are known in closed form: the surface stays inside the skin, its top comes within a few mm of the
patch, it lies under the patch, its ends lie where the patch's extent projects on the bones, a wide patch gives a
muscle flat across and a narrow one a muscle taller than wide, and bad patches are refused with a sentence."""
import numpy as np
import pytest

from implicit_muscles.core.muscle.patch_fit import GAP_FRACTION, fit_patch_muscle
from implicit_muscles.core.muscle.primitive import MuscleShape
from implicit_muscles.core.muscle.surface import muscle_surface

RADIUS = 0.04
"""The limb's radius [m] (an upper arm)."""
LENGTH = 0.6
"""The limb's length along Z [m]: the origin bone from 0 to 0.3, the insertion bone from 0.3 to 0.6."""
ORIGIN_BONE = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.3]])
INSERTION_BONE = np.array([[0.0, 0.0, 0.3], [0.0, 0.0, 0.6]])
UNDER_TOL = 0.005
"""[m] the muscle's top comes at least this close to the patch's skin ("a few mm under it")."""


def cylinder(rings=121, sides=72):
    """Vertices and outward normals of the limb's side."""
    z = np.linspace(0.0, LENGTH, rings)
    angle = np.linspace(0.0, 2 * np.pi, sides, endpoint=False)
    Z, A = np.meshgrid(z, angle, indexing="ij")
    normals = np.stack([np.cos(A), np.sin(A), np.zeros_like(A)], axis=-1).reshape(-1, 3)
    return normals * RADIUS + np.stack([0 * Z, 0 * Z, Z], axis=-1).reshape(-1, 3), normals


def patch(points, normals, z_range=(0.06, 0.28), half_angle=np.radians(40.0), towards=0.0):
    """The skin vertices within ``half_angle`` of the direction ``towards`` [rad] around Z, in ``z_range``."""
    angle = np.arctan2(points[:, 1], points[:, 0])
    diff = np.abs((angle - towards + np.pi) % (2 * np.pi) - np.pi)
    keep = (diff <= half_angle) & (points[:, 2] >= z_range[0]) & (points[:, 2] <= z_range[1])
    return points[keep], normals[keep]


def fit(half_angle=np.radians(40.0), z_range=(0.06, 0.28), towards=0.0, shape=None):
    skin, normals = cylinder()
    p, n = patch(skin, normals, z_range, half_angle, towards)
    return fit_patch_muscle(p, n, skin, normals, ORIGIN_BONE, INSERTION_BONE, shape=shape, name="biceps"), p


@pytest.mark.parametrize("towards", [0.0, 2.0])
def test_the_muscle_lies_inside_the_skin_just_under_the_patch(towards):
    result, p = fit(towards=towards)
    surface, _ = muscle_surface(result.muscle(), rings=64, sides=32, snap=False)
    radial = np.hypot(surface[:, 0], surface[:, 1])
    assert radial.max() < RADIUS  # nowhere outside the skin
    assert RADIUS - radial.max() < UNDER_TOL  # its top within a few mm under the skin
    assert RADIUS - radial.max() >= 0.5 * GAP_FRACTION * RADIUS - 1e-9
    top = surface[np.argmax(radial)]
    assert abs((np.arctan2(top[1], top[0]) - towards + np.pi) % (2 * np.pi) - np.pi) < np.radians(40.0)
    assert p[:, 2].min() - 0.01 < top[2] < p[:, 2].max() + 0.01  # under the patch, along the limb too
    assert np.linalg.norm(np.hypot(result.origin[0], result.origin[1])) > 0.25 * RADIUS  # clear of the bone


def test_the_ends_lie_where_the_patch_extent_projects_on_the_bones():
    result, p = fit(z_range=(0.06, 0.34))
    assert np.allclose(result.origin_on_bone, [0, 0, p[:, 2].min()], atol=1e-9)
    assert np.allclose(result.insertion_on_bone, [0, 0, p[:, 2].max()], atol=1e-9)
    # a patch that ends before the insertion bone: the insertion at that bone's head
    result, p = fit(z_range=(0.06, 0.25))
    assert np.allclose(result.insertion_on_bone, INSERTION_BONE[0], atol=1e-9)


def test_a_wide_patch_gives_a_muscle_flat_across_and_a_narrow_one_a_muscle_taller_than_wide():
    wide, _ = fit(half_angle=np.radians(75.0))
    middle, _ = fit(half_angle=np.radians(40.0))
    narrow, _ = fit(half_angle=np.radians(22.0))
    across, side = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])
    assert np.allclose(wide.side, side) and np.allclose(narrow.side, side)
    assert abs(abs(wide.normal @ across) - 1.0) < 1e-6 and wide.eccentricity > 0.7  # long axis across the limb
    assert abs(abs(narrow.normal @ side) - 1.0) < 1e-6 and narrow.eccentricity > 0.5  # long axis away from the bone
    assert middle.eccentricity < min(wide.eccentricity, narrow.eccentricity)


def test_the_profile_is_taken_into_account():
    plain, _ = fit()
    peaked, _ = fit(shape=MuscleShape(alpha_rest=6, beta_rest=6))
    for result, shape in ((plain, None), (peaked, MuscleShape(alpha_rest=6, beta_rest=6))):
        surface, _ = muscle_surface(result.muscle(shape), rings=64, sides=32, snap=False)
        assert np.hypot(surface[:, 0], surface[:, 1]).max() < RADIUS


def test_bad_patches_are_refused_with_a_sentence():
    skin, normals = cylinder()
    with pytest.raises(ValueError, match="biceps: the patch has 0 painted vertices; paint at least 3"):
        fit_patch_muscle(np.zeros((0, 3)), np.zeros((0, 3)), skin, normals, ORIGIN_BONE, INSERTION_BONE,
                         name="biceps")
    ring = np.abs(skin[:, 2] - 0.15) < 0.03  # all around the limb
    with pytest.raises(ValueError, match="biceps: the patch goes all around its bones"):
        fit_patch_muscle(skin[ring], normals[ring], skin, normals, ORIGIN_BONE, INSERTION_BONE, name="biceps")
    dot = np.flatnonzero(np.abs(skin[:, 2] - 0.3) < 1e-9)[:3]  # a dot over the joint: no extent along the bones
    with pytest.raises(ValueError, match="biceps: the patch's ends project on the same place"):
        fit_patch_muscle(skin[dot], normals[dot], skin, normals, ORIGIN_BONE, INSERTION_BONE, name="biceps")
