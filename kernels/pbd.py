"""Numba kernels: Position Based Dynamics of all muscle axes of a character (paper §6, thesis ch. 5).

One call runs substeps ``k0 .. k1-1`` of a frame split into ``n_sub`` substeps of ``dt`` seconds. Each substep:

1. for muscles with something to collide with, the axis length gives the width ``w`` (volume law) and so the
   particle radii ``D_i = w Phi_a(s_i)``; muscles in a contact set also snapshot their axis and rebuild its
   geometry (``kernels/axis.py``): the field other muscles collide against. Everything a muscle reads of another
   comes from this snapshot, so the result does not depend on thread scheduling (bit-identical runs).
2. for each muscle, in Gauss-Seidel order (paper §6.1):
   - kinematic endpoints move to their targets, interpolated within the frame;
   - inner particles: damping (PBD mode, below), ``v <- v + g dt``, ``p <- p + v dt`` (thesis §5.2.1);
   - distance constraints ``C = |p_k p_{k+1}| - d0`` along the axis (tendons: first and last 10 % of the rest
     length, ``d0`` = rest length, stiffness ``k_t``; belly: ``d0`` = 2 % of the rest length, stiffness ``k`` of
     the muscle): PBD mode, ``iterations`` Gauss-Seidel sweeps; XPBD mode, the elastic ones in one implicit spring
     step (:func:`_spring_solve`), then sweeps of the rigid ones (``k = 1``); after the last sweep, collisions
     ``C = f(p) - D_i >= 0`` against bone capsules, bone distance grids and the other muscles of its contact set
     except those of its overlap group (``f_M`` of the snapshot; each side takes half; skipped without evaluating
     the field when box and chord bounds put the particle farther than ``reach + D_i`` from their axis), each
     contact followed by friction: PBD mode, ``dp <- dp - eta dp_T`` (thesis §5.3.3, on the substep
     displacement); XPBD mode, Coulomb's law and a viscous drag on the slide relative to the surface
     (``kernels/contact.py``, shared with the rod solver);
   - ``v <- (p - p_prev) / dt``.
   Muscles read nothing live of each other within a substep (only the snapshot), so a parallel task integrates
   all its muscles, then runs their distance sweeps interleaved (``_distance_sweeps``: independent Gauss-Seidel
   chains in flight together, each particle corrected in the same order as muscle after muscle, sweep after
   sweep), then their collisions and velocities.

PBD mode (paper): a constraint moves its particles by ``k C / (w_i + w_j)`` per sweep; damping ``v <- mu v`` per
substep. Its stiffness depends on the particle count, the substeps and the sweeps (paper §8.6).

XPBD mode (Macklin et al. 2016, default): per-constraint ``lambda``, ``alpha~ = alpha / dt^2``,
``dlambda = (-C - alpha~ lambda) / (w_i + w_j + alpha~)``. The artist's ``k`` is a natural frequency: the belly's
first mode swings at ``f(k) = F_HALF (k / (1 - k))^F_EXPONENT`` (``kernels/contact.py`` ``stiffness_frequency``:
2 Hz at 0.1, 10 Hz at 0.5, 19 Hz at 0.7; 0 off, 1 rigid). The belly is a uniform spring chain of stiffness ``S``
(segment ``k``: ``S / l_k``, its length at build), so its first mode is ``omega^2 = S lambda_1`` with ``lambda_1``
the model's ``mode_unit`` (``core/pbd/model.py``, ``first_mode_unit``: masses and segment lengths of that axis);
``S = omega(k)^2 / lambda_1`` and ``alpha_k = l_k lambda_1 / omega(k)^2``. Tendons take the same form with
``f(k_t)``; sideways they are held by the belly's tension like the belly itself, which ``lambda_1`` counts.
Neither the particle count nor the substeps nor the frame rate enter the mapping. The springs are taken
implicitly, the whole axis at once (:func:`_spring_solve`), so the mapping holds for 3 or 60 particles.
Damping is Rayleigh's, proportional to the stiffness (:func:`stiffness_damping`): the first mode decays at ``zeta
omega`` (``zeta`` the damping ratio), higher modes faster, and a motion the bones carry not at all: a loose muscle
rings on after the bones stop, a tense one settles within a few of its short periods.

Structs (``P`` particles, ``M`` muscles, ``B`` capsules, ``G`` grids), positions [m], velocities [m/s]:
    x, v: (P, 3)          state, updated in place
    PBDParams             scalar settings of the call (substep length, iterations, damping, ...)
    PBDModelArrays        static arrays of the model (masses, rest lengths, collision CSR, bone grids)
    PBDFrame              the frame's inputs: per-muscle stiffness and width scale, kinematic targets of the
                          previous and current frame (endpoints, normals, capsules, grid inverses)
    MuscleArrays          the muscles' field arrays (``kernels/fusiform.py``): the substep snapshot of grouped axes
    PBDScratch            per-call scratch and outputs (x_prev, lambda, lengths, status, non-finite counts)
    PBDWork               the scratch a call allocates for itself (spring solve, gains, snapshot velocities,
                          each substep's capsule ends and grid transforms)

PBD and XPBD constraint factors that do not change within a frame (``k / (w_i + w_j)``, ``1 / (w_i + w_j +
alpha~)``) are computed once per call (``_constraint_gains``), so a constraint costs one square root and one
division.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .axis import _one_axis, arc_length, chord_deviation, chord_distance
from .contact import contact, contact_keep, particle_radius, push, stiffness_frequency
from .fusiform import _box_distance2, _field_one, set_width, volume_width
from .grid import sample_trilinear
from .constants import JIT_FAST, JIT_POINT, MIN_DISTANCE, SCALAR_REACH, STATUS_OK, STATUS_ZERO_LENGTH


class PBDParams(NamedTuple):
    """Scalar settings of one :func:`pbd_substeps` call (``core/pbd/settings.py`` ``PBDSettings``)."""

    n_sub: int                 # substeps of the frame
    dt: float                  # [s] substep length
    xpbd: bool                 # XPBD (True) or plain PBD
    iterations: int            # Gauss-Seidel sweeps per substep
    damping: float             # PBD: mu, velocity factor per substep
    damping_ratio: float       # XPBD: zeta, fraction of critical damping of the first mode
    gravity: np.ndarray        # (3,) float64 [m/s^2]
    friction: float            # PBD: eta, tangential displacement removed at a contact
    contact_friction: float    # XPBD: mu, Coulomb coefficient of a contact (slide stopped up to mu x the push)
    contact_damping: float     # XPBD: zeta_c, damping of the slide over a contact, a fraction of critical
    tendon_stiffness: float    # k_t in [0, 1]


class PBDModelArrays(NamedTuple):
    """Static arrays of the PBD model (``core/pbd/model.py`` ``PBDModel.arrays``)."""

    axis_start: np.ndarray      # (M+1,) int64 CSR: particles of each muscle
    inv_mass: np.ndarray        # (P,) float64 [1/kg], 0 for kinematic endpoints
    mode_unit: np.ndarray       # (M,) float64 [1/(kg m)] lambda_1 of the XPBD stiffness mapping
    spring_length: np.ndarray   # (P,) float64 [m] length of constraint (k, k+1) at build
    particle_s: np.ndarray      # (P,) float64 rest arc-length parameter of each particle
    rest_length: np.ndarray     # (P,) float64 [m] rest length of constraint (k, k+1); last row of a muscle unused
    tendon: np.ndarray          # (P,) bool constraint (k, k+1) is a tendon
    muscle_group: np.ndarray    # (M,) int64 contact set of each muscle: muscles that may push it (-1: none)
    muscle_overlap: np.ndarray  # (M,) int64 overlap group: muscles of one never push each other (-1: none)
    group_start: np.ndarray     # (Gm+1,) int64 CSR: muscles of each contact set
    group_members: np.ndarray   # (K,) int64
    island_start: np.ndarray    # (I+1,) int64 CSR: the parallel tasks (each set, each muscle in no set)
    island_members: np.ndarray  # (M,) int64
    cap_start: np.ndarray       # (M+1,) int64 CSR: capsules each muscle collides with
    cap_index: np.ndarray       # (C,) int64
    cap_radius: np.ndarray      # (C,) float64 [m] radius of each of those capsules, as that muscle sees it
    grid_start: np.ndarray      # (M+1,) int64 CSR: bone grids each muscle collides with
    grid_index: np.ndarray      # (Cg,) int64
    grid_values: np.ndarray     # (sum cells,) float64 [m] signed distances, grids one after the other
    grid_offset: np.ndarray     # (G+1,) int64 start of each grid in grid_values
    grid_dims: np.ndarray       # (G, 3) int64 nodes per axis
    grid_origin: np.ndarray     # (G, 3) float64 [m]
    grid_spacing: np.ndarray    # (G, 3) float64 [m]
    volume: np.ndarray          # (M,) float64 [m^3]


class PBDFrame(NamedTuple):
    """One frame's inputs: animated values and kinematic targets at the previous and current frame."""

    belly_stiffness: np.ndarray  # (M,) float64 artist stiffness k in [0, 1]
    width_scale: np.ndarray      # (M,) float64
    end_prev: np.ndarray         # (M, 2, 3) float64 [m] endpoint targets
    end_cur: np.ndarray          # (M, 2, 3) float64 [m]
    normal_prev: np.ndarray      # (M, 2, 3) float64 endpoint normals
    normal_cur: np.ndarray       # (M, 2, 3) float64
    cap_prev: np.ndarray         # (B, 2, 3) float64 [m] capsule segment ends
    cap_cur: np.ndarray          # (B, 2, 3) float64 [m]
    grid_inv_prev: np.ndarray    # (G, 3, 4) float64 world -> grid (bone rest) rigid transforms
    grid_inv_cur: np.ndarray     # (G, 3, 4) float64


class PBDScratch(NamedTuple):
    """Scratch and outputs of :func:`pbd_substeps`."""

    x_prev: np.ndarray     # (P, 3) float64 [m] positions at the start of the substep
    lam: np.ndarray        # (P,) float64 XPBD lambda of constraint (k, k+1)
    length: np.ndarray     # (M,) float64 [m] axis length at the last snapshot
    chord_dev: np.ndarray  # (M,) float64 [m] largest distance of a grouped axis from its chord
    status: np.ndarray     # (M,) int64 axis geometry status (non-zero stops that block)
    bad_count: np.ndarray  # (M,) int64 non-finite coordinates after the frame's last substep




class PBDWork(NamedTuple):
    """Scratch of one :func:`pbd_substeps` call, allocated by it (``P`` particles, ``M`` muscles)."""

    end_normals: np.ndarray  # (M, 2, 3) float64 endpoint normals at a substep's start (grouped muscles)
    defined: np.ndarray      # (P,) bool whether a control normal is defined (kernels/axis.py)
    gain: np.ndarray         # (P,) float64 constraint gains of the frame (_constraint_gains)
    alpha: np.ndarray        # (P,) float64 XPBD alpha~ of the rigid constraints
    compliance: np.ndarray   # (P,) float64 [m/N] compliance of the constraints in the spring solve
    diag: np.ndarray         # (P,) float64 the spring solve's tridiagonal system: diagonal,
    upper: np.ndarray        # (P,) float64 upper and
    lower: np.ndarray        # (P,) float64 lower band,
    rhs: np.ndarray          # (P,) float64 right-hand side
    pred: np.ndarray         # (P, 3) float64 [m] predicted positions (spring solve)
    out: np.ndarray          # (P, 3) float64 [m] the spring solve's iterate
    snap_v: np.ndarray       # (P, 3) float64 [m/s] velocities of the grouped axes at the substep's start
    cap_ends: np.ndarray     # (C, 4, 3) float64 [m] capsule rows' ends within the substep and their displacements
    grid_tf: np.ndarray      # (Cg, 2, 3, 4) float64 grid rows' world -> grid transforms at the substep's end, start


@njit(**JIT_FAST)
def _compliance(k, length, mode_unit):
    """XPBD compliance ``alpha = l lambda_1 / omega(k)^2`` [m/N] of a constraint of length ``l`` at build; infinite
    (no spring) where ``omega^2`` is 0 in floating point (``k`` under about 1e-200)."""
    f = stiffness_frequency(k)
    if f == math.inf:
        return 0.0
    omega = 2.0 * math.pi * f
    omega2 = omega * omega
    if omega2 == 0.0:
        return math.inf
    return length * mode_unit / omega2


@njit(**JIT_POINT)
def _constraint_gains(m, model, frame, params, gain, alpha, compliance):
    """Per distance constraint ``k`` of muscle ``m``, what does not change within a frame: PBD
    ``gain = k / (w_i + w_j)``; XPBD ``alpha~ = alpha / dt^2`` (module docstring) and ``gain = 1 / (w_i + w_j +
    alpha~)``, except that a constraint that is not rigid goes to the spring solve (``compliance = alpha`` [m/N],
    ``gain = 0``, :func:`_spring_solve`). ``gain = 0``: no sweep for it (both ends kinematic, stiffness 0, or in
    the spring solve).
    ``gain, alpha, compliance (P,)``."""
    inv_mass = model.inv_mass
    mode_unit = model.mode_unit[m]
    spring_length = model.spring_length
    tendon = model.tendon
    axis_start = model.axis_start
    tendon_stiffness = params.tendon_stiffness
    xpbd = params.xpbd
    inv_dt2 = 1.0 / (params.dt * params.dt)
    kb = frame.belly_stiffness[m]
    for k in range(axis_start[m], axis_start[m + 1] - 1):
        W = inv_mass[k] + inv_mass[k + 1]
        stiff = tendon_stiffness if tendon[k] else kb
        gain[k] = 0.0
        alpha[k] = 0.0
        compliance[k] = 0.0
        if W > 0.0 and stiff > 0.0:
            if xpbd:
                a_k = _compliance(stiff, spring_length[k], mode_unit)
                if a_k == math.inf:  # too loose to hold anything: off
                    continue
                if a_k > 0.0:
                    compliance[k] = a_k
                    continue
                alpha[k] = a_k * inv_dt2
                gain[k] = 1.0 / (W + alpha[k])
            else:
                gain[k] = stiff / W


@njit(**JIT_FAST)
def stiffness_damping(k, damping_ratio, dt):
    """XPBD: Rayleigh stiffness-proportional damping ``beta`` [s] of the spring step: the damping force is
    ``-beta K v``, so mode ``j`` decays at ``beta omega_j^2 / 2`` per second; ``beta`` makes the first mode's
    (``omega = 2 pi f(k)``) decay ``zeta omega``, of which the backward-Euler step already takes ``r = ln(1 +
    (omega dt)^2) / (2 dt)`` (so the decay does not depend on the substep length; 0 where the step alone damps
    more). Higher modes are damped more, in proportion to their frequency; a motion that the bones carry is not
    damped at all (``K v = 0``)."""
    f = stiffness_frequency(k)
    if f == 0.0 or f == math.inf:
        return 0.0
    omega = 2.0 * math.pi * f
    omega2 = omega * omega
    if omega2 == 0.0:  # no spring (``_compliance``): nothing to damp
        return 0.0
    x = omega * dt
    c = 2.0 * (damping_ratio * omega - math.log1p(x * x) / (2.0 * dt))
    return max(c, 0.0) / omega2


@njit(**JIT_POINT)
def _integrate(m, x, v, x_prev, lam, model, frame, params, f1):
    """Start of a substep for muscle ``m``: ``x_prev <- x``; inner particles ``v <- mu v`` (PBD; XPBD damps in the
    spring step), ``v <- v + g dt``, ``p <- p + v dt``; kinematic endpoints to their targets at ``f1`` of the
    frame; XPBD ``lambda <- 0``."""
    inv_mass = model.inv_mass
    axis_start = model.axis_start
    end_prev = frame.end_prev
    end_cur = frame.end_cur
    dt = params.dt
    gravity = params.gravity
    xpbd = params.xpbd
    damp = 1.0 if xpbd else params.damping
    a = axis_start[m]
    b = axis_start[m + 1]
    for k in range(a, b):
        for c in range(3):
            x_prev[k, c] = x[k, c]
        if xpbd:
            lam[k] = 0.0
        if k == a or k == b - 1 or inv_mass[k] == 0.0:
            continue
        for c in range(3):
            v[k, c] = damp * v[k, c] + gravity[c] * dt
            x[k, c] += v[k, c] * dt
    for c in range(3):
        x[a, c] = end_prev[m, 0, c] + f1 * (end_cur[m, 0, c] - end_prev[m, 0, c])
        x[b - 1, c] = end_prev[m, 1, c] + f1 * (end_cur[m, 1, c] - end_prev[m, 1, c])


SWEEP_LAG = 2
"""Constraints by which Gauss-Seidel sweep ``it + 1`` of a muscle trails sweep ``it`` in
:func:`_distance_sweeps`: constraint ``c`` of sweep ``it + 1`` needs particle ``c + 1`` done by sweep ``it``, which
its constraint ``c + 1`` last moves."""


@njit(**JIT_POINT)
def _distance_sweeps(j0, j1, members, axis_start, x, lam, inv_mass, rest_length, gain, alpha, xpbd, iterations):
    """``iterations`` Gauss-Seidel sweeps of the distance constraints ``C = |p_k p_{k+1}| - d0`` of muscles
    ``members[j0:j1]`` (module docstring), interleaved.

    Each sweep along one axis is a chain of dependent square roots and divisions; the muscles of a block and the
    sweeps of one muscle (sweep ``it`` trailing sweep ``it - 1`` by ``SWEEP_LAG`` constraints) are independent
    chains, so one pass over them keeps several in flight. Every particle sees exactly the corrections of
    sequential sweeps, in the same order: the results are the same bits as solving muscle after muscle, sweep
    after sweep. ``gain, alpha (P,)`` from :func:`_constraint_gains`.
    """
    longest = 0
    for j in range(j0, j1):
        m = members[j]
        longest = max(longest, axis_start[m + 1] - axis_start[m] - 1)
    for t in range(longest + SWEEP_LAG * (iterations - 1)):
        for j in range(j0, j1):
            m = members[j]
            a = axis_start[m]
            n = axis_start[m + 1] - 1 - a
            for it in range(iterations):
                c = t - SWEEP_LAG * it
                if c < 0:
                    break
                if c >= n:
                    continue
                k = a + c
                g = gain[k]
                if g == 0.0:
                    continue
                nx = x[k + 1, 0] - x[k, 0]
                ny = x[k + 1, 1] - x[k, 1]
                nz = x[k + 1, 2] - x[k, 2]
                d = math.sqrt(nx * nx + ny * ny + nz * nz)
                if d < MIN_DISTANCE:
                    continue
                if xpbd:
                    corr = (d - rest_length[k] + alpha[k] * lam[k]) * g
                    lam[k] -= corr
                else:
                    corr = (d - rest_length[k]) * g
                # p_k += w_i corr n / d, p_{k+1} -= w_j corr n / d
                s = corr / d
                si = inv_mass[k] * s
                sj = inv_mass[k + 1] * s
                x[k, 0] += si * nx
                x[k, 1] += si * ny
                x[k, 2] += si * nz
                x[k + 1, 0] -= sj * nx
                x[k + 1, 1] -= sj * ny
                x[k + 1, 2] -= sj * nz


@njit(**JIT_POINT)
def _spring_solve(m, x, x_prev, model, alpha, beta, dt, iterations, work):
    """XPBD: the elastic axis of muscle ``m`` (its distance constraints of compliance ``alpha > 0``) taken one
    backward-Euler step, in place on the predicted positions ``x`` (module docstring).

    A constraint's force ``-(d - d0) n / alpha`` splits into ``-(p_j - p_i) / alpha``, linear in the positions,
    and ``d0 n / alpha``. Local/global iterations (Projective Dynamics, Bouaziz et al. 2014) keep the first in the
    matrix and take ``n`` from the last iterate: each solves ``(M / dt^2 + K) x = M x_pred / dt^2 + sum d0 n /
    alpha``, one tridiagonal system per coordinate with the same matrix (``K`` the chain's Laplacian with weights
    ``1 / alpha``), by the Thomas algorithm. Rayleigh damping ``-beta K v`` (:func:`stiffness_damping`), with
    ``v = (x - x_prev) / dt``, scales the matrix's springs by ``1 + beta / dt`` and adds ``beta / dt K x_prev``.
    Each iteration lowers the step's energy, so it is stable for any stiffness, and it reaches the whole axis at
    once, so a stiffness means the same for 3 or 60 particles. Belly
    constraints (``d0`` = 2 % of their length) are nearly linear and converge in one iteration. Kinematic
    particles keep their positions; rigid constraints are not in it (their sweeps follow).
    ``model``: :class:`PBDModelArrays`; ``alpha (P,)``: compliances [m/N] of the constraints in it, 0 for the others
    (``_constraint_gains``); ``x_prev (P, 3)``: positions at the substep's start; ``work``: :class:`PBDWork` (its
    ``pred``, ``out``, ``diag``, ``upper``, ``lower``, ``rhs``)."""
    axis_start = model.axis_start
    inv_mass = model.inv_mass
    rest_length = model.rest_length
    pred = work.pred
    out = work.out
    diag = work.diag
    upper = work.upper
    lower = work.lower
    rhs = work.rhs
    a = axis_start[m]
    b = axis_start[m + 1]
    inv_dt2 = 1.0 / (dt * dt)
    damped = 1.0 + beta / dt
    any_spring = False
    for e in range(a, b - 1):
        if alpha[e] > 0.0:
            any_spring = True
    if not any_spring:
        return
    for k in range(a, b):
        for c in range(3):
            pred[k, c] = x[k, c]
    for _ in range(iterations):
        for c in range(3):
            for k in range(a, b):
                diag[k] = 1.0
                upper[k] = 0.0
                lower[k] = 0.0
                rhs[k] = pred[k, c]
                if inv_mass[k] == 0.0:  # kinematic: stays where it is
                    continue
                mk = inv_dt2 / inv_mass[k]
                diag[k] = mk
                rhs[k] = mk * pred[k, c]
                for side in range(2):  # the constraint before k (side 0) and after it (side 1)
                    e = k - 1 + side
                    if e < a or e >= b - 1 or alpha[e] <= 0.0:
                        continue
                    ke = 1.0 / alpha[e]
                    diag[k] += ke * damped
                    if side == 0:
                        lower[k] = -ke * damped
                        rhs[k] += ke * (damped - 1.0) * (x_prev[k, c] - x_prev[k - 1, c])
                    else:
                        upper[k] = -ke * damped
                        rhs[k] += ke * (damped - 1.0) * (x_prev[k, c] - x_prev[k + 1, c])
                    dx = x[e + 1, 0] - x[e, 0]
                    dy = x[e + 1, 1] - x[e, 1]
                    dz = x[e + 1, 2] - x[e, 2]
                    d = math.sqrt(dx * dx + dy * dy + dz * dz)
                    if d > MIN_DISTANCE:  # the rest length's share, from the last iterate: -+ k d0 n
                        dc = (x[e + 1, c] - x[e, c]) / d
                        rhs[k] += ke * rest_length[e] * (dc if side == 0 else -dc)
            # Thomas algorithm (diagonally dominant): forward elimination, back substitution
            for k in range(a + 1, b):
                f = lower[k] / diag[k - 1]
                diag[k] -= f * upper[k - 1]
                rhs[k] -= f * rhs[k - 1]
            rhs[b - 1] /= diag[b - 1]
            for k in range(b - 2, a - 1, -1):
                rhs[k] = (rhs[k] - upper[k] * rhs[k + 1]) / diag[k]
            for k in range(a, b):
                out[k, c] = rhs[k]
        for k in range(a, b):
            if inv_mass[k] != 0.0:
                for c in range(3):
                    x[k, c] = out[k, c]


@njit(**JIT_POINT)
def _neighbour_motion(x, snap_points, snap_v, a, b, k, dt):
    """Displacement over a substep of ``dt`` [s] of the surface of the muscle with particles ``a .. b-1`` at
    particle ``k``: its snapshot particle nearest ``k`` moving at its velocity of the substep's start."""
    best = -1
    best_d2 = math.inf
    for i in range(a, b):
        dx = x[k, 0] - snap_points[i, 0]
        dy = x[k, 1] - snap_points[i, 1]
        dz = x[k, 2] - snap_points[i, 2]
        d2 = dx * dx + dy * dy + dz * dz
        if d2 < best_d2:
            best_d2 = d2
            best = i
    return snap_v[best, 0] * dt, snap_v[best, 1] * dt, snap_v[best, 2] * dt


@njit(inline="always", **JIT_POINT)
def _capsule_track(m, model, frame, f0, f1, cap_ends):
    """The capsules muscle ``m`` collides with at ``f1`` of the frame, ends interpolated within it, and their ends'
    displacements over the substep (``f0`` to ``f1``), into its rows of ``cap_ends (C, 4, 3)`` [m] (the capsule
    CSR's rows ``model.cap_start[m] ..``): end a, end b, a's displacement, b's displacement."""
    cap_start = model.cap_start
    cap_index = model.cap_index
    cap_prev = frame.cap_prev
    cap_cur = frame.cap_cur
    for ci in range(cap_start[m], cap_start[m + 1]):
        cap = cap_index[ci]
        for c in range(3):
            cap_ends[ci, 0, c] = cap_prev[cap, 0, c] + f1 * (cap_cur[cap, 0, c] - cap_prev[cap, 0, c])
            cap_ends[ci, 1, c] = cap_prev[cap, 1, c] + f1 * (cap_cur[cap, 1, c] - cap_prev[cap, 1, c])
            cap_ends[ci, 2, c] = (f1 - f0) * (cap_cur[cap, 0, c] - cap_prev[cap, 0, c])
            cap_ends[ci, 3, c] = (f1 - f0) * (cap_cur[cap, 1, c] - cap_prev[cap, 1, c])


@njit(inline="always", **JIT_POINT)
def _grid_track(m, model, frame, f0, f1, grid_tf):
    """World -> grid transforms of the bone grids muscle ``m`` collides with, interpolated within the frame (a
    linear blend of two rigid transforms a substep apart: rigid to first order, which is what a bone moves in a
    24th of a second), into its rows of ``grid_tf (Cg, 2, 3, 4)`` (the grid CSR's rows ``model.grid_start[m]
    ..``): at ``f1``, at ``f0``."""
    grid_start = model.grid_start
    grid_index = model.grid_index
    grid_inv_prev = frame.grid_inv_prev
    grid_inv_cur = frame.grid_inv_cur
    for gi in range(grid_start[m], grid_start[m + 1]):
        g = grid_index[gi]
        for r in range(3):
            for c in range(4):
                grid_tf[gi, 0, r, c] = grid_inv_prev[g, r, c] + f1 * (grid_inv_cur[g, r, c] - grid_inv_prev[g, r, c])
                grid_tf[gi, 1, r, c] = grid_inv_prev[g, r, c] + f0 * (grid_inv_cur[g, r, c] - grid_inv_prev[g, r, c])


@njit(inline="always", **JIT_POINT)
def _capsule_contacts(k, m, D, x, x_prev, model, cap_ends, params, keep):
    """Particle ``k`` of muscle ``m``, a sphere of radius ``D`` [m], against its bone capsules (``cap_ends``,
    :func:`_capsule_track`): ``f = d(p, [b0, b1]) - R_cyl`` (paper §6.3)."""
    cap_radius = model.cap_radius
    for ci in range(model.cap_start[m], model.cap_start[m + 1]):
        ax = cap_ends[ci, 0, 0]
        ay = cap_ends[ci, 0, 1]
        az = cap_ends[ci, 0, 2]
        bx = cap_ends[ci, 1, 0]
        by = cap_ends[ci, 1, 1]
        bz = cap_ends[ci, 1, 2]
        ex = bx - ax
        ey = by - ay
        ez = bz - az
        e2 = ex * ex + ey * ey + ez * ez
        t = 0.0
        if e2 > 0.0:
            t = ((x[k, 0] - ax) * ex + (x[k, 1] - ay) * ey + (x[k, 2] - az) * ez) / e2
            t = min(max(t, 0.0), 1.0)
        dx = x[k, 0] - (ax + t * ex)
        dy = x[k, 1] - (ay + t * ey)
        dz = x[k, 2] - (az + t * ez)
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
        C = d - cap_radius[ci] - D
        if C < 0.0 and d > MIN_DISTANCE:
            if params.xpbd:
                sx = cap_ends[ci, 2, 0] + t * (cap_ends[ci, 3, 0] - cap_ends[ci, 2, 0])
                sy = cap_ends[ci, 2, 1] + t * (cap_ends[ci, 3, 1] - cap_ends[ci, 2, 1])
                sz = cap_ends[ci, 2, 2] + t * (cap_ends[ci, 3, 2] - cap_ends[ci, 2, 2])
                contact(x, x_prev, k, C, (dx / d, dy / d, dz / d), 1.0, (sx, sy, sz), params.contact_friction,
                        keep)
            else:
                push(x, x_prev, k, C, (dx / d, dy / d, dz / d), 1.0, params.friction)


@njit(inline="always", **JIT_POINT)
def _grid_contacts(k, m, D, x, x_prev, model, grid_tf, params, keep):
    """Particle ``k`` of muscle ``m``, a sphere of radius ``D`` [m], against its bone distance grids, sampled in
    bone rest space through ``grid_tf`` (:func:`_grid_track`)."""
    grid_start = model.grid_start
    grid_index = model.grid_index
    grid_values = model.grid_values
    grid_offset = model.grid_offset
    grid_dims = model.grid_dims
    grid_origin = model.grid_origin
    grid_spacing = model.grid_spacing
    for gi in range(grid_start[m], grid_start[m + 1]):
        g = grid_index[gi]
        M = grid_tf[gi, 0]
        px = M[0, 0] * x[k, 0] + M[0, 1] * x[k, 1] + M[0, 2] * x[k, 2] + M[0, 3]
        py = M[1, 0] * x[k, 0] + M[1, 1] * x[k, 1] + M[1, 2] * x[k, 2] + M[1, 3]
        pz = M[2, 0] * x[k, 0] + M[2, 1] * x[k, 1] + M[2, 2] * x[k, 2] + M[2, 3]
        o = grid_offset[g]
        vals = grid_values[o:grid_offset[g + 1]].reshape((grid_dims[g, 0], grid_dims[g, 1], grid_dims[g, 2]))
        inside, f, lx, ly, lz = sample_trilinear(vals, grid_origin[g, 0], grid_origin[g, 1],
                                                 grid_origin[g, 2], grid_spacing[g, 0], grid_spacing[g, 1],
                                                 grid_spacing[g, 2], px, py, pz)
        if inside and f - D < 0.0:
            # world gradient = M^T g_local (M rigid: its inverse rotation is its transpose)
            wx = M[0, 0] * lx + M[1, 0] * ly + M[2, 0] * lz
            wy = M[0, 1] * lx + M[1, 1] * ly + M[2, 1] * lz
            wz = M[0, 2] * lx + M[1, 2] * ly + M[2, 2] * lz
            if params.xpbd:
                # the bone's displacement at the particle: x minus where the bone at the substep's start had
                # the same grid point (M0^-1 (M x), M0 rigid: R^T (q - t))
                N = grid_tf[gi, 1]
                qx = px - N[0, 3]
                qy = py - N[1, 3]
                qz = pz - N[2, 3]
                sx = x[k, 0] - (N[0, 0] * qx + N[1, 0] * qy + N[2, 0] * qz)
                sy = x[k, 1] - (N[0, 1] * qx + N[1, 1] * qy + N[2, 1] * qz)
                sz = x[k, 2] - (N[0, 2] * qx + N[1, 2] * qy + N[2, 2] * qz)
                contact(x, x_prev, k, f - D, (wx, wy, wz), 1.0, (sx, sy, sz), params.contact_friction, keep)
            else:
                push(x, x_prev, k, f - D, (wx, wy, wz), 1.0, params.friction)


@njit(inline="always", **JIT_POINT)
def _group_contacts(k, m, D, x, x_prev, snap_v, model, params, snapshot, chord_dev, keep):
    """Particle ``k`` of muscle ``m``, a sphere of radius ``D`` [m], against the other muscles of its contact set,
    not of its overlap group: ``f = f_M`` of their ``snapshot`` (paper §6.3; each side takes half), skipped without
    evaluating the field where box and chord bounds put the particle farther than ``reach + D``."""
    axis_start = model.axis_start
    group_start = model.group_start
    group_members = model.group_members
    muscle_overlap = model.muscle_overlap
    group = model.muscle_group[m]
    overlap = muscle_overlap[m]
    snap_points = snapshot.axis_points
    scal = snapshot.muscle_scalar
    bounds = snapshot.muscle_bounds
    for gi in range(group_start[group], group_start[group + 1]):
        o = group_members[gi]
        if o == m or (overlap >= 0 and muscle_overlap[o] == overlap):
            continue
        cut = scal[o, SCALAR_REACH] + D
        if _box_distance2(x[k, 0], x[k, 1], x[k, 2], bounds, o) > cut * cut:
            continue
        # lower bound: distance to the chord of o's axis minus the axis's largest distance from it
        if chord_distance(x[k, 0], x[k, 1], x[k, 2], snap_points, axis_start[o],
                          axis_start[o + 1] - 1) - chord_dev[o] > cut:
            continue
        f, gx, gy, gz = _field_one(x[k, 0], x[k, 1], x[k, 2], o, snapshot, True, cut, D)
        if f - D < 0.0:
            if params.xpbd:
                moved = _neighbour_motion(x, snap_points, snap_v, axis_start[o], axis_start[o + 1], k, params.dt)
                contact(x, x_prev, k, f - D, (gx, gy, gz), 0.5, moved, params.contact_friction, keep)
            else:
                push(x, x_prev, k, f - D, (gx, gy, gz), 0.5, params.friction)


@njit(**JIT_POINT)
def _collide(m, x, x_prev, work, model, frame, params, snapshot, f0, f1, chord_dev):
    """Collisions of the inner particles of muscle ``m``, each a sphere of radius ``D_i``, after the substep's last
    sweep (module docstring): bone capsules, bone grids, the other muscles of its group (``snapshot``, a
    :class:`MuscleArrays`) except those of its overlap group. PBD mode: friction removes ``eta`` of the
    substep's tangential displacement (``kernels/contact.py`` ``push``); XPBD: Coulomb friction and a viscous drag
    on the slide relative to the surface (``contact``), whose displacement over the substep (``f0`` to ``f1`` of
    the frame) is the capsule's or the grid's bone motion at the contact, or for another muscle its nearest
    particle's (``work.snap_v``: velocities at the substep's start, taken with the snapshot). ``work``:
    :class:`PBDWork`, whose capsule and grid rows of ``m`` it fills; it allocates nothing, so it counts no
    references (``kernels/constants.JIT_POINT``)."""
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    group = model.muscle_group[m]
    if model.cap_start[m + 1] == model.cap_start[m] and model.grid_start[m + 1] == model.grid_start[m] \
            and group < 0:
        return
    keep = contact_keep(frame.belly_stiffness[m], params.contact_damping, params.dt)
    _capsule_track(m, model, frame, f0, f1, work.cap_ends)
    _grid_track(m, model, frame, f0, f1, work.grid_tf)
    for k in range(a + 1, b - 1):
        if model.inv_mass[k] == 0.0:
            continue
        D = particle_radius(m, model.particle_s[k], snapshot.muscle_exponent, snapshot.muscle_scalar)
        _capsule_contacts(k, m, D, x, x_prev, model, work.cap_ends, params, keep)
        _grid_contacts(k, m, D, x, x_prev, model, work.grid_tf, params, keep)
        if group >= 0:
            _group_contacts(k, m, D, x, x_prev, work.snap_v, model, params, snapshot, chord_dev, keep)


@njit(**JIT_POINT)
def _finish(m, x, v, x_prev, inv_mass, dt, axis_start, check):
    """End of a substep for muscle ``m``: ``v <- (p - p_prev) / dt``; with ``check``, the count of non-finite
    coordinates."""
    a = axis_start[m]
    b = axis_start[m + 1]
    inv_dt = 1.0 / dt
    for k in range(a + 1, b - 1):
        if inv_mass[k] != 0.0:
            for c in range(3):
                v[k, c] = (x[k, c] - x_prev[k, c]) * inv_dt
    bad = 0
    if check:
        for k in range(a, b):
            for c in range(3):
                if not math.isfinite(x[k, c]):
                    bad += 1
    return bad


BLOCK_SWEEPS = 4
"""Independent constraint sweeps a parallel task keeps in flight (:func:`_distance_sweeps`): islands are blocked
so that ``muscles x iterations`` reaches about this many (with 4 iterations, one island per task)."""

BLOCK_MULTIPLE = 4
"""The block count is rounded up to a multiple of this (where there are enough islands), so that 1, 2 or 4
threads, which each take a contiguous share of the blocks, get as many islands each."""


@njit(**JIT_FAST)
def _island_blocks(island_start, iterations):
    """Consecutive islands gathered into parallel tasks, as a CSR over islands ``(n_blocks + 1,)``: about
    ``BLOCK_SWEEPS / iterations`` islands each, as evenly as possible. Islands are independent, so the blocking
    changes no result."""
    n_islands = island_start.shape[0] - 1
    per_block = max(1, BLOCK_SWEEPS // max(iterations, 1))
    n_blocks = max(1, (n_islands + per_block - 1) // per_block)
    n_blocks = min(max(n_islands, 1), ((n_blocks + BLOCK_MULTIPLE - 1) // BLOCK_MULTIPLE) * BLOCK_MULTIPLE)
    blocks = np.empty(n_blocks + 1, dtype=np.int64)
    for i in range(n_blocks + 1):
        blocks[i] = (i * n_islands) // n_blocks
    return blocks


@njit(inline="always", **JIT_FAST)
def _snapshot_axis(m, x, v, f0, model, frame, muscles, scratch, work):
    """Start of a substep for muscle ``m``, which has something to collide with: its axis length gives its width
    (volume law) and so its particles' radii; a muscle of a contact set also snapshots its axis and velocities
    and rebuilds the axis geometry in ``muscles`` (:class:`MuscleArrays`), what the others collide against.
    Returns the axis status (``STATUS_OK``, or why the geometry could not be built: the width is then kept)."""
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    snap_points = muscles.axis_points
    if model.muscle_group[m] >= 0:
        for kk in range(a, b):
            for c in range(3):
                snap_points[kk, c] = x[kk, c]
                work.snap_v[kk, c] = v[kk, c]
        for e in range(2):
            for c in range(3):
                work.end_normals[m, e, c] = frame.normal_prev[m, e, c] + f0 * (frame.normal_cur[m, e, c]
                                                                              - frame.normal_prev[m, e, c])
        ln, st = _one_axis(a, b, muscles, work.end_normals, m, work.defined)
        scratch.chord_dev[m] = chord_deviation(snap_points, a, b - 1)
    else:
        ln = arc_length(x, a, b)
        st = STATUS_OK if ln > MIN_DISTANCE else STATUS_ZERO_LENGTH
    scratch.length[m] = ln
    scratch.status[m] = st
    if st == STATUS_OK:
        set_width(muscles.muscle_scalar, m, volume_width(model.volume[m], ln, frame.width_scale[m]))  # paper eq. 3
    return st


@njit(**JIT_POINT)
def _substep(j0, j1, sub, x, v, model, frame, params, muscles, scratch, work):
    """Substep ``sub`` of the island members ``j0 .. j1-1`` (module docstring): the snapshot, the prediction, the
    spring solve (XPBD), the distance sweeps, the collisions and the velocities. Returns False, having done only
    the snapshot, when a grouped muscle's axis geometry failed (``scratch.status``). Called from the parallel loop of
    :func:`pbd_substeps`, not inlined into it (docs/design-notes.md#compile-time)."""
    f0 = sub / params.n_sub
    f1 = (sub + 1) / params.n_sub
    axis_start = model.axis_start
    members = model.island_members
    ok = True
    for j in range(j0, j1):
        m = members[j]
        has_colliders = (model.cap_start[m + 1] > model.cap_start[m] or model.grid_start[m + 1] > model.grid_start[m]
                         or model.muscle_group[m] >= 0)
        if not has_colliders:
            continue  # its width is only needed for collisions: the solver updates it after the frame
        if _snapshot_axis(m, x, v, f0, model, frame, muscles, scratch, work) != STATUS_OK:
            ok = False
    if not ok:
        return False
    for j in range(j0, j1):
        _integrate(members[j], x, v, scratch.x_prev, scratch.lam, model, frame, params, f1)
    if params.xpbd:
        for j in range(j0, j1):
            m = members[j]
            _spring_solve(m, x, scratch.x_prev, model, work.compliance,
                          stiffness_damping(frame.belly_stiffness[m], params.damping_ratio, params.dt), params.dt,
                          params.iterations, work)
    _distance_sweeps(j0, j1, members, axis_start, x, scratch.lam, model.inv_mass, model.rest_length, work.gain,
                     work.alpha, params.xpbd, params.iterations)
    for j in range(j0, j1):
        m = members[j]
        _collide(m, x, scratch.x_prev, work, model, frame, params, muscles, f0, f1, scratch.chord_dev)
        scratch.bad_count[m] = _finish(m, x, v, scratch.x_prev, model.inv_mass, params.dt, axis_start,
                                       sub == params.n_sub - 1)
    return True


@njit(parallel=True, **JIT_FAST)
def pbd_substeps(k0, k1, params, model, frame, x, v, muscles, scratch):
    """Run substeps ``k0 .. k1-1`` of ``params.n_sub`` (see the module docstring) on ``x, v (P, 3)``.

    ``params``: :class:`PBDParams`; ``model``: :class:`PBDModelArrays`; ``frame``: :class:`PBDFrame`;
    ``muscles``: the :class:`MuscleArrays` the substep snapshots of grouped axes are written to (with this frame's
    profile scalars); ``scratch``: :class:`PBDScratch`.

    Parallel over blocks of *islands* (:func:`_island_blocks`): an island is a collision group, or a muscle that
    collides with no other muscle. Islands do not touch each other, so each block runs all its substeps in one
    task (one parallel launch per call, not two per substep); inside an island, members are solved against the
    substep's snapshot, so results are bit-identical whatever the threads do (and whatever the blocking).

    ``muscles.muscle_scalar`` must hold this frame's profile scalars (``kernels/profile.py``: they depend on
    activation and eccentricity, not on the axis); each substep rescales its width, support and reach to the
    snapshot's length.
    Only muscles in a collision group get their full geometry rebuilt per substep: they are the only ones other
    muscles evaluate; muscles with nothing to collide with skip the width update (the solver refreshes every
    width after the frame). ``scratch.status (M,)``: axis geometry status (non-zero stops that block);
    ``scratch.bad_count (M,)``: non-finite particle coordinates after the frame's last substep.
    """
    P = x.shape[0]
    work = PBDWork(end_normals=np.empty((model.axis_start.shape[0] - 1, 2, 3)),
                   defined=np.empty(P, dtype=np.bool_), gain=np.empty(P), alpha=np.empty(P),
                   compliance=np.empty(P), diag=np.empty(P), upper=np.empty(P), lower=np.empty(P),
                   rhs=np.empty(P), pred=np.empty((P, 3)), out=np.empty((P, 3)), snap_v=np.empty((P, 3)),
                   cap_ends=np.empty((model.cap_index.shape[0], 4, 3)),
                   grid_tf=np.empty((model.grid_index.shape[0], 2, 3, 4)))
    island_start = model.island_start
    blocks = _island_blocks(island_start, params.iterations)
    for blk in prange(blocks.shape[0] - 1):
        j0 = island_start[blocks[blk]]
        j1 = island_start[blocks[blk + 1]]
        for j in range(j0, j1):
            _constraint_gains(model.island_members[j], model, frame, params, work.gain, work.alpha,
                              work.compliance)
        for sub in range(k0, k1):
            if not _substep(j0, j1, sub, x, v, model, frame, params, muscles, scratch, work):
                break


@njit(parallel=True, **JIT_FAST)
def keep_inside(x, v, inv_mass, values, grads, iso, max_step):
    """Muscle-skin constraint (paper §6.3, thesis §5.3.2): ``C = f_skin(p) - iso >= 0`` with radius 0.

    ``inv_mass (P,)``: 0 for the particles it leaves alone (the endpoints, the muscles not kept inside,
    ``PBDModel.skin_inv_mass``). ``values (P,)``, ``grads (P, 3)``: the skin field (compact convention, larger
    inside) at ``x``. A violating particle moves by one Newton step along the gradient, at most ``max_step`` [m]
    long (where the field is nearly flat, far outside the skin, the step ``-C / |grad|`` is unbounded: kilometres),
    and its velocity out of the skin stops (an inelastic contact: the correction gathers a whole frame's substeps,
    so taking it into the velocity, as a substep's contact does, would throw the particle back in up to ``n_sub``
    times as fast as it left).
    """
    for k in prange(x.shape[0]):
        if inv_mass[k] == 0.0:
            continue
        C = values[k] - iso
        if C >= 0.0:
            continue
        g2 = grads[k, 0] ** 2 + grads[k, 1] ** 2 + grads[k, 2] ** 2
        if g2 < 1e-24:
            continue
        s = -C / g2
        if s * s * g2 > max_step * max_step:
            s = max_step / np.sqrt(g2)
        vn = v[k, 0] * grads[k, 0] + v[k, 1] * grads[k, 1] + v[k, 2] * grads[k, 2]
        r = min(vn, 0.0) / g2  # the velocity out of the skin (the field falls outwards) stops
        for c in range(3):
            x[k, c] += s * grads[k, c]
            v[k, c] -= r * grads[k, c]
