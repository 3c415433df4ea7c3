"""How far each vertex may follow the implicit skin: the field's trust at bind and the limited correction per frame.

Implicit Skinning moves each vertex from its dual-quaternion position along the composed field's gradient to its
iso-value. That is only as good as the field near the vertex. On a dense body the part fields cannot follow every
detail (lips, nostrils, fingers, toes), and where two parts overlap their blend leaves the field flat. There a
vertex marches along a gradient that does not point out of the skin, or by a long way for a small change of value,
and the skin crumples. Three bind-time measures of the composed field at the rest vertices (``F_0``, ``grad F_0``)
give each vertex its **trust** ``t_i`` in [0, 1], the smallest of:

* the gradient's agreement with the vertex normal: ``cos(-grad F_0, n_i)``, 0 at ``TRUST_COS = (0.5, 0.9)[0]``
  (60 degrees apart) rising to 1 at the second value (26 degrees);
* the gradient's strength against the part's own at its iso-surface: ``|grad F_0| / g_part``, 0 at 0.3, 1 at 0.7
  (``TRUST_GRADIENT``; ``g_part`` the median over the part's vertices whose iso-value is within 0.02 of 0.5);
* the iso-value's distance from the surface value: ``|e_i - 0.5|``, 1 up to 0.05, 0 from 0.2 (``TRUST_ISO``): a
  vertex deep inside a blend sits where the field saturates.

The trust is averaged over ``TRUST_SMOOTHING`` rings so it fades in over the surface. A vertex of trust 0 keeps its
dual-quaternion position and is not tracked.

Per frame the correction ``c_i = x_i - d_i`` (tracked, volume restored ``x_i``; dual-quaternion ``d_i``) becomes
``t_i c_i``, shortened to at most ``cap_i = correction_cap * l_i`` (``l_i`` the mean length of the edges around the
vertex at rest), then smoothed by ``correction_smoothing`` sweeps of ``c_i <- (c_i + mean_ring c_k) / 2`` (a
vertex of trust 0, pinned vertices included, keeps ``c_i = 0``). Two kinds of vertex keep a longer correction and
are held through the smoothing:

* at a contact the skin must leave the DQS result by as much as the parts intersect: a vertex whose DQS position
  has passed a contact surface (inside another part, the two gradients facing, ``kernels/tracking.beyond_contact``)
  has its cap grown by its first-order distance to that surface: it makes the crease;
* a fat's bulge is not a fitting error: the cap of a vertex whose part its fats' change raises at its tracked
  position grows by how far they pushed it out, ``(f_part - f_grid) / |grad f_grid|``.

A muscle's bulge is not a fitting error either: on a part that muscles move, how far their (and the fats') change
pushed a trusted vertex out at its tracked position (the same measure, along the grid's outward normal) is taken out
of ``c_i`` before the trust, the cap and the smoothing and added back after them: the change is as smooth as the
muscles, so the bulge keeps its height and stays round.

Elsewhere a smooth correction no longer than an edge cannot fold a face over its neighbours; joint bulges show at
the scale of the mesh's own edges. The kernel is ``kernels/skin_correction.py``;
:func:`limit_correction_reference` is its numpy reference.
"""
from __future__ import annotations

import numpy as np

TRUST_COS = (0.5, 0.9)
"""cos(-grad F_0, n): trust 0 at the first value, 1 at the second."""
TRUST_GRADIENT = (0.3, 0.7)
"""|grad F_0| / g_part: trust 0 at the first value, 1 at the second."""
TRUST_ISO = (0.05, 0.2)
"""|e - 0.5|: trust 1 up to the first value, 0 from the second."""
TRUST_SMOOTHING = 3
"""Sweeps of ring averaging of the trust."""
ISO_BAND = 0.02
"""Vertices whose iso-value is within this of 0.5 give their part's gradient strength ``g_part``."""


def _ramp(x, lo, hi) -> np.ndarray:
    return np.clip((x - lo) / (hi - lo), 0.0, 1.0)


def ring_mean(values, ring_start, ring_neighbour) -> np.ndarray:
    """Mean of ``values (V,)`` or ``(V, 3)`` over each vertex's one-ring (CSR); a vertex with no ring keeps its
    value."""
    values = np.asarray(values, dtype=np.float64)
    count = np.diff(ring_start)
    rows = np.repeat(np.arange(len(count)), count)
    total = np.zeros_like(values)
    np.add.at(total, rows, values[ring_neighbour])
    shape = (-1,) + (1,) * (values.ndim - 1)
    return np.where(count.reshape(shape) > 0, total / np.maximum(count, 1).reshape(shape), values)


def smooth(values, ring_start, ring_neighbour, sweeps: int) -> np.ndarray:
    """``sweeps`` times ``v <- (v + ring mean of v) / 2``."""
    out = np.asarray(values, dtype=np.float64)
    for _ in range(sweeps):
        out = 0.5 * (out + ring_mean(out, ring_start, ring_neighbour))
    return out


def field_trust(rest, normals, iso, grads, own_part, part_count: int, ring_start, ring_neighbour) -> np.ndarray:
    """``(V,)`` trust in [0, 1] of each vertex (module docstring), from the rest positions ``rest (V, 3)`` [m], unit
    ``normals (V, 3)``, iso-values ``iso (V,)``, composed-field gradients at rest ``grads (V, 3)`` [1/m], each
    vertex's part ``own_part (V,)`` and the one-rings (CSR)."""
    g = np.linalg.norm(grads, axis=1)
    cos = -np.einsum("ij,ij->i", grads, normals) / np.maximum(g, 1e-12)
    strength = np.ones(len(rest))
    for p in range(part_count):
        mine = own_part == p
        if not mine.any():
            continue
        near = mine & (np.abs(iso - 0.5) < ISO_BAND)
        reference = np.median(g[near]) if np.count_nonzero(near) >= 10 else np.median(g[mine])
        strength[mine] = g[mine] / max(reference, 1e-12)
    trust = np.minimum.reduce([_ramp(cos, *TRUST_COS), _ramp(strength, *TRUST_GRADIENT),
                               1.0 - _ramp(np.abs(iso - 0.5), *TRUST_ISO)])
    return np.clip(smooth(trust, ring_start, ring_neighbour, TRUST_SMOOTHING), 0.0, 1.0)


def edge_scale(rest, ring_start, ring_neighbour) -> np.ndarray:
    """``(V,)`` [m] the mean length of the edges around each vertex at rest (0 for a vertex on no edge)."""
    count = np.diff(ring_start)
    rows = np.repeat(np.arange(len(count)), count)
    length = np.linalg.norm(rest[rows] - rest[ring_neighbour], axis=1)
    return np.bincount(rows, weights=length, minlength=len(count)) / np.maximum(count, 1)


def contact_distance_reference(placement, points, own_part, landing_angle: float):
    """Numpy reference of the kernel's contact check at ``points (n, 3)`` [m] of parts ``own_part (n,)``: ``(passed
    (n,) bool, distance (n,) [m])``, whether each point has passed a contact surface with another part (inside it,
    its field the larger, the own field above ``CONTACT_LOW``, the gradients facing by more than ``landing_angle``
    [deg]) and its first-order distance to that surface ``|h| / |grad h|``."""
    from ...kernels.constants import CONTACT_LOW

    values, grads = placement.leaf_reference(points)
    f, g = np.array(values), np.array(grads)  # (P, n), (P, n, 3)
    rows = np.arange(len(own_part))
    fo, go = f[own_part, rows], g[own_part, rows]
    others = f.copy()
    others[own_part, rows] = -np.inf
    b = np.argmax(others, axis=0)
    fb, gb = f[b, rows], g[b, rows]
    no, nb = np.linalg.norm(go, axis=1), np.linalg.norm(gb, axis=1)
    facing = np.einsum("ij,ij->i", go, gb) <= np.cos(np.radians(landing_angle)) * no * nb
    passed = (fo > CONTACT_LOW) & (fb > 0.5) & (fb > fo) & (no > 1e-12) & (nb > 1e-12) & facing
    gh = np.linalg.norm(go - gb, axis=1)
    distance = np.where(passed & (gh > 1e-12), np.abs(fo - fb) / np.maximum(gh, 1e-12), 0.0)
    return passed, distance


def limit_correction_reference(x, start, passed, distance, trust, cap, ring_start, ring_neighbour,
                               sweeps: int, push=None, change_push=None) -> np.ndarray:
    """Numpy reference of ``kernels.skin_correction.limit_correction``: the positions ``start + p + c`` with ``p``
    the change's push and ``c`` the trusted, capped, smoothed correction of ``x - p`` (module docstring); ``passed,
    distance`` the contact check at ``start`` (:func:`contact_distance_reference`); ``push (V,)`` [m] how far the
    fats pushed each vertex out (None: no fats); ``change_push (V, 3)`` [m] how far the muscles' and fats' change
    pushed each vertex of a part that muscles move out (:func:`change_push_reference`; None: no muscles)."""
    p = np.zeros_like(np.asarray(start)) if change_push is None else np.where((trust > 0.0)[:, None], change_push, 0.0)
    c = trust[:, None] * (np.asarray(x) - p - start)
    length = np.linalg.norm(c, axis=1)
    contact = passed & (length > 0.0)
    from ...kernels.skin_correction import PUSH_MIN

    pushed = np.zeros(len(c), dtype=bool) if push is None else (push > PUSH_MIN) & (length > 0.0)
    limit = cap + np.where(pushed, push if push is not None else 0.0, 0.0) + np.where(contact, distance, 0.0)
    c *= np.minimum(1.0, limit / np.maximum(length, 1e-300))[:, None]
    hold = (trust <= 0.0) | contact | pushed
    for _ in range(sweeps):
        c = np.where(hold[:, None], c, 0.5 * (c + ring_mean(c, ring_start, ring_neighbour)))
    return start + p + c


def change_push_reference(placement, x, own_part) -> np.ndarray:
    """``(V, 3)`` [m] how far the muscles' and fats' change pushed each point ``x (V, 3)`` [m] of part ``own_part
    (V,)`` out: the part's leaf less its grid value over the grid's gradient, along the grid's outward normal, where
    the part is moved by a muscle and the leaf is the larger; 0 elsewhere (``kernels/skin_correction._change_push``;
    ``placement`` the frame's ``SkinPlacement``, leaves from :meth:`SkinPlacement.leaf_reference`, which ignores the
    leaves' boxes)."""
    values, _, grids, _ = placement.leaf_reference(x, details=True)
    rows = np.arange(len(x))
    f = np.array(values)[own_part, rows]
    h = np.array([v for v, _ in grids])[own_part, rows]
    gh = np.array([g for _, g in grids])[own_part, rows]
    g = np.linalg.norm(gh, axis=1)
    moved = np.diff(placement.model.part_muscle_start)[own_part] > 0
    k = np.where(moved & (f > h) & (g > 1e-12), (f - h) / np.maximum(g, 1e-12) ** 2, 0.0)
    return -k[:, None] * gh
