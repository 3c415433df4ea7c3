"""Constants shared by the kernels and the core: numba options, indices into packed arrays, state codes.

Imports nothing heavy (no numba), so ``core/`` reads the same definitions the kernels compile against.
"""
from __future__ import annotations

JIT = dict(cache=True, nogil=True, error_model="numpy")
"""numba options of the kernels that keep strict IEEE arithmetic (axis geometry, profiles, sampling, distances)."""
JIT_FAST = dict(JIT, fastmath={"contract", "arcp", "nsz"})
"""numba options of the arithmetic kernels: fused multiply-add, reciprocal multiplication and no signed zeros. NaN
and infinity keep their meaning (no ``nnan``/``ninf``), so the kernels' guards still work."""
JIT_FAST_LIBM = dict(JIT, fastmath={"contract", "arcp", "nsz", "afn"})
"""``JIT_FAST`` plus approximate libm functions: the muscle field (kernel against reference within 1e-12)."""
JIT_POINT = dict(JIT_FAST, _nrt=False)
"""``JIT_FAST`` without numba's reference counting: the per-point functions that take the kernels' structs (the
skin field at one point, one vertex's projection) and the PBD substep's helpers. They allocate nothing; with
counting on, every call counts every array of its structs up and down, atomic operations that the threads contend
for."""
JIT_POINT_LIBM = dict(JIT_FAST_LIBM, _nrt=False)
"""``JIT_FAST_LIBM`` without reference counting: one muscle's field at one point (as ``JIT_POINT``)."""

# muscle scalars: columns of ``MuscleBatch.muscle_scalar (M, SCALAR_COUNT)``
SCALAR_LENGTH = 0
"""Axis length ``l`` [m]."""
SCALAR_C0 = 1
"""Coefficient of the rest monomial ``s^(a0-1) (1-s)^(b0-1)`` in ``Phi_a`` (paper §5.2):
``(1 - a) / (sqrt(B(2 a0 - 1, 2 b0 - 1)) sqrt(F(a)))``."""
SCALAR_C1 = 2
"""Coefficient of the active monomial ``s^(a1-1) (1-s)^(b1-1)`` in ``Phi_a``:
``a / (sqrt(B(2 a1 - 1, 2 b1 - 1)) sqrt(F(a)))``."""
SCALAR_WIDTH = 3
"""Width ``w = sqrt(V / (pi l))`` times the width scale [m] (paper eq. 3)."""
SCALAR_U = 4
"""Cross-section half-axis ``u = (1 - e^2)^(1/4)`` (paper eq. 5)."""
SCALAR_V = 5
"""Cross-section half-axis ``v = 1 / u``."""
SCALAR_SUPPORT = 6
"""Compact-support radius ``R`` [m] of ``K(f_M)`` (thesis §6.1)."""
SCALAR_REACH = 7
"""Largest surface radius ``w v max(Phi)`` [m]: beyond ``reach + support`` from the axis box, ``K(f_M) = 0``."""
SCALAR_COUNT = 8

MIN_SEGMENT_LENGTH = 1e-12
"""An axis segment shorter than this [m] has no direction."""
SLERP_SMALL_ANGLE = 1e-6
"""Below this angle [rad] between two normals, slerp is a linear blend."""
MIN_DISTANCE = 1e-12
"""A query closer than this [m] to a muscle's axis is on it: the directions to it are taken as 0."""
DEGENERATE_NORMAL = 1e-6
"""A unit normal shorter than this once projected orthogonal to the axis is undefined (parallel to the axis)."""

RAY_EDGE_TOLERANCE = 1e-9
"""Barycentric slack of a ray against a triangle (``kernels/ray_cast.py``): a ray through an edge or a corner meets
the triangles on both sides of it, so rounding never lets it slip between them."""

# axis status codes (kernels/axis.py)
STATUS_OK = 0
STATUS_ZERO_LENGTH = 1
STATUS_ORIGIN_NORMAL_PARALLEL = 2
STATUS_INSERTION_NORMAL_PARALLEL = 3
STATUS_NO_NORMAL = 4
STATUS_NOT_FINITE = 5

# composition tree node kinds (core/skin/field.py, kernels/skin_field.py)
NODE_PART = 0
"""A leaf: one bone's part field (its HRBF grid, with its muscles)."""
NODE_CONTACT = 1
"""The gradient-based contact operator of two children."""
NODE_CLEAN = 2
"""The clean union of two children."""
NODE_MAX = 3
"""The max union of two children."""

CONTACT_LOW = 0.3
LAND_OWN_LOW = 0.45
"""The contact region starts where the smaller of two fields exceeds this (inside the larger one's volume)."""

# per-vertex outcome of the last tracking projection step (core/skin/tracking.py, kernels/tracking.py)
STATE_FREE = 0
"""Moved by a projection step."""
STATE_ON_ISO = 1
"""Already on its iso-value."""
STATE_CONTACT = 2
"""Stopped at a contact (the gradient turned, or landed on a contact surface)."""
STATE_CROSSED = 3
"""Crossed its iso-value: placed on it by dichotomy."""
STATE_WORSE = 4
"""The step made the field value worse: stayed."""
STATE_FLAT = 5
"""No usable gradient: stayed."""
