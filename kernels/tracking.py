"""Numba kernel: one frame of Implicit Skinning's iso-surface tracking (thesis Algorithms 3.1-3.3, Vaillant 2013).

Inputs (``V`` vertices; reference and defaults: ``core/skin/tracking.py``):
    x (V, 3) [m]          start positions (the DQS guess, or the previous frame's result), overwritten by the result
    rot (V, 3, 3)         each vertex's DQS rotation R_i
    rest (V, 3) [m]       rest positions; iso (V,): each vertex's iso-value e_i = F_0(v_ref_i)
    ring_start, ring_neighbour, ring_weight   CSR one-rings with normalised clamped cotangent weights cbar_ik
    field                 the composed skin field's tuple (``kernels/skin_field.evaluate_point``)
    lambdas (N,)          step factors of the N projection iterations (decreasing)
    eps                   |F - e| below which a vertex is on its iso-value
    cos_stop              contact stop: a vertex whose gradient turns by more than acos(cos_stop) between two
                          iterations stops there (it reached the contact surface) ...
    contact_band          ... if its value is within contact_band of its iso-value (the contact surface is on the
                          0.5-iso; deep inside a part, where the field flattens, a turning gradient is noise)
    bisect_steps          most dichotomy steps (regula falsi) when a step crosses the iso-value
    trust [m]             a projection step shorter than this is taken without evaluating the field at its end
                          (Alg. 3.1's checks guard long steps; at this scale the field is linear)
    max_step [m]          a longer projection or landing step is shortened to this length
    dilation              rings around the vertices that start off their iso-value that are worked on too (ARAP
                          spreads the correction); all other vertices keep their start position
    quiet [m]             a vertex found on its iso-value that the following ARAP sweep moved less than this takes
                          no projection step in the next iteration (only vertices whose value can have moved work)
    final_sweeps, final_tol [m]   ARAP sweeps after the loop, until the largest move is below final_tol
    own_leaf (V,)         the composition tree's leaf node of each vertex's part; leaf_nodes (P,) every leaf node
    landable (V,) bool    vertices the contact landing may move (all False: no landing)
    cos_land, land_steps  the landing's gradient angle (:func:`beyond_contact`) and its most Newton steps
Scratch/outputs: p, anchor, normal, g_prev (V, 3); state (V,) int8 (see STATE_*); active (V,) bool.

Each iteration: PROJECTION (Alg. 3.1) of every active vertex that has not stopped, then one ARAP Jacobi sweep
(Alg. 3.2): ``v_i <- sum_k cbar_ik (p_k + 1/2 (R_i + R_k)(v_ref_i - v_ref_k))``, projected on the tangent plane at
the vertex's projected point. Then ARAP sweeps to convergence (Alg. 3.3). Stopped (contact) vertices take no more
projection steps but still relax on the tangent plane where they stopped, so the crease stays smooth (freezing
them left more folds at the crease's end: 38 triangles crossing at 130 degrees on the arm instead of 22, by the
measure of that time); inactive vertices keep their start position and act as the boundary of the relaxation.

CONTACT LANDING (ours; the thesis has only the gradient-angle stop). The contact operator is 0.5 on the contact
surface ``f_own = f_other`` and rises on both sides of it, so a vertex whose iso-value is above 0.5 finds it before
reaching the surface, from either side, and the gradient-angle stop catches a vertex wherever its gradient happens
to turn (near a muscle it turns for other reasons). On the arm bent 130 degrees with its four muscles that left
vertices up to 8 mm past the surface and 56 skin triangles crossing the other side. So a projection first checks
whether the vertex has passed a contact surface (:func:`beyond_contact`: inside the other part where its field
is the larger, the two gradients facing each other) and if so lands it on that surface by Newton steps on
``h = f_own - f_other`` (:func:`_land`): it stops there with the surface's tangent plane, which the ARAP sweeps
keep it on. Once more after the loop, as a sweep can carry a vertex across. The leaves' values and gradients are
the ones :func:`evaluate_point` computes anyway, so a vertex that has not passed costs nothing more.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .skin_field import evaluate_point
from .constants import (JIT_FAST, CONTACT_LOW, STATE_CONTACT, STATE_CROSSED, STATE_FLAT, STATE_FREE, STATE_ON_ISO,
                        STATE_WORSE)


CHUNK = 64


@njit(**JIT_FAST)
def _stop_at(i, y0, y1, y2, p, anchor):
    """Vertex ``i``'s projected point and the anchor of its tangent plane are ``(y0, y1, y2)``."""
    p[i, 0] = y0
    p[i, 1] = y1
    p[i, 2] = y2
    anchor[i, 0] = y0
    anchor[i, 1] = y1
    anchor[i, 2] = y2


@njit(**JIT_FAST)
def _project(i, x, iso, lam, eps, cos_stop, contact_band, bisect_steps, trust, max_step, first, p, anchor, normal,
             g_prev, state, val, grad, active_nodes, field, own_leaf, leaf_nodes, landable, cos_land, land_steps):
    """Algorithm 3.1 for vertex ``i``, with the contact landing first: writes ``p[i]``, ``anchor[i]``,
    ``normal[i]``, ``state[i]``."""
    x0 = x[i, 0]
    x1 = x[i, 1]
    x2 = x[i, 2]
    f, gx, gy, gz = evaluate_point(x0, x1, x2, val, grad, active_nodes, field)
    g2 = gx * gx + gy * gy + gz * gz
    p[i, 0] = x0
    p[i, 1] = x1
    p[i, 2] = x2
    if landable[i]:
        b = beyond_contact(own_leaf[i], leaf_nodes, cos_land, val, grad, active_nodes)
        if b >= 0:
            _land(i, own_leaf[i], b, land_steps, trust, max_step, p, anchor, normal, state, val, grad, active_nodes,
                  field)
            return
    if g2 < 1e-16:
        state[i] = STATE_FLAT
        return
    gn = math.sqrt(g2)
    nx = gx / gn
    ny = gy / gn
    nz = gz / gn
    d = f - iso[i]
    if not first and abs(d) < contact_band and nx * g_prev[i, 0] + ny * g_prev[i, 1] + nz * g_prev[i, 2] < cos_stop:
        state[i] = STATE_CONTACT
        return
    g_prev[i, 0] = nx
    g_prev[i, 1] = ny
    g_prev[i, 2] = nz
    anchor[i, 0] = x0
    anchor[i, 1] = x1
    anchor[i, 2] = x2
    normal[i, 0] = nx
    normal[i, 1] = ny
    normal[i, 2] = nz
    if abs(d) < eps:
        state[i] = STATE_ON_ISO
        return
    s = -lam * d / g2
    if abs(s) * gn > max_step:
        # a long step leaves the region where the field is close to linear: it can cross a thin part of the field
        # and bracket the iso-value on the far side of the limb, so the vertex jumps there (spikes of 6-8 cm on the
        # arm's curl before this bound)
        s *= max_step / (abs(s) * gn)
    y0 = x0 + s * gx
    y1 = x1 + s * gy
    y2 = x2 + s * gz
    if abs(s) * gn < trust:
        # a step shorter than `trust`: the field is linear at that scale, take it without checking it
        _stop_at(i, y0, y1, y2, p, anchor)
        state[i] = STATE_FREE
        return
    f2, hx, hy, hz = evaluate_point(y0, y1, y2, val, grad, active_nodes, field)
    d2 = f2 - iso[i]
    if d * (d - d2) < 0.0:
        state[i] = STATE_WORSE
        return
    if d * d2 < 0.0:
        # dichotomy on [x, y] by regula falsi (Illinois variant): the bracket keeps one end on each side of the
        # iso-value like a bisection, the split point follows the values' linear interpolation, so a smooth field
        # is bracketed to eps in 2-4 evaluations instead of 10-14
        a0, a1, a2, da = x0, x1, x2, d
        b0, b1, b2, db = y0, y1, y2, d2
        side = 0
        for _ in range(bisect_steps):
            t = da / (da - db)
            t = min(max(t, 0.05), 0.95)
            m0 = a0 + t * (b0 - a0)
            m1 = a1 + t * (b1 - a1)
            m2 = a2 + t * (b2 - a2)
            fm, mx, my, mz = evaluate_point(m0, m1, m2, val, grad, active_nodes, field)
            dm = fm - iso[i]
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
            if abs(dm) < eps:
                break
        if abs(da) < abs(db):
            y0, y1, y2 = a0, a1, a2
        else:
            y0, y1, y2 = b0, b1, b2
        state[i] = STATE_CROSSED
    else:
        state[i] = STATE_FREE
    _stop_at(i, y0, y1, y2, p, anchor)
    h2 = hx * hx + hy * hy + hz * hz
    if h2 > 1e-16:
        hn = math.sqrt(h2)
        normal[i, 0] = hx / hn
        normal[i, 1] = hy / hn
        normal[i, 2] = hz / hn


@njit(**JIT_FAST)
def beyond_contact(o, leaf_nodes, cos_land, val, grad, nodes):
    """After :func:`evaluate_point` filled ``val, grad, nodes``: the leaf node of the other part whose contact
    surface a vertex of leaf ``o`` has passed, or -1. Passed means: inside that part's volume (its field above 0.5)
    where its field exceeds the vertex's own part's (``h = f_own - f_other < 0``), the own field in the contact
    range (above ``CONTACT_LOW``), and the two gradients facing each other by more than ``acos(cos_land)`` (two
    parts of one joint at rest overlap with nearly parallel gradients: that is no contact)."""
    if o < 0 or not nodes[o] or val[o] <= CONTACT_LOW:
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


@njit(**JIT_FAST)
def _land(i, o, b, steps, tol, max_step, p, anchor, normal, state, val, grad, nodes, field):
    """Land vertex ``i`` (at ``p[i]``, where ``val, grad`` were evaluated) on the contact surface ``h = f_o - f_b
    = 0`` of leaves ``o`` and ``b``: at most ``steps`` Newton steps along ``grad h``, until a step is shorter than
    ``tol`` [m]. The vertex stops there (STATE_CONTACT), its anchor and normal are the contact surface's, so the
    ARAP sweeps slide it on that surface."""
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
        evaluate_point(y0, y1, y2, val, grad, nodes, field)
        if val[o] <= 0.0 or val[b] <= 0.0:
            break
    _stop_at(i, y0, y1, y2, p, anchor)
    state[i] = STATE_CONTACT


@njit(parallel=True, **JIT_FAST)
def _land_pass(x, active, landable, own_leaf, leaf_nodes, cos_land, steps, tol, max_step, anchor, normal, state,
               field):
    """Land every active vertex that has passed a contact surface (:func:`_land`), in place in ``x`` (checking only
    the vertices the last sweep moved by ``quiet`` or more saved no measurable time and left a few more skin
    triangles crossing)."""
    V = x.shape[0]
    T = field[0].shape[0]
    for chunk in prange((V + CHUNK - 1) // CHUNK):
        val = np.empty(T)
        grad = np.empty((T, 3))
        nodes = np.empty(T, dtype=np.bool_)
        for i in range(chunk * CHUNK, min(V, (chunk + 1) * CHUNK)):
            if active[i] and landable[i]:
                evaluate_point(x[i, 0], x[i, 1], x[i, 2], val, grad, nodes, field)
                b = beyond_contact(own_leaf[i], leaf_nodes, cos_land, val, grad, nodes)
                if b >= 0:
                    _land(i, own_leaf[i], b, steps, tol, max_step, x, anchor, normal, state, val, grad, nodes, field)


@njit(parallel=True, **JIT_FAST)
def contact_passed(points, own_leaf, leaf_nodes, cos_land, field, out):
    """``out (n,)`` bool: whether each point, a vertex of leaf ``own_leaf[n]``, has passed a contact surface
    (:func:`beyond_contact`)."""
    n = points.shape[0]
    T = field[0].shape[0]
    for chunk in prange((n + CHUNK - 1) // CHUNK):
        val = np.empty(T)
        grad = np.empty((T, 3))
        nodes = np.empty(T, dtype=np.bool_)
        for q in range(chunk * CHUNK, min(n, (chunk + 1) * CHUNK)):
            evaluate_point(points[q, 0], points[q, 1], points[q, 2], val, grad, nodes, field)
            out[q] = beyond_contact(own_leaf[q], leaf_nodes, cos_land, val, grad, nodes) >= 0


@njit(**JIT_FAST)
def _arap(i, src, dst, rot, rest, ring_start, ring_neighbour, ring_weight, anchor, normal):
    """One Jacobi ARAP update of vertex ``i`` from ``src`` into ``dst``, on the tangent plane at its anchor;
    returns the squared move."""
    a = ring_start[i]
    b = ring_start[i + 1]
    if a == b:
        for c in range(3):
            dst[i, c] = src[i, c]
        return 0.0
    v0 = 0.0
    v1 = 0.0
    v2 = 0.0
    for k in range(a, b):
        j = ring_neighbour[k]
        w = ring_weight[k]
        e0 = rest[i, 0] - rest[j, 0]
        e1 = rest[i, 1] - rest[j, 1]
        e2 = rest[i, 2] - rest[j, 2]
        r0 = (rot[i, 0, 0] + rot[j, 0, 0]) * e0 + (rot[i, 0, 1] + rot[j, 0, 1]) * e1 + (rot[i, 0, 2] + rot[j, 0, 2]) * e2
        r1 = (rot[i, 1, 0] + rot[j, 1, 0]) * e0 + (rot[i, 1, 1] + rot[j, 1, 1]) * e1 + (rot[i, 1, 2] + rot[j, 1, 2]) * e2
        r2 = (rot[i, 2, 0] + rot[j, 2, 0]) * e0 + (rot[i, 2, 1] + rot[j, 2, 1]) * e1 + (rot[i, 2, 2] + rot[j, 2, 2]) * e2
        v0 += w * (src[j, 0] + 0.5 * r0)
        v1 += w * (src[j, 1] + 0.5 * r1)
        v2 += w * (src[j, 2] + 0.5 * r2)
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
def _relax(src, dst, active, state, rot, rest, ring_start, ring_neighbour, ring_weight, anchor, normal, moves):
    """One ARAP Jacobi sweep of every active vertex that is not flat, ``src`` -> ``dst``; the others are copied.
    ``moves (V,)``: each vertex's squared move [m^2]."""
    for i in prange(src.shape[0]):
        if active[i] and state[i] != STATE_FLAT:
            moves[i] = _arap(i, src, dst, rot, rest, ring_start, ring_neighbour, ring_weight, anchor, normal)
        else:
            moves[i] = 0.0
            for c in range(3):
                dst[i, c] = src[i, c]


@njit(parallel=True, **JIT_FAST)
def track(x, rot, rest, iso, ring_start, ring_neighbour, ring_weight, field, lambdas, eps, cos_stop, contact_band,
          bisect_steps, trust, max_step, dilation, quiet, final_sweeps, final_tol, p, anchor, normal, g_prev, state,
          active, pinned, own_leaf, leaf_nodes, landable, cos_land, land_steps):
    """One frame of tracking (module docstring); ``pinned (V,)`` bool: vertices that keep their start position (open
    borders, ``core/skin/tracking.py``). Returns the number of final ARAP sweeps run."""
    V = x.shape[0]
    T = field[0].shape[0]
    n_chunks = (V + CHUNK - 1) // CHUNK
    # which vertices need work: off their iso-value at the start, then `dilation` rings around them
    for chunk in prange(n_chunks):
        val = np.empty(T)
        grad = np.empty((T, 3))
        nodes = np.empty(T, dtype=np.bool_)
        for i in range(chunk * CHUNK, min(V, (chunk + 1) * CHUNK)):
            f, _, _, _ = evaluate_point(x[i, 0], x[i, 1], x[i, 2], val, grad, nodes, field)
            active[i] = abs(f - iso[i]) >= eps
    flag = np.empty(V, dtype=np.bool_)
    for _ in range(dilation):
        for i in prange(V):
            on = active[i]
            if not on:
                for k in range(ring_start[i], ring_start[i + 1]):
                    if active[ring_neighbour[k]]:
                        on = True
                        break
            flag[i] = on
        for i in prange(V):
            active[i] = flag[i]
    for i in prange(V):
        if pinned[i]:
            active[i] = False
    moves = np.full(V, np.inf)
    quiet2 = quiet * quiet
    for i in prange(V):
        state[i] = STATE_FREE
        for c in range(3):
            p[i, c] = x[i, c]
            anchor[i, c] = x[i, c]
            normal[i, c] = 0.0
    for n in range(lambdas.shape[0]):
        for chunk in prange(n_chunks):
            val = np.empty(T)
            grad = np.empty((T, 3))
            nodes = np.empty(T, dtype=np.bool_)
            for i in range(chunk * CHUNK, min(V, (chunk + 1) * CHUNK)):
                if not active[i]:
                    continue
                if state[i] == STATE_CONTACT or (state[i] == STATE_ON_ISO and moves[i] < quiet2):
                    # stopped at a contact, or on its iso-value and barely moved by the last sweep: no new step
                    for c in range(3):
                        p[i, c] = x[i, c]
                    continue
                _project(i, x, iso, lambdas[n], eps, cos_stop, contact_band, bisect_steps, trust, max_step, n == 0, p,
                         anchor, normal, g_prev, state, val, grad, nodes, field, own_leaf, leaf_nodes, landable,
                         cos_land, land_steps)
        _relax(p, x, active, state, rot, rest, ring_start, ring_neighbour, ring_weight, anchor, normal, moves)
    # a sweep can carry a vertex across a contact surface after its last projection: land those once more, so the
    # final sweeps slide them on it
    _land_pass(x, active, landable, own_leaf, leaf_nodes, cos_land, land_steps, trust, max_step, anchor, normal, state,
               field)
    sweeps = 0
    for sweep in range(final_sweeps):
        src, dst = (x, p) if sweep % 2 == 0 else (p, x)
        _relax(src, dst, active, state, rot, rest, ring_start, ring_neighbour, ring_weight, anchor, normal, moves)
        sweeps += 1
        if math.sqrt(moves.max()) < final_tol:
            break
    if sweeps % 2 == 1:
        for i in prange(V):
            for c in range(3):
                x[i, c] = p[i, c]
    return sweeps
