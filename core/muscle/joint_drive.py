"""A muscle's activation from a joint angle: the per-frame control computed from the bones' transforms, per muscle.

A muscle may follow a joint: its ``bone`` turns relative to its ``parent`` (the bone's local rotation relative to
the rest pose), and the angle of that turn about ``axis`` (the swing-twist decomposition's twist, in radians, in
``(-pi, pi]``) is mapped to an activation in ``[0, 1]``: ``t = (angle - angle_rest) / (angle_active - angle_rest)``
clamped to ``[0, 1]``, then shaped by a ``curve``. With ``B_j = M_j M_ref_j^-1`` the bones' rest -> pose transforms
(armature space), the local rotation of ``j`` relative to rest, expressed in armature space, is
``R = rot(B_p)^T rot(B_j)``; its twist about the unit axis ``a`` (the bone's local X, Y or Z at rest, in armature
space) is ``2 atan2(vee(R - R^T) . a, 1 + trace R)`` (``vee`` the axial vector of a skew matrix): the quaternion of
``R`` with ``w >= 0`` has ``w^2 = (1 + trace R) / 4`` and vector part ``vee(R - R^T) / (4 w)``.

The keyed activation (the muscle's own animated value) is then added to the joint's (``mode`` ``"add"``, at most 1)
or replaces it (``"replace"``: the joint is not read). Plain numpy over the muscles; the host calls
:func:`driven_activation` before building the frame's :class:`core.pbd.control.MuscleInputs`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CURVES = ("linear", "smooth", "ease_in", "ease_out")
"""How ``t`` in ``[0, 1]`` becomes the activation: ``t``; ``3 t^2 - 2 t^3``; ``t^2``; ``1 - (1 - t)^2``."""
MODES = ("add", "replace")
"""What the keyed activation does with the joint's: adds to it (at most 1), or replaces it."""
MIN_RANGE = 1e-4
"""Smallest ``|angle_active - angle_rest|`` [rad] (about 0.006 degrees) of a joint range."""


@dataclass(frozen=True)
class JointDrive:
    """Which joint each of ``M`` muscles follows, built by :func:`joint_drive`.

    bone: (M,) int64                the bone whose rotation drives the muscle; -1: none (the keyed activation alone)
    parent: (M,) int64              the bone it turns relative to (its parent); -1: the armature itself
    axis: (M, 3) float64            unit axis in armature space at rest (the bone's local X, Y or Z)
    angle_rest, angle_active: (M,)  angles [rad] at which the joint's activation is 0 and 1
    curve: (M,) int64               index into :data:`CURVES`
    mode: (M,) int64                index into :data:`MODES`
    """

    bone: np.ndarray
    parent: np.ndarray
    axis: np.ndarray
    angle_rest: np.ndarray
    angle_active: np.ndarray
    curve: np.ndarray
    mode: np.ndarray

    def __len__(self) -> int:
        return len(self.bone)

    @property
    def any(self) -> bool:
        """True if at least one muscle follows a joint and reads it (mode ``"add"``)."""
        return bool(np.any((self.bone >= 0) & (self.mode == MODES.index("add"))))


def _index(values, names, what, count) -> np.ndarray:
    """``(count,)`` int64 indices into ``names`` of ``values`` (one name, names, or indices)."""
    if isinstance(values, (str, int, np.integer)):
        values = [values] * count
    out = []
    for v in values:
        if isinstance(v, str):
            key = v.lower().replace(" ", "_")
            if key not in names:
                raise ValueError(f"{what} must be one of {', '.join(names)}, got {v!r}.")
            out.append(names.index(key))
        else:
            if int(v) != v or not 0 <= int(v) < len(names):
                raise ValueError(f"{what} must be one of {', '.join(names)}, got {v!r}.")
            out.append(int(v))
    if len(out) != count:
        raise ValueError(f"expected {count} {what} values, got {len(out)}.")
    return np.array(out, dtype=np.int64)


def joint_drive(bone, parent, axis, angle_rest, angle_active, curve="linear", mode="add",
                names=None) -> JointDrive:
    """A validated :class:`JointDrive` of ``M`` muscles: ``bone``, ``parent`` ``(M,)`` ints (-1: none / the
    armature), ``axis`` ``(M, 3)`` (normalised here), angles ``(M,)`` [rad], ``curve`` and ``mode`` names or
    indices (one for all, or ``(M,)``). ``names (M,)``: the muscles' names for the messages. ``ValueError`` with a
    plain sentence for an axis of zero length or a range of zero width on a muscle that follows a joint."""
    bone = np.asarray(bone, dtype=np.int64).reshape(-1)
    M = len(bone)
    parent = np.asarray(parent, dtype=np.int64).reshape(M)
    axis = np.asarray(axis, dtype=np.float64).reshape(M, 3)
    rest = np.asarray(angle_rest, dtype=np.float64).reshape(M)
    active = np.asarray(angle_active, dtype=np.float64).reshape(M)
    names = list(names) if names is not None else [f"muscle {k}" for k in range(M)]
    length = np.linalg.norm(axis, axis=1)
    for k in np.flatnonzero(bone >= 0):
        if not (np.isfinite(length[k]) and length[k] > 1e-12):
            raise ValueError(f"{names[k]}: its joint axis has no direction; pick X, Y or Z.")
        if not (np.isfinite(rest[k]) and np.isfinite(active[k])):
            raise ValueError(f"{names[k]}: its joint angles must be finite numbers.")
        if abs(active[k] - rest[k]) < MIN_RANGE:
            raise ValueError(f"{names[k]}: its joint angles at rest and fully active are both "
                             f"{np.degrees(rest[k]):.4g} degrees; give them different values (the range that "
                             f"maps to activation 0 to 1).")
    unit = np.where(length[:, None] > 1e-12, axis / np.maximum(length, 1e-300)[:, None], 0.0)
    return JointDrive(bone, parent, unit, rest, active, _index(curve, CURVES, "curve", M),
                      _index(mode, MODES, "mode", M))


def joint_angles(transforms, drive: JointDrive) -> np.ndarray:
    """``(M,)`` twist angle [rad] of each muscle's joint bone relative to its parent and to rest, about its axis
    (module docstring), from ``transforms (B, 4, 4)`` (rest -> pose, rigid); NaN for a muscle without a joint."""
    B = np.asarray(transforms, dtype=np.float64)
    out = np.full(len(drive), np.nan)
    on = np.flatnonzero(drive.bone >= 0)
    if not len(on):
        return out
    Rj = B[drive.bone[on], :3, :3]
    Rp = np.where((drive.parent[on] >= 0)[:, None, None], B[np.maximum(drive.parent[on], 0), :3, :3], np.eye(3))
    R = np.einsum("mji,mjk->mik", Rp, Rj)  # Rp^T Rj
    vee = np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], axis=1)
    trace = np.trace(R, axis1=1, axis2=2)
    out[on] = 2.0 * np.arctan2(np.einsum("mi,mi->m", vee, drive.axis[on]), 1.0 + trace)
    return out


def curve_value(t, curve) -> np.ndarray:
    """The activation of ``t (M,)`` in ``[0, 1]`` through ``curve (M,)`` (indices into :data:`CURVES`)."""
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    curve = np.broadcast_to(np.asarray(curve, dtype=np.int64), t.shape)
    u = 1.0 - t
    values = np.stack([t, t * t * (3.0 - 2.0 * t), t * t, 1.0 - u * u])  # (len(CURVES), M), in CURVES' order
    return np.take_along_axis(values, curve[None], axis=0)[0]


def joint_activation(transforms, drive: JointDrive) -> np.ndarray:
    """``(M,)`` activation in ``[0, 1]`` each muscle's joint gives at ``transforms (B, 4, 4)``; 0 without a joint."""
    angle = joint_angles(transforms, drive)
    on = drive.bone >= 0
    span = np.where(on, drive.angle_active - drive.angle_rest, 1.0)
    t = np.where(on, (np.nan_to_num(angle) - drive.angle_rest) / span, 0.0)
    return np.where(on, curve_value(t, drive.curve), 0.0)


def driven_activation(keyed, transforms, drive: JointDrive) -> np.ndarray:
    """``(M,)`` the frame's activation: ``keyed (M,)`` (the muscles' own animated value) plus the joint's, at most 1,
    for the muscles in mode ``"add"`` that follow a joint; ``keyed`` for the others (no joint, or ``"replace"``)."""
    keyed = np.asarray(keyed, dtype=np.float64).reshape(len(drive))
    if not drive.any:
        return keyed.copy()
    joint = joint_activation(transforms, drive)
    adds = (drive.bone >= 0) & (drive.mode == MODES.index("add"))
    return np.where(adds, np.clip(keyed + joint, 0.0, 1.0), keyed)


def no_drive(count: int) -> JointDrive:
    """A :class:`JointDrive` of ``count`` muscles none of which follows a joint."""
    return JointDrive(np.full(count, -1, dtype=np.int64), np.full(count, -1, dtype=np.int64), np.zeros((count, 3)),
                      np.zeros(count), np.ones(count), np.zeros(count, dtype=np.int64),
                      np.zeros(count, dtype=np.int64))
