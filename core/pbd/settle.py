"""Start states of the muscle axes: the rest axes as built (:func:`initial_state`) and their equilibrium under
their own tension with the rig at rest (:func:`rest_state`, the simulation's start)."""
from __future__ import annotations

import numpy as np

from ..muscle.batch import MuscleBatch
from .control import PBDControl
from .model import PBDModel
from .solver import PBDSolver
from .state import PBDState

REST_ROUNDS = 8
"""Settle-then-reparameterise rounds of :func:`rest_state` at most."""
REST_PARAMETER_TOL = 1e-6
"""Largest change of a particle's arc parameter that ends :func:`rest_state`."""


def initial_state(model: PBDModel) -> PBDState:
    """The rest axes at rest, velocities zero, last-frame inputs = rest inputs (not settled: see rest_state), and an
    empty muscle batch of the model's layout (filled by the first step)."""
    grid_count = len(model.grid_dims)
    identity = np.zeros((grid_count, 3, 4))
    identity[:, :, :3] = np.eye(3)
    M = model.muscle_count
    ends = np.stack([model.rest_points[model.axis_start[:-1]], model.rest_points[model.axis_start[1:] - 1]], axis=1)
    batch = MuscleBatch.allocate(np.diff(model.axis_start), model.exponents, model.volume, model.names)
    return PBDState(model.rest_points.copy(), np.zeros_like(model.rest_points), ends.reshape(M, 2, 3),
                    model.rest_normals.copy(), model.rest_capsules.copy(), identity, batch)


def arc_parameters(model: PBDModel, x) -> np.ndarray:
    """``(P,)`` arc-length parameter in [0, 1] of each particle of the axes ``x (P, 3)`` [m]."""
    s = np.empty(model.particle_count)
    for m in range(model.muscle_count):
        a, b = model.axis_start[m], model.axis_start[m + 1]
        cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(x[a:b], axis=0), axis=1))])
        s[a:b] = cum / cum[-1]
    return s


def rest_state(model: PBDModel, stiffness=None, fps: float = 24.0, max_frames: int = 4000,
               tolerance: float = 1e-11, start=None) -> tuple[PBDModel, PBDState]:
    """The equilibrium of the axes under their own tension with the rig at rest: ``(settled model, state)``.

    Frames at ``fps`` hold the rest pose until no particle moves ``tolerance`` [m] in a frame (at most
    ``max_frames``); then the particles' arc parameters are measured where the particles are and the model is
    rebuilt with them (:meth:`PBDModel.with_particle_s`: the particle radii ``D_i = w Phi(s_i)`` the contacts use);
    settling and reparameterising repeat (at most ``REST_ROUNDS``) until no parameter changes by
    ``REST_PARAMETER_TOL``. The returned state has zero velocities; step it with a solver of the returned model.

    ``start``: optional ``(x (P, 3) [m], particle_s (P,))`` of an earlier settle of the same model: settling starts
    there. The same end test applies; a start of the wrong shape or with non-finite values is ignored.
    """
    control = PBDControl(stiffness=stiffness)
    state = initial_state(model)
    if start is not None:
        x0, s0 = (np.asarray(a, dtype=np.float64) for a in start)
        if x0.shape == state.x.shape and s0.shape == model.particle_s.shape and np.isfinite(x0).all() \
                and np.isfinite(s0).all():
            state.x[:] = x0
            model = model.with_particle_s(s0)
    nxt = state.copy()
    for _ in range(REST_ROUNDS):
        solver = PBDSolver(model)
        for _ in range(max_frames):
            solver.step(state, nxt, control, 1.0 / fps)
            moved = np.abs(nxt.x - state.x).max()
            state, nxt = nxt, state
            if moved < tolerance:
                break
        s = arc_parameters(model, state.x)
        change = float(np.abs(s - model.particle_s).max())
        model = model.with_particle_s(s)
        if change < REST_PARAMETER_TOL:
            break
    state.v[:] = 0.0
    return model, state
