"""Plain-numpy reference of the rod substeps (``kernels/rod.py`` does the same in numba, for tests).

Written for reading: one muscle, one constraint at a time, with vectors and quaternion products from
``core/rod/frames.py`` and the equations of ``kernels/rod.py``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .frames import conj, frame_quaternion, qmul
from ...kernels.rod import TOUCH_MIN_SCALE, velocity_keep


def _d3(q):
    w, x, y, z = q
    return np.array([2.0 * (x * z + w * y), 2.0 * (y * z - w * x), w * w - x * x - y * y + z * z])


def _anchor(x, i0, i1, n, old):
    t = x[i1] - x[i0]
    if np.linalg.norm(t) < 1e-12:
        return old
    t = t / np.linalg.norm(t)
    a = n - (n @ t) * t
    if np.linalg.norm(a) < 1e-9:
        tx, ty, tz = t
        if abs(tx) <= abs(ty) and abs(tx) <= abs(tz):
            a = np.array([0.0, -tz, ty])
        elif abs(ty) <= abs(tz):
            a = np.array([tz, 0.0, -tx])
        else:
            a = np.array([-ty, tx, 0.0])
    q = frame_quaternion(a / np.linalg.norm(a), t)
    return -q if q @ old < 0.0 else q


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _rotation(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _direct(model, a, b, f0, shorten, ei, ea, inv_dt2, x, q, lam_st, lam_b):
    """One linearized global XPBD step of stretch/shear and bend/twist of one rod, as a dense system:
    ``(J W J^T + alpha~) dlambda = -C - alpha~ lambda`` over all its rows (the kernel solves the same system
    block-tridiagonally). Dofs: the ``n`` positions, then the ``n + 1`` frames' world-frame turns."""
    n = b - a
    w, wq, L0 = model.inv_mass, model.frame_inv_inertia, model.rest_length
    rows = 3 * n + 3 * (n - 1)
    J = np.zeros((rows, 3 * n + 3 * (n + 1)))
    rhs = np.zeros(rows)
    alpha = np.ones(rows)  # inert rows: J = 0, alpha = 1, rhs = 0
    th = 3 * n  # first turn column
    for i in range(n):  # bend/twist between frames i, i+1: rows 3i .. 3i+2
        fa = f0 + i
        if ei <= 0.0 or wq[fa] + wq[fa + 1] <= 0.0:
            continue
        l_mid = 0.5 * L0[a] if i == 0 else 0.5 * L0[b - 2] if i == n - 1 else 0.5 * (L0[a + i - 1] + L0[a + i])
        al = l_mid / (4.0 * ei) * inv_dt2
        om = qmul(conj(q[fa]), q[fa + 1])
        rest = model.darboux_rest[fa]
        d = om - rest if np.sum((om - rest) ** 2) <= np.sum((om + rest) ** 2) else om + rest
        G = 0.5 * (om[0] * np.eye(3) - _skew(om[1:])) @ _rotation(q[fa]).T
        live = [2] if i in (0, n - 1) else [0, 1, 2]  # an anchor couples twist only
        for c in live:
            row = 3 * i + c
            J[row, th + 3 * i:th + 3 * i + 3] = -G[c]
            J[row, th + 3 * i + 3:th + 3 * i + 6] = G[c]
            rhs[row] = -d[1 + c] - al * lam_b[fa, c]
            alpha[row] = al
    for k in range(a, b - 1):  # stretch/shear of segment k with frame k+1: rows 3n + 3(k - a) ..
        if ea <= 0.0:
            continue
        j = k - a
        row = 3 * n + 3 * j
        length = L0[k] * shorten if model.belly[k] else L0[k]
        al = inv_dt2 / (ea * L0[k])
        d3 = _d3(q[f0 + 1 + j])
        C = (x[k + 1] - x[k]) / length - d3
        J[row:row + 3, 3 * j:3 * j + 3] = -np.eye(3) / length
        J[row:row + 3, 3 * j + 3:3 * j + 6] = np.eye(3) / length
        J[row:row + 3, th + 3 * (j + 1):th + 3 * (j + 1) + 3] = _skew(d3)
        rhs[row:row + 3] = -C - al * lam_st[k]
        alpha[row:row + 3] = al
    W = np.concatenate([np.repeat(w[a:b], 3), np.repeat(wq[f0:f0 + n + 1], 3)])
    dlam = np.linalg.solve(J @ (W[:, None] * J.T) + np.diag(alpha), rhs)
    for i in range(n):
        lam_b[f0 + i] += dlam[3 * i:3 * i + 3]
    for j in range(n - 1):
        lam_st[a + j] += dlam[3 * n + 3 * j:3 * n + 3 * j + 3]
    move = W * (J.T @ dlam)
    x[a:b] += move[:th].reshape(n, 3)
    turn = move[th:].reshape(n + 1, 3)
    for i in range(n + 1):
        fi = f0 + i
        if wq[fi] > 0:
            q[fi] = q[fi] + qmul(np.concatenate([[0.0], 0.5 * turn[i]]), q[fi])
            q[fi] /= np.linalg.norm(q[fi])


def substeps(model, params, frame, state, k0, k1):
    """Run substeps ``k0 .. k1-1`` of ``params.n_sub`` on ``state`` in place (its ``x``, ``v``, ``s``, ``sv``,
    ``q``, ``qd``: a :class:`core.rod.state.RodState`; ``params``: a ``kernels.rod.RodParams``, ``frame``: a
    ``kernels.rod.RodFrame``; the model a :class:`core.rod.model.RodModel`). One muscle after the other, all of
    its substeps at once (the reference has no contacts between muscles)."""
    dt = params.dt
    L0 = model.rest_length
    for m in range(model.muscle_count):
        a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
        keep = velocity_keep(frame.frequency[m], params.damping_ratio, dt)
        arc = np.concatenate([[0.0], np.cumsum(L0[a:b - 1])])
        t = arc / arc[-1]  # rest arc length fraction of each vertex
        v_bones = ((1.0 - t)[:, None] * (frame.end_cur[m, 0] - frame.end_prev[m, 0])
                   + t[:, None] * (frame.end_cur[m, 1] - frame.end_prev[m, 1])) / (params.n_sub * dt)
        for sub in range(k0, k1):
            f1 = (sub + 1) / params.n_sub
            previous = (state.x.copy(), state.s.copy(), state.q.copy())
            lam = _Multipliers(np.zeros((len(state.x), 3)), np.zeros(len(state.x)), np.zeros(len(state.x)),
                               np.zeros((len(state.q), 3)))
            _predict(model, params, frame, m, state, f1, keep, v_bones)
            for it in range(params.iterations):
                _direct(model, a, b, a + m, frame.shortening[m], frame.bend_stiffness[m],
                        frame.stretch_stiffness[m], 1.0 / dt ** 2, state.x, state.q, lam.stretch, lam.bend)
                _scales(model, params, frame.bend_stiffness[m], m, state, it, lam)
            s_touch = state.s.copy()
            _touch(model, params, frame, m, state, previous[0], f1)
            _volume_after_touch(model, params, m, state, np.where(state.s != s_touch, 0.0, model.scale_inv_mass),
                                lam)
            _rates(model, dt, m, state, previous)


class _Multipliers(NamedTuple):
    """A reference substep's XPBD multipliers: per segment stretch ``(P, 3)``, volume and smoothing ``(P,)``, per
    frame pair bend ``(F, 3)``."""

    stretch: np.ndarray
    volume: np.ndarray
    smooth: np.ndarray
    bend: np.ndarray


def _predict(model, params, frame, m, state, f1, keep, v_bones):
    """Rod ``m``'s prediction: velocities kept ``keep`` relative to the bones' ``v_bones (n, 3)`` [m/s] and
    integrated, the kinematic ends at ``f1`` of the frame, the frames turned by their rates, the anchors from the
    end segments and the endpoint normals."""
    x, v, s, sv, q, qd = state.x, state.v, state.s, state.sv, state.q, state.qd
    dt = params.dt
    a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
    f0, n = a + m, b - a
    w, ws, wq = model.inv_mass, model.scale_inv_mass, model.frame_inv_inertia
    for k in range(a, b):
        if ws[k] > 0:
            sv[k] *= keep
            s[k] += sv[k] * dt
        if w[k] > 0:
            v[k] = v_bones[k - a] + keep * (v[k] - v_bones[k - a]) + params.gravity * dt
            x[k] = x[k] + v[k] * dt
    x[a] = frame.end_prev[m, 0] + f1 * (frame.end_cur[m, 0] - frame.end_prev[m, 0])
    x[b - 1] = frame.end_prev[m, 1] + f1 * (frame.end_cur[m, 1] - frame.end_prev[m, 1])
    for fi in range(f0, f0 + n + 1):
        if wq[fi] > 0:
            qd[fi] *= keep
            q[fi] = q[fi] + qd[fi] * dt
            q[fi] /= np.linalg.norm(q[fi])
    nrm = frame.normal_prev[m] + f1 * (frame.normal_cur[m] - frame.normal_prev[m])
    q[f0] = _anchor(x, a, a + 1, nrm[0], q[f0])
    q[f0 + n] = _anchor(x, b - 2, b - 1, nrm[1], q[f0 + n])


def _scales(model, params, ei, m, state, it, lam):
    """Rod ``m``'s scales after sweep ``it``'s direct solve: smoothing, then the volume (forward on even sweeps,
    backward on odd ones), Gauss-Seidel."""
    x, s = state.x, state.s
    a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
    ws, L0 = model.scale_inv_mass, model.rest_length
    inv_dt2 = 1.0 / params.dt ** 2
    if params.smoothing > 0.0 and ei > 0.0:
        for k in range(a, b - 1):  # scale smoothing
            alpha = L0[k] / (params.smoothing * ei) * inv_dt2
            dl = (-(s[k + 1] - s[k]) - alpha * lam.smooth[k]) / (ws[k] + ws[k + 1] + alpha)
            lam.smooth[k] += dl
            s[k] -= ws[k] * dl
            s[k + 1] += ws[k + 1] * dl
    for k in (range(a, b - 1) if it % 2 == 0 else range(b - 2, a - 1, -1)):  # volume
        d = np.linalg.norm(x[k + 1] - x[k])
        l0 = L0[k]
        ga, gb = s[k + 1] * d / l0, s[k] * d / l0  # dC/ds_a, dC/ds_b (the scales only)
        C = s[k] * s[k + 1] * d / l0 - 1.0
        alpha = params.volume_compliance * inv_dt2
        dl = (-C - alpha * lam.volume[k]) / (ws[k] * ga ** 2 + ws[k + 1] * gb ** 2 + alpha)
        lam.volume[k] += dl
        s[k] += ws[k] * ga * dl
        s[k + 1] += ws[k + 1] * gb * dl


def _touch(model, params, frame, m, state, x_prev, f1):
    """Rod ``m``'s inner vertices against its bone capsules at ``f1`` of the frame: VIPER's touch on the position
    and the scale (the scale no lower than ``TOUCH_MIN_SCALE``), then tangential friction."""
    x, s = state.x, state.s
    a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
    w, ws = model.inv_mass, model.scale_inv_mass
    for entry in range(model.cap_start[m], model.cap_start[m + 1]):  # bone capsules (touch)
        ci = model.cap_index[entry]
        p0 = frame.cap_prev[ci, 0] + f1 * (frame.cap_cur[ci, 0] - frame.cap_prev[ci, 0])
        e = frame.cap_prev[ci, 1] + f1 * (frame.cap_cur[ci, 1] - frame.cap_prev[ci, 1]) - p0
        for k in range(a + 1, b - 1):
            if w[k] == 0.0:
                continue
            t = 0.0 if e @ e == 0 else float(np.clip((x[k] - p0) @ e / (e @ e), 0.0, 1.0))
            dvec = x[k] - (p0 + t * e)
            dist = np.linalg.norm(dvec)
            r0 = model.rest_radius[k]
            C = dist - model.cap_radius[entry] - r0 * s[k]
            if C < 0.0 and dist > 1e-12:
                g = dvec / dist
                wsk = params.touch_squeeze * ws[k]
                denom = w[k] + wsk * r0 * r0
                ds = wsk * r0 * C / denom
                if s[k] + ds < TOUCH_MIN_SCALE:
                    ds = min(0.0, TOUCH_MIN_SCALE - s[k])
                x[k] = x[k] - C * (1.0 - r0 * ds / C) * g
                dd = x[k] - x_prev[k]
                x[k] = x[k] - params.friction * (dd - (dd @ g) * g)
                s[k] += ds


def _volume_after_touch(model, params, m, state, w_free, lam):
    """Rod ``m``'s volume once more, forward, on the scales the touch left alone (``w_free (P,)``: their inverse
    masses, 0 where the touch moved one)."""
    x, s = state.x, state.s
    a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
    inv_dt2 = 1.0 / params.dt ** 2
    for k in range(a, b - 1):
        d = np.linalg.norm(x[k + 1] - x[k])
        l0 = model.rest_length[k]
        ga, gb = s[k + 1] * d / l0, s[k] * d / l0
        C = s[k] * s[k + 1] * d / l0 - 1.0
        alpha = params.volume_compliance * inv_dt2
        denom = w_free[k] * ga ** 2 + w_free[k + 1] * gb ** 2 + alpha
        if denom <= 0.0:
            continue
        dl = (-C - alpha * lam.volume[k]) / denom
        lam.volume[k] += dl
        s[k] += w_free[k] * ga * dl
        s[k + 1] += w_free[k + 1] * gb * dl


def _rates(model, dt, m, state, previous):
    """Rod ``m``'s velocities, scale velocities and frame rates from the substep's start ``previous = (x, s, q)``
    (a frame's rate of the closer sign: ``q`` and ``-q`` are one rotation)."""
    x_prev, s_prev, q_prev = previous
    a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
    for k in range(a, b):
        state.sv[k] = (state.s[k] - s_prev[k]) / dt
        if model.inv_mass[k] > 0:
            state.v[k] = (state.x[k] - x_prev[k]) / dt
    for fi in range(a + m, b + m + 1):
        if model.frame_inv_inertia[fi] > 0:
            sign = 1.0 if state.q[fi] @ q_prev[fi] >= 0 else -1.0
            state.qd[fi] = (state.q[fi] - sign * q_prev[fi]) / dt
