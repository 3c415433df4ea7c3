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
HOLD_FRAMES = 64
"""Frames :func:`rest_state` runs in one :meth:`PBDSolver.hold` call, at most, between two frames whose motion it
measures."""
MEASURED_FRAMES = 8
"""The first frames of each :func:`rest_state` round, each measured: a settle from a stored rest ends within them."""
STALL_FRAMES = 256
"""Frames over which :func:`rest_state` compares the largest motion with that of the frames before (about ten
seconds at 24 fps)."""
STALL_FALL = 0.5
"""A round of :func:`rest_state` ends when the largest motion over ``STALL_FRAMES`` frames is more than this times
that over the ``STALL_FRAMES`` before: a motion that does not halve in 256 frames would not fall from 1e-4 m to the
tolerance within ``max_frames`` either."""


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
               tolerance: float = 1e-11, start=None, control: PBDControl | None = None) -> tuple[PBDModel, PBDState]:
    """The equilibrium of the axes under their own tension with the rig at rest: ``(settled model, state)``.

    Frames at ``fps`` hold the rest pose until no particle moves ``tolerance`` [m] in a frame, or the motion stops
    falling (at most ``max_frames``; the frames are measured at most ``HOLD_FRAMES`` apart, the ones between run
    without Python's per-frame work); then the particles' arc parameters are measured where the particles are and
    the model is rebuilt with them (:meth:`PBDModel.with_particle_s`: the particle radii ``D_i = w Phi(s_i)`` the
    contacts use); settling and reparameterising repeat (at most ``REST_ROUNDS``) until no parameter changes by
    ``REST_PARAMETER_TOL``. The frames are the model's own (its damping too): where a contact holds a particle,
    the rest is where the spring step and the contact's push balance, which moves with the damping, so a rest
    settled with other damping is not a rest of the run. The returned state has zero velocities; step it with a
    solver of the returned model.

    ``start``: optional ``(x (P, 3) [m], particle_s (P,))`` of an earlier settle of the same model: settling starts
    there. The same end test applies; a start of the wrong shape or with non-finite values is ignored.

    ``control``: the control the frames hold (default the solver's rest inputs with ``stiffness``): a host passes
    its frames' own at rest (the muscles' rest inputs, the skin they are kept inside), so that its first frame at
    rest starts from an equilibrium of the same step.
    """
    control = control if control is not None else PBDControl(stiffness=stiffness)
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
        state, nxt = _hold_until_still(solver, state, nxt, control, 1.0 / fps, max_frames, tolerance)
        s = arc_parameters(model, state.x)
        change = float(np.abs(s - model.particle_s).max())
        model = model.with_particle_s(s)
        if change < REST_PARAMETER_TOL:
            break
    state.v[:] = 0.0
    return model, state


def _hold_until_still(solver: PBDSolver, state: PBDState, spare: PBDState, control: PBDControl, dt: float,
                      max_frames: int, tolerance: float) -> tuple[PBDState, PBDState]:
    """Frames of ``dt`` [s] with the rig held at rest until one moves no particle ``tolerance`` [m], or the motion
    stops falling, or ``max_frames`` frames: ``(state, spare)``, the state after the last frame and the other
    buffer.

    Each measured frame is a :meth:`PBDSolver.step`: the first ``MEASURED_FRAMES``, then one after 1, 2, 4, ... up
    to ``HOLD_FRAMES`` frames run in one :meth:`PBDSolver.hold` call (bit for bit the same frames). The motion
    stops falling when the largest motion measured over the last ``STALL_FRAMES`` frames is more than
    ``STALL_FALL`` times that over the ``STALL_FRAMES`` before: axes that keep moving (a particle that jitters
    against a contact) end there instead of at ``max_frames``.

    The frames run on one kernel thread (numba's setting is per calling thread; restored after): they are small
    (a few hundred particles), and on a busy machine waking a second thread for every kernel launch costs more
    than the frame (design notes, *Settling on one kernel thread*)."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return _frames_until_still(solver, state, spare, control, dt, max_frames, tolerance)
    finally:
        numba.set_num_threads(threads)


def _frames_until_still(solver, state, spare, control, dt, max_frames, tolerance):
    """:func:`_hold_until_still` on the calling thread's kernel threads."""
    frames = 0
    held = 0
    checks = []  # (frame, largest particle motion in that frame [m])
    while frames < max_frames:
        if held:
            solver.hold(state, spare, control, dt, held)
            state, spare = spare, state
            frames += held
        solver.step(state, spare, control, dt)
        moved = float(np.abs(spare.x - state.x).max())
        state, spare = spare, state
        frames += 1
        if moved < tolerance:
            break
        checks.append((frames, moved))
        if frames >= 2 * STALL_FRAMES:
            recent = max(m for f, m in checks if f > frames - STALL_FRAMES)
            before = max(m for f, m in checks if frames - 2 * STALL_FRAMES < f <= frames - STALL_FRAMES)
            if recent > STALL_FALL * before:
                break
        if frames >= MEASURED_FRAMES:
            held = max(0, min(2 * held or 1, HOLD_FRAMES, max_frames - frames - 1))
    return state, spare
