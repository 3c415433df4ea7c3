"""VIPER rod dynamics for all muscles of a character (``kernels/rod.py``), shaped like the axis solver
(``core/pbd/solver.py``): a frozen :class:`core.rod.model.RodModel`, a :class:`core.rod.state.RodState` and the
axis solver's :class:`core.pbd.control.PBDControl` (endpoints, normals, capsules, activation, stiffness).
:meth:`RodSolver.step` never writes its input state. Units: metres, seconds, kilograms.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import validation
from ..pbd.control import DEFAULT_ACTIVATION, DEFAULT_STIFFNESS, PBDControl
from ..pbd.solver import frame_array
from .model import RodModel, jiggle_frequency
from .state import RodState


MIN_SHORTENING = 0.5
"""The belly's rest lengths shorten to no less than this fraction when its ends come closer
(:meth:`RodSolver.shortening`)."""


class RodChains(NamedTuple):
    """The muscle chains (a character's axis layout, ``O`` muscles, ``Q`` particles) the rods collide with in one
    frame: ``start (O+1,)`` int64 CSR of each muscle's particles, ``prev``, ``cur (Q, 3)`` [m] their positions at
    the frame's start and end (the axis muscles already stepped), ``radius (Q,)`` [m] their collision radii. The
    rods' own rows are not read (a rod sees another rod's live state)."""

    start: np.ndarray
    prev: np.ndarray
    cur: np.ndarray
    radius: np.ndarray


class RodSolver:
    """Advances a :class:`RodState` of ``model`` by one frame (:meth:`step`). Holds the scratch arrays."""

    def __init__(self, model: RodModel):
        from ...kernels.rod import RodScratch  # numba: loaded on first use

        self.model = model
        P, F, M = model.vertex_count, model.frame_count, model.muscle_count
        self.scratch = RodScratch(x_prev=np.zeros((P, 3)), s_prev=np.zeros(P), q_prev=np.zeros((F, 4)),
                                  lam_stretch=np.zeros((P, 3)), lam_bend=np.zeros((F, 3)), lam_volume=np.zeros(P),
                                  lam_smooth=np.zeros(P), bad_count=np.zeros(M, dtype=np.int64))
        starts = model.axis_start
        self._rest_ends = np.ascontiguousarray(np.stack([model.rest_points[starts[:-1]],
                                                         model.rest_points[starts[1:] - 1]], 1))
        self._gravity = np.ascontiguousarray(model.settings.gravity, dtype=np.float64)
        self._rest_chord = np.linalg.norm(self._rest_ends[:, 1] - self._rest_ends[:, 0], axis=1)
        self._no_chains = RodChains(np.zeros(len(model.chain_rod) + 1, dtype=np.int64), np.zeros((0, 3)),
                                    np.zeros((0, 3)), np.zeros(0))  # the axis muscles' chains empty
        seg = np.where(model.belly, model.rest_length, 0.0)
        self._belly_length = np.array([seg[a:b - 1].sum() for a, b in zip(starts[:-1], starts[1:])])

    def shortening(self, activation, chord) -> np.ndarray:
        """``(M,)`` the factor on the belly segments' rest lengths this frame: ``1 - contraction activation``
        (VIPER §8.2) or, with ``RodSettings.take_up_slack`` and where the ends ``chord (M,)`` [m] apart came closer
        than at rest, the factor that lets the belly take up that slack (``1 - (1 - chord / chord0) L / L_belly``,
        at least ``MIN_SHORTENING``), whichever is smaller: a muscle whose ends approach shortens and thickens
        instead of buckling out of the limb as a beam would."""
        m = self.model
        out = 1.0 - m.settings.contraction * activation
        if m.settings.take_up_slack:
            slack = np.maximum(0.0, 1.0 - chord / self._rest_chord)
            with np.errstate(divide="ignore", invalid="ignore"):
                passive = np.where(self._belly_length > 0.0,
                                   1.0 - slack * m.rest_span / np.maximum(self._belly_length, 1e-300), 1.0)
            out = np.minimum(out, np.maximum(passive, MIN_SHORTENING))
        return np.ascontiguousarray(out)

    def _per_muscle(self, value, name, default, lo, hi) -> np.ndarray:
        M = self.model.muscle_count
        if value is None:
            return np.full(M, default)
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
        if arr.size == 1:
            arr = np.full(M, float(arr[0]))
        if arr.shape != (M,):
            raise ValueError(f"{name} needs one value per muscle ({M}), got {arr.size}.")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        if arr.min() < lo or arr.max() > hi:
            raise ValueError(f"{name} must be from {lo} to {hi}.")
        return np.ascontiguousarray(arr)

    def params(self, sub_dt: float, n_sub: int):
        """The kernel's scalar settings (``kernels.rod.RodParams``) for ``n_sub`` substeps of ``sub_dt`` [s]."""
        from ...kernels.rod import RodParams

        s = self.model.settings
        return RodParams(n_sub=int(n_sub), dt=float(sub_dt), damping_ratio=float(s.damping_ratio),
                         iterations=int(s.iterations), gravity=self._gravity, friction=float(s.friction),
                         contraction=float(s.contraction), volume_compliance=float(s.volume_compliance),
                         smoothing=float(s.smoothing), touch_squeeze=float(s.touch_squeeze),
                         contact_friction=float(s.contact_friction),
                         contact_damping=float(s.contact_damping_ratio))

    def frame(self, state_in: RodState, control: PBDControl, chains: RodChains | None = None):
        """The kernel's frame struct (``kernels.rod.RodFrame``) from ``control`` (checked, ``ValueError`` naming the
        input), the previous frame's kinematic targets in ``state_in`` and the muscle chains the rods collide with
        (``chains``; None: the rods collide with each other only)."""
        from ...kernels.rod import RodFrame

        m = self.model
        M = m.muscle_count
        activation = self._per_muscle(control.activation, "activation", DEFAULT_ACTIVATION, 0.0, 1.0)
        stiffness = self._per_muscle(control.stiffness, "stiffness", DEFAULT_STIFFNESS, 0.0, 1.0)
        ends = frame_array(control.endpoints, (M, 2, 3), "endpoints", self._rest_ends)
        chord = ends[:, 1] - ends[:, 0]
        span2 = np.einsum("ij,ij->i", chord, chord)
        if span2.min() <= 1e-18:
            bad = int(np.flatnonzero(span2 <= 1e-18)[0])
            raise ValueError(f"muscle {m.names[bad]}: origin and insertion are at the same place in this frame; "
                             f"check the bones it is attached to.")
        normals = frame_array(control.normals, (M, 2, 3), "endpoint normals", m.rest_normals)
        caps = frame_array(control.capsules, (m.capsule_count, 2, 3), "bone capsules", m.rest_capsules)
        ei, ea = m.stiffnesses(stiffness)
        chains = chains or self._no_chains
        if chains is not self._no_chains:
            O = len(m.chain_rod)
            start = np.asarray(chains.start)
            if start.shape != (O + 1,) or chains.prev.shape != (int(start[-1]), 3) or \
                    chains.cur.shape != chains.prev.shape or chains.radius.shape != (int(start[-1]),):
                raise ValueError(f"the muscle chains need {O} muscles' particles, positions and radii in one "
                                 f"layout.")
        return RodFrame(bend_stiffness=ei, stretch_stiffness=ea, shortening=self.shortening(activation, np.sqrt(span2)),
                        frequency=np.ascontiguousarray(jiggle_frequency(stiffness)),
                        end_prev=state_in.endpoints, end_cur=ends, normal_prev=state_in.normals,
                        normal_cur=normals, cap_prev=state_in.capsules, cap_cur=caps, stiffness=stiffness,
                        chain_start=chains.start, chain_prev=chains.prev, chain_cur=chains.cur,
                        chain_radius=chains.radius)

    def step(self, state_in: RodState, state_out: RodState, control: PBDControl, dt: float,
             substeps: int | None = None, chains: RodChains | None = None) -> None:
        """Advance one frame of ``dt`` seconds from ``state_in`` into ``state_out`` (may be the same object) with
        ``substeps`` (default: ``RodSettings.substeps_for(dt)``); ``chains``: the axis muscles the rods collide with
        this frame (:class:`RodChains`; None: the rods collide with each other only). ``ValueError`` on bad input; if
        the result is not finite, ``state_out`` keeps ``state_in`` and ``ValueError`` is raised."""
        from ...kernels.rod import RodStateArrays, rod_substeps

        dt = validation.positive(dt, "frame duration")
        n_sub = int(substeps or self.model.settings.substeps_for(dt))
        frame = self.frame(state_in, control, chains)
        saved = state_in if state_out is not state_in else state_in.copy()
        if state_out is not state_in:
            state_out.assign(state_in)
        o = state_out
        rod_substeps(0, n_sub, self.params(dt / n_sub, n_sub), self.model.arrays, frame,
                     RodStateArrays(o.x, o.v, o.s, o.sv, o.q, o.qd), self.scratch)
        if self.scratch.bad_count.any():
            state_out.assign(saved)
            raise ValueError("the rod simulation diverged (non-finite positions or scales); the frame was not "
                             "applied.")
        o.endpoints[:] = frame.end_cur
        o.normals[:] = frame.normal_cur
        o.capsules[:] = frame.cap_cur
