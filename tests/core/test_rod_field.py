"""The fusiform field follows the rod (``core/rod/field.py``): width from the rod's scales, cross-section
turned with its twist, field volume under stretch and pinch, kernel vs numpy reference."""
from dataclasses import replace

import numpy as np
import pytest

from implicit_muscles.core.muscle import field as reference_field
from implicit_muscles.core.muscle.axis import AxisGeometry
from implicit_muscles.core.muscle.batch import evaluate_muscles
from implicit_muscles.core.muscle.field import MuscleProfile
from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape
from implicit_muscles.core.muscle.surface import batch_field_volume, field_volume
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.rod.field import rod_batch, update_batch
from implicit_muscles.core.rod.model import build_rod_model
from implicit_muscles.core.rod.settings import RodSettings
from implicit_muscles.core.rod.solver import RodSolver
from implicit_muscles.core.rod.state import RodState
from implicit_muscles.kernels.constants import (SCALAR_C0, SCALAR_C1, SCALAR_LENGTH, SCALAR_SUPPORT, SCALAR_U,
                                                SCALAR_V, SCALAR_WIDTH)

LENGTH, WIDTH = 0.3, 0.03
FIELD_VOLUME_TOL = 0.03
"""Field volume under stretch and pinch against rest (the axis's 3 %)."""
KERNEL_TOL = 1e-10
"""Field value [m] and gradient, kernel vs numpy reference."""
CELLS = 64


def scene(particles=18, eccentricity=0.0):
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=particles, origin_normal=(1, 0, 0),
                       insertion_normal=(1, 0, 0),
                       shape=MuscleShape(eccentricity_rest=eccentricity, eccentricity_active=eccentricity))
    return m, build_rod_model([m])


def settle(model, control, frames=150):
    state = RodState.at_rest(model)
    nxt = state.copy()
    solver = RodSolver(model)
    for _ in range(frames):
        solver.step(state, nxt, control, 1 / 24)
        state, nxt = nxt, state
    return state


def batch_of(model, muscle, state, eccentricity=0.0):
    batch = rod_batch(model, [muscle])
    update_batch(batch, model, state.x, state.s, state.q, eccentricity=[eccentricity])
    return batch


def test_rod_at_rest_is_the_paper_muscle():
    muscle, model = scene()
    batch = batch_of(model, muscle, RodState.at_rest(model))
    q = np.random.default_rng(1).uniform([-0.04, -0.04, -0.02], [0.04, 0.04, 0.32], (500, 3))
    got, _ = evaluate_muscles(batch, q)
    want, _ = muscle.field(q)
    assert np.abs(got[:, 0] - want).max() < 1e-12


@pytest.mark.parametrize("case", ["stretch", "pinch"])
def test_field_volume_kept_under_stretch_and_pinch(case):
    muscle, model = scene()
    rest = batch_field_volume(batch_of(model, muscle, RodState.at_rest(model)), 0, CELLS)
    assert rest == pytest.approx(field_volume(muscle, CELLS), rel=1e-9)
    if case == "stretch":
        state = settle(model, PBDControl(endpoints=np.array([[[0, 0, 0], [0, 0, 1.25 * LENGTH]]])))
        solved = model
    else:
        k = model.axis_start[0] + 7
        belly = np.zeros_like(model.belly)
        belly[k] = True
        solved = replace(model, belly=belly, settings=replace(model.settings, contraction=0.3))
        state = settle(solved, PBDControl(activation=1.0))
    batch = batch_of(solved, muscle, state)
    volume = batch_field_volume(batch, 0, CELLS)
    assert volume == pytest.approx(rest, rel=FIELD_VOLUME_TOL)
    if case == "pinch":  # the bulge shows in the field: wider at the pinch than at rest, not at the far end
        z_pinch = 0.5 * (state.x[k, 2] + state.x[k + 1, 2])
        def radius(b, z):
            xs = np.linspace(0, 0.05, 2001)
            f, _ = evaluate_muscles(b, np.stack([xs, np.zeros_like(xs), np.full_like(xs, z)], 1))
            return xs[np.argmax(f[:, 0] > 0)]
        rest_batch = batch_of(model, muscle, RodState.at_rest(model))
        assert radius(batch, z_pinch) > 1.05 * radius(rest_batch, z_pinch)
        assert radius(batch, 0.85 * LENGTH) == pytest.approx(radius(rest_batch, 0.85 * LENGTH), rel=0.02)


def test_cross_section_turns_with_the_twist():
    e = 0.8
    muscle, model = scene(eccentricity=e)
    turn = np.pi / 2
    state = settle(model, PBDControl(normals=np.array([[[1, 0, 0], [np.cos(turn), np.sin(turn), 0]]])), 200)
    batch = batch_of(model, muscle, state, e)
    n = batch.axis_normal[model.axis_start[0]:model.axis_start[1]]
    angle = np.unwrap(np.arctan2(n[:, 1], n[:, 0]))
    # the end vertices take the mean of their anchor (the bone's normal) and their segment's frame
    assert angle[0] == pytest.approx(0.0, abs=0.15) and angle[-1] == pytest.approx(turn, abs=0.15)
    assert angle[len(angle) // 2] == pytest.approx(turn / 2, abs=0.12)
    assert np.all(np.diff(angle) > 0)
    # the long axis of the ellipse (along the normal) at the insertion's side is along the turned normal
    z = 0.8 * LENGTH
    k = np.argmin(np.abs(state.x[:, 2] - z))
    d = n[k]
    side = np.cross([0, 0, 1], d)
    def extent(direction):
        xs = np.linspace(0, 0.06, 3001)
        f, _ = evaluate_muscles(batch, state.x[k] + xs[:, None] * direction)
        return xs[np.argmax(f[:, 0] > 0)]
    u = (1 - e * e) ** 0.25
    assert extent(d) / extent(side) == pytest.approx(u ** -2, rel=0.05)  # v / u = 1 / u^2


def test_kernel_matches_reference_with_scales_and_twist():
    muscle, model = scene(particles=12, eccentricity=0.6)
    k = model.axis_start[0] + 5
    belly = np.zeros_like(model.belly)
    belly[k] = True
    solved = replace(model, belly=belly, settings=replace(model.settings, contraction=0.3))
    state = settle(solved, PBDControl(activation=1.0, normals=np.array([[[1, 0, 0], [0.6, 0.8, 0]]]),
                                      endpoints=np.array([[[0, 0.02, 0], [0.01, 0, 0.28]]])), 60)
    batch = batch_of(solved, muscle, state, 0.6)
    a = batch.arrays
    n = model.axis_start[1]
    geo = AxisGeometry(points=a.axis_points[:n], cumulative=a.axis_cumulative[:n], length=float(batch.length[0]),
                       seg_length=a.seg_length[:n - 1], seg_tangent=a.seg_tangent[:n - 1],
                       tangents=a.axis_tangent[:n], normals=a.axis_normal[:n], seg_angle=a.seg_angle[:n - 1])
    sc = a.muscle_scalar[0]
    prof = MuscleProfile(tuple(int(e) for e in a.muscle_exponent[0]), sc[SCALAR_C0], sc[SCALAR_C1],
                         sc[SCALAR_WIDTH], sc[SCALAR_U], sc[SCALAR_V], sc[SCALAR_SUPPORT])
    assert sc[SCALAR_LENGTH] == batch.length[0]
    q = np.random.default_rng(5).uniform([-0.05, -0.04, -0.02], [0.05, 0.06, 0.3], (400, 3))
    got, grads = evaluate_muscles(batch, q)
    want, want_grads, _ = reference_field.evaluate(geo, prof, q, scales=a.axis_scale[:n])
    assert np.abs(got[:, 0] - want).max() < KERNEL_TOL
    assert np.abs(grads[:, 0] - want_grads).max() < KERNEL_TOL * 1e3
    # and the gradient is the field's: finite differences away from branch borders
    h = 1e-7
    fd = np.stack([(reference_field.evaluate(geo, prof, q + h * e, scales=a.axis_scale[:n])[0]
                    - reference_field.evaluate(geo, prof, q - h * e, scales=a.axis_scale[:n])[0]) / (2 * h)
                   for e in np.eye(3)], 1)
    close = np.linalg.norm(fd - want_grads, axis=1) < 1e-5
    assert close.mean() > 0.9
