"""Small PBD scenes for the dynamics tests: one or two muscles between two bones, shaken or bent."""
import numpy as np

from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.pbd.model import build_pbd_model
from implicit_muscles.core.pbd.settings import PBDSettings
from implicit_muscles.core.pbd.settle import rest_state
from implicit_muscles.core.pbd.solver import PBDSolver

LENGTH, WIDTH = 0.3, 0.03


def one_muscle(particles=30, **settings):
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=particles)
    model = build_pbd_model([m], PBDSettings(**settings))
    return model


def shake(model, stiffness, frames=120, shake_frames=48, fps=24.0, amplitude=0.05, hz=2.0, state=None):
    """Shake the first muscle's origin across it (x) for ``shake_frames``, then hold it; other muscles stay at rest.

    Returns (mid deviations, states): the distance of the first muscle's middle particle from the straight line
    between its endpoints, per frame, and the state after each frame.
    """
    stiffness = np.full(model.muscle_count, stiffness)
    rest_ends = np.stack([model.rest_points[model.axis_start[:-1]], model.rest_points[model.axis_start[1:] - 1]], 1)
    if state is None:  # settled at rest first (the settled model carries the settled particle parameters)
        model, state = rest_state(model, stiffness=stiffness, fps=fps)
    solver = PBDSolver(model)
    nxt = state.copy()
    mid = (model.axis_start[0] + model.axis_start[1]) // 2
    deviation, energies, states = [], [], []
    for f in range(frames):
        t = f / fps
        off = amplitude * np.sin(2 * np.pi * hz * t) if f < shake_frames else 0.0
        ends = rest_ends.copy()
        ends[0, 0, 0] += off
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=stiffness), 1.0 / fps)
        state, nxt = nxt, state
        p = state.x[mid]
        a, b = ends[0, 0], ends[0, 1]
        u = (b - a) / np.linalg.norm(b - a)
        deviation.append(np.linalg.norm((p - a) - ((p - a) @ u) * u))
        states.append(state.copy())
    return np.array(deviation), states
