"""A preset muscle placed from the skin depth at its bones (``core/muscle/placement.py``), on tubes whose depth is
known in closed form."""
import numpy as np
import pytest

from implicit_muscles.core.muscle import placement as P
from implicit_muscles.core.muscle.profile import activation_profile, ellipse_axes
from implicit_muscles.core.rig import Rig, capped_tube_faces

SURFACE_TOL = 2e-3
"""Relative to the skin depth: the placed muscle's surface against where the placement puts it (the profile sampled
on 30 particles)."""


def _tube(radius_of_angle, length=0.4, rings=41, around=72):
    """A tube along +Y from the origin whose radius at angle ``a`` about Y (0 along +Z, pi/2 along +X) is
    ``radius_of_angle(a)`` [m]: a rig of two bones (0..0.2, 0.2..0.4 m)."""
    y = np.linspace(0.0, length, rings)
    a = np.linspace(0.0, 2 * np.pi, around, endpoint=False)
    r = radius_of_angle(a)
    ring = np.stack([r * np.sin(a), np.zeros_like(a), r * np.cos(a)], axis=1)
    vertices = np.concatenate([[[0.0, 0.0, 0.0]]] + [ring + [0.0, yi, 0.0] for yi in y] + [[[0.0, length, 0.0]]])
    heads = np.array([[0.0, 0.0, 0.0], [0.0, length / 2, 0.0]])
    tails = np.array([[0.0, length / 2, 0.0], [0.0, length, 0.0]])
    weights = np.zeros((len(vertices), 2))
    weights[:, 0] = vertices[:, 1] < length / 2
    weights[:, 1] = 1.0 - weights[:, 0]
    return Rig(vertices, capped_tube_faces(rings, around), weights, heads, tails, np.array([-1, 0]), ("a", "b"))


def test_every_shipped_preset_reads_as_a_shape():
    names = sorted(p.stem for p in P.PRESET_FOLDER.glob("*.py"))
    assert len(names) >= 10
    for name in names:
        values = P.preset_values(name)
        assert {"alpha_rest", "beta_rest", "alpha_active", "beta_active"} <= set(values), name
        P.preset_shape(values).validated()
    with pytest.raises(ValueError, match="no shipped muscle preset"):
        P.preset_values("no such muscle")


@pytest.mark.parametrize("side, expected", [("up", 0.05), ("out", 0.03), ((0.0, 0.0, -1.0), 0.04)])
def test_the_skin_depth_is_the_tube_radius_on_that_side(side, expected):
    """A tube of two half-ellipses, 5 cm deep along +Z, 4 cm along -Z and 3 cm along X: the depth on each side is
    its radius there, within the few per cent the ellipse's radius changes over ``SIDE_CONE``."""
    def radius(a):
        deep = np.where(np.cos(a) >= 0.0, 0.05, 0.04)
        return 1.0 / np.sqrt((np.sin(a) / 0.03) ** 2 + (np.cos(a) / deep) ** 2)
    rig = _tube(radius)
    start, end = P.muscle_line(rig.heads, rig.tails, 0, 1)
    shifted = (start + [0.01, 0.0, 0.0], end + [0.01, 0.0, 0.0])  # "out" is +X on the left
    depth = P.skin_depth(rig.vertices, start, end, P.side_vector(side, *shifted))
    assert abs(depth - expected) < 0.06 * expected


def test_a_side_along_the_bones_is_refused():
    with pytest.raises(ValueError, match="runs along its bones"):
        P.side_vector("front", [0.0, 0.0, 0.0], [0.0, -0.3, 0.0])


@pytest.mark.parametrize("preset", ["biceps", "gastrocnemius"])
def test_a_placed_preset_reaches_its_share_of_the_skin_depth_with_its_long_axis_along_the_skin(preset):
    rig = _tube(lambda a: np.full_like(a, 0.04))
    muscle = P.place_preset(rig, 0, 1, preset, "up")
    start, end = P.muscle_line(rig.heads, rig.tails, 0, 1)
    np.testing.assert_allclose(muscle.axis[0], start + [0.0, 0.0, P.DEPTH * 0.04], atol=1e-12)
    np.testing.assert_allclose(muscle.axis[-1], end + [0.0, 0.0, P.DEPTH * 0.04], atol=1e-12)
    sh = muscle.shape
    s = np.linspace(0.0, 1.0, 2001)
    phi = activation_profile(sh.alpha_rest, sh.beta_rest, sh.alpha_active, sh.beta_active, 0.0, s)
    widest = muscle.axis[0] + s[np.argmax(phi)] * (muscle.axis[-1] - muscle.axis[0])
    u, v = ellipse_axes(sh.eccentricity_rest)
    reach = P.REACH * 0.04
    top = widest + [0.0, 0.0, reach]           # the surface towards the skin
    across = widest + [reach * v / u, 0.0, 0.0]  # the long half-axis lies along the skin
    f, _ = muscle.field(np.array([top, across]))
    assert np.all(np.abs(f) < SURFACE_TOL * 0.04)
    if sh.eccentricity_rest > 0:  # the two half-axes differ by more than the tolerance: the orientation is tested
        assert reach * (v / u - 1.0) > 5 * SURFACE_TOL * 0.04
