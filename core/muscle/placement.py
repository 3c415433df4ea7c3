"""A preset muscle placed and sized from the rest skin over its bones (no Blender).

A muscle between an origin and an insertion bone starts a quarter down its origin bone and ends 15 % into its
insertion bone (the far end of the origin bone if both are the same), both moved across the bone line towards a
side of the body (:data:`SIDES`, armature space: the body faces -Y, its up is +Z, its left +X). How far: the skin
depth on that side (:func:`skin_depth`, the median distance from the bone line to the rest skin vertices within
``SIDE_CONE`` of the side, over the line's middle), not the limb's mean radius, so a heavy body's preset is not
buried in its fat nor a slim body's pushed through its skin. The axis lies ``depth`` skin depths out and the muscle
reaches ``reach`` skin depths from it towards the skin at its thickest (:func:`fitted_width`), its cross-section's
long axis along the skin.

Presets are the shipped Blender preset files (``presets/implicit_muscles/muscle/<Name>.py``, one ``muscle.<field> =
value`` line per field): :func:`preset_values` reads their numbers as text.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from .primitive import FusiformMuscle, MuscleShape
from .profile import ellipse_axes, profile_max

PRESET_FOLDER = Path(__file__).resolve().parents[2] / "presets" / "implicit_muscles" / "muscle"
"""The shipped muscle presets."""
SIDES = {"front": (0.0, -1.0, 0.0), "back": (0.0, 1.0, 0.0), "up": (0.0, 0.0, 1.0), "down": (0.0, 0.0, -1.0)}
"""Named sides of the body in armature space (``"out"``: away from the body's middle, +X on the left)."""
SIDE_CONE = 25.0
"""[deg] The skin vertices within this angle of the side, seen from the bone line, give the skin depth."""
DEPTH = 0.6
"""The muscle's axis lies this many skin depths out from its bone line."""
REACH = 0.3
"""The muscle reaches this many skin depths from its axis at its thickest, at rest."""
_LINE = re.compile(r"^\s*muscle\.(\w+)\s*=\s*([-+0-9.eE]+)\s*$")


def preset_values(name: str) -> dict:
    """``{field: float}`` of the shipped preset called ``name`` (its file name without ``.py``; case, spaces and
    underscores alike). ``ValueError`` if there is none."""
    key = name.lower().replace(" ", "_")
    for path in sorted(PRESET_FOLDER.glob("*.py")):
        if path.stem.lower().replace(" ", "_") == key:
            return {m.group(1): float(m.group(2)) for m in map(_LINE.match, path.read_text().splitlines()) if m}
    raise ValueError(f"There is no shipped muscle preset called {name!r}.")


def preset_shape(values: dict) -> MuscleShape:
    """The :class:`MuscleShape` of a preset's values (:func:`preset_values`)."""
    return MuscleShape(int(values["alpha_rest"]), int(values["beta_rest"]), int(values["alpha_active"]),
                       int(values["beta_active"]), values.get("eccentricity_rest", 0.0),
                       values.get("eccentricity_active", 0.0))


def side_vector(side, start, end) -> np.ndarray:
    """The unit direction of ``side`` (a :data:`SIDES` name, ``"out"``, or a vector) across the line ``start`` ->
    ``end`` [m] (its component along the line removed)."""
    if isinstance(side, str):
        if side == "out":
            middle = 0.5 * (np.asarray(start, float) + np.asarray(end, float))
            vector = np.array([math.copysign(1.0, middle[0]), 0.0, 0.0])
        else:
            vector = np.array(SIDES[side], dtype=np.float64)
    else:
        vector = np.asarray(side, dtype=np.float64)
    e = np.asarray(end, float) - np.asarray(start, float)
    e = e / np.linalg.norm(e)
    v = vector - (vector @ e) * e
    norm = np.linalg.norm(v)
    if norm < 1e-9:
        raise ValueError("The muscle's side runs along its bones; give a side across them.")
    return v / norm


def skin_depth(vertices, start, end, side) -> float:
    """[m] The median distance from the segment ``start`` -> ``end`` [m] to the rest skin ``vertices (V, 3)`` [m]
    whose nearest point on it lies in its middle (a quarter to three quarters) and whose direction from it is within
    ``SIDE_CONE`` of the unit ``side``, over the nearest shell (distances up to 1.5 times their lower quartile: a far
    limb seen through the cone does not count); the nearest skin vertex's distance if none is."""
    a, b = np.asarray(start, float), np.asarray(end, float)
    e = b - a
    t = (vertices - a) @ e / (e @ e)
    radial = vertices - (a + np.clip(t, 0.0, 1.0)[:, None] * e)
    r = np.linalg.norm(radial, axis=1)
    cosine = (radial @ side) / np.maximum(r, 1e-12)
    chosen = (t >= 0.25) & (t <= 0.75) & (cosine >= math.cos(math.radians(SIDE_CONE)))
    if not np.any(chosen):
        return float(r.min())
    near = r[chosen]
    return float(np.median(near[near <= 1.5 * np.percentile(near, 25)]))


def fitted_width(reach: float, shape: MuscleShape) -> float:
    """[m] The rest width at which ``shape`` (rest profile and flatness, no activation) reaches ``reach`` [m] from
    its axis towards the skin (its cross-section's short half-axis, the long one lying along the skin) at its
    thickest point, at least 2 mm."""
    u = ellipse_axes(shape.eccentricity_rest)[0]
    peak = profile_max(shape.alpha_rest, shape.beta_rest, shape.alpha_active, shape.beta_active, 0.0)
    return max(reach / (u * peak), 0.002)


def muscle_line(heads, tails, origin_bone: int, insertion_bone: int) -> tuple:
    """``(origin, insertion)`` [m] on the bone lines (before the move to a side): a quarter down the origin bone,
    15 % into the insertion bone (90 % down the origin bone if both are the same)."""
    o = heads[origin_bone] + 0.25 * (tails[origin_bone] - heads[origin_bone])
    if origin_bone == insertion_bone:
        return o, heads[origin_bone] + 0.9 * (tails[origin_bone] - heads[origin_bone])
    return o, heads[insertion_bone] + 0.15 * (tails[insertion_bone] - heads[insertion_bone])


def place_preset(rig, origin_bone: int, insertion_bone: int, preset: str, side, name: str = "muscle",
                 depth: float = DEPTH, reach: float = REACH, particles: int | None = None) -> FusiformMuscle:
    """The preset muscle called ``preset`` between two bones of ``rig`` (``core.rig.Rig``) on ``side``
    (:func:`side_vector`), ``depth`` and ``reach`` in skin depths (module docstring)."""
    shape = preset_shape(preset_values(preset))
    start, end = muscle_line(rig.heads, rig.tails, origin_bone, insertion_bone)
    unit = side_vector(side, start, end)
    d = skin_depth(rig.vertices, start, end, unit)
    kwargs = {} if particles is None else {"particles": particles}
    across = np.cross(end - start, unit)  # the cross-section's long axis lies along the skin
    across /= np.linalg.norm(across)
    return FusiformMuscle(start + depth * d * unit, end + depth * d * unit, width=fitted_width(reach * d, shape),
                          shape=shape, name=name, origin_normal=across, insertion_normal=across, **kwargs)
