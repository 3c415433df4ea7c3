"""Numba kernels of the fat primitive (thesis ch. 6): its field at a point, its change as a displacement of a skin
part's field, and one frame of its particles' dynamics.

Field (numpy reference ``core/fat/field.py``): ``f = (rho - 1) / |grad rho|`` [m], ``rho = |D^-1 R^T (q - c)|``.
The skin takes a fat's change, not the fat itself (numpy reference ``core/skin/field.py``'s leaves): its part's
field ``F_p`` becomes ``F_p + sum_k s_k lambda_k(f_k^0) (f_k^0 - f_k)``, clamped to [0, 1], where ``f_k^0`` is the
fat where its bone carries it (no lag, the anchors' mean), ``f_k`` where its particle is, ``s_k`` [1/m] the part's
slope at its iso-surface over the fat (measured at bind) and ``lambda_k`` a weight, 1 near the fat and 0 from
``(REACH_FULL + REACH_FALL) R`` beyond its surface. At rest ``f_k = f_k^0``: the part's own field, exactly.

Dynamics (numpy reference ``core/fat/dynamics.step_reference``): each fat's centre is one particle tied by four
springs to anchors on its bone, integrated by semi-implicit Euler in substeps, the anchors and bone capsules moving
linearly from the last frame's place to this frame's within the frame (the springs pull from the anchors at
a substep's start, the capsules push at its end). Spring ``i`` pulls with
``-k (|x - a_i| - L_i) (x - a_i) / |x - a_i|``, ``k = 3/4 m omega^2`` (four anchors on a regular tetrahedron give
``sum d_i d_i^T = 4/3 I``, so small motion oscillates at ``omega`` in every direction); the damping
``-2 zeta omega m (v - v_anchors)`` acts on the velocity relative to the anchors'. After each substep the centre is
pushed out of each bone capsule to ``min(r_b + h(n), gap_b)``, ``h(n)`` the ellipsoid's extent towards the capsule and
``gap_b`` the centre's distance to it at rest, and its velocity towards the capsule is removed. Before that, the
centre is kept within its travel ``l`` [m] of where its bone carries it (the anchors' mean, which is the rest centre
moved by the bone): beyond it, it is put back on that sphere and its velocity relative to the anchors' is removed,
away from the sphere's centre and along it (the tissue at full stretch moves with its bone).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .constants import JIT, JIT_FAST

CENTRE_RHO = 1e-12
"""Below this ellipsoidal radius a query is at the centre: ``f = -min(axes)``, no gradient."""
FAT_STEP_ANGLE = 0.25
"""Largest ``omega h`` [rad] of a substep: substeps per frame are ``max(FAT_MIN_SUBSTEPS, ceil(omega dt / this))``."""
FAT_MIN_SUBSTEPS = 4
"""Fewest substeps per frame."""
REACH_FULL = 0.5
"""A fat's change moves its part's field fully up to this many smallest semi-axes from its surface ..."""
REACH_FALL = 1.0
"""... and not at all this many smallest semi-axes further out (:func:`reach_weight`)."""


@njit(inline="always", **JIT_FAST)
def fat_point(qx, qy, qz, k, center, frame, axes):
    """Raw field of fat ``k`` at one point: ``(f, df/dx, df/dy, df/dz)`` [m, 1]; ``center (F, 3)``, ``frame (F, 3, 3)``
    (columns: the semi-axes' directions), ``axes (F, 3)`` [m]."""
    dx = qx - center[k, 0]
    dy = qy - center[k, 1]
    dz = qz - center[k, 2]
    y0 = frame[k, 0, 0] * dx + frame[k, 1, 0] * dy + frame[k, 2, 0] * dz
    y1 = frame[k, 0, 1] * dx + frame[k, 1, 1] * dy + frame[k, 2, 1] * dz
    y2 = frame[k, 0, 2] * dx + frame[k, 1, 2] * dy + frame[k, 2, 2] * dz
    i0 = 1.0 / (axes[k, 0] * axes[k, 0])
    i1 = 1.0 / (axes[k, 1] * axes[k, 1])
    i2 = 1.0 / (axes[k, 2] * axes[k, 2])
    rho = math.sqrt(y0 * y0 * i0 + y1 * y1 * i1 + y2 * y2 * i2)
    if rho < CENTRE_RHO:
        return -min(axes[k, 0], axes[k, 1], axes[k, 2]), 0.0, 0.0, 0.0
    g0 = y0 * i0 / rho
    g1 = y1 * i1 / rho
    g2 = y2 * i2 / rho
    n2 = g0 * g0 + g1 * g1 + g2 * g2
    n = math.sqrt(n2)
    f = (rho - 1.0) / n
    # grad f = g / n - (rho - 1) (D^-2 g - n^2 g) / (rho n^3)
    c = (rho - 1.0) / (rho * n2 * n)
    h0 = g0 / n - c * (g0 * i0 - n2 * g0)
    h1 = g1 / n - c * (g1 * i1 - n2 * g1)
    h2 = g2 / n - c * (g2 * i2 - n2 * g2)
    gx = frame[k, 0, 0] * h0 + frame[k, 0, 1] * h1 + frame[k, 0, 2] * h2
    gy = frame[k, 1, 0] * h0 + frame[k, 1, 1] * h1 + frame[k, 1, 2] * h2
    gz = frame[k, 2, 0] * h0 + frame[k, 2, 1] * h1 + frame[k, 2, 2] * h2
    return f, gx, gy, gz


@njit(**JIT_FAST)
def fat_field(points, center, frame, axes, out_values, out_grads):
    """Raw field of one fat at ``points (n, 3)`` [m]: ``center (3,)``, ``frame (3, 3)``, ``axes (3,)``; writes
    ``out_values (n,)`` [m] and ``out_grads (n, 3)``."""
    c = center.reshape(1, 3)
    r = frame.reshape(1, 3, 3)
    a = axes.reshape(1, 3)
    for q in range(points.shape[0]):
        f, gx, gy, gz = fat_point(points[q, 0], points[q, 1], points[q, 2], 0, c, r, a)
        out_values[q] = f
        out_grads[q, 0] = gx
        out_grads[q, 1] = gy
        out_grads[q, 2] = gz


@njit(inline="always", **JIT_FAST)
def fats_displacement(p, qx, qy, qz, part_fat_start, part_fat_index, fat_center, fat_carried, fat_frame, fat_axes,
                      fat_slope, fat_bounds):
    """How much part ``p``'s fats' change adds to its field at one point: ``(d, dd/dx, dd/dy, dd/dz)``, ``d = sum_k
    s_k lambda_k D_k`` with ``D_k = f_k^0 - f_k`` [m] (the fat where its bone carries it, ``fat_carried (F, 3)``,
    minus the fat where it is, ``fat_center (F, 3)``), ``s_k = fat_slope[j]`` [1/m] (per CSR entry ``j``) and ``lambda_k`` the weight
    :func:`reach_weight` of ``f_k^0`` (module docstring). ``fat_bounds (F, 6)`` [m]: this frame's world box beyond
    which ``lambda_k = 0``. Takes arrays one by one, as ``kernels/skin_field.py``'s ``_muscles_value`` does (no
    struct copied per point)."""
    d = 0.0
    dx = 0.0
    dy = 0.0
    dz = 0.0
    for j in range(part_fat_start[p], part_fat_start[p + 1]):
        k = part_fat_index[j]
        if not (fat_bounds[k, 0] <= qx <= fat_bounds[k, 3] and fat_bounds[k, 1] <= qy <= fat_bounds[k, 4]
                and fat_bounds[k, 2] <= qz <= fat_bounds[k, 5]):
            continue
        R = min(fat_axes[k, 0], fat_axes[k, 1], fat_axes[k, 2])
        f0, ax, ay, az = fat_point(qx, qy, qz, k, fat_carried, fat_frame, fat_axes)
        lam, dlam = reach_weight(f0, R)
        if lam <= 0.0:
            continue
        f1, bx, by, bz = fat_point(qx, qy, qz, k, fat_center, fat_frame, fat_axes)
        s = fat_slope[j]
        D = f0 - f1
        d += s * lam * D
        dx += s * (dlam * D * ax + lam * (ax - bx))
        dy += s * (dlam * D * ay + lam * (ay - by))
        dz += s * (dlam * D * az + lam * (az - bz))
    return d, dx, dy, dz


@njit(inline="always", **JIT_FAST)
def reach_weight(f0, R):
    """The weight of a fat's change at a point where the fat carried by its bone reads ``f0`` [m], ``R`` its
    smallest semi-axis [m]: ``(lambda, dlambda/df0)``, 1 up to ``REACH_FULL R`` from its surface, falling smoothly
    (``1 - 3t^2 + 2t^3``) to 0 over ``REACH_FALL R`` more."""
    w = REACH_FALL * R
    t = (f0 - REACH_FULL * R) / w
    if t <= 0.0:
        return 1.0, 0.0
    if t >= 1.0:
        return 0.0, 0.0
    return 1.0 - t * t * (3.0 - 2.0 * t), -6.0 * t * (1.0 - t) / w


@njit(**JIT)
def fat_substeps(omega, dt):
    """Substeps of a frame of ``dt`` [s] for a natural frequency ``omega`` [rad/s] (module constants)."""
    return max(FAT_MIN_SUBSTEPS, int(math.ceil(omega * dt / FAT_STEP_ANGLE)))


class FatModelArrays(NamedTuple):
    """What :func:`fat_step` reads of the fat model (``core/fat/dynamics.py`` ``FatSolver.arrays``; ``F`` fats, ``C``
    bone capsules)."""

    rest_length: np.ndarray  # (F, 4) float64 [m] the springs' rest lengths
    axes: np.ndarray         # (F, 3) float64 [m] semi-axes
    cap_radius: np.ndarray   # (C,) float64 [m]
    rest_gap: np.ndarray     # (F, C) float64 [m] each rest centre's distance to each capsule (inf: no collision)
    travel: np.ndarray       # (F,) float64 [m] how far each centre may leave where its bone carries it


class FatFrame(NamedTuple):
    """One frame's inputs of :func:`fat_step`: the kinematic targets at the last frame and this one, and the
    animated stiffness (as a frequency) and damping."""

    anchors_prev: np.ndarray  # (F, 4, 3) float64 [m]
    anchors_cur: np.ndarray   # (F, 4, 3) float64 [m]
    omega: np.ndarray         # (F,) float64 [rad/s] natural frequency
    zeta: np.ndarray          # (F,) float64 damping ratio
    frame: np.ndarray         # (F, 3, 3) float64 this frame's ellipsoid frames (columns: semi-axis directions)
    caps_prev: np.ndarray     # (C, 2, 3) float64 [m] the capsules' ends
    caps_cur: np.ndarray      # (C, 2, 3) float64 [m]


@njit(inline="always", **JIT_FAST)
def _anchor_velocity(k, frame, dt):
    """The mean velocity [m/s] of fat ``k``'s anchors over the frame of ``dt`` [s], a 3-tuple."""
    anchors0 = frame.anchors_prev
    anchors1 = frame.anchors_cur
    u0 = 0.0
    u1 = 0.0
    u2 = 0.0
    for i in range(4):
        u0 += 0.25 * (anchors1[k, i, 0] - anchors0[k, i, 0]) / dt
        u1 += 0.25 * (anchors1[k, i, 1] - anchors0[k, i, 1]) / dt
        u2 += 0.25 * (anchors1[k, i, 2] - anchors0[k, i, 2]) / dt
    return u0, u1, u2


@njit(inline="always", **JIT_FAST)
def _acceleration(k, x, v, u, t0, ks, cs, model, frame):
    """Fat ``k``'s acceleration [m/s^2] at ``x`` with velocity ``v`` (3-tuples), the anchors at ``t0`` of the frame
    (``u`` their mean velocity): the damping ``-cs (v - u)`` and the four springs ``-ks (|d| - L) d / |d|``."""
    anchors0 = frame.anchors_prev
    anchors1 = frame.anchors_cur
    x0, x1, x2 = x
    v0, v1, v2 = v
    u0, u1, u2 = u
    a0 = -cs * (v0 - u0)
    a1 = -cs * (v1 - u1)
    a2 = -cs * (v2 - u2)
    for i in range(4):
        p0 = (1.0 - t0) * anchors0[k, i, 0] + t0 * anchors1[k, i, 0]
        p1 = (1.0 - t0) * anchors0[k, i, 1] + t0 * anchors1[k, i, 1]
        p2 = (1.0 - t0) * anchors0[k, i, 2] + t0 * anchors1[k, i, 2]
        d0 = x0 - p0
        d1 = x1 - p1
        d2 = x2 - p2
        length = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if length < 1e-12:
            continue
        pull = -ks * (length - model.rest_length[k, i]) / length
        a0 += pull * d0
        a1 += pull * d1
        a2 += pull * d2
    return a0, a1, a2


@njit(inline="always", **JIT_FAST)
def _within_travel(k, x, v, u, t, model, frame):
    """``(x, v)`` of fat ``k`` kept within its travel of the anchors' mean at ``t`` of the frame: beyond it, put
    back on that sphere, moving with its bone (``u``, the anchors' mean velocity)."""
    anchors0 = frame.anchors_prev
    anchors1 = frame.anchors_cur
    x0, x1, x2 = x
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    for i in range(4):
        c0 += 0.25 * ((1.0 - t) * anchors0[k, i, 0] + t * anchors1[k, i, 0])
        c1 += 0.25 * ((1.0 - t) * anchors0[k, i, 1] + t * anchors1[k, i, 1])
        c2 += 0.25 * ((1.0 - t) * anchors0[k, i, 2] + t * anchors1[k, i, 2])
    r0 = x0 - c0
    r1 = x1 - c1
    r2 = x2 - c2
    away = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
    if away > model.travel[k]:
        r0 /= away
        r1 /= away
        r2 /= away
        # at full stretch the tissue moves with its bone: no sliding along the travel's sphere
        return (c0 + model.travel[k] * r0, c1 + model.travel[k] * r1, c2 + model.travel[k] * r2), u
    return x, v


@njit(inline="always", **JIT_FAST)
def _out_of_capsules(k, x, v, u, t, model, frame):
    """``(x, v)`` of fat ``k`` pushed out of each bone capsule at ``t`` of the frame to ``min(r_b + h(n), gap_b)``
    (module docstring), its velocity towards the capsule relative to the anchors' (``u``) removed."""
    caps0 = frame.caps_prev
    caps1 = frame.caps_cur
    axes = model.axes
    x0, x1, x2 = x
    v0, v1, v2 = v
    u0, u1, u2 = u
    for b in range(caps0.shape[0]):
        gap = model.rest_gap[k, b]
        if not gap < np.inf:
            continue
        e00 = (1.0 - t) * caps0[b, 0, 0] + t * caps1[b, 0, 0]
        e01 = (1.0 - t) * caps0[b, 0, 1] + t * caps1[b, 0, 1]
        e02 = (1.0 - t) * caps0[b, 0, 2] + t * caps1[b, 0, 2]
        s0 = (1.0 - t) * caps0[b, 1, 0] + t * caps1[b, 1, 0] - e00
        s1 = (1.0 - t) * caps0[b, 1, 1] + t * caps1[b, 1, 1] - e01
        s2 = (1.0 - t) * caps0[b, 1, 2] + t * caps1[b, 1, 2] - e02
        ss = s0 * s0 + s1 * s1 + s2 * s2
        r = 0.0
        if ss > 1e-24:
            r = min(max(((x0 - e00) * s0 + (x1 - e01) * s1 + (x2 - e02) * s2) / ss, 0.0), 1.0)
        n0 = x0 - e00 - r * s0
        n1 = x1 - e01 - r * s1
        n2 = x2 - e02 - r * s2
        dist = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if dist < 1e-12:
            continue
        n0 /= dist
        n1 /= dist
        n2 /= dist
        # the ellipsoid's extent along n: sqrt(sum_j (a_j (e_j . n))^2)
        ext = 0.0
        for j in range(3):
            c = axes[k, j] * (frame.frame[k, 0, j] * n0 + frame.frame[k, 1, j] * n1 + frame.frame[k, 2, j] * n2)
            ext += c * c
        allowed = min(model.cap_radius[b] + math.sqrt(ext), gap)
        if dist >= allowed:
            continue
        x0 += (allowed - dist) * n0
        x1 += (allowed - dist) * n1
        x2 += (allowed - dist) * n2
        vn = (v0 - u0) * n0 + (v1 - u1) * n1 + (v2 - u2) * n2
        if vn < 0.0:
            v0 -= vn * n0
            v1 -= vn * n1
            v2 -= vn * n2
    return (x0, x1, x2), (v0, v1, v2)


@njit(**JIT_FAST)
def fat_step(model, frame, x_in, v_in, dt, x_out, v_out):
    """One frame of every fat's particle (module docstring): ``model`` a :class:`FatModelArrays`, ``frame`` a
    :class:`FatFrame`; ``x_in, v_in (F, 3)`` [m, m/s] the state before; ``dt`` [s]. Writes ``x_out, v_out (F,
    3)``. Semi-implicit Euler in substeps (:func:`fat_substeps`): the springs pull from the anchors at a substep's
    start, then the travel and the capsules act at its end."""
    for k in range(x_in.shape[0]):
        w = frame.omega[k]
        n_sub = fat_substeps(w, dt)
        h = dt / n_sub
        ks = 0.75 * w * w              # spring constant over mass [1/s^2]
        cs = 2.0 * frame.zeta[k] * w   # damping over mass [1/s]
        x = (x_in[k, 0], x_in[k, 1], x_in[k, 2])
        v = (v_in[k, 0], v_in[k, 1], v_in[k, 2])
        u = _anchor_velocity(k, frame, dt)
        for s in range(1, n_sub + 1):
            a0, a1, a2 = _acceleration(k, x, v, u, (s - 1) / n_sub, ks, cs, model, frame)
            v = (v[0] + h * a0, v[1] + h * a1, v[2] + h * a2)
            x = (x[0] + h * v[0], x[1] + h * v[1], x[2] + h * v[2])
            x, v = _within_travel(k, x, v, u, s / n_sub, model, frame)
            x, v = _out_of_capsules(k, x, v, u, s / n_sub, model, frame)
        for c in range(3):
            x_out[k, c] = x[c]
            v_out[k, c] = v[c]
