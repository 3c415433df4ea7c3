"""Small PBD scenes for the dynamics tests: one or two muscles between two bones, shaken or bent."""
import numpy as np

from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape
from implicit_muscles.core.pbd.control import MuscleInputs, PBDControl
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


def arm_shake_skin(particles, k, solvers=None):
    """The paper's arm shake (``scenes.paper.arm_shake``: 4 Hz, 4 cm, one second, then held) with every muscle at
    stiffness ``k`` and ``solvers`` per muscle (``CharacterSetup.solvers``; None: all axes), over the 40 skin
    vertices nearest the biceps' middle: ``(window, settle, late)``, the largest peak-to-peak move [m] of one of them
    from 0.1 s to 0.6 s after the stop, the time [s] after the stop from which they all stay within 1 mm of where
    they end (frame 60), and the largest peak-to-peak move from 0.3 s to 0.8 s (after the first stroke back)."""
    from implicit_muscles.scenes import paper as scenes

    arm = scenes.arm_character(particles=particles, solvers=solvers)
    inputs = MuscleInputs(stiffness=[k] * 4)
    arm.settle(scenes.arm_shake(0), inputs)  # a shot starts settled in its first pose (as in Blender)
    frames = [arm.frame(scenes.arm_shake(f), inputs, dt=1 / 24).copy() for f in range(60)]
    a, b = arm.model.pbd.axis_start[0], arm.model.pbd.axis_start[1]
    belly = arm.current.x[(a + b) // 2]  # the biceps' middle, held still at the end
    over = np.argsort(np.linalg.norm(frames[-1] - belly, axis=1))[:40]
    X = np.array(frames)[:, over]

    def peak_to_peak(first, last):
        window = X[first:last]
        return np.linalg.norm(window.max(axis=0) - window.min(axis=0), axis=1).max()

    off = np.linalg.norm(X[24:] - X[-1], axis=2).max(axis=1)
    above = np.flatnonzero(off > 0.001)
    return peak_to_peak(26, 39), (above[-1] + 1) / 24 if len(above) else 0.0, peak_to_peak(31, 44)
