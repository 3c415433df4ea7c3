"""Fuzz tests of the headless core with hypothesis: random valid muscles, poses and animated values never
crash and never give NaN; random invalid ones give ``ValueError`` (a plain sentence), never another exception.

Examples per test are few (``EXAMPLES``, or ``IMPLICIT_MUSCLES_FUZZ_EXAMPLES``) so the suite stays fast; hypothesis keeps the failing examples it finds in
``.hypothesis/`` and replays them first, and ``--hypothesis-seed`` reproduces a run.
"""
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from implicit_muscles.scenes import paper as scenes
from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.pbd.control import MuscleInputs
from implicit_muscles.core.pbd.model import build_pbd_model
from implicit_muscles.core.pbd.solver import PBDSolver

EXAMPLES = int(os.environ.get("IMPLICIT_MUSCLES_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

finite = st.floats(-1.0, 1.0, allow_nan=False)
point = st.tuples(finite, finite, finite)
exponent = st.integers(1, 9)
eccentricity = st.floats(0.0, 0.99)
unit = st.floats(0.0, 1.0)


@st.composite
def valid_muscle(draw):
    origin = np.array(draw(point))
    direction = np.array(draw(st.tuples(finite, finite, finite)))
    if np.linalg.norm(direction) < 1e-3:
        direction = np.array([0.0, 0.0, 1.0])
    length = draw(st.floats(0.01, 0.6))
    insertion = origin + length * direction / np.linalg.norm(direction)
    shape = MuscleShape(draw(exponent), draw(exponent), draw(exponent), draw(exponent), draw(eccentricity),
                        draw(eccentricity))
    return FusiformMuscle(origin, insertion, width=draw(st.floats(0.002, 0.1)), shape=shape,
                          particles=draw(st.integers(3, 60)), activation=draw(unit),
                          width_scale=draw(st.floats(0.1, 3.0)))


@FUZZ
@given(valid_muscle(), st.lists(point, min_size=1, max_size=20))
def test_valid_muscles_give_finite_fields(muscle, points):
    values, grads = muscle.field(np.array(points))
    assert np.isfinite(values).all() and np.isfinite(grads).all()


BAD_VALUES = {
    "alpha_rest": [0, 10, 2.5, float("nan"), "3", None, True],
    "eccentricity_rest": [-0.1, 1.0, 1.5, float("nan"), float("inf")],
    "activation": [-0.01, 1.01, float("nan")],
    "width": [0.0, -0.01, float("nan"), float("inf")],
    "width_scale": [0.0, -1.0, float("nan")],
    "particles": [-1, 2.5, True],
    "insertion": [(0.0, 0.0, 0.0), (float("nan"), 0.0, 0.1), (0.0, 0.1)],
}


@FUZZ
@given(st.sampled_from(sorted(BAD_VALUES)), st.data())
def test_invalid_muscle_values_raise_value_error(name, data):
    value = data.draw(st.sampled_from(BAD_VALUES[name]))
    shape = dict(alpha_rest=3, beta_rest=3, alpha_active=4, beta_active=7, eccentricity_rest=0.0,
                 eccentricity_active=0.0)
    kw = dict(width=0.03, particles=10, activation=0.0, width_scale=1.0)
    insertion = (0.0, 0.0, 0.2)
    if name in shape:
        shape[name] = value
    elif name == "insertion":
        insertion = value
    else:
        kw[name] = value
    with pytest.raises(ValueError) as info:
        FusiformMuscle((0.0, 0.0, 0.0), insertion, shape=MuscleShape(**shape), **kw)
    assert str(info.value).endswith(".")  # a sentence, shown as it is in Blender's report


def _rigid(rx, ry, rz, t):
    """A rotation by Euler angles [rad] and a translation [m]: ``(4, 4)``."""
    cx, cy, cz, sx, sy, sz = math.cos(rx), math.cos(ry), math.cos(rz), math.sin(rx), math.sin(ry), math.sin(rz)
    R = np.array([[cy * cz, sx * sy * cz - cx * sz, cx * sy * cz + sx * sz],
                  [cy * sz, sx * sy * sz + cx * cz, cx * sy * sz - sx * cz],
                  [-sy, sx * cy, cx * cy]])
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = R, t
    return out


angle = st.floats(-math.pi, math.pi)
offset = st.tuples(*[st.floats(-2.0, 2.0)] * 3)


@pytest.fixture(scope="module")
def arm():
    return scenes.arm_character(particles=10)


def _arm_pose(root, elbow, wrist):
    B = scenes.arm_pose(math.degrees(elbow), math.degrees(wrist))
    return np.einsum("ij,bjk->bik", root, B)


@FUZZ
@given(st.tuples(angle, angle, angle, offset), st.floats(0.0, 2.6), st.floats(-1.2, 1.2),
       st.lists(st.tuples(unit, unit, st.floats(0.1, 3.0), eccentricity), min_size=4, max_size=4),
       st.integers(1, 4))
def test_random_valid_poses_and_values_give_finite_skin(arm, root, elbow, wrist, values, frames):
    """Random rigid placements of the arm, elbow and wrist angles (straight to 150 degrees) and animated values:
    the skin and the muscles stay finite, frame after frame."""
    B = _arm_pose(_rigid(*root[:3], root[3]), elbow, wrist)
    act, stiff, scale, ecc = (np.array(column) for column in zip(*values))
    arm.reset()
    for _ in range(frames):
        x = arm.frame(B, MuscleInputs(activation=act, stiffness=stiff, width_scale=scale, eccentricity=ecc))
    assert np.isfinite(x).all() and np.isfinite(arm.state().x).all()


def _bad_pose(kind, B):
    B = B.copy()
    if kind == "nan":
        B[1, 0, 3] = np.nan
    elif kind == "inf":
        B[0, 2, 2] = np.inf
    elif kind == "scaled":
        B[1, :3, :3] *= 1.2
    elif kind == "sheared":
        B[2, 0, 1] += 0.3
    elif kind == "far":
        B[:, :3, 3] += 1e7
    elif kind == "bones":
        B = B[:2]
    return B


@FUZZ
@given(st.sampled_from(["nan", "inf", "scaled", "sheared", "far", "bones"]), st.floats(0.0, 2.6),
       st.sampled_from(["activation", "stiffness", "width_scale", "eccentricity", None]),
       st.sampled_from([-0.5, 1.5, float("nan"), 5.0]))
def test_invalid_poses_and_values_raise_value_error_and_keep_the_state(arm, kind, elbow, name, bad):
    """A bad pose, or a bad animated value: ``ValueError`` with a sentence, and the simulation state unchanged (the
    next good frame continues as if the bad one never came)."""
    arm.reset()
    good = scenes.arm_pose(math.degrees(elbow))
    arm.frame(good)
    before = arm.state()
    with pytest.raises(ValueError):
        arm.frame(_bad_pose(kind, good))
    assert np.array_equal(arm.state().x, before.x)
    if name is not None and not (name == "width_scale" and bad in (1.5, 5.0)):
        with pytest.raises(ValueError):
            arm.frame(good, MuscleInputs(**{name: np.full(4, bad)}))
        assert np.array_equal(arm.state().x, before.x)


@FUZZ
@given(st.lists(valid_muscle(), min_size=1, max_size=4), st.tuples(angle, angle, angle, offset),
       st.floats(0.0, 1.0))
def test_pbd_of_random_muscles_under_random_motion_stays_finite(muscles, motion, stiffness):
    """Random muscles, their ends carried by a random rigid motion over 6 frames (up to 2 m and half a turn per
    frame): the axes stay finite."""
    model = build_pbd_model(muscles)
    solver = PBDSolver(model)
    from implicit_muscles.core.pbd.settle import initial_state
    state, nxt = initial_state(model), initial_state(model)
    ends0 = state.endpoints.copy()
    for k in range(1, 7):
        T = _rigid(*(np.array(motion[:3]) * k / 6), np.array(motion[3]) * k / 6)
        ends = np.einsum("ij,mkj->mki", T[:3, :3], ends0) + T[:3, 3]
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=stiffness), 1.0 / 24.0)
        state, nxt = nxt, state
        assert np.isfinite(state.x).all()
