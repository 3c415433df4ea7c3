"""Iso-surface tracking settings and the numpy reference of one tracked frame (thesis Alg. 3.1-3.3).

The kernel is ``kernels/tracking.py`` (its docstring has the algorithm). :class:`TrackingSettings` holds the
defaults (lengths as fractions of the mesh's bounding-box diagonal):

* 4 projection iterations, step factors ``lambda_n`` decreasing linearly from 1 to 0.35;
* ``eps = 3e-3`` [field units]: a vertex with ``|F - e| < eps`` is on its iso-value (about 0.1 mm where the
  field's gradient is 1/(3 cm));
* contact stop at 55 degrees between two iterations' gradients (Vaillant et al. 2013), for vertices whose value is
  within ``contact_band = 0.1`` of their iso-value;
* a projection step shorter than ``trust = 1e-4`` is taken without evaluating the field at its end;
* no projection or landing step longer than ``max_step = 0.008``;
* the contact landing (``land_on_contact``, on): a vertex found past a contact surface with another part, the two
  parts' gradients facing by more than ``landing_angle = 30`` degrees, lands on it in at most ``landing_steps = 4``
  Newton steps; vertices already past a contact surface at rest are never landed;
* at most ``bisect_steps = 12`` regula falsi (Illinois) steps when a step crosses the iso-value;
* ``dilation = 2`` rings of neighbours around the vertices that start off their iso-value are relaxed too; every
  other vertex keeps its start position;
* a vertex on its iso-value that the next ARAP sweep moves less than ``quiet = 5e-4`` skips the next projection;
* up to ``final_sweeps = 6`` final ARAP sweeps, until no vertex moves more than ``final_tolerance = 1e-5``;
* vertices on an open border of the mesh (an edge with one face) keep their DQS position (``pin_borders``, on);
* the volume the tracked skin lost at each bent joint is given back after tracking (``keep_volume``, on; region
  ``volume_region = 2.5`` joint radii, taper from ``volume_gap = 2`` to ``volume_rings = 5`` rings from the
  contact: ``core/skin/joint_volume.py``);
* the correction against the DQS result is limited (``limit_correction``, on): scaled by each vertex's trust in
  the field, at most ``correction_cap = 1`` mean edge length long, smoothed by ``correction_smoothing = 5`` ring
  sweeps (``core/skin/trust.py``);
* the skin the frame leaves inside the body at a crease is pushed back onto the skin it passed (``resolve_creases``,
  on; ``core/skin/crease.py``, ``kernels/crease.py``): at most ``crease_rounds = 6`` rounds, each pushing a vertex
  inside the body by ``crease_share = 1`` of its depth plus ``crease_margin = 1e-4``, at most ``crease_depth =
  0.1`` deep, found by rays reaching ``crease_ray = 0.15`` (fractions of the mesh's size), the pushes spread over
  ``crease_spread = 3`` rings; candidates are the vertices that passed or landed on a contact and those rings.

References (the convention of ``core/skin``): :func:`track_reference` is vectorised numpy over blocks of vertices
(every active vertex of an iteration at once, masks for the branches, ``np.add.at`` for the ARAP sums), written
from the algorithm, not from the kernel's per-vertex loops; the kernel-vs-reference test compares them on the arm.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...kernels.constants import (LAND_OWN_LOW, STATE_CONTACT, STATE_CROSSED, STATE_FLAT, STATE_FREE, STATE_ON_ISO,
                                  STATE_WORSE)


CREASE_CELL_EDGES = 2.0
"""The crease stage's triangle grid: cells of this many mean edge lengths."""
CREASE_MAX_CELLS = 2_000_000
"""Most cells of the crease stage's triangle grid (coarser cells beyond it)."""


@dataclass(frozen=True)
class TrackingSettings:
    """iterations, first/last step factor, eps [field units], contact_angle [deg], contact_band [field units],
    bisect_steps, trust and max_step [fractions of the mesh's bounding-box diagonal], dilation [rings], quiet [the
    same fraction], final_sweeps, final_tolerance [the same fraction], temporal (start from the previous
    frame's result when frames are consecutive; off by default), pin_borders (vertices on an open border keep their
    DQS position), land_on_contact with landing_angle [deg] and landing_steps (the contact landing), keep_volume
    (give back the volume lost at bent joints after tracking, ``core/skin/joint_volume.py``) with its region
    [joint radii] and its taper from the contact: 0 up to volume_gap rings, full from volume_rings rings;
    limit_correction (the correction against the DQS result scaled by the field's trust, at most correction_cap
    [mean edge lengths around the vertex] long, smoothed by correction_smoothing ring sweeps,
    ``core/skin/trust.py``); resolve_creases (skin left inside the body pushed back, ``core/skin/crease.py``) with
    crease_rounds, crease_spread [rings], crease_share, crease_margin, crease_depth and crease_ray [fractions of the
    mesh's size]."""

    iterations: int = 4
    first_step: float = 1.0
    last_step: float = 0.35
    eps: float = 3e-3
    contact_angle: float = 55.0
    contact_band: float = 0.1
    bisect_steps: int = 12
    trust: float = 1e-4
    max_step: float = 0.008
    dilation: int = 2
    quiet: float = 5e-4
    final_sweeps: int = 6
    final_tolerance: float = 1e-5
    temporal: bool = False
    pin_borders: bool = True
    land_on_contact: bool = True
    landing_angle: float = 30.0
    landing_steps: int = 4
    contact_rounds: int = 1
    keep_volume: bool = True
    volume_region: float = 2.5
    volume_gap: int = 2
    volume_rings: int = 5
    limit_correction: bool = True
    correction_cap: float = 1.0
    correction_smoothing: int = 5
    resolve_creases: bool = True
    crease_rounds: int = 6
    crease_spread: int = 3
    crease_share: float = 1.0
    crease_margin: float = 1e-4
    crease_depth: float = 0.1
    crease_ray: float = 0.15
    crease_apart: float = 0.02
    unfold_rings: int = 1
    unfold_sweeps: int = 5

    def lambdas(self) -> np.ndarray:
        """``(iterations,)`` step factors ``lambda_n``, linear from ``first_step`` to ``last_step``."""
        if self.iterations == 1:
            return np.array([self.first_step])
        return np.linspace(self.first_step, self.last_step, self.iterations)

    def kernel_params(self, mesh_size: float):
        """The tracking kernel's ``kernels.tracking.TrackParams``, lengths scaled by ``mesh_size`` [m]."""
        from ...kernels.tracking import TrackParams

        return TrackParams(
            lambdas=self.lambdas(), eps=float(self.eps), cos_stop=float(np.cos(np.radians(self.contact_angle))),
            contact_band=float(self.contact_band), bisect_steps=int(self.bisect_steps),
            trust=float(self.trust * mesh_size), max_step=float(self.max_step * mesh_size),
            dilation=int(self.dilation), quiet=float(self.quiet * mesh_size), final_sweeps=int(self.final_sweeps),
            final_tol=float(self.final_tolerance * mesh_size),
            cos_land=float(np.cos(np.radians(self.landing_angle))), land_steps=int(self.landing_steps),
            contact_rounds=int(self.contact_rounds))

    def volume_params(self):
        """The joint volume kernel's ``kernels.joint_volume.VolumeParams`` (``core/skin/joint_volume.py``)."""
        from ...kernels.joint_volume import VolumeParams
        from .joint_volume import FULL_BEND, NEWTON_STEPS, NEWTON_TOL, VOLUME_TOL

        return VolumeParams(full_bend=float(FULL_BEND), gap=int(self.volume_gap), rings=int(self.volume_rings),
                            volume_tol=float(VOLUME_TOL), newton_steps=int(NEWTON_STEPS),
                            newton_tol=float(NEWTON_TOL))

    def validated(self) -> "TrackingSettings":
        if not isinstance(self.iterations, (int, np.integer)) or not 0 <= self.iterations <= 1000:
            raise ValueError(f"tracking iterations must be a whole number from 0 to 1000, got {self.iterations!r}.")
        if not (0.0 < self.last_step <= self.first_step <= 2.0):
            raise ValueError("tracking step factors must satisfy 0 < last step <= first step <= 2.")
        if not (0.0 < self.contact_angle < 180.0):
            raise ValueError(f"contact angle must be between 0 and 180 degrees, got {self.contact_angle}.")
        for name in ("bisect_steps", "dilation", "final_sweeps"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name.replace('_', ' ')} must be a whole number of at least 0, got {value!r}.")
        if not (0.0 < self.landing_angle < 180.0):
            raise ValueError(f"the landing angle must be between 0 and 180 degrees, got {self.landing_angle}.")
        if not isinstance(self.landing_steps, (int, np.integer)) or not 1 <= self.landing_steps <= 50:
            raise ValueError(f"landing steps must be a whole number from 1 to 50, got {self.landing_steps!r}.")
        if not self.max_step > 0.0:
            raise ValueError(f"the longest projection step must be greater than 0, got {self.max_step!r}.")
        if not self.eps > 0.0 or not self.final_tolerance > 0.0:
            raise ValueError("tracking tolerances must be greater than 0.")
        if not (0.5 <= self.volume_region <= 10.0):
            raise ValueError(f"the joint volume region must be from 0.5 to 10 joint radii, got {self.volume_region!r}.")
        for name in ("volume_gap", "volume_rings"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or not 0 <= value <= 50:
                raise ValueError(f"{name.replace('_', ' ')} must be a whole number from 0 to 50, got {value!r}.")
        if not (0.0 < self.correction_cap <= 1000.0):
            raise ValueError(f"the correction cap must be from 0 to 1000 edge lengths, got {self.correction_cap!r}.")
        if not isinstance(self.correction_smoothing, (int, np.integer)) or not 0 <= self.correction_smoothing <= 100:
            raise ValueError(f"correction smoothing must be a whole number of sweeps from 0 to 100, got "
                             f"{self.correction_smoothing!r}.")
        if not isinstance(self.crease_rounds, (int, np.integer)) or not 0 <= self.crease_rounds <= 100:
            raise ValueError(f"crease rounds must be a whole number from 0 to 100, got {self.crease_rounds!r}.")
        if not isinstance(self.crease_spread, (int, np.integer)) or not 0 <= self.crease_spread <= 50:
            raise ValueError(f"crease spread must be a whole number of rings from 0 to 50, got {self.crease_spread!r}.")
        if not (0.0 < self.crease_share <= 1.0):
            raise ValueError(f"the crease share must be from 0 to 1, got {self.crease_share!r}.")
        for name in ("crease_margin", "crease_depth", "crease_ray", "crease_apart"):
            if not (0.0 <= getattr(self, name) <= 1.0):
                raise ValueError(f"{name.replace('_', ' ')} must be a fraction of the mesh's size from 0 to 1, got "
                                 f"{getattr(self, name)!r}.")
        if not self.volume_gap < self.volume_rings:
            raise ValueError("the joint volume's taper must end (volume rings) after it starts (volume gap).")
        return self


def _arap_ref(src, rot, rest, rings, anchor, normal):
    rows = np.repeat(np.arange(len(src)), np.diff(rings.start))
    j = rings.neighbour
    e = rest[rows] - rest[j]
    r = np.einsum("nij,nj->ni", rot[rows] + rot[j], e)
    contrib = rings.weight[:, None] * (src[j] + 0.5 * r)
    v = np.zeros_like(src)
    np.add.at(v, rows, contrib)
    empty = np.diff(rings.start) == 0
    v[empty] = src[empty]
    t = np.einsum("ij,ij->i", v - anchor, normal)
    return v - t[:, None] * normal


def beyond_contact_reference(vals, grads, own, cos_land):
    """``kernels/tracking.beyond_contact`` for many points: ``vals (P, n)``, ``grads (P, n, 3)`` every part's field
    at them, ``own (n,)`` their parts; returns ``(n,)`` the part whose contact surface each has passed, or -1."""
    r = np.arange(vals.shape[1])
    fo = vals[own, r]
    others = vals.copy()
    others[own, r] = -np.inf
    b = np.argmax(others, axis=0)
    fb = others[b, r]
    go, gb = grads[own, r], grads[b, r]
    no, nb = np.linalg.norm(go, axis=1), np.linalg.norm(gb, axis=1)
    dot = np.einsum("ij,ij->i", go, gb)
    ok = (fo > LAND_OWN_LOW) & (fb > 0.5) & (fb > fo) & (no >= 1e-12) & (nb >= 1e-12) & ~(dot > cos_land * no * nb)
    return np.where(ok, b, -1)


def _land_ref(y, own, other, vals, grads, leaves, steps, tol, max_step):
    """``kernels/tracking._land`` for many points ``y (n, 3)`` of parts ``own (n,)`` past the contact surface of
    parts ``other (n,)``; ``vals, grads`` every part's field at ``y``. Returns the landed points and their contact
    normals (NaN where none was found)."""
    y = np.array(y, dtype=np.float64)
    r = np.arange(len(y))
    fo, fb, go, gb = vals[own, r], vals[other, r], grads[own, r], grads[other, r]
    normal = np.full_like(y, np.nan)
    live = np.ones(len(y), dtype=bool)
    for it in range(steps):
        gh = go - gb
        h2 = np.einsum("ij,ij->i", gh, gh)
        live &= h2 >= 1e-16
        hn = np.sqrt(np.where(live, h2, 1.0))
        normal[live] = gh[live] / hn[live, None]
        step = np.where(live, -(fo - fb) / np.where(live, h2, 1.0), 0.0)
        length = np.abs(step) * hn
        step = np.where(length > max_step, step * max_step / np.maximum(length, 1e-300), step)
        y[live] += step[live, None] * gh[live]
        live &= ~((np.abs(step) * hn < tol) | (it == steps - 1))
        if not live.any():
            break
        li = np.flatnonzero(live)
        v, g = leaves(y[li])
        v, g = np.asarray(v), np.asarray(g)
        fo[li], fb[li] = v[own[li], np.arange(len(li))], v[other[li], np.arange(len(li))]
        go[li], gb[li] = g[own[li], np.arange(len(li))], g[other[li], np.arange(len(li))]
        live &= (fo > 0.0) & (fb > 0.0)
    return y, normal


def _land_some(idx, x, own, landable, leaves, s, mesh_size, cos_land, anchor, normal, state):
    """Land the vertices ``idx`` at ``x[idx]`` that have passed a contact surface, in place in ``x``; returns the
    mask of ``idx`` landed."""
    v, g = leaves(x[idx])
    b = beyond_contact_reference(np.asarray(v), np.asarray(g), own[idx], cos_land)
    land = landable[idx] & (b >= 0)
    li = idx[land]
    if len(li):
        y, nrm = _land_ref(x[li], own[li], b[land], np.asarray(v)[:, land], np.asarray(g)[:, land], leaves,
                           s.landing_steps, s.trust * mesh_size, s.max_step * mesh_size)
        x[li] = y
        anchor[li] = y
        found = ~np.isnan(nrm[:, 0])
        normal[li[found]] = nrm[found]
        state[li] = STATE_CONTACT
    return land


def track_reference(x, rot, rest, iso, rings, evaluate, settings: TrackingSettings, mesh_size: float,
                    pinned=None, leaves=None, own_part=None, landable=None):
    """Numpy reference of ``kernels/tracking.track``: ``evaluate(points) -> (values, grads)``; ``pinned (V,)`` bool:
    vertices that keep their start position (open borders); the contact landing with ``leaves(points) -> (values
    per part, grads per part)`` (``SkinField.leaf_reference``), ``own_part (V,)`` and ``landable (V,)`` bool (none
    without ``leaves``); returns ``(positions (V, 3), state (V,), active (V,), sweeps)``."""
    s = settings
    x = np.array(x, dtype=np.float64)
    V = len(x)
    lambdas = s.lambdas()
    cos_stop = np.cos(np.radians(s.contact_angle))
    cos_land = np.cos(np.radians(s.landing_angle))
    landing = leaves is not None and s.land_on_contact
    active = _active_reference(x, iso, rings, evaluate, s, pinned)
    state = np.zeros(V, dtype=np.int8)
    p, anchor = x.copy(), x.copy()
    normal, g_prev = np.zeros((V, 3)), np.zeros((V, 3))
    moves = np.full(V, np.inf)
    for n, lam in enumerate(lambdas):
        work = active & (state != STATE_CONTACT) & ~((state == STATE_ON_ISO) & (moves < s.quiet * mesh_size))
        p[~work] = x[~work]
        idx = np.flatnonzero(work)
        f, g = evaluate(x[idx])
        p[idx] = x[idx]
        if landing:
            landed = _land_some(idx, p, own_part, landable, leaves, s, mesh_size, cos_land, anchor, normal, state)
            idx, f, g = idx[~landed], f[~landed], g[~landed]
        g2 = np.einsum("ij,ij->i", g, g)
        flat = g2 < 1e-16
        state[idx[flat]] = STATE_FLAT
        ok = ~flat
        nrm = np.zeros_like(g)
        nrm[ok] = g[ok] / np.sqrt(g2[ok])[:, None]
        if n > 0:
            near = np.abs(f - iso[idx]) < s.contact_band
            turned = ok & near & (np.einsum("ij,ij->i", nrm, g_prev[idx]) < cos_stop)
            state[idx[turned]] = STATE_CONTACT
            ok &= ~turned
        sel = idx[ok]
        g_prev[sel] = nrm[ok]
        anchor[sel] = x[sel]
        normal[sel] = nrm[ok]
        d = f[ok] - iso[sel]
        on = np.abs(d) < s.eps
        state[sel[on]] = STATE_ON_ISO
        sel, d, gg, g2s = sel[~on], d[~on], g[ok][~on], g2[ok][~on]
        step = -lam * d / g2s
        length = np.abs(step) * np.sqrt(g2s)
        step = np.where(length > s.max_step * mesh_size, step * s.max_step * mesh_size / np.maximum(length, 1e-300),
                        step)
        y = x[sel] + step[:, None] * gg
        short = np.abs(step) * np.sqrt(g2s) < s.trust * mesh_size
        p[sel[short]] = y[short]
        anchor[sel[short]] = y[short]
        state[sel[short]] = STATE_FREE
        sel, d, gg, g2s, y = sel[~short], d[~short], gg[~short], g2s[~short], y[~short]
        f2, h = evaluate(y)
        d2 = f2 - iso[sel]
        worse = d * (d - d2) < 0.0
        state[sel[worse]] = STATE_WORSE
        crossed = ~worse & (d * d2 < 0.0)
        free = ~worse & ~crossed
        state[sel[free]] = STATE_FREE
        state[sel[free & (np.abs(d2) < s.eps)]] = STATE_ON_ISO
        if np.any(crossed):
            y[crossed], h[crossed] = _regula_falsi_reference(x[sel[crossed]], d[crossed], y[crossed], d2[crossed],
                                                             h[crossed], iso[sel[crossed]], evaluate, s)
            state[sel[crossed]] = STATE_CROSSED
        moved = ~worse
        ms = sel[moved]
        p[ms] = y[moved]
        anchor[ms] = y[moved]
        hm = h[moved]
        hn = np.linalg.norm(hm, axis=1)
        good = hn > 1e-8
        normal[ms[good]] = hm[good] / hn[good, None]
        relax = active & (state != STATE_FLAT)
        new = _arap_ref(p, rot, rest, rings, anchor, normal)
        x = np.where(relax[:, None], new, p)
        moves = np.where(relax, np.linalg.norm(x - p, axis=1), 0.0)
    if landing:
        _land_some(np.flatnonzero(active), x, own_part, landable, leaves, s, mesh_size, cos_land, anchor, normal,
                   state)
    x, sweeps = _final_sweeps_reference(x, rot, rest, rings, anchor, normal, active & (state != STATE_FLAT),
                                        s.final_sweeps, s.final_tolerance * mesh_size)
    return x, state, active, sweeps


def _active_reference(x, iso, rings, evaluate, s, pinned):
    """The start pass of :func:`track_reference`: ``(V,)`` bool the vertices off their iso-value at ``x``, with
    ``s.dilation`` rings around them, less the ``pinned`` ones."""
    V = len(x)
    f, _ = evaluate(x)
    active = np.abs(f - iso) >= s.eps
    for _ in range(s.dilation):
        rows = np.repeat(np.arange(V), np.diff(rings.start))
        hit = np.zeros(V, dtype=bool)
        np.logical_or.at(hit, rows, active[rings.neighbour])
        active = active | hit
    if pinned is not None:
        active &= ~np.asarray(pinned, dtype=bool)
    return active


def _regula_falsi_reference(a, da, b, db, hb, iso_c, evaluate, s):
    """The regula falsi (Illinois) of ``kernels/tracking._regula_falsi`` on rows of brackets ``a (n, 3)`` to
    ``b (n, 3)`` [m] with values less the iso-value ``da``, ``db`` of opposite signs, ``hb (n, 3)`` the gradients at
    ``b``: ``(y (n, 3), h (n, 3))`` the end nearer each iso-value and the gradient last evaluated."""
    a, da, b, db, hb = a.copy(), da.copy(), b.copy(), db.copy(), hb.copy()
    side = np.zeros(len(a), dtype=np.int64)
    done = np.zeros(len(a), dtype=bool)
    for _ in range(s.bisect_steps):
        li = np.flatnonzero(~done)
        if not len(li):
            break
        t = np.clip(da[li] / (da[li] - db[li]), 0.05, 0.95)
        m = a[li] + t[:, None] * (b[li] - a[li])
        fm, gm = evaluate(m)
        dm = fm - iso_c[li]
        hb[li] = gm
        to_b = da[li] * dm <= 0.0
        ib, ia = li[to_b], li[~to_b]
        b[ib], db[ib] = m[to_b], dm[to_b]
        da[ib[side[ib] == -1]] *= 0.5
        side[ib] = -1
        a[ia], da[ia] = m[~to_b], dm[~to_b]
        db[ia[side[ia] == 1]] *= 0.5
        side[ia] = 1
        done[li[np.abs(dm) < s.eps]] = True
    return np.where((np.abs(da) < np.abs(db))[:, None], a, b), hb


def _final_sweeps_reference(x, rot, rest, rings, anchor, normal, relax, most, tolerance):
    """ARAP sweeps of the ``relax`` vertices after the loop, at most ``most``, until the largest move is below
    ``tolerance`` [m]: ``(positions, sweeps)``."""
    sweeps = 0
    for _ in range(most):
        new = np.where(relax[:, None], _arap_ref(x, rot, rest, rings, anchor, normal), x)
        move = np.sqrt(np.max(np.sum((new - x) ** 2, axis=1))) if len(x) else 0.0
        x = new
        sweeps += 1
        if move < tolerance:
            break
    return x, sweeps
