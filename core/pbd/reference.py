"""Plain-numpy reference of one PBD substep (the numba kernel ``kernels/pbd.py`` does the same, for tests).

Written for reading: one muscle, one particle, one constraint at a time, with the equations of ``kernels/pbd.py``.
Muscle-muscle collisions use the reference field of ``core/muscle/field.py`` on the snapshot of the substep.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..muscle import profile as _profile
from ..muscle.axis import axis_geometry
from ..muscle.field import MuscleProfile
from ..muscle.field import field as fusiform_field


def _profile_of(model, m, activation, eccentricity, width_scale, length) -> MuscleProfile:
    ea0, eb0, ea1, eb1 = (int(e) for e in model.exponents[m])
    a0, b0, a1, b1 = ea0 + 1, eb0 + 1, ea1 + 1, eb1 + 1
    c0, c1 = _profile.profile_coefficients(a0, b0, a1, b1, activation[m])
    u, v = _profile.ellipse_axes(eccentricity[m])
    w = _profile.width_from_volume(model.volume[m], length, width_scale[m])
    phi_max = _profile.profile_max(a0, b0, a1, b1, activation[m])
    return MuscleProfile((ea0, eb0, ea1, eb1), c0, c1, w, u, v, w * u * phi_max)


def _spring_step(model, m, x, x_prev, stiffness, dt):
    """XPBD: the elastic constraints of muscle ``m`` taken one backward-Euler step by local/global iterations, with
    Rayleigh damping, in place on the predicted positions ``x`` (kernels/pbd.py ``_spring_solve``), with a dense
    solve."""
    from ...kernels.contact import stiffness_frequency
    from ...kernels.pbd import stiffness_damping
    s = model.settings
    a, b = model.axis_start[m], model.axis_start[m + 1]
    k_spring = np.zeros(b - a - 1)
    for c in range(b - a - 1):
        stiff = s.tendon_stiffness if model.tendon[a + c] else stiffness
        W = model.inv_mass[a + c] + model.inv_mass[a + c + 1]
        f = stiffness_frequency(stiff)
        if W > 0 and stiff > 0 and f != np.inf:  # 1 / alpha, alpha = l lambda_1 / omega^2
            k_spring[c] = (2 * np.pi * f) ** 2 / (model.spring_length[a + c] * model.mode_unit[m])
    if not k_spring.any():
        return
    n = b - a
    free = model.inv_mass[a:b] > 0
    K = np.zeros((n, n))
    for c, kc in enumerate(k_spring):
        K[c, c] += kc
        K[c + 1, c + 1] += kc
        K[c, c + 1] -= kc
        K[c + 1, c] -= kc
    beta = stiffness_damping(stiffness, s.damping_ratio, dt)
    mass_dt2 = np.where(free, 1.0 / np.where(free, model.inv_mass[a:b], 1.0), 0.0) / dt ** 2
    A = np.diag(mass_dt2) + (1.0 + beta / dt) * K  # Rayleigh damping -beta K (x - x_prev) / dt
    A[~free] = 0.0
    A[~free, ~free] = 1.0
    pred = x[a:b].copy()
    for _ in range(s.iterations):
        rhs = mass_dt2[:, None] * pred + beta / dt * K @ x_prev[a:b]
        for c, kc in enumerate(k_spring):
            if kc == 0.0:
                continue
            e = x[a + c + 1] - x[a + c]
            d = np.linalg.norm(e)
            if d > 1e-12:  # the rest length's share: +-k d0 n
                rhs[c] -= kc * model.rest_length[a + c] * e / d
                rhs[c + 1] += kc * model.rest_length[a + c] * e / d
        rhs[~free] = pred[~free]
        x[a:b][free] = np.linalg.solve(A, rhs)[free]


class _Substep(NamedTuple):
    """What one reference substep's collisions read: the substep's span ``f0 .. f1`` of the frame, its length ``dt``
    [s], the frame's input state and this frame's capsules and grid inverses, and the substep's snapshot (positions,
    velocities, each muscle's axis geometry and profile)."""

    f0: float
    f1: float
    dt: float
    state_in: object
    caps: np.ndarray
    grid_inverse: np.ndarray
    snap: np.ndarray
    snap_v: np.ndarray
    geos: list
    profs: list


def substep(model, x, v, sub, n_sub, dt, control_arrays, state_in):
    """Advance ``x, v (P, 3)`` in place by substep ``sub`` of ``n_sub`` (``dt`` = substep length [s]).

    control_arrays: ``(activation, stiffness, width_scale, eccentricity, ends, normals, caps, grid_inverse)`` as
    prepared by ``PBDSolver.inputs`` (a ``FrameInputs``); state_in: the frame's input :class:`core.pbd.state.PBDState`.
    """
    s = model.settings
    activation, stiffness, width_scale, eccentricity, ends, normals, caps, grid_inverse = control_arrays
    if eccentricity is None:
        eccentricity = np.zeros(model.muscle_count)
    f0, f1 = sub / n_sub, (sub + 1) / n_sub
    start = model.axis_start
    # 1. snapshot, geometry and profile per muscle
    snap = x.copy()
    snap_v = v.copy()  # velocities at the substep's start: a neighbour muscle's surface motion at a contact
    geos, profs = [], []
    for m in range(model.muscle_count):
        a, b = start[m], start[m + 1]
        n0 = state_in.normals[m] + f0 * (normals[m] - state_in.normals[m])
        geo = axis_geometry(snap[a:b], n0[0], n0[1])
        geos.append(geo)
        profs.append(_profile_of(model, m, activation, eccentricity, width_scale, geo.length))
    ctx = _Substep(f0, f1, dt, state_in, caps, grid_inverse, snap, snap_v, geos, profs)
    # 2. solve each muscle
    x_prev = x.copy()
    for m in range(model.muscle_count):
        a, b = start[m], start[m + 1]
        _predict(model, m, x, v, f1, ends, state_in, dt)
        if s.xpbd:
            _spring_step(model, m, x, x_prev, stiffness[m], dt)
        for it in range(s.iterations):
            _distance_sweep(model, m, x, stiffness[m])
            if it == s.iterations - 1:  # collisions on the last sweep of the substep
                _collisions(model, m, x, x_prev, stiffness[m], ctx)
        for k in range(a + 1, b - 1):
            if model.inv_mass[k] != 0.0:
                v[k] = (x[k] - x_prev[k]) / dt


def _predict(model, m, x, v, f1, ends, state_in, dt):
    """Muscle ``m``'s kinematic ends at ``f1`` of the frame (``ends (M, 2, 3)`` this frame's), its inner particles
    integrated (``v <- mu v + g dt`` in PBD mode, ``v + g dt`` in XPBD mode, which damps in the spring step)."""
    s = model.settings
    a, b = model.axis_start[m], model.axis_start[m + 1]
    gravity = np.asarray(s.gravity, dtype=np.float64)
    x[a] = state_in.endpoints[m, 0] + f1 * (ends[m, 0] - state_in.endpoints[m, 0])
    x[b - 1] = state_in.endpoints[m, 1] + f1 * (ends[m, 1] - state_in.endpoints[m, 1])
    for k in range(a + 1, b - 1):
        if model.inv_mass[k] == 0.0:
            continue
        v[k] = (1.0 if s.xpbd else s.damping) * v[k] + gravity * dt  # XPBD damps in the spring step
        x[k] = x[k] + v[k] * dt


def _distance_sweep(model, m, x, stiffness):
    """One Gauss-Seidel sweep of muscle ``m``'s distance constraints: PBD mode, ``k C / W`` each; XPBD mode, the
    rigid ones only (the elastic ones are in the spring step)."""
    from ...kernels.contact import stiffness_frequency
    s = model.settings
    for k in range(model.axis_start[m], model.axis_start[m + 1] - 1):
        wi, wj = model.inv_mass[k], model.inv_mass[k + 1]
        W = wi + wj
        stiff = s.tendon_stiffness if model.tendon[k] else stiffness
        if W == 0.0 or stiff <= 0.0:
            continue
        n = x[k + 1] - x[k]
        d = np.linalg.norm(n)
        if d < 1e-12:
            continue
        n = n / d
        C = d - model.rest_length[k]
        if s.xpbd:
            if stiffness_frequency(stiff) != np.inf:
                continue  # elastic: in the spring step
            corr = C / W  # rigid (k = 1): alpha = 0, lambda = -C / W
        else:
            corr = stiff * C / W
        x[k] = x[k] + wi * corr * n
        x[k + 1] = x[k + 1] - wj * corr * n


def _collisions(model, m, x, x_prev, stiffness, ctx):
    """Muscle ``m``'s inner particles, spheres of radius ``D = w Phi(s)``, against its capsules, its bone grids and
    the other muscles of its contact set (their snapshot), each contact followed by its friction."""
    prof = ctx.profs[m]
    keep = _contact_keep(stiffness, model.settings.contact_damping_ratio, ctx.dt)
    for k in range(model.axis_start[m] + 1, model.axis_start[m + 1] - 1):
        if model.inv_mass[k] == 0.0:
            continue
        sk = model.particle_s[k]
        phi = prof.c0 * sk ** prof.exponents[0] * (1 - sk) ** prof.exponents[1] \
            + prof.c1 * sk ** prof.exponents[2] * (1 - sk) ** prof.exponents[3]
        D = prof.width * phi
        _capsule_contacts(model, m, k, D, x, x_prev, ctx, keep)
        _grid_contacts(model, m, k, D, x, x_prev, ctx, keep)
        _group_contacts(model, m, k, D, x, x_prev, ctx, keep)


def _capsule_contacts(model, m, k, D, x, x_prev, ctx, keep):
    """Particle ``k`` of muscle ``m`` (radius ``D`` [m]) against its bone capsules, ends interpolated at ``f1``."""
    s, caps, caps_in, f0, f1 = model.settings, ctx.caps, ctx.state_in.capsules, ctx.f0, ctx.f1
    for entry in range(model.cap_start[m], model.cap_start[m + 1]):
        ci = model.cap_index[entry]
        p0 = caps_in[ci, 0] + f1 * (caps[ci, 0] - caps_in[ci, 0])
        p1 = caps_in[ci, 1] + f1 * (caps[ci, 1] - caps_in[ci, 1])
        e = p1 - p0
        t = 0.0 if e @ e == 0 else float(np.clip((x[k] - p0) @ e / (e @ e), 0.0, 1.0))
        dvec = x[k] - (p0 + t * e)
        dist = np.linalg.norm(dvec)
        C = dist - model.cap_radius[entry] - D
        if C < 0.0 and dist > 1e-12:
            # the capsule's point at t, moved from f0 to f1 of the frame
            moved = (f1 - f0) * ((1 - t) * (caps[ci, 0] - caps_in[ci, 0]) + t * (caps[ci, 1] - caps_in[ci, 1]))
            _contact(x, x_prev, k, C, dvec / dist, 1.0, moved, s, keep)


def _grid_contacts(model, m, k, D, x, x_prev, ctx, keep):
    """Particle ``k`` of muscle ``m`` (radius ``D`` [m]) against its bone distance grids, in bone rest space."""
    from .distance_grid import DistanceGrid
    inv_in, inv = ctx.state_in.grid_inverse, ctx.grid_inverse
    for gi in model.grid_index[model.grid_start[m]:model.grid_start[m + 1]]:
        T = inv_in[gi] + ctx.f1 * (inv[gi] - inv_in[gi])
        local = T[:, :3] @ x[k] + T[:, 3]
        values = model.grid_values[model.grid_offset[gi]:model.grid_offset[gi + 1]].reshape(
            tuple(model.grid_dims[gi]))
        f, g, inside = DistanceGrid(values, model.grid_origin[gi], model.grid_spacing[gi]).sample(local)
        if inside[0] and f[0] - D < 0.0:
            T0 = inv_in[gi] + ctx.f0 * (inv[gi] - inv_in[gi])
            moved = x[k] - T0[:, :3].T @ (local - T0[:, 3])  # the bone's point at x, from f0 to f1
            _contact(x, x_prev, k, f[0] - D, T[:, :3].T @ g[0], 1.0, moved, model.settings, keep)


def _group_contacts(model, m, k, D, x, x_prev, ctx, keep):
    """Particle ``k`` of muscle ``m`` (radius ``D`` [m]) against the other muscles of its contact set, not of its
    overlap group: their reference field on the substep's snapshot, each side taking half."""
    group, overlap = model.muscle_group[m], model.muscle_overlap[m]
    if group < 0:
        return
    start, geos, profs = model.axis_start, ctx.geos, ctx.profs
    for o in model.group_members[model.group_start[group]:model.group_start[group + 1]]:
        if o == m or (overlap >= 0 and model.muscle_overlap[o] == overlap):  # one overlap group
            continue
        lo, hi = geos[o].points.min(axis=0), geos[o].points.max(axis=0)
        gap = np.maximum(np.maximum(lo - x[k], 0.0), x[k] - hi)
        reach = profs[o].width * profs[o].v * (profs[o].support / (profs[o].width * profs[o].u))
        if gap @ gap > (reach + D) ** 2:
            continue
        f, g, _ = fusiform_field(geos[o], profs[o], x[k])
        if f - D < 0.0:
            ao, bo = start[o], start[o + 1]
            near = ao + int(np.argmin(np.linalg.norm(ctx.snap[ao:bo] - x[k], axis=1)))
            _contact(x, x_prev, k, f - D, g, 0.5, ctx.snap_v[near] * ctx.dt, model.settings, keep)


def _contact_keep(stiffness, ratio, dt):
    """kernels/contact.py ``contact_keep``: ``exp(-2 zeta_c omega(k) dt)``."""
    from ...kernels.contact import stiffness_frequency
    f = stiffness_frequency(stiffness)
    return 0.0 if f == np.inf else float(np.exp(-4.0 * np.pi * ratio * f * dt))


def _contact(x, x_prev, k, C, g, share, moved, s, keep):
    """A contact's push along ``g``, then friction (kernels/contact.py ``contact`` in XPBD mode, ``push`` in PBD
    mode): Coulomb's law on the slide relative to the surface, which moved by ``moved`` [m], up to
    ``contact_friction`` times the push, and the viscous drag that keeps ``keep`` of the rest."""
    if not s.xpbd:
        _push(x, x_prev, k, C, g, share, s.friction)
        return
    g2 = g @ g
    if g2 < 1e-24:
        return
    step = -C * share / g2 * g
    x[k] = x[k] + step
    n = g / np.sqrt(g2)
    d = x[k] - x_prev[k] - moved
    t = d - (d @ n) * n
    slide = np.linalg.norm(t)
    if slide <= 0.0:
        return
    x[k] = x[k] - (1.0 - max(slide - s.contact_friction * np.linalg.norm(step), 0.0) * keep / slide) * t


def _push(x, x_prev, k, C, g, share, friction):
    g2 = g @ g
    if g2 < 1e-24:
        return
    x[k] = x[k] - C * share / g2 * g
    n = g / np.sqrt(g2)
    d = x[k] - x_prev[k]
    x[k] = x[k] - friction * (d - (d @ n) * n)
