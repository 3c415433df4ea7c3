"""Bad input (alpha/beta, e, origin == insertion, NaN, ...) gets a ValueError with a plain sentence."""
import numpy as np
import pytest

from implicit_muscles.core.muscle import profile
from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape


def make(**kw):
    args = dict(origin=(0, 0, 0), insertion=(0, 0, 0.3), width=0.03)
    args.update(kw)
    return FusiformMuscle(args.pop("origin"), args.pop("insertion"), **args)


@pytest.mark.parametrize("field", ["alpha_rest", "beta_rest", "alpha_active", "beta_active"])
@pytest.mark.parametrize("value", [0, 10, -3, 2.5, float("nan"), "3", None, True])
def test_shape_exponents_must_be_whole_numbers_1_to_9(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a whole number from 1 to 9"):
        make(shape=MuscleShape(**{field: value}))


def test_integral_floats_are_accepted():
    m = make(shape=MuscleShape(alpha_rest=3.0))
    assert m.shape.alpha_rest == 3 and isinstance(m.shape.alpha_rest, int)


@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5, float("nan"), float("inf")])
def test_eccentricity_range(value):
    with pytest.raises(ValueError, match="eccentricity"):
        make(shape=MuscleShape(eccentricity_active=value))


def test_origin_equal_to_insertion():
    with pytest.raises(ValueError, match="same place"):
        make(origin=(1, 2, 3), insertion=(1, 2, 3))


@pytest.mark.parametrize("bad", [(np.nan, 0, 0), (0, np.inf, 0)])
def test_non_finite_coordinates(bad):
    with pytest.raises(ValueError, match="NaN or infinite"):
        make(origin=bad)
    m = make()
    with pytest.raises(ValueError, match="NaN or infinite"):
        m.field(np.array([bad], dtype=float))
    axis = m.axis
    axis[3] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        m.set_axis(axis)


def test_fewer_than_two_axis_points():
    m = make()
    with pytest.raises(ValueError, match="at least 2 points"):
        m.set_axis(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="keep 32 points"):
        m.set_axis(np.linspace([0, 0, 0], [0, 0, 1], 5))


@pytest.mark.parametrize("kw,match", [
    (dict(width=-0.01), "muscle width must be greater than 0"),
    (dict(width=0.0), "muscle width must be greater than 0"),
    (dict(width=None, volume=-1.0), "muscle volume must be greater than 0"),
    (dict(width=None), "either its rest width or its volume"),
    (dict(width=0.03, volume=1e-4), "either its rest width or its volume"),
    (dict(width_scale=0.0), "width scale must be greater than 0"),
    (dict(activation=1.5), "activation must be from 0 to 1"),
    (dict(particles=-1), "particle count"),
    (dict(origin_normal=(0, 0, 1)), "parallel to the muscle axis"),
])
def test_bad_muscle_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        make(**kw)


def test_bad_query_shape():
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        make().field(np.zeros((4, 2)))


def test_profile_functions_validate():
    with pytest.raises(ValueError, match="alpha"):
        profile.phi(0, 3, 0.5)
    with pytest.raises(ValueError, match="activation"):
        profile.activation_norm(3, 3, 4, 7, -0.2)
    with pytest.raises(ValueError, match="muscle axis length"):
        profile.width_from_volume(1e-4, 0.0)


def test_eccentricity_at_its_float32_maximum_is_the_maximum():
    """Blender stores 0.99 as the float32 0.99000001: accepted as 0.99; anything clearly above is refused."""
    from implicit_muscles.core.validation import ECCENTRICITY_MAX, eccentricity

    assert eccentricity(float(np.float32(0.99))) == ECCENTRICITY_MAX
    with pytest.raises(ValueError, match="from 0 \\(round\\) to 0.99"):
        eccentricity(0.9901)
