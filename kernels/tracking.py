"""Numba kernel: one frame of Implicit Skinning's iso-surface tracking (thesis Algorithms 3.1-3.3, Vaillant 2013).

:func:`track` takes five structs (``V`` vertices; defaults and the numpy reference: ``core/skin/tracking.py``):
``x (V, 3)`` [m] the start positions (the DQS guess, or the previous frame's result), overwritten by the result;
``rot (V, 3, 3)`` each vertex's DQS rotation ``R_i``; ``mesh`` (:class:`TrackMesh`, bind data); ``field`` and
``muscles`` the composed skin field this frame (``kernels/skin_field.SkinArrays`` and ``MuscleArrays``);
``params`` (:class:`TrackParams`); ``scratch`` (:class:`TrackScratch`, per-vertex work arrays and outputs).

The START PASS evaluates the field at every vertex's start: the vertices off their iso-value, and ``dilation``
rings around them, are the active ones; the value, gradient and contact test found there are kept
(``TrackScratch.start_*``) for the first projection and for the limited correction.

Each iteration: PROJECTION (Alg. 3.1) of every active vertex that has not stopped, then one ARAP Jacobi sweep
(Alg. 3.2): ``v_i <- sum_k cbar_ik (p_k + 1/2 (R_i + R_k)(v_ref_i - v_ref_k))``, projected on the tangent plane at
the vertex's projected point; the rotation term ``1/2 sum_k cbar_ik (R_i + R_k)(v_ref_i - v_ref_k)`` is summed once
per frame (``TrackScratch.rotated``). Then ARAP sweeps to convergence (Alg. 3.3). Stopped (contact) vertices take
no more projection steps but still relax on the tangent plane where they stopped; inactive vertices keep their
start position and act as the boundary of the relaxation.

CONTACT LANDING (ours; the thesis has only the gradient-angle stop). A projection first checks whether the vertex
has passed a contact surface (:func:`beyond_contact`: inside the other part where its field is the larger, the two
gradients facing each other) and if so lands it on that surface by Newton steps on ``h = f_own - f_other``
(:func:`_land`): it stops there with the surface's tangent plane, which the ARAP sweeps keep it on. Once more after
the loop (the landing pass). The leaves' values and gradients are the ones :func:`evaluate_point` computes.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .skin_field import evaluate_point
from .constants import (JIT, JIT_FAST, JIT_POINT, CONTACT_LOW, LAND_OWN_LOW, STATE_CONTACT, STATE_CROSSED,
                        STATE_FLAT, STATE_FREE, STATE_ON_ISO, STATE_WORSE)


CHUNK = 64
"""Vertices per parallel task (each task allocates its per-node scratch once)."""


class TrackMesh(NamedTuple):
    """The tracked mesh's bind data (``V`` vertices, ``P`` parts)."""

    rest: np.ndarray            # (V, 3) float64 [m] rest positions v_ref_i
    iso: np.ndarray             # (V,) float64 each vertex's iso-value e_i = F_0(v_ref_i)
    ring_start: np.ndarray      # (V+1,) int64 CSR one-rings ...
    ring_neighbour: np.ndarray  # (sum,) int64 ... neighbour indices
    ring_weight: np.ndarray     # (sum,) float64 normalised clamped cotangent weights cbar_ik
    own_leaf: np.ndarray        # (V,) int64 the composition tree's leaf node of each vertex's part
    leaf_nodes: np.ndarray      # (P,) int64 every part's leaf node
    landable: np.ndarray        # (V,) bool vertices the contact landing may move (all False: no landing)
    pinned: np.ndarray          # (V,) bool vertices that keep their start position (open borders)


class TrackParams(NamedTuple):
    """Scalar settings of one tracked frame (lengths already scaled by the mesh's size)."""

    lambdas: np.ndarray   # (N,) float64 step factors of the N projection iterations (decreasing)
    eps: float            # |F - e| below which a vertex is on its iso-value [field units]
    cos_stop: float       # contact stop: the gradient turns by more than acos(cos_stop) between two iterations ...
    contact_band: float   # ... with the value within this of the iso-value [field units]
    bisect_steps: int     # most regula falsi steps when a step crosses the iso-value
    trust: float          # [m] a shorter projection step is taken without evaluating the field at its end
    max_step: float       # [m] a longer projection or landing step is shortened to this length
    dilation: int         # rings around the vertices that start off their iso-value that are worked on too
    quiet: float          # [m] an on-iso vertex the last sweep moved less than this takes no projection step
    final_sweeps: int     # most ARAP sweeps after the loop ...
    final_tol: float      # [m] ... until the largest move is below this
    cos_land: float       # landing: the two parts' gradients face by more than acos(cos_land)
    land_steps: int       # landing: most Newton steps
    contact_rounds: int   # landing passes after the loop, each followed by the final ARAP sweeps (at least 1)


class TrackScratch(NamedTuple):
    """Per-vertex work arrays of :func:`track`; ``state``, ``active`` and the ``start_*`` arrays are its outputs
    too. The field at the start positions, evaluated once to find the vertices that need work, is kept for the first
    projection and for the limited correction (``kernels/skin_correction.py``)."""

    p: np.ndarray              # (V, 3) float64 [m] projected points
    anchor: np.ndarray         # (V, 3) float64 [m] a point of each vertex's tangent plane
    normal: np.ndarray         # (V, 3) float64 the tangent plane's unit normal
    g_prev: np.ndarray         # (V, 3) float64 the last iteration's unit gradient
    state: np.ndarray          # (V,) int8 STATE_* outcome of the last projection
    active: np.ndarray         # (V,) bool vertices worked on this frame
    start_value: np.ndarray    # (V,) float64 F at each start position
    start_grad: np.ndarray     # (V, 3) float64 [1/m] its gradient
    start_gap: np.ndarray      # (V,) float64 [m] first-order distance to the contact surface the start has passed
                               # (beyond_contact, contact_gap), -1 if it has passed none
    evaluations: np.ndarray    # (V,) int32 field evaluations of each vertex this frame (the start's included)
    rotated: np.ndarray        # (V, 3) float64 [m] each active vertex's ARAP rotation term this frame,
                               # 1/2 sum_k cbar_ik (R_i + R_k)(v_ref_i - v_ref_k) (fixed while the sweeps run)


def track_scratch(vertex_count: int) -> TrackScratch:
    """A :class:`TrackScratch` for ``vertex_count`` vertices."""
    V = vertex_count
    return TrackScratch(p=np.zeros((V, 3)), anchor=np.zeros((V, 3)), normal=np.zeros((V, 3)),
                        g_prev=np.zeros((V, 3)), state=np.zeros(V, dtype=np.int8), active=np.zeros(V, dtype=np.bool_),
                        start_value=np.zeros(V), start_grad=np.zeros((V, 3)), start_gap=np.full(V, -1.0),
                        evaluations=np.zeros(V, dtype=np.int32), rotated=np.zeros((V, 3)))


@njit(**JIT_POINT)
def _stop_at(i, y0, y1, y2, p, anchor):
    """Vertex ``i``'s projected point and the anchor of its tangent plane are ``(y0, y1, y2)``."""
    p[i, 0] = y0
    p[i, 1] = y1
    p[i, 2] = y2
    anchor[i, 0] = y0
    anchor[i, 1] = y1
    anchor[i, 2] = y2


@njit(**JIT_POINT)
def _set_row(i, y0, y1, y2, out):
    """``out[i] = (y0, y1, y2)``."""
    out[i, 0] = y0
    out[i, 1] = y1
    out[i, 2] = y2


@njit(**JIT_POINT)
def _unit_normal(i, hx, hy, hz, normal):
    """``normal[i]``: the unit vector along ``(hx, hy, hz)``; unchanged where that vanishes."""
    h2 = hx * hx + hy * hy + hz * hz
    if h2 > 1e-16:
        hn = math.sqrt(h2)
        normal[i, 0] = hx / hn
        normal[i, 1] = hy / hn
        normal[i, 2] = hz / hn


@njit(inline="always", **JIT_POINT)
def _regula_falsi(a, da, b, db, h, iso_i, prm, val, grad, nodes, field, muscles):
    """The point of the segment from ``a`` to ``b`` (3-tuples [m], their values less the iso-value ``da``, ``db`` of
    opposite signs) where the field meets ``iso_i``: regula falsi (Illinois variant), at most ``prm.bisect_steps``
    steps until ``|F - iso_i| < prm.eps``. The bracket keeps one end on each side of the iso-value like a bisection,
    the split point follows the values' linear interpolation. Returns ``(y0, y1, y2, hx, hy, hz)``: the end nearer
    the iso-value, the gradient at the last point evaluated (``h``, the gradient at ``b``, if none was) and the
    number of field evaluations. Inlined into :func:`_project`: no function of its own to compile."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    hx, hy, hz = h
    side = 0
    n = 0
    for _ in range(prm.bisect_steps):
        t = da / (da - db)
        t = min(max(t, 0.05), 0.95)
        m0 = a0 + t * (b0 - a0)
        m1 = a1 + t * (b1 - a1)
        m2 = a2 + t * (b2 - a2)
        fm, mx, my, mz = evaluate_point(m0, m1, m2, val, grad, nodes, field, muscles)
        n += 1
        dm = fm - iso_i
        hx, hy, hz = mx, my, mz
        if da * dm <= 0.0:
            b0, b1, b2, db = m0, m1, m2, dm
            if side == -1:
                da *= 0.5
            side = -1
        else:
            a0, a1, a2, da = m0, m1, m2, dm
            if side == 1:
                db *= 0.5
            side = 1
        if abs(dm) < prm.eps:
            break
    if abs(da) < abs(db):
        return a0, a1, a2, hx, hy, hz, n
    return b0, b1, b2, hx, hy, hz, n


@njit(**JIT_POINT)
def _project(i, x, lam, first, mesh, field, muscles, prm, scr, val, grad, active_nodes):
    """Algorithm 3.1 for vertex ``i`` with step factor ``lam``, with the contact landing first: writes ``p[i]``,
    ``anchor[i]``, ``normal[i]``, ``state[i]`` of ``scr``. ``val, grad, active_nodes``: per-task node scratch."""
    iso = mesh.iso
    eps = prm.eps
    trust = prm.trust
    max_step = prm.max_step
    p = scr.p
    anchor = scr.anchor
    normal = scr.normal
    g_prev = scr.g_prev
    state = scr.state
    evaluations = scr.evaluations
    x0 = x[i, 0]
    x1 = x[i, 1]
    x2 = x[i, 2]
    _set_row(i, x0, x1, x2, p)
    landable = mesh.landable[i]
    if first and not (landable and scr.start_gap[i] >= 0.0):
        # the first projection starts where the start pass evaluated the field
        f = scr.start_value[i]
        gx = scr.start_grad[i, 0]
        gy = scr.start_grad[i, 1]
        gz = scr.start_grad[i, 2]
    else:
        f, gx, gy, gz = evaluate_point(x0, x1, x2, val, grad, active_nodes, field, muscles)
        evaluations[i] += 1
        if landable:
            b = beyond_contact(mesh.own_leaf[i], mesh.leaf_nodes, prm.cos_land, val, grad, active_nodes)
            if b >= 0:
                _land(i, mesh.own_leaf[i], b, prm, (p, anchor, normal), state, evaluations, val, grad, active_nodes,
                      field, muscles)
                return
    g2 = gx * gx + gy * gy + gz * gz
    if g2 < 1e-16:
        state[i] = STATE_FLAT
        return
    gn = math.sqrt(g2)
    nx = gx / gn
    ny = gy / gn
    nz = gz / gn
    d = f - iso[i]
    if (not first and abs(d) < prm.contact_band
            and nx * g_prev[i, 0] + ny * g_prev[i, 1] + nz * g_prev[i, 2] < prm.cos_stop):
        state[i] = STATE_CONTACT
        return
    _set_row(i, nx, ny, nz, g_prev)
    _set_row(i, x0, x1, x2, anchor)
    _set_row(i, nx, ny, nz, normal)
    if abs(d) < eps:
        state[i] = STATE_ON_ISO
        return
    s = -lam * d / g2
    if abs(s) * gn > max_step:
        # a long step leaves the region where the field is close to linear (docs/design-notes.md#bounded-steps)
        s *= max_step / (abs(s) * gn)
    y0 = x0 + s * gx
    y1 = x1 + s * gy
    y2 = x2 + s * gz
    if abs(s) * gn < trust:
        # a step shorter than `trust`: the field is linear at that scale, take it without checking it
        _stop_at(i, y0, y1, y2, p, anchor)
        state[i] = STATE_FREE
        return
    f2, hx, hy, hz = evaluate_point(y0, y1, y2, val, grad, active_nodes, field, muscles)
    evaluations[i] += 1
    d2 = f2 - iso[i]
    if d * (d - d2) < 0.0:
        state[i] = STATE_WORSE
        return
    if d * d2 < 0.0:
        y0, y1, y2, hx, hy, hz, n = _regula_falsi((x0, x1, x2), d, (y0, y1, y2), d2, (hx, hy, hz), iso[i], prm,
                                                  val, grad, active_nodes, field, muscles)
        evaluations[i] += n
        state[i] = STATE_CROSSED
    elif abs(d2) < eps:
        # the step's end is on the iso-value: as a vertex that started there, it takes no new step unless a sweep
        # moves it
        state[i] = STATE_ON_ISO
    else:
        state[i] = STATE_FREE
    _stop_at(i, y0, y1, y2, p, anchor)
    _unit_normal(i, hx, hy, hz, normal)


@njit(**JIT_POINT)
def beyond_contact(o, leaf_nodes, cos_land, val, grad, nodes):
    """After :func:`evaluate_point` filled ``val, grad, nodes``: the leaf node of the other part whose contact
    surface a vertex of leaf ``o`` has passed, or -1. Passed means: inside that part's volume (its field above 0.5)
    where its field exceeds the vertex's own part's (``h = f_own - f_other < 0``), the own field in the contact
    range (above ``CONTACT_LOW``), and the two gradients facing each other by more than ``acos(cos_land)`` (two
    parts of one joint at rest overlap with nearly parallel gradients: that is no contact)."""
    if o < 0 or not nodes[o] or val[o] <= LAND_OWN_LOW:
        return -1
    b = -1
    fb = 0.5
    for k in range(leaf_nodes.shape[0]):
        n = leaf_nodes[k]
        if n != o and nodes[n] and val[n] > fb:
            b = n
            fb = val[n]
    if b < 0 or fb <= val[o]:
        return -1
    go = math.sqrt(grad[o, 0] ** 2 + grad[o, 1] ** 2 + grad[o, 2] ** 2)
    gb = math.sqrt(grad[b, 0] ** 2 + grad[b, 1] ** 2 + grad[b, 2] ** 2)
    dot = grad[o, 0] * grad[b, 0] + grad[o, 1] * grad[b, 1] + grad[o, 2] * grad[b, 2]
    if go < 1e-12 or gb < 1e-12 or dot > cos_land * go * gb:
        return -1
    return b


@njit(**JIT_POINT)
def contact_gap(o, b, val, grad):
    """First-order distance [m] from a point to the contact surface ``h = f_o - f_b = 0`` of leaves ``o`` and
    ``b``, after :func:`evaluate_point` filled ``val, grad`` there: ``|h| / |grad h|`` (0 where ``grad h``
    vanishes)."""
    hx = grad[o, 0] - grad[b, 0]
    hy = grad[o, 1] - grad[b, 1]
    hz = grad[o, 2] - grad[b, 2]
    gh = math.sqrt(hx * hx + hy * hy + hz * hz)
    if gh > 1e-12:
        return abs(val[o] - val[b]) / gh
    return 0.0


@njit(inline="always", **JIT_POINT)
def _land(i, o, b, prm, plane, state, evaluations, val, grad, nodes, field, muscles):
    """Land vertex ``i`` (at ``p[i]``, where ``val, grad`` were evaluated) on the contact surface ``h = f_o - f_b
    = 0`` of leaves ``o`` and ``b``: at most ``prm.land_steps`` Newton steps along ``grad h``, each at most
    ``prm.max_step`` long, until a step is shorter than ``prm.trust`` [m]. ``plane = (p, anchor, normal)``: the
    vertex stops there, in ``p[i]`` (``state[i]`` STATE_CONTACT), its anchor and normal the contact surface's, so
    the ARAP sweeps slide it on that surface. ``evaluations[i]`` counts the field evaluations. The arrays come one by
    one, not in the tracking's scratch struct: in the parallel loop of :func:`track`, writes through the struct
    changed its result. Inlined into its two callers (it runs for the few vertices that passed a contact): no
    function of its own to compile."""
    p, anchor, normal = plane
    steps = prm.land_steps
    tol = prm.trust
    max_step = prm.max_step
    y0 = p[i, 0]
    y1 = p[i, 1]
    y2 = p[i, 2]
    for it in range(steps):
        hx = grad[o, 0] - grad[b, 0]
        hy = grad[o, 1] - grad[b, 1]
        hz = grad[o, 2] - grad[b, 2]
        h2 = hx * hx + hy * hy + hz * hz
        if h2 < 1e-16:
            break
        hn = math.sqrt(h2)
        normal[i, 0] = hx / hn
        normal[i, 1] = hy / hn
        normal[i, 2] = hz / hn
        s = -(val[o] - val[b]) / h2
        if abs(s) * hn > max_step:
            s *= max_step / (abs(s) * hn)
        y0 += s * hx
        y1 += s * hy
        y2 += s * hz
        if abs(s) * hn < tol or it == steps - 1:
            break
        evaluate_point(y0, y1, y2, val, grad, nodes, field, muscles)
        evaluations[i] += 1
        if not (nodes[o] and nodes[b]) or val[o] <= 0.0 or val[b] <= 0.0:
            break
    _stop_at(i, y0, y1, y2, p, anchor)
    state[i] = STATE_CONTACT


@njit(**JIT_FAST)
def contact_passed(points, own_leaf, leaf_nodes, cos_land, field, muscles, out):
    """``out (n,)`` bool: whether each point, a vertex of leaf ``own_leaf[n]``, has passed a contact surface
    (:func:`beyond_contact`); ``field``, ``muscles``: the ``SkinArrays`` and ``MuscleArrays``. Serial: it runs once
    per bind."""
    T = field.node_kind.shape[0]
    val = np.empty(T)
    grad = np.empty((T, 3))
    nodes = np.empty(T, dtype=np.bool_)
    for q in range(points.shape[0]):
        evaluate_point(points[q, 0], points[q, 1], points[q, 2], val, grad, nodes, field, muscles)
        out[q] = beyond_contact(own_leaf[q], leaf_nodes, cos_land, val, grad, nodes) >= 0


@njit(**JIT_POINT)
def _rotated(i, rot, mesh, out):
    """Vertex ``i``'s ARAP rotation term ``1/2 sum_k cbar_ik (R_i + R_k)(v_ref_i - v_ref_k)`` into ``out[i]``: the
    part of Alg. 3.2's update that the rotations fix for the whole frame."""
    rest = mesh.rest
    ring_neighbour = mesh.ring_neighbour
    ring_weight = mesh.ring_weight
    v0 = 0.0
    v1 = 0.0
    v2 = 0.0
    for k in range(mesh.ring_start[i], mesh.ring_start[i + 1]):
        j = ring_neighbour[k]
        w = 0.5 * ring_weight[k]
        e0 = rest[i, 0] - rest[j, 0]
        e1 = rest[i, 1] - rest[j, 1]
        e2 = rest[i, 2] - rest[j, 2]
        v0 += w * ((rot[i, 0, 0] + rot[j, 0, 0]) * e0 + (rot[i, 0, 1] + rot[j, 0, 1]) * e1
                   + (rot[i, 0, 2] + rot[j, 0, 2]) * e2)
        v1 += w * ((rot[i, 1, 0] + rot[j, 1, 0]) * e0 + (rot[i, 1, 1] + rot[j, 1, 1]) * e1
                   + (rot[i, 1, 2] + rot[j, 1, 2]) * e2)
        v2 += w * ((rot[i, 2, 0] + rot[j, 2, 0]) * e0 + (rot[i, 2, 1] + rot[j, 2, 1]) * e1
                   + (rot[i, 2, 2] + rot[j, 2, 2]) * e2)
    out[i, 0] = v0
    out[i, 1] = v1
    out[i, 2] = v2


@njit(**JIT_POINT)
def _arap(i, src, dst, rotated, ring_start, ring_neighbour, ring_weight, anchor, normal):
    """One Jacobi ARAP update of vertex ``i`` from ``src`` into ``dst`` (Alg. 3.2, its rotation term ``rotated[i]``
    from :func:`_rotated`), on the tangent plane at its anchor; returns the squared move."""
    a = ring_start[i]
    b = ring_start[i + 1]
    if a == b:
        for c in range(3):
            dst[i, c] = src[i, c]
        return 0.0
    v0 = rotated[i, 0]
    v1 = rotated[i, 1]
    v2 = rotated[i, 2]
    for k in range(a, b):
        j = ring_neighbour[k]
        w = ring_weight[k]
        v0 += w * src[j, 0]
        v1 += w * src[j, 1]
        v2 += w * src[j, 2]
    t = (v0 - anchor[i, 0]) * normal[i, 0] + (v1 - anchor[i, 1]) * normal[i, 1] + (v2 - anchor[i, 2]) * normal[i, 2]
    v0 -= t * normal[i, 0]
    v1 -= t * normal[i, 1]
    v2 -= t * normal[i, 2]
    m = (v0 - src[i, 0]) ** 2 + (v1 - src[i, 1]) ** 2 + (v2 - src[i, 2]) ** 2
    dst[i, 0] = v0
    dst[i, 1] = v1
    dst[i, 2] = v2
    return m


@njit(parallel=True, **JIT_FAST)
def _relax(src, dst, mesh, scr, moves, work, n_work):
    """One ARAP Jacobi sweep, ``src`` -> ``dst``, of the vertices ``work[:n_work]`` (the active ones, their rotation
    terms ``scr.rotated`` filled); a flat one is copied. ``moves (V,)``: each vertex's squared move [m^2]. The other
    vertices are the same in ``src`` and ``dst`` and are not touched."""
    state = scr.state
    rotated = scr.rotated
    anchor = scr.anchor
    normal = scr.normal
    ring_start = mesh.ring_start
    ring_neighbour = mesh.ring_neighbour
    ring_weight = mesh.ring_weight
    for w in prange(n_work):
        i = work[w]
        if state[i] != STATE_FLAT:
            moves[i] = _arap(i, src, dst, rotated, ring_start, ring_neighbour, ring_weight, anchor, normal)
        else:
            moves[i] = 0.0
            for c in range(3):
                dst[i, c] = src[i, c]


@njit(**JIT)
def _work_list(x, mesh, prm, scr, moves, work):
    """After the start pass marked ``scr.active`` the vertices off their iso-value: add ``prm.dilation`` rings
    around them, drop the pinned ones, reset every vertex's projection (``scr.p`` and ``scr.anchor`` at ``x``, no
    normal, STATE_FREE) and list the active ones in ``work`` (so that the threads share them evenly: they gather at
    the joints), their ``moves`` infinite. Returns how many there are."""
    active = scr.active
    V = x.shape[0]
    flag = np.empty(V, dtype=np.bool_)
    for _ in range(prm.dilation):
        for i in range(V):
            on = active[i]
            if not on:
                for k in range(mesh.ring_start[i], mesh.ring_start[i + 1]):
                    if active[mesh.ring_neighbour[k]]:
                        on = True
                        break
            flag[i] = on
        for i in range(V):
            active[i] = flag[i]
    n_work = 0
    for i in range(V):
        if mesh.pinned[i]:
            active[i] = False
        scr.state[i] = STATE_FREE
        for c in range(3):
            scr.p[i, c] = x[i, c]
            scr.anchor[i, c] = x[i, c]
            scr.normal[i, c] = 0.0
        if active[i]:
            work[n_work] = i
            n_work += 1
            moves[i] = np.inf
    return n_work


@njit(**JIT_FAST)
def _final_sweeps(x, mesh, prm, scr, moves, work, n_work):
    """After a landing pass: ARAP sweeps of the vertices ``work[:n_work]`` between ``x`` and ``scr.p``, at most
    ``prm.final_sweeps``, until the largest move is below ``prm.final_tol``; they slide the landed vertices on their
    contact surface's tangent plane and relax the rest. The result is in ``x``. Returns the number of sweeps."""
    p = scr.p
    done = 0
    for sweep in range(prm.final_sweeps):
        src, dst = (x, p) if sweep % 2 == 0 else (p, x)
        _relax(src, dst, mesh, scr, moves, work, n_work)
        done += 1
        largest = 0.0
        for w in range(n_work):
            largest = max(largest, moves[work[w]])
        if math.sqrt(largest) < prm.final_tol:
            break
    if done % 2 == 1:
        for w in range(n_work):
            i = work[w]
            for c in range(3):
                x[i, c] = p[i, c]
    return done


@njit(parallel=True, **JIT_FAST)
def track(x, rot, mesh, field, muscles, params, scratch):
    """One frame of tracking (module docstring): ``x (V, 3)`` [m] in place, ``rot (V, 3, 3)``, ``mesh`` a
    :class:`TrackMesh`, ``field`` and ``muscles`` the ``SkinArrays`` and ``MuscleArrays``, ``params`` a
    :class:`TrackParams`, ``scratch`` a :class:`TrackScratch`. Returns the number of final ARAP sweeps run.

    Every field evaluation is in one parallel loop, run once per phase: phase 0 the start pass over every vertex,
    phases ``1 .. N`` the ``N`` projections of the active vertices (each followed by an ARAP sweep), phases
    ``N + 1 ..`` the ``contact_rounds`` landing passes (each followed by the final ARAP sweeps). numba compiles each
    parallel loop into a function of its own, into which it links the whole skin field: one loop compiles it once
    (design notes, *Compile time*)."""
    prm = params
    scr = scratch
    iso = mesh.iso
    eps = prm.eps
    p = scr.p
    anchor = scr.anchor
    normal = scr.normal
    state = scr.state
    active = scr.active
    lambdas = prm.lambdas
    own_leaf = mesh.own_leaf
    leaf_nodes = mesh.leaf_nodes
    landable = mesh.landable
    cos_land = prm.cos_land
    start_value = scr.start_value  # arrays a parallel loop writes are taken out of their struct first
    start_grad = scr.start_grad
    start_gap = scr.start_gap
    evaluations = scr.evaluations
    rotated = scr.rotated
    V = x.shape[0]
    T = field.node_kind.shape[0]
    N = lambdas.shape[0]
    work = np.empty(V, dtype=np.int64)
    n_work = np.int64(0)
    moves = np.zeros(V)
    quiet2 = prm.quiet * prm.quiet
    rounds = max(prm.contact_rounds, 1)
    sweeps = 0
    for phase in range(N + 1 + rounds):
        n_items = V if phase == 0 else n_work
        for chunk in prange((n_items + CHUNK - 1) // CHUNK):
            val = np.empty(T)
            grad = np.empty((T, 3))
            nodes = np.empty(T, dtype=np.bool_)
            for w in range(chunk * CHUNK, min(n_items, (chunk + 1) * CHUNK)):
                if phase == 0:
                    # the start pass: which vertices need work (off their iso-value), the field kept for the
                    # first projection and the limited correction
                    f, gx, gy, gz = evaluate_point(x[w, 0], x[w, 1], x[w, 2], val, grad, nodes, field, muscles)
                    active[w] = abs(f - iso[w]) >= eps
                    evaluations[w] = 1
                    start_value[w] = f
                    start_grad[w, 0] = gx
                    start_grad[w, 1] = gy
                    start_grad[w, 2] = gz
                    o = own_leaf[w]
                    b = beyond_contact(o, leaf_nodes, cos_land, val, grad, nodes)
                    start_gap[w] = contact_gap(o, b, val, grad) if b >= 0 else -1.0
                    continue
                i = work[w]
                if phase == 1:
                    _rotated(i, rot, mesh, rotated)  # fixed for the frame, read by the sweeps after this phase
                if phase <= N:
                    if state[i] == STATE_CONTACT or (state[i] == STATE_ON_ISO and moves[i] < quiet2):
                        # stopped at a contact, or on its iso-value and barely moved by the last sweep: no new step
                        for c in range(3):
                            p[i, c] = x[i, c]
                        continue
                    _project(i, x, lambdas[phase - 1], phase == 1, mesh, field, muscles, prm, scr, val, grad,
                             nodes)
                elif landable[i]:
                    # a sweep can carry a vertex across a contact surface after its last projection: land those
                    # once more, so the final sweeps slide them on it
                    evaluate_point(x[i, 0], x[i, 1], x[i, 2], val, grad, nodes, field, muscles)
                    evaluations[i] += 1
                    b = beyond_contact(own_leaf[i], leaf_nodes, cos_land, val, grad, nodes)
                    if b >= 0:
                        _land(i, own_leaf[i], b, prm, (x, anchor, normal), state, evaluations, val, grad, nodes,
                              field, muscles)
        if phase == 0:
            n_work = _work_list(x, mesh, prm, scr, moves, work)
        elif phase <= N:
            _relax(p, x, mesh, scr, moves, work, n_work)
        else:
            sweeps += _final_sweeps(x, mesh, prm, scr, moves, work, n_work)
    return sweeps
