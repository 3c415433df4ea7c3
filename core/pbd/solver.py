"""Muscle axis dynamics: Position Based Dynamics for all muscles of a character (paper §6, thesis ch. 5).

Shaped like warp.sim: a frozen :class:`core.pbd.model.PBDModel` (what does not change) is built once by
``build_pbd_model``; a :class:`core.pbd.state.PBDState` (positions, velocities, last frame's kinematic targets, the
muscles' field batch) is what changes; a :class:`core.pbd.control.PBDControl` carries one frame's inputs.
:meth:`PBDSolver.step` advances one frame from an input state into an output state and never writes its input
state, so a host can keep states per frame and resume exactly.

Units: metres, seconds, kilograms.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import validation
from ..muscle.batch import profile_tables
from ..quality import RENDER, EvaluationQuality
from ..validation import ECCENTRICITY_MAX, FLOAT32_SLACK
from .control import (DEFAULT_ACTIVATION, DEFAULT_ECCENTRICITY, DEFAULT_STIFFNESS, DEFAULT_WIDTH_SCALE,
                      PBDControl)
from .model import PBDModel
from .state import PBDState


class FrameInputs(NamedTuple):
    """One frame's inputs checked and filled in by :meth:`PBDSolver.inputs` (``M`` muscles, ``B`` capsules,
    ``G`` grids)."""

    activation: np.ndarray     # (M,) float64
    stiffness: np.ndarray      # (M,) float64
    width_scale: np.ndarray    # (M,) float64
    eccentricity: np.ndarray   # (M,) float64, or None: not given (0)
    endpoints: np.ndarray      # (M, 2, 3) float64 [m]
    normals: np.ndarray        # (M, 2, 3) float64
    capsules: np.ndarray       # (B, 2, 3) float64 [m]
    grid_inverse: np.ndarray   # (G, 3, 4) float64 world -> grid rigid transforms


class PBDSolver:
    """Advances a :class:`PBDState` of ``model`` by one frame (:meth:`step`). Holds the scratch arrays.

    After :meth:`step`, ``state_out.muscles`` (a :class:`core.muscle.batch.MuscleBatch`) holds the new axes with
    their control normals and widths from the new lengths (paper §6: updated after the solve), ready for skinning.
    """

    def __init__(self, model: PBDModel):
        from ...kernels.pbd import PBDScratch  # numba: loaded on first use, after the host set its cache

        self.model = model
        P, M = model.particle_count, model.muscle_count
        self.scratch = PBDScratch(x_prev=np.zeros((P, 3)), lam=np.zeros(P), length=np.zeros(M),
                                  chord_dev=np.zeros(M), status=np.zeros(M, dtype=np.int64),
                                  bad_count=np.zeros(M, dtype=np.int64))
        self.last_bad_particles = 0
        # inputs a control leaves at None (never written by the kernels, so shared between frames)
        self._default = {"activation": np.full(M, DEFAULT_ACTIVATION), "stiffness": np.full(M, DEFAULT_STIFFNESS),
                         "width scale": np.full(M, DEFAULT_WIDTH_SCALE),
                         "eccentricity": np.full(M, DEFAULT_ECCENTRICITY)}
        self._rest_ends = np.ascontiguousarray(np.stack([model.rest_points[model.axis_start[:-1]],
                                                         model.rest_points[model.axis_start[1:] - 1]], 1))
        self._gravity = np.ascontiguousarray(model.settings.gravity, dtype=np.float64)

    def _per_muscle(self, value, name, lo=None, hi=None) -> np.ndarray:
        """(M,) float64 from ``value`` (None: the default, a scalar: the same for every muscle), checked."""
        if value is None:
            return self._default[name]
        M = self.model.muscle_count
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
        if arr.size == 1:
            arr = np.full(M, float(arr[0]))
        if arr.shape != (M,):
            raise ValueError(f"{name} needs one value per muscle ({M}), got {arr.size}.")
        # one min and one max decide the common case (NaN propagates into both); the messages below otherwise
        low, high = float(arr.min()), float(arr.max())
        if (math.isfinite(low) and math.isfinite(high) and (lo is None or low >= lo)
                and (hi is None or high <= hi)):
            return np.ascontiguousarray(arr)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        raise ValueError(f"{name} must be from {lo} to {hi}.")

    def inputs(self, control: PBDControl) -> FrameInputs:
        """``control``'s values checked (``ValueError`` naming the input) and its Nones filled with the defaults."""
        m = self.model
        M = m.muscle_count
        activation = self._per_muscle(control.activation, "activation", 0.0, 1.0)
        stiffness = self._per_muscle(control.stiffness, "stiffness", 0.0, 1.0)
        width_scale = self._per_muscle(control.width_scale, "width scale", 1e-6, None)
        eccentricity = None
        if control.eccentricity is not None:
            eccentricity = np.minimum(self._per_muscle(control.eccentricity, "eccentricity", 0.0,
                                                       ECCENTRICITY_MAX + FLOAT32_SLACK), ECCENTRICITY_MAX)
        ends = frame_array(control.endpoints, (M, 2, 3), "endpoints", self._rest_ends)
        chord = ends[:, 1] - ends[:, 0]
        span2 = np.einsum("ij,ij->i", chord, chord)
        if span2.min() <= 1e-18:  # span <= 1 nm
            bad = int(np.flatnonzero(span2 <= 1e-18)[0])
            raise ValueError(f"muscle {m.names[bad]}: origin and insertion are at the same place in this frame; "
                             f"check the bones it is attached to.")
        normals = frame_array(control.normals, (M, 2, 3), "endpoint normals", m.rest_normals)
        caps = frame_array(control.capsules, (m.capsule_count, 2, 3), "bone capsules", m.rest_capsules)
        T = len(m.grid_dims)
        if T:
            tf = frame_array(control.grid_transforms, (int(m.grid_transform_index.max()) + 1, 4, 4),
                             "grid transforms", np.broadcast_to(np.eye(4), (int(m.grid_transform_index.max()) + 1,
                                                                             4, 4)))
            grid_inverse = np.ascontiguousarray(np.linalg.inv(tf[m.grid_transform_index])[:, :3, :])
        else:
            grid_inverse = np.zeros((0, 3, 4))
        return FrameInputs(activation, stiffness, width_scale, eccentricity, ends, normals, caps, grid_inverse)

    def params(self, dt: float, quality: EvaluationQuality = RENDER):
        """The kernel's scalar settings for substeps of ``dt`` [s] (``kernels.pbd.PBDParams``) at ``quality``
        (``core/quality.py``: its substeps and sweeps per substep)."""
        from ...kernels.pbd import PBDParams

        s = self.model.settings
        return PBDParams(n_sub=quality.substeps(int(s.substeps)), dt=float(dt), xpbd=bool(s.xpbd),
                         iterations=quality.sweeps(int(s.iterations)), damping=float(s.damping),
                         damping_ratio=float(s.damping_ratio), gravity=self._gravity, friction=float(s.friction),
                         contact_friction=float(s.contact_friction),
                         contact_damping=float(s.contact_damping_ratio),
                         tendon_stiffness=float(s.tendon_stiffness))

    @staticmethod
    def frame(state_in: PBDState, inputs: FrameInputs):
        """The kernel's frame struct (``kernels.pbd.PBDFrame``): ``inputs`` and the kinematic targets of
        ``state_in`` (the previous frame)."""
        from ...kernels.pbd import PBDFrame

        return PBDFrame(belly_stiffness=inputs.stiffness, width_scale=inputs.width_scale,
                        end_prev=state_in.endpoints, end_cur=inputs.endpoints, normal_prev=state_in.normals,
                        normal_cur=inputs.normals, cap_prev=state_in.capsules, cap_cur=inputs.capsules,
                        grid_inv_prev=state_in.grid_inverse, grid_inv_cur=inputs.grid_inverse)

    def place(self, state: PBDState, control: PBDControl, x) -> None:
        """Put ``state`` straight into this frame: particles at ``x (P, 3)`` [m] (the axes' ends at ``control``'s
        endpoints), at rest, and the kinematic inputs the next step interpolates from set to ``control``'s, so that
        step moves nothing kinematic (a cut: nothing happens in between)."""
        inputs = self.inputs(control)
        x = np.array(x, dtype=np.float64)
        starts = self.model.axis_start
        x[starts[:-1]] = inputs.endpoints[:, 0]
        x[starts[1:] - 1] = inputs.endpoints[:, 1]
        state.x[:] = x
        state.v[:] = 0.0
        state.endpoints[:] = inputs.endpoints
        state.normals[:] = inputs.normals
        state.capsules[:] = inputs.capsules
        state.grid_inverse[:] = inputs.grid_inverse

    def step(self, state_in: PBDState, state_out: PBDState, control: PBDControl, dt: float,
             quality: EvaluationQuality = RENDER) -> None:
        """Advance one frame of ``dt`` seconds from ``state_in`` into ``state_out`` (may be the same object), with
        the substeps and sweeps of ``quality`` (``core/quality.py``; default: the model's settings).

        Raises ``ValueError`` on bad input (NaN endpoints, out-of-range values, degenerate axes), naming the muscle.
        If the result has non-finite positions, ``state_out`` keeps ``state_in`` and ``ValueError`` is raised.

        Three kernel launches when there is no skin field: the frame's profile scalars from the axis lengths
        (``kernels/profile.frame_scalars``), the substeps (``kernels/pbd.pbd_substeps``), the axis geometry and
        widths after the frame (``kernels/axis.axis_update``), all writing ``state_out.muscles``.
        """
        self._advance(state_in, state_out, control, dt, quality, 1)

    def hold(self, state_in: PBDState, state_out: PBDState, control: PBDControl, dt: float, frames: int,
             quality: EvaluationQuality = RENDER) -> None:
        """Advance ``frames`` frames of ``dt`` seconds with the same ``control``: bit for bit ``frames`` calls of
        :meth:`step` (the kinematic inputs reach ``control``'s in the first frame and hold there), without the
        per-frame work in Python: the inputs are checked once, each frame is two kernel launches (profile scalars,
        substeps) and the axis geometry and widths are rebuilt once, after the last frame. Errors as :meth:`step`;
        on an error ``state_out`` keeps ``state_in`` (no frame is applied)."""
        frames = int(frames)
        if frames < 1:
            raise ValueError(f"frames to hold must be at least 1, got {frames}.")
        self._advance(state_in, state_out, control, dt, quality, frames)

    def _advance(self, state_in: PBDState, state_out: PBDState, control: PBDControl, dt: float,
                 quality: EvaluationQuality, frames: int) -> None:
        """:meth:`step` (``frames`` 1) or :meth:`hold`: the inputs checked once, two kernel launches per frame, the
        axis geometry once after the last frame."""
        from ...kernels.pbd import keep_inside, pbd_substeps
        from ...kernels.profile import frame_scalars

        dt = validation.positive(dt, "frame duration")
        model, s = self.model, self.model.settings
        inputs = self.inputs(control)
        eccentricity = inputs.eccentricity if inputs.eccentricity is not None else self._default["eccentricity"]
        separate = state_out is not state_in
        if separate:
            np.copyto(state_out.x, state_in.x)
            np.copyto(state_out.v, state_in.v)
        x, v = state_out.x, state_out.v
        saved_x, saved_v = (state_in.x, state_in.v) if separate else (x.copy(), v.copy())

        def restore():
            if separate:
                state_out.assign(state_in)
            else:
                x[:], v[:] = saved_x, saved_v

        b = state_out.muscles
        muscles = b.kernel_arrays()
        n_sub = quality.substeps(int(s.substeps))
        sub_dt = dt / n_sub
        params = self.params(sub_dt, quality)
        frame = self.frame(state_in, inputs)
        scratch = self.scratch
        chunks = [(0, n_sub)] if control.skin_field is None or not s.skin_every_substep \
            else [(k, k + 1) for k in range(n_sub)]
        for f in range(frames):
            if f == 1:  # from the second frame on, the kinematic inputs hold where the first frame took them
                frame = frame._replace(end_prev=inputs.endpoints, normal_prev=inputs.normals,
                                       cap_prev=inputs.capsules, grid_inv_prev=inputs.grid_inverse)
            # this frame's profile scalars (activation, eccentricity); the kernel rescales widths per substep
            frame_scalars(muscles, x, 1e-12, inputs.activation, eccentricity, inputs.width_scale, b.volume,
                          profile_tables(), b.length)
            for k0, k1 in chunks:
                pbd_substeps(k0, k1, params, model.arrays, frame, x, v, muscles, scratch)
                if scratch.status.any():
                    bad = int(np.flatnonzero(scratch.status)[0])
                    restore()
                    raise AxisCollapsed(f"muscle {model.names[bad]}: its axis collapsed to zero length during the "
                                        f"simulation; check its origin and insertion.")
                if control.skin_field is not None:
                    values, grads = control.skin_field(x)
                    keep_inside(x, v, model.skin_inv_mass, np.ascontiguousarray(values, dtype=np.float64),
                                np.ascontiguousarray(grads, dtype=np.float64), float(control.skin_iso),
                                s.skin_max_step)
            # the kernel counts non-finite coordinates after the last substep; only the skin field can add more
            self.last_bad_particles = int(scratch.bad_count.sum())
            if self.last_bad_particles or (control.skin_field is not None and not np.all(np.isfinite(x))):
                restore()
                raise ValueError("the muscle simulation diverged (non-finite positions); the frame was not "
                                 "applied.")
        state_out.endpoints[:] = inputs.endpoints
        state_out.normals[:] = inputs.normals
        state_out.capsules[:] = inputs.capsules
        state_out.grid_inverse[:] = inputs.grid_inverse
        # paper §6: after the solve, control normals and widths follow the new axes
        b.update_axes(x, inputs.normals, inputs.width_scale)


class AxisCollapsed(ValueError):
    """A muscle's axis shrank to nothing within a frame: its ends, moving linearly from the last frame's places to
    this frame's within the substeps, passed through the same point (a pose turning a muscle half a turn in one
    frame). ``MuscledCharacter`` then places the muscles straight into the new pose (``PBDSolver.place``)."""


def kinetic_energy(model: PBDModel, state: PBDState) -> float:
    """``sum 1/2 m v^2`` of the inner particles [J]."""
    return float(0.5 * np.sum(model.mass * np.einsum("ij,ij->i", state.v, state.v)))


def frame_array(value, shape, name, default) -> np.ndarray:
    """A control's kinematic array ``value`` as float64 of ``shape``, checked (``ValueError`` naming ``name`` for
    another shape or a NaN), or ``default`` where it is None; the axis and rod solvers read their frames with it."""
    if value is None:
        return np.ascontiguousarray(default, dtype=np.float64).reshape(shape)
    arr = np.ascontiguousarray(value, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contain NaN or infinite values.")
    return arr
