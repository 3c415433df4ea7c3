"""Input checks shared by the headless core.

Every public core function validates its input here and raises ``ValueError`` with a plain sentence that names
the offending value and says what is allowed, so Blender operators can show the message as it is.
"""
from __future__ import annotations

import numbers

import numpy as np

SHAPE_MIN = 1
"""Smallest allowed beta-profile exponent (the paper's dorsal preset uses alpha0 = 1)."""
SHAPE_MAX = 9
"""Largest allowed beta-profile exponent (paper §5.2: larger values give unrealistically sharp profiles)."""
ECCENTRICITY_MAX = 0.99
"""Largest allowed cross-section eccentricity: e must be < 1, and e = 0.99 already gives an 1:7 ellipse."""
FLOAT32_SLACK = 1e-6
"""An eccentricity at most this far above ``ECCENTRICITY_MAX`` is taken as the maximum: hosts store values in
float32, where 0.99 is 0.99000001 (Blender's slider at its maximum)."""


def shape_exponent(value, name: str) -> int:
    """Return ``value`` as an int if it is an integer in ``[SHAPE_MIN, SHAPE_MAX]``, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real)):
        raise ValueError(f"{name} must be a whole number from {SHAPE_MIN} to {SHAPE_MAX}, got {value!r}.")
    if not np.isfinite(value) or float(value) != int(value):
        raise ValueError(f"{name} must be a whole number from {SHAPE_MIN} to {SHAPE_MAX}, got {value!r}.")
    ivalue = int(value)
    if not SHAPE_MIN <= ivalue <= SHAPE_MAX:
        raise ValueError(f"{name} must be a whole number from {SHAPE_MIN} to {SHAPE_MAX}, got {ivalue}.")
    return ivalue


def eccentricity(value, name: str = "eccentricity") -> float:
    """Return ``value`` as a float if it lies in ``[0, ECCENTRICITY_MAX]`` (``FLOAT32_SLACK`` above is clamped to
    it), else raise ``ValueError``."""
    e = _finite_scalar(value, name)
    if not 0.0 <= e <= ECCENTRICITY_MAX + FLOAT32_SLACK:
        raise ValueError(
            f"{name} must be from 0 (round) to {ECCENTRICITY_MAX} (flat), got {e:g}; 1 or more is not an ellipse."
        )
    return min(e, ECCENTRICITY_MAX)


def unit_interval(value, name: str) -> float:
    """Return ``value`` as a float if it lies in ``[0, 1]``, else raise ``ValueError``."""
    x = _finite_scalar(value, name)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} must be from 0 to 1, got {x:g}.")
    return x


def positive(value, name: str) -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise ``ValueError``."""
    x = _finite_scalar(value, name)
    if not x > 0.0:
        raise ValueError(f"{name} must be greater than 0, got {x:g}.")
    return x


def _finite_scalar(value, name: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}.") from None
    if not np.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {x}.")
    return x


def points(array, name: str, min_count: int = 1) -> np.ndarray:
    """Return ``array`` as a C-contiguous ``(n, 3) float64`` array of finite values with ``n >= min_count``."""
    try:
        a = np.ascontiguousarray(array, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of 3D points.") from None
    if a.ndim == 1 and a.shape[0] == 3:
        a = a.reshape(1, 3)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{name} must have shape (n, 3), got {a.shape}.")
    if a.shape[0] < min_count:
        raise ValueError(f"{name} needs at least {min_count} points, got {a.shape[0]}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite coordinates.")
    return a


def vector3(v, name: str) -> np.ndarray:
    """Return ``v`` as a finite ``(3,) float64`` array."""
    return points(v, name).reshape(3)
