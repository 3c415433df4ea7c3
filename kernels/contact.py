"""Numba kernels: what the two muscle solvers share at a contact (the paper's axis, ``kernels/pbd.py``, and the
VIPER rod, ``kernels/rod.py``).

* :func:`particle_radius`: an axis particle's collision radius ``D = w Phi_a(s)`` (paper §6.3).
* :func:`push`: PBD mode, a Newton step out of a contact ``C < 0`` along its gradient, then friction removing a
  fraction ``eta`` of the substep's tangential displacement (thesis §5.3.3).
* :func:`contact`: XPBD mode, the same step, then Coulomb friction and a viscous drag on the particle's slide
  relative to the surface it touches.
* :func:`contact_keep`: the fraction of that slide the drag keeps per substep, from the muscle's first mode.
* :func:`stiffness_frequency`: the artist's stiffness ``k`` as the first mode's natural frequency (XPBD mode), which
  the axis solver's springs and both solvers' contact drag read.

Vectors travel as 3-tuples of floats: ``g`` a contact's gradient (any length), ``s`` [m] the touched surface's
displacement over the substep at the contact. Positions ``x``, ``x_prev (P, 3)`` [m] are written in place (row
``k``).
"""
from __future__ import annotations

import math

from numba import njit

from .constants import JIT_FAST, SCALAR_C0, SCALAR_C1, SCALAR_WIDTH
from .fusiform import _monomial

F_HALF = 10.0
"""[Hz] natural frequency of a muscle of stiffness 0.5 in XPBD mode (:func:`stiffness_frequency`)."""
F_EXPONENT = 0.75
"""Exponent of ``k / (1 - k)`` in :func:`stiffness_frequency`."""
RIGID_STIFFNESS = 1.0 - 1e-6
"""XPBD: a stiffness at least this is rigid (:func:`stiffness_frequency`): its frequency, 32 kHz, is far beyond what
a substep resolves, and nearer 1 the spring solve's compliance falls under the rounding of the inverse masses."""


@njit(**JIT_FAST)
def particle_radius(m, s, expo, scal):
    """Radius [m] of the axis particle at parameter ``s`` of muscle ``m``: ``D = w Phi_a(s)`` (paper §6.3), from the
    muscle batch's exponents ``expo (M, 4)`` and scalars ``scal (M, SCALAR_COUNT)``."""
    v0, _, _ = _monomial(expo[m, 0], expo[m, 1], s)
    v1, _, _ = _monomial(expo[m, 2], expo[m, 3], s)
    return scal[m, SCALAR_WIDTH] * (scal[m, SCALAR_C0] * v0 + scal[m, SCALAR_C1] * v1)


@njit(**JIT_FAST)
def push(x, x_prev, k, cx, g, share, friction):
    """PBD: resolve ``C = cx < 0`` along the gradient ``g`` (a Newton step, ``share`` of it), then remove
    ``friction`` of the substep's tangential displacement of particle ``k``."""
    gx, gy, gz = g
    g2 = gx * gx + gy * gy + gz * gz
    if g2 < 1e-24:
        return
    s = -cx * share / g2
    x[k, 0] += s * gx
    x[k, 1] += s * gy
    x[k, 2] += s * gz
    gn = math.sqrt(g2)
    nx = gx / gn
    ny = gy / gn
    nz = gz / gn
    dx = x[k, 0] - x_prev[k, 0]
    dy = x[k, 1] - x_prev[k, 1]
    dz = x[k, 2] - x_prev[k, 2]
    dn = dx * nx + dy * ny + dz * nz
    x[k, 0] -= friction * (dx - dn * nx)
    x[k, 1] -= friction * (dy - dn * ny)
    x[k, 2] -= friction * (dz - dn * nz)


@njit(**JIT_FAST)
def contact(x, x_prev, k, cx, g, share, surface, mu, keep):
    """XPBD: resolve ``C = cx < 0`` along the gradient ``g`` (a Newton step, ``share`` of it), then friction on
    particle ``k``'s slide over the substep relative to the surface (``surface``: the surface point's displacement
    over the substep [m]): Coulomb's law stops up to ``mu`` times the push (static friction below it), and what
    slides on keeps ``keep`` of its length (viscous damping, :func:`contact_keep`)."""
    gx, gy, gz = g
    sx, sy, sz = surface
    g2 = gx * gx + gy * gy + gz * gz
    if g2 < 1e-24:
        return
    s = -cx * share / g2
    x[k, 0] += s * gx
    x[k, 1] += s * gy
    x[k, 2] += s * gz
    gn = math.sqrt(g2)
    pushed = abs(s) * gn
    nx = gx / gn
    ny = gy / gn
    nz = gz / gn
    dx = x[k, 0] - x_prev[k, 0] - sx
    dy = x[k, 1] - x_prev[k, 1] - sy
    dz = x[k, 2] - x_prev[k, 2] - sz
    dn = dx * nx + dy * ny + dz * nz
    tx = dx - dn * nx
    ty = dy - dn * ny
    tz = dz - dn * nz
    slide = math.sqrt(tx * tx + ty * ty + tz * tz)
    if slide <= 0.0:
        return
    stop = 1.0 - max(slide - mu * pushed, 0.0) * keep / slide
    x[k, 0] -= stop * tx
    x[k, 1] -= stop * ty
    x[k, 2] -= stop * tz


@njit(**JIT_FAST)
def stiffness_frequency(k):
    """XPBD: natural frequency [Hz] of the first mode of a belly of stiffness ``k`` in [0, 1): ``F_HALF (k / (1 -
    k))^F_EXPONENT`` (``kernels/pbd.py``'s module docstring). ``k <= 0``: 0; ``k >= RIGID_STIFFNESS``: infinite
    (rigid)."""
    if k <= 0.0:
        return 0.0
    if k >= RIGID_STIFFNESS:
        return math.inf
    return F_HALF * (k / (1.0 - k)) ** F_EXPONENT


@njit(**JIT_FAST)
def contact_keep(k, contact_damping, dt):
    """XPBD: the fraction of a slide over a contact kept per substep of ``dt`` [s]: ``exp(-gamma dt)``, a viscous
    drag ``-m gamma v_T`` taken exactly over the substep, with ``gamma = 2 zeta_c omega(k)`` (``zeta_c`` the
    contact damping ratio, ``omega = 2 pi f(k)`` the muscle's first mode, :func:`stiffness_frequency`): a slide
    decays as ``exp(-gamma t)`` whatever the substeps, over about one swing of a tense muscle and several of a
    loose one."""
    f = stiffness_frequency(k)
    if f == math.inf:
        return 0.0
    return math.exp(-4.0 * math.pi * contact_damping * f * dt)
