"""Numba kernels: VIPER rods (Angles et al. 2019; docs/formulas.md#rods), the second muscle solver beside the axis
(kernels/pbd.py).

A rod of ``n`` vertices carries per vertex a position ``x`` [m] and a scale ``s`` (1 at rest: the local radius is
``r = r0 s``), per segment an orientation ``q`` (unit quaternion ``(w, x, y, z)``, its third axis ``d3`` along the
segment), and at each end a kinematic *anchor* frame (its ``d3`` along the end segment, its ``d1`` the bone's
endpoint normal). Frames of muscle ``m`` are ``frame_start[m] = axis_start[m] + m`` .. ``+ n``: frame 0 the origin
anchor, frame ``i`` (1 .. n-1) the segment between vertices ``i-1`` and ``i``, frame ``n`` the insertion anchor.

One call runs substeps ``k0 .. k1-1`` of a frame split into ``n_sub`` substeps of ``dt`` seconds. Each substep, per
muscle (the rods' contacts with each other between steps 2 and 3 of all of them):

1. predict (VIPER eqs. 21-23 without external torques): ``v <- v_b + mu (v - v_b) + g dt``, ``x <- x + v dt``;
   ``s <- s + mu sv dt``; ``q <- normalize(q + mu qd dt)``; kinematic ends to their targets at ``f1`` of the frame;
   anchors from the end segments and the interpolated endpoint normals; every XPBD ``lambda <- 0``. ``v_b`` is the
   velocity the bones carry the vertex with, the ends' velocities over the frame interpolated by the vertex's rest
   arc length (a rigid motion of a straight rod exactly), so the damping acts on the rod's motion relative to its
   bones only; ``mu = exp(-2 zeta omega dt) (1 + (omega dt)^2)`` (at most 1, :func:`velocity_keep`), ``omega = 2 pi
   f(k)`` the muscle's first mode: its swing decays as ``exp(-zeta omega t)``, of which the implicit step takes
   ``ln(1 + (omega dt)^2) / (2 dt)`` by itself, whatever the substeps and the vertex count.
2. ``iterations`` sweeps. Each first takes one linearized global XPBD step (VIPER eq. 28 with ``beta = 1`` in its
   global form) of the rod's stretch/shear and bend/twist rows together: ``(J W J^T + alpha~) dlambda = -C -
   alpha~ lambda``, ``alpha~ = alpha / dt^2``, ``W`` the inverse masses and inertias; the rows grouped per block
   ``k`` (bend ``k``, stretch of segment ``k``) couple only neighbouring blocks, so the system is block-tridiagonal
   (6x6 blocks) and is solved exactly by a block Cholesky (Thomas) pass; then ``x += W J^T dlambda`` and each
   frame turns by ``W J^T dlambda`` (world-frame turn ``dtheta``: ``q <- normalize(q + 1/2 (0, dtheta) q)``):
   - stretch/shear per segment (eq. 11): ``C = (x_b - x_a) / l - d3(q)`` (3 components), ``l`` the rest length
     times ``frame.shortening`` on belly segments (``1 - contraction * activation``, or less where the ends came
     closer: ``core.rod.solver.RodSolver.shortening``); ``alpha = 1 / (EA l0)``; ``dC/dtheta = [d3]x``;
   - bend/twist per pair of consecutive frames (eqs. 14, 40): ``C = Im(conj(q_a) q_b -+ Omega0)`` (the sign giving
     the shorter difference), ``alpha = l_mid / (4 EI)``; ``dC/dtheta_b = -dC/dtheta_a = 1/2 (w I - [v]x) R_a^T``
     with ``(w, v) = conj(q_a) q_b``; a pair with an anchor keeps only its twist row (the rod is pinned at its
     ends, free to swing);
   the rod against the axis muscles it touches comes before it (:func:`_muscle_contacts`, on the positions, so the
   solve spreads the push along the rod) and, with ``AXIS_AFTER`` of its share, after it; then, Gauss-Seidel on
   the scales:
   - scale smoothing per segment (eq. 13): ``C = s_b - s_a``, ``alpha = l0 / (smoothing EI)``;
   - volume per segment (eq. 18 in the form of the authors' code): ``C = s_a s_b |x_b - x_a| / l0 - 1``,
     ``alpha = volume_compliance``, moving the scales only (the lengths are the stretch constraints' business:
     with the position part, Gauss-Seidel leaves a contracted segment at a quarter of its contraction;
     docs/design-notes.md#constraints-xpbd-eq-28-with-beta--1); last, so the hard constraint holds at the end of the
     sweep; forward on even sweeps, backward on odd ones (no bias towards one end);
   then, after every rod's last sweep, the rods against each other (``ROD_CONTACT_ROUNDS`` rounds, each from a
   snapshot of all rods); then collisions of each inner vertex (a sphere of radius ``r0 s``) with the bone capsules:
   ``C = |x - c| - R - r0 s >= 0`` moving the position and the scale by their inverse masses (VIPER's touch
   constraint), followed by tangential friction on the position (kernels/contact.py ``push``), and one more forward
   volume pass on the scales the touch did not move (a touched vertex keeps its scale, its neighbours take
   the volume), so a contact neither leaves the rod's volume off nor undoes the touch.
3. ``v = (x - x_prev) / dt``, ``sv = (s - s_prev) / dt``, ``qd = (q - q_prev) / dt``.

Inverse masses: positions ``1 / m_k`` (masses by length; 0 at the kinematic ends); scales ``2 / (m_k r0_k^2)`` (the
radial inertia of a disc, eq. 23); segment frames ``1 / I`` with ``I = m (r^2 / 4 + l^2 / 12)``; anchors 0.

Structs (``P`` vertices, ``M`` muscles, ``F = P + M`` frames, ``B`` capsules):
    x, v: (P, 3)            positions [m], velocities [m/s]
    s, sv: (P,)             scales, scale velocities [1/s]
    q, qd: (F, 4)           frames (w, x, y, z) and their rates [1/s]
    RodParams               scalar settings of the call
    RodModelArrays          static arrays (masses, rest lengths and radii, rest Darboux vectors, capsule CSR, the
                            muscle chains each rod touches)
    RodFrame                the frame's inputs (stiffnesses, activation, kinematic targets, the axis muscles'
                            chains the rods collide with)
    RodScratch              per-call scratch (previous values, lambdas) and outputs (non-finite counts)
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .constants import JIT_FAST, MIN_DISTANCE
from .contact import contact, contact_keep, particle_radius, push


class RodParams(NamedTuple):
    """Scalar settings of one :func:`rod_substeps` call (``core/rod/settings.py`` ``RodSettings``)."""

    n_sub: int                 # substeps of the frame
    dt: float                  # [s] substep length
    damping_ratio: float       # zeta, damping of the rod's motion relative to its bones, fraction of critical
    iterations: int            # sweeps per substep (direct solve, then the scales)
    gravity: np.ndarray        # (3,) float64 [m/s^2]
    friction: float            # eta, tangential displacement removed at a contact
    contraction: float         # belly segments shorten by this fraction at activation 1
    volume_compliance: float   # [1/J] alpha of the volume constraint (0: incompressible)
    smoothing: float           # scale smoothing stiffness as a multiple of EI
    touch_squeeze: float       # share of the scale's inverse mass a bone's touch uses (VIPER: 1; 0: pushes only)
    contact_friction: float    # mu, Coulomb coefficient of a muscle contact (the axis solver's contact_friction)
    contact_damping: float     # zeta_c, drag on a slide over a muscle, a fraction of critical (kernels/contact.py)


class RodModelArrays(NamedTuple):
    """Static arrays of the rod model (``core/rod/model.py`` ``RodModel.arrays``)."""

    axis_start: np.ndarray         # (M+1,) int64 CSR: vertices of each muscle
    inv_mass: np.ndarray           # (P,) float64 [1/kg], 0 at the kinematic ends
    scale_inv_mass: np.ndarray     # (P,) float64 [1/(kg m^2)]
    frame_inv_inertia: np.ndarray  # (F,) float64 [1/(kg m^2)], 0 for the anchors
    rest_length: np.ndarray        # (P,) float64 [m] rest length of segment (k, k+1); last row of a muscle unused
    rest_radius: np.ndarray        # (P,) float64 [m] rest radius r0 of each vertex (collisions)
    belly: np.ndarray              # (P,) bool segment (k, k+1) contracts with the activation
    darboux_rest: np.ndarray       # (F, 4) float64 conj(q_i) q_{i+1} at rest; last row of a muscle unused
    cap_start: np.ndarray          # (M+1,) int64 CSR: capsules each muscle collides with
    cap_index: np.ndarray          # (C,) int64
    cap_radius: np.ndarray         # (C,) float64 [m]
    touch_start: np.ndarray        # (M+1,) int64 CSR: the muscle chains each rod collides with (muscle contacts)
    touch_chain: np.ndarray        # (T,) int64 chain index (RodFrame.chain_start)
    touch_bundle: np.ndarray       # (T,) bool a fibre of the rod's own bundle: no drag, the rig's Coulomb only
    chain_rod: np.ndarray          # (O,) int64 the rod each chain is (its live state is used), -1 for an axis muscle


class RodFrame(NamedTuple):
    """One frame's inputs: stiffnesses, activation and the kinematic targets at the previous and current frame."""

    bend_stiffness: np.ndarray     # (M,) float64 [N m^2] EI (and GJ) of each muscle
    stretch_stiffness: np.ndarray  # (M,) float64 [N] EA of each muscle
    shortening: np.ndarray         # (M,) float64 factor on the belly segments' rest lengths (1: none)
    frequency: np.ndarray          # (M,) float64 [Hz] f(k), the first mode the damping ratio refers to
    end_prev: np.ndarray           # (M, 2, 3) float64 [m]
    end_cur: np.ndarray            # (M, 2, 3) float64 [m]
    normal_prev: np.ndarray        # (M, 2, 3) float64 endpoint normals
    normal_cur: np.ndarray         # (M, 2, 3) float64
    cap_prev: np.ndarray           # (B, 2, 3) float64 [m]
    cap_cur: np.ndarray            # (B, 2, 3) float64 [m]
    stiffness: np.ndarray          # (M,) float64 the artist's k (the drag of a muscle contact, kernels/contact.py)
    chain_start: np.ndarray        # (O+1,) int64 CSR: particles of each muscle chain (the character's axis layout)
    chain_prev: np.ndarray         # (Q, 3) float64 [m] the chains' particles at the frame's start
    chain_cur: np.ndarray          # (Q, 3) float64 [m] and at its end (the axis muscles already stepped)
    chain_radius: np.ndarray       # (Q,) float64 [m] their radii D = w Phi(s) (rows of rod chains unused)


class RodScratch(NamedTuple):
    """Scratch and outputs of :func:`rod_substeps`."""

    x_prev: np.ndarray     # (P, 3) float64
    s_prev: np.ndarray     # (P,) float64
    q_prev: np.ndarray     # (F, 4) float64
    lam_stretch: np.ndarray  # (P, 3) float64
    lam_bend: np.ndarray   # (F, 3) float64
    lam_volume: np.ndarray  # (P,) float64
    lam_smooth: np.ndarray  # (P,) float64
    bad_count: np.ndarray  # (M,) int64 non-finite values after the frame's last substep


class RodStateArrays(NamedTuple):
    """The rod state :func:`rod_substeps` updates in place (``core/rod/state.py`` ``RodState``)."""

    x: np.ndarray   # (P, 3) float64 [m] positions
    v: np.ndarray   # (P, 3) float64 [m/s] velocities
    s: np.ndarray   # (P,) float64 scales
    sv: np.ndarray  # (P,) float64 [1/s] scale velocities
    q: np.ndarray   # (F, 4) float64 frames (w, x, y, z)
    qd: np.ndarray  # (F, 4) float64 [1/s] their rates


class RodWork(NamedTuple):
    """Scratch one :func:`rod_substeps` call allocates for itself (``n`` the most vertices of a rod)."""

    J: np.ndarray        # (n, 6, 12) float64 the direct solve's Jacobian blocks
    D: np.ndarray        # (n, 6, 6) float64 its diagonal blocks (then their Cholesky factors)
    U: np.ndarray        # (n, 6, 6) float64 its upper blocks
    r: np.ndarray        # (n, 6) float64 its right-hand sides (then the multipliers' changes)
    dx: np.ndarray       # (n + 1, 3) float64 the positions' moves, J^T dlambda
    dth: np.ndarray      # (n + 1, 3) float64 the frames' turns
    col: np.ndarray      # (6,) float64 one column
    s_touch: np.ndarray  # (P,) float64 the scales before the bones' touch
    w_free: np.ndarray   # (P,) float64 the scales' inverse masses, 0 where the touch moved one
    snap_x: np.ndarray   # (P, 3) float64 [m] the rods after their sweeps (rows 0 without muscle contacts)
    snap_d: np.ndarray   # (P, 3) float64 [m] their displacements over the substep
    snap_s: np.ndarray   # (P,) float64 their scales
    keep: np.ndarray     # (M,) float64 velocity kept per substep (damping), per muscle
    inv_span: np.ndarray  # (M,) float64 [1/m] 1 / rest length of each muscle, 0 for none


@njit(**JIT_FAST)
def _qmul(aw, ax, ay, az, bw, bx, by, bz):
    """Hamilton product ``a b``."""
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


@njit(**JIT_FAST)
def _normalize_q(q, i):
    n = math.sqrt(q[i, 0] ** 2 + q[i, 1] ** 2 + q[i, 2] ** 2 + q[i, 3] ** 2)
    if n > 0.0:
        for c in range(4):
            q[i, c] /= n


@njit(**JIT_FAST)
def _frame_quaternion(d1x, d1y, d1z, d3x, d3y, d3z):
    """Unit quaternion of the rotation with columns ``(d1, d3 x d1, d3)`` (``d1 ⟂ d3``, both unit)."""
    d2x = d3y * d1z - d3z * d1y
    d2y = d3z * d1x - d3x * d1z
    d2z = d3x * d1y - d3y * d1x
    # rotation matrix R = [d1 d2 d3] (columns); Shepperd's method
    m00, m01, m02 = d1x, d2x, d3x
    m10, m11, m12 = d1y, d2y, d3y
    m20, m21, m22 = d1z, d2z, d3z
    tr = m00 + m11 + m22
    if tr > 0.0:
        t = math.sqrt(tr + 1.0) * 2.0
        return 0.25 * t, (m21 - m12) / t, (m02 - m20) / t, (m10 - m01) / t
    if m00 > m11 and m00 > m22:
        t = math.sqrt(1.0 + m00 - m11 - m22) * 2.0
        return (m21 - m12) / t, 0.25 * t, (m01 + m10) / t, (m02 + m20) / t
    if m11 > m22:
        t = math.sqrt(1.0 + m11 - m00 - m22) * 2.0
        return (m02 - m20) / t, (m01 + m10) / t, 0.25 * t, (m12 + m21) / t
    t = math.sqrt(1.0 + m22 - m00 - m11) * 2.0
    return (m10 - m01) / t, (m02 + m20) / t, (m12 + m21) / t, 0.25 * t


@njit(**JIT_FAST)
def anchor_frame(x, i0, i1, nx, ny, nz, q, fi):
    """Write into ``q[fi]`` the anchor frame of an end: ``d3`` along ``x[i1] - x[i0]``, ``d1`` the normal ``n``
    made perpendicular to it (any perpendicular if ``n`` is parallel), the sign closest to the old ``q[fi]``."""
    tx = x[i1, 0] - x[i0, 0]
    ty = x[i1, 1] - x[i0, 1]
    tz = x[i1, 2] - x[i0, 2]
    tl = math.sqrt(tx * tx + ty * ty + tz * tz)
    if tl < MIN_DISTANCE:
        return
    tx /= tl
    ty /= tl
    tz /= tl
    dn = nx * tx + ny * ty + nz * tz
    ax = nx - dn * tx
    ay = ny - dn * ty
    az = nz - dn * tz
    al = math.sqrt(ax * ax + ay * ay + az * az)
    if al < 1e-9:
        # any perpendicular: the axis least aligned with t, crossed with t
        if abs(tx) <= abs(ty) and abs(tx) <= abs(tz):
            ax, ay, az = 0.0, -tz, ty
        elif abs(ty) <= abs(tz):
            ax, ay, az = tz, 0.0, -tx
        else:
            ax, ay, az = -ty, tx, 0.0
        al = math.sqrt(ax * ax + ay * ay + az * az)
    ax /= al
    ay /= al
    az /= al
    w, qx, qy, qz = _frame_quaternion(ax, ay, az, tx, ty, tz)
    if w * q[fi, 0] + qx * q[fi, 1] + qy * q[fi, 2] + qz * q[fi, 3] < 0.0:
        w, qx, qy, qz = -w, -qx, -qy, -qz
    q[fi, 0] = w
    q[fi, 1] = qx
    q[fi, 2] = qy
    q[fi, 3] = qz


@njit(**JIT_FAST)
def _volume(ia, ib, l0, alpha, x, s, lam, ws):
    """Volume ``C = s_a s_b |x_b - x_a| / l0 - 1`` on the scales (module doc)."""
    nx = x[ib, 0] - x[ia, 0]
    ny = x[ib, 1] - x[ia, 1]
    nz = x[ib, 2] - x[ia, 2]
    d = math.sqrt(nx * nx + ny * ny + nz * nz)
    if d < MIN_DISTANCE:
        return
    sa = s[ia]
    sb = s[ib]
    ga = sb * d / l0           # dC/ds_a
    gb = sa * d / l0           # dC/ds_b
    C = sa * sb * d / l0 - 1.0
    denom = ws[ia] * ga * ga + ws[ib] * gb * gb + alpha
    if denom <= 0.0:
        return
    dl = (-C - alpha * lam[ia]) / denom
    lam[ia] += dl
    s[ia] += ws[ia] * ga * dl
    s[ib] += ws[ib] * gb * dl


@njit(**JIT_FAST)
def _smooth(ia, ib, alpha, s, lam, ws):
    """Scale smoothing ``C = s_b - s_a`` (module doc)."""
    denom = ws[ia] + ws[ib] + alpha
    if denom <= 0.0:
        return
    dl = (-(s[ib] - s[ia]) - alpha * lam[ia]) / denom
    lam[ia] += dl
    s[ia] -= ws[ia] * dl
    s[ib] += ws[ib] * dl


@njit(**JIT_FAST)
def velocity_keep(frequency, damping_ratio, dt):
    """The fraction ``mu`` of a rod's velocity relative to its bones kept per substep of ``dt`` [s] (module doc):
    ``exp(-2 zeta omega dt) (1 + (omega dt)^2)``, at most 1, ``omega = 2 pi frequency`` [Hz]. The first factor is
    a drag ``-2 zeta omega m v`` taken exactly over the substep (the swing decays as ``exp(-zeta omega t)``); the
    second gives back what the implicit step damps by itself (``ln(1 + (omega dt)^2) / (2 dt)`` per second), so
    the decay does not depend on the substep length. 1 where the step alone damps more, or ``frequency`` is not
    finite."""
    if not math.isfinite(frequency) or frequency <= 0.0:
        return 1.0
    x = 2.0 * math.pi * frequency * dt
    return min(1.0, math.exp(-2.0 * damping_ratio * x) * (1.0 + x * x))


TOUCH_MIN_SCALE = 0.25
"""Lowest scale a bone's touch leaves a vertex with (:func:`_touch`)."""


@njit(**JIT_FAST)
def _touch(k, C, g, r0, x, x_prev, s, w, ws, friction):
    """Contact ``C < 0`` of vertex ``k`` along the unit normal ``g`` (a 3-tuple): VIPER's touch constraint on the
    position and the scale (``dC/dx = g``, ``dC/ds = -r0``), then tangential friction (``kernels/contact.py``
    ``push``). The scale goes no lower than ``TOUCH_MIN_SCALE`` (a deep contact, as after a cut, would turn it
    negative); the position takes the rest of the correction."""
    denom = w + ws * r0 * r0
    if denom <= 0.0:
        return
    ds = ws * r0 * C / denom
    if s[k] + ds < TOUCH_MIN_SCALE:
        ds = min(0.0, TOUCH_MIN_SCALE - s[k])
    share = 1.0 - r0 * ds / C
    push(x, x_prev, k, C, g, share, friction)
    s[k] += ds


@njit(**JIT_FAST)
def _collide(m, x, x_prev, s, model, frame, f1, friction, squeeze):
    """Inner vertices of muscle ``m`` against its bone capsules, ends interpolated within the frame."""
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    cap_start = model.cap_start
    for entry in range(cap_start[m], cap_start[m + 1]):
        ci = model.cap_index[entry]
        ax = frame.cap_prev[ci, 0, 0] + f1 * (frame.cap_cur[ci, 0, 0] - frame.cap_prev[ci, 0, 0])
        ay = frame.cap_prev[ci, 0, 1] + f1 * (frame.cap_cur[ci, 0, 1] - frame.cap_prev[ci, 0, 1])
        az = frame.cap_prev[ci, 0, 2] + f1 * (frame.cap_cur[ci, 0, 2] - frame.cap_prev[ci, 0, 2])
        ex = frame.cap_prev[ci, 1, 0] + f1 * (frame.cap_cur[ci, 1, 0] - frame.cap_prev[ci, 1, 0]) - ax
        ey = frame.cap_prev[ci, 1, 1] + f1 * (frame.cap_cur[ci, 1, 1] - frame.cap_prev[ci, 1, 1]) - ay
        ez = frame.cap_prev[ci, 1, 2] + f1 * (frame.cap_cur[ci, 1, 2] - frame.cap_prev[ci, 1, 2]) - az
        e2 = ex * ex + ey * ey + ez * ez
        R = model.cap_radius[entry]
        for k in range(a + 1, b - 1):
            if model.inv_mass[k] == 0.0:
                continue
            t = 0.0
            if e2 > 0.0:
                t = ((x[k, 0] - ax) * ex + (x[k, 1] - ay) * ey + (x[k, 2] - az) * ez) / e2
                t = min(max(t, 0.0), 1.0)
            dx = x[k, 0] - (ax + t * ex)
            dy = x[k, 1] - (ay + t * ey)
            dz = x[k, 2] - (az + t * ez)
            d = math.sqrt(dx * dx + dy * dy + dz * dz)
            r0 = model.rest_radius[k]
            C = d - R - r0 * s[k]
            if C < 0.0 and d > MIN_DISTANCE:
                _touch(k, C, (dx / d, dy / d, dz / d), r0, x, x_prev, s, model.inv_mass[k],
                       squeeze * model.scale_inv_mass[k], friction)


SEGMENT_PARALLEL = 1e-12
"""Two segments whose directions' cross product is below this fraction of their lengths squared are parallel
(:func:`segment_pair`: the closest pair is then taken at the first segment's start)."""


@njit(**JIT_FAST)
def segment_pair(ax, ay, az, bx, by, bz, cx, cy, cz, dx, dy, dz):
    """``(t, u)``: the parameters in [0, 1] of the closest points ``a + t (b - a)`` and ``c + u (d - c)`` of the
    segments ``ab`` and ``cd`` (Ericson, *Real-Time Collision Detection* 5.1.9); for parallel segments ``t = 0``
    and ``u`` the closest to it."""
    e1x = bx - ax
    e1y = by - ay
    e1z = bz - az
    e2x = dx - cx
    e2y = dy - cy
    e2z = dz - cz
    rx = ax - cx
    ry = ay - cy
    rz = az - cz
    aa = e1x * e1x + e1y * e1y + e1z * e1z
    ee = e2x * e2x + e2y * e2y + e2z * e2z
    ff = e2x * rx + e2y * ry + e2z * rz
    if aa <= MIN_DISTANCE * MIN_DISTANCE and ee <= MIN_DISTANCE * MIN_DISTANCE:
        return 0.0, 0.0
    if aa <= MIN_DISTANCE * MIN_DISTANCE:
        return 0.0, min(max(ff / ee, 0.0), 1.0)
    cc = e1x * rx + e1y * ry + e1z * rz
    if ee <= MIN_DISTANCE * MIN_DISTANCE:
        return min(max(-cc / aa, 0.0), 1.0), 0.0
    bb = e1x * e2x + e1y * e2y + e1z * e2z
    denom = aa * ee - bb * bb
    t = 0.0
    if denom > SEGMENT_PARALLEL * aa * ee:
        t = min(max((bb * ff - cc * ee) / denom, 0.0), 1.0)
    u = (bb * t + ff) / ee
    if u < 0.0:
        u = 0.0
        t = min(max(-cc / aa, 0.0), 1.0)
    elif u > 1.0:
        u = 1.0
        t = min(max((bb - cc) / aa, 0.0), 1.0)
    return t, u


AXIS_SHARE = 0.5
"""Share of a contact with an axis muscle the rod takes: half, as between axis muscles (kernels/pbd.py); the axis
took its half in its own step, against the rod where the last frame left it."""
ROD_SHARE = 0.25
"""Share of a contact between two rods each rod takes per round (:data:`ROD_CONTACT_ROUNDS`), both from one
snapshot: with a half each, two rods pressed hard together fell into an oscillation of two substeps' period."""
ROD_CONTACT_ROUNDS = 2
"""Rounds of the rods' contacts with each other per substep, each from a new snapshot: together they take 3/4 of
an overlap."""
AXIS_AFTER = 0.25
"""Part of :data:`AXIS_SHARE` an axis muscle's contact takes again after the direct solve (what the rod's
elasticity took back of the first, taken before it): more kinked the rod between neighbouring vertices (the arm's
biceps rod, pressed by the brachialis through the curl: field volume 4.3 % off at 0.5, 0.4 % at 0.25)."""
ACROSS_MIN = 0.1
"""A contact whose normal lies within about 6 degrees of the rod's segment (a sphere off its tip) is left out: the
rod is pushed across itself only (:func:`_muscle_contacts`)."""


@njit(inline="always", **JIT_FAST)
def _other_segment(j, jn, ro, g0, f1, model, frame, work):
    """The segment ``(j, jn)`` a rod collides with this substep: of the rod ``ro``'s snapshot (``work.snap_*``),
    or for ``ro < 0`` an axis muscle's particle ``j = jn`` where the axis solver left it, interpolated at ``f1``
    of the frame (``g0`` the substep's start). ``(c, d, rc, rd, uc, ud)``: its ends, their radii [m] and their
    displacements over the substep (3-tuples [m])."""
    if ro >= 0:
        snap_x = work.snap_x
        snap_d = work.snap_d
        r0 = model.rest_radius
        return ((snap_x[j, 0], snap_x[j, 1], snap_x[j, 2]), (snap_x[jn, 0], snap_x[jn, 1], snap_x[jn, 2]),
                r0[j] * work.snap_s[j], r0[jn] * work.snap_s[jn], (snap_d[j, 0], snap_d[j, 1], snap_d[j, 2]),
                (snap_d[jn, 0], snap_d[jn, 1], snap_d[jn, 2]))
    P = frame.chain_prev
    N = frame.chain_cur
    h = f1 - g0
    ux0 = h * (N[j, 0] - P[j, 0])
    uy0 = h * (N[j, 1] - P[j, 1])
    uz0 = h * (N[j, 2] - P[j, 2])
    cx = P[j, 0] + f1 * (N[j, 0] - P[j, 0])
    cy = P[j, 1] + f1 * (N[j, 1] - P[j, 1])
    cz = P[j, 2] + f1 * (N[j, 2] - P[j, 2])
    rc = frame.chain_radius[j]
    return (cx, cy, cz), (cx, cy, cz), rc, rc, (ux0, uy0, uz0), (ux0, uy0, uz0)


@njit(inline="always", **JIT_FAST)
def _against_segment(m, other, part, kp, mu, state, model, scratch):
    """Rod ``m``'s segments against one other segment ``other`` (:func:`_other_segment`): each pair closer than
    their radii moves the rod's two vertices across the rod by their XPBD shares of ``part`` of the correction,
    then friction ``mu`` and the drag ``kp`` (``kernels/contact.py`` ``contact``; :func:`_muscle_contacts`)."""
    (cx, cy, cz), (dx, dy, dz), rc, rd, (ux0, uy0, uz0), (ux1, uy1, uz1) = other
    x = state.x
    s = state.s
    w = model.inv_mass
    r0 = model.rest_radius
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    # the other segment's bounding sphere
    ox = 0.5 * (cx + dx)
    oy = 0.5 * (cy + dy)
    oz = 0.5 * (cz + dz)
    orad = 0.5 * math.sqrt((dx - cx) ** 2 + (dy - cy) ** 2 + (dz - cz) ** 2) + max(rc, rd)
    for k in range(a, b - 1):
        wa = w[k]
        wb = w[k + 1]
        if wa == 0.0 and wb == 0.0:
            continue
        ra = r0[k] * s[k]
        rb = r0[k + 1] * s[k + 1]
        mx = 0.5 * (x[k, 0] + x[k + 1, 0]) - ox
        my = 0.5 * (x[k, 1] + x[k + 1, 1]) - oy
        mz = 0.5 * (x[k, 2] + x[k + 1, 2]) - oz
        half = 0.5 * math.sqrt((x[k + 1, 0] - x[k, 0]) ** 2 + (x[k + 1, 1] - x[k, 1]) ** 2
                               + (x[k + 1, 2] - x[k, 2]) ** 2)
        reach = half + max(ra, rb) + orad
        if mx * mx + my * my + mz * mz >= reach * reach:
            continue
        t, u = segment_pair(x[k, 0], x[k, 1], x[k, 2], x[k + 1, 0], x[k + 1, 1], x[k + 1, 2],
                            cx, cy, cz, dx, dy, dz)
        nx = x[k, 0] + t * (x[k + 1, 0] - x[k, 0]) - (cx + u * (dx - cx))
        ny = x[k, 1] + t * (x[k + 1, 1] - x[k, 1]) - (cy + u * (dy - cy))
        nz = x[k, 2] + t * (x[k + 1, 2] - x[k, 2]) - (cz + u * (dz - cz))
        d = math.sqrt(nx * nx + ny * ny + nz * nz)
        C = d - (1.0 - t) * ra - t * rb - (1.0 - u) * rc - u * rd
        if C >= 0.0 or d < MIN_DISTANCE:
            continue
        # across the rod only: a push along it (a sphere beyond a segment's end) would stretch one
        # segment and squeeze the next, and the scales would follow in a checker pattern
        ex = x[k + 1, 0] - x[k, 0]
        ey = x[k + 1, 1] - x[k, 1]
        ez = x[k + 1, 2] - x[k, 2]
        e2 = ex * ex + ey * ey + ez * ez
        along = (nx * ex + ny * ey + nz * ez) / e2 if e2 > 0.0 else 0.0
        nx -= along * ex
        ny -= along * ey
        nz -= along * ez
        nn = math.sqrt(nx * nx + ny * ny + nz * nz)
        if nn < ACROSS_MIN * d:
            continue
        nx /= nn
        ny /= nn
        nz /= nn
        W = wa * (1.0 - t) * (1.0 - t) + wb * t * t
        if W <= 0.0:
            continue
        sx = ux0 + u * (ux1 - ux0)
        sy = uy0 + u * (uy1 - uy0)
        sz = uz0 + u * (uz1 - uz0)
        if wa > 0.0 and t < 1.0:
            contact(x, scratch.x_prev, k, C, (nx, ny, nz), part * wa * (1.0 - t) / W, (sx, sy, sz), mu, kp)
        if wb > 0.0 and t > 0.0:
            contact(x, scratch.x_prev, k + 1, C, (nx, ny, nz), part * wb * t / W, (sx, sy, sz), mu, kp)


@njit(**JIT_FAST)
def _muscle_contacts(m, rods, g0, f1, keep, part, state, model, frame, params, scratch, work):
    """Rod ``m``'s segments, capsules of radius ``r0 s`` (linear along each), against the muscle chains it touches
    (``model.touch_*``; ``part``: a factor on the share, 1 or :data:`AXIS_AFTER`): with ``rods``, the other rods'
    segments, capsules of their radii; without, the axis muscles' particles, spheres of radius ``D = w Phi(s)``
    as the axis solver's own collisions see them (so an axis settled against the rod's field at rest does not
    touch its capsule). ``C = |p - q| - r_p - r_q >= 0`` between the closest points ``p = x_a + t (x_b - x_a)``
    and ``q`` (:func:`segment_pair`), on the rod's positions, across the rod only (the normal's component along
    the segment removed; a normal within ``ACROSS_MIN`` of it is left out): each of ``x_a``, ``x_b`` moves along
    it by its XPBD share (``w_a (1 - t) / W``, ``w_b t / W``, ``W = w_a (1 - t)^2 + w_b t^2``) of ``AXIS_SHARE``
    or ``ROD_SHARE`` of the correction, then the axis solver's friction and drag on its slide relative to the
    other surface (``kernels/contact.py`` ``contact``; no drag, ``keep`` 1, between the fibres of one bundle). An
    axis muscle's particles are where the axis solver left them this frame, interpolated at ``f1`` (``g0``: the
    substep's start as a fraction of the frame); another rod is its snapshot after every rod's sweeps of this
    substep (``work.snap_x``, ``snap_s``, ``snap_d`` its displacement over the substep: ``ROD_SHARE`` each per
    round of ``ROD_CONTACT_ROUNDS``), so no rod reads another's live state and the result does not depend on their
    order."""
    mu = params.contact_friction
    part *= ROD_SHARE if rods else AXIS_SHARE
    for entry in range(model.touch_start[m], model.touch_start[m + 1]):
        o = model.touch_chain[entry]
        kp = 1.0 if model.touch_bundle[entry] else keep
        ro = model.chain_rod[o]
        if (ro >= 0) != rods:
            continue
        if ro >= 0:  # the other rod's segments (j, j + 1)
            c0 = model.axis_start[ro]
            c1 = model.axis_start[ro + 1] - 1
            step = 1
        else:  # the axis muscle's particles (j, j)
            c0 = frame.chain_start[o]
            c1 = frame.chain_start[o + 1]
            step = 0
        for j in range(c0, c1):
            other = _other_segment(j, j + step, ro, g0, f1, model, frame, work)
            _against_segment(m, other, part, kp, mu, state, model, scratch)


@njit(**JIT_FAST)
def chain_radii(axis_start, particle_s, expo, scal, out):
    """``out (P,)`` [m]: the axis particles' collision radii ``D = w Phi_a(s)`` (``kernels/contact.py``
    ``particle_radius``) from a muscle batch's exponents ``expo (M, 4)`` and scalars ``scal (M, SCALAR_COUNT)``
    (this frame's widths)."""
    for m in range(axis_start.shape[0] - 1):
        for k in range(axis_start[m], axis_start[m + 1]):
            out[k] = particle_radius(m, particle_s[k], expo, scal)


@njit(**JIT_FAST)
def _chol6(A, k):
    """In place: the lower Cholesky factor of the symmetric positive (semi-)definite 6x6 ``A[k]``, the diagonal
    holding the inverse pivots; a pivot below ``1e-12`` of its diagonal (a direction no constraint can move) gets
    the inverse 0, so that row's multiplier is 0."""
    for j in range(6):
        d = A[k, j, j]
        for p in range(j):
            d -= A[k, j, p] * A[k, j, p]
        scale = abs(A[k, j, j])
        if d > 1e-12 * scale and d > 0.0:
            inv = 1.0 / math.sqrt(d)
        else:
            inv = 0.0
        A[k, j, j] = inv
        for i in range(j + 1, 6):
            s = A[k, i, j]
            for p in range(j):
                s -= A[k, i, p] * A[k, j, p]
            A[k, i, j] = s * inv
        for i in range(j):
            A[k, i, j] = 0.0  # upper part unused


@njit(**JIT_FAST)
def _chol6_solve(L, k, b):
    """In place: ``b <- A^-1 b`` for ``A[k]`` factored by :func:`_chol6` (``b`` a 6-vector)."""
    for i in range(6):
        s = b[i]
        for p in range(i):
            s -= L[k, i, p] * b[p]
        b[i] = s * L[k, i, i]
    for i in range(5, -1, -1):
        s = b[i]
        for p in range(i + 1, 6):
            s -= L[k, p, i] * b[p]
        b[i] = s * L[k, i, i]


@njit(inline="always", **JIT_FAST)
def _zero_block(k, work):
    """Block ``k`` of the direct solve's system cleared: its right-hand side, Jacobian, diagonal and upper block."""
    J = work.J
    D = work.D
    U = work.U
    r = work.r
    for i in range(6):
        r[k, i] = 0.0
        for j in range(12):
            J[k, i, j] = 0.0
        for j in range(6):
            D[k, i, j] = 0.0
            U[k, i, j] = 0.0


@njit(inline="always", **JIT_FAST)
def _bend_rows(k, anchor, fa, alpha, q, model, lam_b, work):
    """Block ``k``'s bend/twist rows between frames ``fa`` and ``fa + 1`` (module doc): ``C = Im(conj(q_a) q_b -+
    Omega0)`` with compliance ``alpha`` (already over ``dt^2``) and its Jacobian ``dC/dtheta_b = -dC/dtheta_a = G``;
    at an ``anchor`` only the twist row (the rod is pinned, free to swing)."""
    J = work.J
    D = work.D
    r = work.r
    fb = fa + 1
    aw, ax_, ay, az = q[fa, 0], q[fa, 1], q[fa, 2], q[fa, 3]
    ow, ox, oy, oz = _qmul(aw, -ax_, -ay, -az, q[fb, 0], q[fb, 1], q[fb, 2], q[fb, 3])
    rw, rx, ry, rz = model.darboux_rest[fa, 0], model.darboux_rest[fa, 1], model.darboux_rest[fa, 2], \
        model.darboux_rest[fa, 3]
    minus = (ow - rw) ** 2 + (ox - rx) ** 2 + (oy - ry) ** 2 + (oz - rz) ** 2
    plus = (ow + rw) ** 2 + (ox + rx) ** 2 + (oy + ry) ** 2 + (oz + rz) ** 2
    if minus <= plus:
        cx, cy, cz = ox - rx, oy - ry, oz - rz
    else:
        cx, cy, cz = ox + rx, oy + ry, oz + rz
    r[k, 0] = -cx - alpha * lam_b[fa, 0]
    r[k, 1] = -cy - alpha * lam_b[fa, 1]
    r[k, 2] = -cz - alpha * lam_b[fa, 2]
    D[k, 0, 0] = alpha
    D[k, 1, 1] = alpha
    D[k, 2, 2] = alpha
    # dIm(Omega)/dtheta_b = G = 1/2 (w I - [v]x) R_a^T (world-frame turns), dtheta_a: -G
    R00 = 1.0 - 2.0 * (ay * ay + az * az)
    R01 = 2.0 * (ax_ * ay - aw * az)
    R02 = 2.0 * (ax_ * az + aw * ay)
    R10 = 2.0 * (ax_ * ay + aw * az)
    R11 = 1.0 - 2.0 * (ax_ * ax_ + az * az)
    R12 = 2.0 * (ay * az - aw * ax_)
    R20 = 2.0 * (ax_ * az - aw * ay)
    R21 = 2.0 * (ay * az + aw * ax_)
    R22 = 1.0 - 2.0 * (ax_ * ax_ + ay * ay)
    # M = w I - [v]x with v = (ox, oy, oz)
    M00, M01, M02 = ow, oz, -oy
    M10, M11, M12 = -oz, ow, ox
    M20, M21, M22 = oy, -ox, ow
    # G = 1/2 M R^T: G[i, j] = 1/2 sum_p M[i, p] R[j, p]
    for i in range(3):
        if i == 0:
            m0, m1, m2 = M00, M01, M02
        elif i == 1:
            m0, m1, m2 = M10, M11, M12
        else:
            m0, m1, m2 = M20, M21, M22
        g0 = 0.5 * (m0 * R00 + m1 * R01 + m2 * R02)
        g1 = 0.5 * (m0 * R10 + m1 * R11 + m2 * R12)
        g2 = 0.5 * (m0 * R20 + m1 * R21 + m2 * R22)
        J[k, i, 6] = -g0
        J[k, i, 7] = -g1
        J[k, i, 8] = -g2
        J[k, i, 9] = g0
        J[k, i, 10] = g1
        J[k, i, 11] = g2
    if anchor:
        # an anchor couples twist only (the rod is pinned, free to swing): its bending rows are inert
        for i in range(2):
            r[k, i] = 0.0
            D[k, i, i] = 1.0
            for j in range(12):
                J[k, i, j] = 0.0


@njit(inline="always", **JIT_FAST)
def _stretch_rows(k, ia, fb, length, alpha, x, q, lam_s, work):
    """Block ``k``'s stretch/shear rows of segment ``ia`` with frame ``fb`` (module doc, eq. 11): ``C = (x_b - x_a) /
    l - d3(q)`` for the segment's rest ``length`` [m] this frame, compliance ``alpha`` (already over ``dt^2``), and
    its Jacobian (``dC/dtheta_b = [d3]x``)."""
    J = work.J
    D = work.D
    r = work.r
    qw, qx, qy, qz = q[fb, 0], q[fb, 1], q[fb, 2], q[fb, 3]
    d3x = 2.0 * (qx * qz + qw * qy)
    d3y = 2.0 * (qy * qz - qw * qx)
    d3z = qw * qw - qx * qx - qy * qy + qz * qz
    inv_l = 1.0 / length
    r[k, 3] = -((x[ia + 1, 0] - x[ia, 0]) * inv_l - d3x) - alpha * lam_s[ia, 0]
    r[k, 4] = -((x[ia + 1, 1] - x[ia, 1]) * inv_l - d3y) - alpha * lam_s[ia, 1]
    r[k, 5] = -((x[ia + 1, 2] - x[ia, 2]) * inv_l - d3z) - alpha * lam_s[ia, 2]
    for i in range(3):
        D[k, 3 + i, 3 + i] = alpha
        J[k, 3 + i, i] = -inv_l
        J[k, 3 + i, 3 + i] = inv_l
    # dC/dtheta_b = [d3]x (a turn dtheta moves d3 by dtheta x d3)
    J[k, 3, 10] = -d3z
    J[k, 3, 11] = d3y
    J[k, 4, 9] = d3z
    J[k, 4, 11] = -d3x
    J[k, 5, 9] = -d3y
    J[k, 5, 10] = d3x


@njit(inline="always", **JIT_FAST)
def _assemble(a, f0, n, model, work):
    """``D_k = J_k W_k J_k^T + alpha~`` (added to the compliances already on ``D``'s diagonal) and ``U_k = J_k W
    J_k+1^T`` over the dofs blocks ``k`` and ``k + 1`` share (``x_k+1``, ``theta_k+1``), for the ``n`` blocks of the
    rod whose first vertex is ``a`` and first frame ``f0``."""
    w = model.inv_mass
    wq = model.frame_inv_inertia
    J = work.J
    D = work.D
    U = work.U
    for k in range(n):
        wx0 = w[a + k]
        wx1 = w[a + k + 1] if k < n - 1 else 0.0
        wq0 = wq[f0 + k]
        wq1 = wq[f0 + k + 1]
        for i in range(6):
            for j in range(i, 6):
                s = 0.0
                for c in range(3):
                    s += wx0 * J[k, i, c] * J[k, j, c] + wx1 * J[k, i, 3 + c] * J[k, j, 3 + c] \
                        + wq0 * J[k, i, 6 + c] * J[k, j, 6 + c] + wq1 * J[k, i, 9 + c] * J[k, j, 9 + c]
                D[k, i, j] += s
                if j != i:
                    D[k, j, i] = D[k, i, j]
        if k < n - 1:
            for i in range(6):
                for j in range(6):
                    s = 0.0
                    for c in range(3):
                        s += wx1 * J[k, i, 3 + c] * J[k + 1, j, c] + wq1 * J[k, i, 9 + c] * J[k + 1, j, 6 + c]
                    U[k, i, j] = s


@njit(inline="always", **JIT_FAST)
def _block_thomas(n, work):
    """Solve the ``n`` blocks' block-tridiagonal system in place, the changes of the multipliers into ``work.r``:
    ``D'_k = D_k - U_k-1^T D'_k-1^-1 U_k-1``, ``r'_k = r_k - U_k-1^T D'_k-1^-1 r'_k-1`` (each ``D'_k`` factored by
    :func:`_chol6`), then back substitution."""
    D = work.D
    U = work.U
    r = work.r
    col = work.col
    for k in range(n):
        if k > 0:
            for j in range(6):  # columns of D'_k-1^-1 U_k-1, one at a time
                for i in range(6):
                    col[i] = U[k - 1, i, j]
                _chol6_solve(D, k - 1, col)
                for i in range(j, 6):
                    s = 0.0
                    for p in range(6):
                        s += U[k - 1, p, i] * col[p]
                    D[k, i, j] -= s
                    D[k, j, i] = D[k, i, j]
            for i in range(6):
                col[i] = r[k - 1, i]
            _chol6_solve(D, k - 1, col)
            for i in range(6):
                s = 0.0
                for p in range(6):
                    s += U[k - 1, p, i] * col[p]
                r[k, i] -= s
        _chol6(D, k)
    for k in range(n - 1, -1, -1):
        if k < n - 1:
            for i in range(6):
                s = 0.0
                for p in range(6):
                    s += U[k, i, p] * r[k + 1, p]
                r[k, i] -= s
        _chol6_solve(D, k, r[k])


@njit(inline="always", **JIT_FAST)
def _apply(a, f0, n, x, q, model, scratch, work):
    """``lambda += dlambda``, the positions moved by ``W_x J^T dlambda`` and the frames turned by ``W_q J^T dlambda``
    (``q <- normalize(q + 1/2 (0, dtheta) q)``), for the ``n`` blocks of the rod whose first vertex is ``a`` and
    first frame ``f0``."""
    w = model.inv_mass
    wq = model.frame_inv_inertia
    J = work.J
    r = work.r
    dx = work.dx
    dth = work.dth
    for k in range(n + 1):
        for c in range(3):
            dx[k, c] = 0.0
            dth[k, c] = 0.0
    for k in range(n):
        for c in range(3):
            scratch.lam_bend[f0 + k, c] += r[k, c]
            if k < n - 1:
                scratch.lam_stretch[a + k, c] += r[k, 3 + c]
        for c in range(3):
            s0 = 0.0
            s1 = 0.0
            t0 = 0.0
            t1 = 0.0
            for i in range(6):
                z = r[k, i]
                s0 += J[k, i, c] * z
                s1 += J[k, i, 3 + c] * z
                t0 += J[k, i, 6 + c] * z
                t1 += J[k, i, 9 + c] * z
            dx[k, c] += s0
            dx[k + 1, c] += s1
            dth[k, c] += t0
            dth[k + 1, c] += t1
    for k in range(n):
        wk = w[a + k]
        if wk > 0.0:
            for c in range(3):
                x[a + k, c] += wk * dx[k, c]
    for k in range(n + 1):
        fi = f0 + k
        wk = wq[fi]
        if wk > 0.0:
            pw, px, py, pz = _qmul(0.0, 0.5 * wk * dth[k, 0], 0.5 * wk * dth[k, 1], 0.5 * wk * dth[k, 2],
                                   q[fi, 0], q[fi, 1], q[fi, 2], q[fi, 3])
            q[fi, 0] += pw
            q[fi, 1] += px
            q[fi, 2] += py
            q[fi, 3] += pz
            _normalize_q(q, fi)


@njit(**JIT_FAST)
def _direct_solve(m, shorten, ei, ea, inv_dt2, state, model, scratch, work):
    """One linearized global XPBD step of the stretch/shear and bend/twist constraints of rod ``m`` (module doc):
    ``(J W J^T + alpha~) dlambda = -C - alpha~ lambda``, block-tridiagonal along the rod, solved by a block
    Cholesky (Thomas) pass; then ``x += W_x J^T dlambda``, frames turned by ``W_q J^T dlambda``. ``shorten``: the
    factor on the belly's rest lengths, ``ei`` [N m^2] and ``ea`` [N] its stiffnesses, ``inv_dt2`` [1/s^2]; the
    multipliers in ``scratch``, the system in ``work``."""
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    f0 = a + m
    n = b - a
    x = state.x
    q = state.q
    wq = model.frame_inv_inertia
    L0 = model.rest_length
    # block k = (bend k between frames k, k+1; stretch of segment k with frame k+1) over the dofs (x_k, x_k+1,
    # theta_k, theta_k+1); the last block has no segment (its stretch rows are inert)
    for k in range(n):
        _zero_block(k, work)
        fa = f0 + k
        fb = fa + 1
        if k == 0:
            l_mid = 0.5 * L0[a]
        elif k == n - 1:
            l_mid = 0.5 * L0[b - 2]
        else:
            l_mid = 0.5 * (L0[a + k - 1] + L0[a + k])
        if ei > 0.0 and wq[fa] + wq[fb] > 0.0:
            _bend_rows(k, k == 0 or k == n - 1, fa, l_mid / (4.0 * ei) * inv_dt2, q, model, scratch.lam_bend, work)
        else:
            for i in range(3):
                work.D[k, i, i] = 1.0  # inert rows: dlambda = 0
        if k < n - 1 and ea > 0.0:
            ia = a + k
            l0 = L0[ia]
            _stretch_rows(k, ia, fb, l0 * shorten if model.belly[ia] else l0, inv_dt2 / (ea * l0), x, q,
                          scratch.lam_stretch, work)
        else:
            for i in range(3, 6):
                work.D[k, i, i] = 1.0
    _assemble(a, f0, n, model, work)
    _block_thomas(n, work)
    _apply(a, f0, n, x, q, model, scratch, work)


@njit(inline="always", **JIT_FAST)
def _rod_work(x, model, frame, params):
    """The :class:`RodWork` of one :func:`rod_substeps` call on rods at ``x (P, 3)``: scratch sized for the longest
    rod, the snapshot only where rods touch muscles, each muscle's damping per substep and inverse rest length."""
    axis_start = model.axis_start
    muscles = axis_start.shape[0] - 1
    n_max = 1
    for m in range(muscles):
        n_max = max(n_max, axis_start[m + 1] - axis_start[m])
    touching = model.touch_chain.shape[0] > 0
    snapped = x.shape[0] if touching else 0
    keep = np.empty(muscles)
    inv_span = np.empty(muscles)
    for m in range(muscles):
        keep[m] = velocity_keep(frame.frequency[m], params.damping_ratio, params.dt)
        span = 0.0
        for k in range(axis_start[m], axis_start[m + 1] - 1):
            span += model.rest_length[k]
        inv_span[m] = 1.0 / span if span > 0.0 else 0.0
    return RodWork(J=np.zeros((n_max, 6, 12)), D=np.zeros((n_max, 6, 6)), U=np.zeros((n_max, 6, 6)),
                   r=np.zeros((n_max, 6)), dx=np.zeros((n_max + 1, 3)), dth=np.zeros((n_max + 1, 3)),
                   col=np.zeros(6), s_touch=np.zeros(x.shape[0]), w_free=np.zeros(x.shape[0]),
                   snap_x=np.empty((snapped, 3)), snap_d=np.empty((snapped, 3)), snap_s=np.empty(snapped),
                   keep=keep, inv_span=inv_span)


@njit(inline="always", **JIT_FAST)
def _predict(m, f1, state, model, frame, params, scratch, work):
    """Step 1 of rod ``m``'s substep (module doc): the previous values kept, every ``lambda`` zeroed, velocities
    damped relative to the bones' and integrated, the kinematic ends at ``f1`` of the frame and the anchors from
    the end segments and the interpolated endpoint normals."""
    x, v, s, sv, q, qd = state
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    f0 = a + m            # first frame of the muscle
    n = b - a             # vertices; frames f0 .. f0 + n
    dt = params.dt
    damp = work.keep[m]
    inv_frame = 1.0 / (params.n_sub * dt)
    arc = 0.0
    for k in range(a, b):
        scratch.s_prev[k] = s[k]
        for c in range(3):
            scratch.x_prev[k, c] = x[k, c]
            scratch.lam_stretch[k, c] = 0.0
        scratch.lam_volume[k] = 0.0
        scratch.lam_smooth[k] = 0.0
        if model.scale_inv_mass[k] > 0.0:
            sv[k] *= damp
            s[k] += sv[k] * dt
        if model.inv_mass[k] > 0.0:
            t = arc * work.inv_span[m]
            for c in range(3):
                # the velocity the bones carry the vertex with: the ends' over the frame, by rest arc
                vb = ((1.0 - t) * (frame.end_cur[m, 0, c] - frame.end_prev[m, 0, c])
                      + t * (frame.end_cur[m, 1, c] - frame.end_prev[m, 1, c])) * inv_frame
                v[k, c] = vb + damp * (v[k, c] - vb) + params.gravity[c] * dt
                x[k, c] += v[k, c] * dt
        if k < b - 1:
            arc += model.rest_length[k]
    for c in range(3):
        x[a, c] = frame.end_prev[m, 0, c] + f1 * (frame.end_cur[m, 0, c] - frame.end_prev[m, 0, c])
        x[b - 1, c] = frame.end_prev[m, 1, c] + f1 * (frame.end_cur[m, 1, c] - frame.end_prev[m, 1, c])
    for fi in range(f0, f0 + n + 1):
        for c in range(4):
            scratch.q_prev[fi, c] = q[fi, c]
        for c in range(3):
            scratch.lam_bend[fi, c] = 0.0
        if model.frame_inv_inertia[fi] > 0.0:
            for c in range(4):
                qd[fi, c] *= damp
                q[fi, c] += qd[fi, c] * dt
            _normalize_q(q, fi)
    for e in range(2):
        nx = frame.normal_prev[m, e, 0] + f1 * (frame.normal_cur[m, e, 0] - frame.normal_prev[m, e, 0])
        ny = frame.normal_prev[m, e, 1] + f1 * (frame.normal_cur[m, e, 1] - frame.normal_prev[m, e, 1])
        nz = frame.normal_prev[m, e, 2] + f1 * (frame.normal_cur[m, e, 2] - frame.normal_prev[m, e, 2])
        if e == 0:
            anchor_frame(x, a, a + 1, nx, ny, nz, q, f0)
        else:
            anchor_frame(x, b - 2, b - 1, nx, ny, nz, q, f0 + n)


@njit(inline="always", **JIT_FAST)
def _sweep(m, it, g0, f1, state, model, frame, params, scratch, work):
    """Sweep ``it`` of rod ``m``'s substep (module doc, step 2): the axis muscles it touches (before and, by
    ``AXIS_AFTER``, after), the direct solve, then Gauss-Seidel on the scales: smoothing, then the volume (forward
    on even sweeps, backward on odd ones)."""
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    s = state.s
    ws = model.scale_inv_mass
    rest_length = model.rest_length
    dt = params.dt
    inv_dt2 = 1.0 / (dt * dt)
    ei = frame.bend_stiffness[m]
    touches = model.touch_start[m + 1] > model.touch_start[m]
    if touches:  # axis muscles: the rod's shape follows
        _muscle_contacts(m, False, g0, f1, contact_keep(frame.stiffness[m], params.contact_damping, dt), 1.0,
                         state, model, frame, params, scratch, work)
    _direct_solve(m, frame.shortening[m], ei, frame.stretch_stiffness[m], inv_dt2, state, model, scratch, work)
    if touches:  # and what the rod's elasticity took back
        _muscle_contacts(m, False, g0, f1, contact_keep(frame.stiffness[m], params.contact_damping, dt),
                         AXIS_AFTER, state, model, frame, params, scratch, work)
    if params.smoothing > 0.0 and ei > 0.0:
        for k in range(a, b - 1):
            _smooth(k, k + 1, rest_length[k] / (params.smoothing * ei) * inv_dt2, s, scratch.lam_smooth, ws)
    for j in range(b - 1 - a):
        k = a + j if it % 2 == 0 else b - 2 - j
        _volume(k, k + 1, rest_length[k], params.volume_compliance * inv_dt2, state.x, s, scratch.lam_volume, ws)


@njit(inline="always", **JIT_FAST)
def _rods_against_rods(g0, f1, state, model, frame, params, scratch, work):
    """One round of the rods' contacts with each other (Jacobi): every rod where the others see it snapshot
    (``work.snap_*``), then each rod against that snapshot (:func:`_muscle_contacts`)."""
    x = state.x
    for k in range(x.shape[0]):  # the rods where the others see them
        work.snap_s[k] = state.s[k]
        for c in range(3):
            work.snap_x[k, c] = x[k, c]
            work.snap_d[k, c] = x[k, c] - scratch.x_prev[k, c]
    for m in range(model.axis_start.shape[0] - 1):
        if model.touch_start[m + 1] > model.touch_start[m]:
            _muscle_contacts(m, True, g0, f1, contact_keep(frame.stiffness[m], params.contact_damping, params.dt),
                             1.0, state, model, frame, params, scratch, work)


@njit(inline="always", **JIT_FAST)
def _finish(m, f1, last, state, model, frame, params, scratch, work):
    """End of rod ``m``'s substep: its inner vertices against the bone capsules, the volume once more on the scales
    the touch left alone, then the velocities (step 3); after the frame's ``last`` substep, its non-finite
    values counted into ``scratch.bad_count``."""
    x, v, s, sv, q, qd = state
    a = model.axis_start[m]
    b = model.axis_start[m + 1]
    f0 = a + m
    n = b - a
    ws = model.scale_inv_mass
    dt = params.dt
    inv_dt2 = 1.0 / (dt * dt)
    for k in range(a, b):
        work.s_touch[k] = s[k]
    _collide(m, x, scratch.x_prev, s, model, frame, f1, params.friction, params.touch_squeeze)
    for k in range(a, b):
        work.w_free[k] = 0.0 if s[k] != work.s_touch[k] else ws[k]
    for k in range(a, b - 1):  # the volume once more, on the scales the touch left alone
        _volume(k, k + 1, model.rest_length[k], params.volume_compliance * inv_dt2, x, s, scratch.lam_volume,
                work.w_free)
    inv_dt = 1.0 / dt
    for k in range(a, b):
        sv[k] = (s[k] - scratch.s_prev[k]) * inv_dt
        if model.inv_mass[k] > 0.0:
            for c in range(3):
                v[k, c] = (x[k, c] - scratch.x_prev[k, c]) * inv_dt
    for fi in range(f0, f0 + n + 1):
        if model.frame_inv_inertia[fi] > 0.0:
            # the rate of the closer sign (q and -q are one rotation)
            dot = 0.0
            for c in range(4):
                dot += q[fi, c] * scratch.q_prev[fi, c]
            sign = 1.0 if dot >= 0.0 else -1.0
            for c in range(4):
                qd[fi, c] = (q[fi, c] - sign * scratch.q_prev[fi, c]) * inv_dt
    if last:
        bad = 0
        for k in range(a, b):
            if not math.isfinite(s[k]):
                bad += 1
            for c in range(3):
                if not math.isfinite(x[k, c]):
                    bad += 1
        scratch.bad_count[m] = bad


@njit(**JIT_FAST)
def rod_substeps(k0, k1, params, model, frame, state, scratch):
    """Run substeps ``k0 .. k1-1`` of ``params.n_sub`` (module docstring) on the rod ``state``
    (:class:`RodStateArrays`), in place.

    ``params``: :class:`RodParams`; ``model``: :class:`RodModelArrays`; ``frame``: :class:`RodFrame`;
    ``scratch``: :class:`RodScratch` (``bad_count (M,)``: non-finite values after the frame's last substep).
    Substep after substep, the muscles one after the other within each (one muscle is one banded system); a rod
    reads the others only from the substep's snapshot (muscle contacts), so their order changes nothing.
    """
    n_sub = params.n_sub
    muscles = model.axis_start.shape[0] - 1
    work = _rod_work(state.x, model, frame, params)
    touching = model.touch_chain.shape[0] > 0
    for sub in range(k0, k1):
        g0 = sub / n_sub
        f1 = (sub + 1) / n_sub
        for m in range(muscles):
            _predict(m, f1, state, model, frame, params, scratch, work)
            for it in range(params.iterations):
                _sweep(m, it, g0, f1, state, model, frame, params, scratch, work)
        for _ in range(ROD_CONTACT_ROUNDS if touching else 0):  # rods against rods, Jacobi rounds
            _rods_against_rods(g0, f1, state, model, frame, params, scratch, work)
        for m in range(muscles):
            _finish(m, f1, sub == n_sub - 1, state, model, frame, params, scratch, work)
