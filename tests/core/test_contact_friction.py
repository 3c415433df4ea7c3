"""Friction at the axis contacts (XPBD mode, ``kernels/pbd.py`` ``_contact``): a viscous drag on the slide over a
contact whose decay does not depend on the substeps, and Coulomb friction that carries a muscle with the bone it
rests on."""
import math

import numpy as np
import pytest

from implicit_muscles.core.muscle.primitive import FusiformMuscle
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.pbd.model import build_pbd_model
from implicit_muscles.core.pbd.settings import PBDSettings
from implicit_muscles.core.pbd.settle import rest_state
from implicit_muscles.core.pbd.solver import PBDSolver
from implicit_muscles.kernels.contact import contact_keep, stiffness_frequency

from pbd_scenes import LENGTH, WIDTH


@pytest.mark.parametrize("k", [0.1, 0.5, 0.7, 0.9])
def test_contact_drag_decays_a_slide_the_same_for_any_substeps(k):
    """Over one frame (1/24 s) a slide keeps ``exp(-2 zeta_c omega(k) / 24)`` of itself at 1, 10 or 80 substeps
    (closed form, to round-off); a tense muscle's slide is damped more than a loose one's."""
    zeta = 0.25
    exact = math.exp(-2.0 * zeta * 2.0 * math.pi * stiffness_frequency(k) / 24.0)
    for n in (1, 10, 80):
        assert contact_keep(k, zeta, 1.0 / 24.0 / n) ** n == pytest.approx(exact, rel=1e-12)
    assert contact_keep(k, zeta, 0.004) < contact_keep(0.05, zeta, 0.004)
    assert contact_keep(k, 0.0, 0.004) == 1.0 and contact_keep(1.0, zeta, 0.004) == 0.0


def _slide_over_a_moving_bone(**settings):
    """A muscle bowed over a bone capsule that intrudes into its belly (its tension presses it on the bone), the
    bone then carried 2 cm across the muscle along the contact's tangent in 12 frames and held 12 frames: how far
    [m] the belly's middle followed the bone (along y) at the end of the move."""
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=20, name="a")
    caps = np.array([[[0.006, -0.05, LENGTH / 2], [0.006, 0.05, LENGTH / 2]]])  # across the muscle, along y
    model = build_pbd_model([m], PBDSettings(**settings), caps, np.array([0.004]))
    ends = np.array([[[0.0, 0.0, 0.0], [0.0, 0.0, LENGTH]]])
    model, state = rest_state(model, stiffness=[0.3])
    solver = PBDSolver(model)
    nxt = state.copy()
    mid = (model.axis_start[0] + model.axis_start[1]) // 2
    y0 = state.x[mid, 1]
    for f in range(1, 13):
        moved = caps + [0.0, 0.02 * f / 12, 0.0]
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=[0.3], capsules=moved), 1 / 24)
        state, nxt = nxt, state
    return state.x[mid, 1] - y0


def test_coulomb_friction_and_drag_carry_a_muscle_with_its_bone():
    """With neither (a frictionless slide) the bone slips under the belly; the drag and Coulomb friction each
    carry it further along with the bone, Coulomb's 0.3 furthest (static friction)."""
    free = _slide_over_a_moving_bone(contact_friction=0.0, contact_damping_ratio=0.0)
    drag = _slide_over_a_moving_bone(contact_friction=0.0, contact_damping_ratio=0.25)
    coulomb = _slide_over_a_moving_bone(contact_friction=0.3, contact_damping_ratio=0.0)
    print(f"belly carried along by the bone's 20 mm: free {free * 1000:.2f} mm, drag {drag * 1000:.2f} mm, "
          f"Coulomb 0.3 {coulomb * 1000:.2f} mm")
    assert free < drag < coulomb
    assert coulomb - free > 0.002


def test_contact_settings_are_checked():
    with pytest.raises(ValueError, match="contact friction must be from 0 to 1"):
        PBDSettings(contact_friction=-0.1).validated()
    with pytest.raises(ValueError, match="contact damping ratio must be from 0 to 1"):
        PBDSettings(contact_damping_ratio=1.5).validated()
