"""The fat primitives' dynamics (thesis ch. 6, Fig. 6.13): one particle per fat, at the ellipsoid's centre, tied
by four springs to kinematic anchors on its bone; model, state, control and solver, as the muscles' PBD has them.

* :class:`FatModel` (built once by :func:`build_fat_model`): each fat's bone, rest centre and frame, semi-axes,
  mass, its anchors in rest space (a regular tetrahedron around the centre in the fat's frame, at the anchor
  distance), the springs' rest lengths, the bone capsules and each fat's rest distance to them.
* :class:`FatState`: the particles' positions and velocities, and the last frame's anchors, capsules and ellipsoid
  frames (the targets are interpolated from there within the next frame).
* :class:`FatControl`: one frame's kinematic targets (from the bones' rest -> posed transforms) and the animated
  stiffness and damping.
* :class:`FatSolver`: ``step(state_in, state_out, control, dt)`` runs ``kernels/fat.fat_step`` and never writes
  ``state_in``; :func:`step_reference` is its numpy reference.

A fat's centre never leaves where its bone carries it by more than its travel, ``TRAVEL`` times its smallest
semi-axis: soft springs on a fast body (a jump's take-off and landing) would otherwise leave it tens of centimetres
behind, through the skin and into other limbs (docs/design-notes.md#the-fats-travel-half-its-smallest-semi-axis).

Stiffness has one meaning, a natural frequency: ``stiffness_frequency(s) = 0.5 * 16**s`` Hz (0.5 Hz at 0, 2 Hz at
0.5, 8 Hz at 1), whatever the fat's size and mass; damping is the damping ratio (0 undamped, 1 critical).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


FREQUENCY_LOW = 0.5
"""[Hz] the natural frequency at stiffness 0."""
FREQUENCY_HIGH = 8.0
"""[Hz] the natural frequency at stiffness 1."""
TRAVEL = 0.5
"""How far a fat's centre may leave where its bone carries it, in its smallest semi-axes."""
_TETRAHEDRON = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]]) / np.sqrt(3.0)
"""The anchors' unit directions from the centre in the fat's frame: ``sum d d^T = 4/3 I``."""


def stiffness_frequency(stiffness) -> np.ndarray:
    """Natural frequency [Hz] of a fat of ``stiffness`` (0..1): ``0.5 * 16**s`` (module docstring)."""
    s = np.clip(np.asarray(stiffness, dtype=np.float64), 0.0, 1.0)
    return FREQUENCY_LOW * (FREQUENCY_HIGH / FREQUENCY_LOW) ** s


@dataclass(frozen=True)
class FatModel:
    """What does not change (``F`` fats, ``C`` bone capsules).

    bone: (F,) int64 the bone each fat hangs on (its anchors move with it)
    center: (F, 3) float64 [m] rest centres; frame: (F, 3, 3) rest frames (columns: semi-axis directions)
    axes: (F, 3) float64 [m] semi-axes; mass: (F,) float64 [kg]
    anchors: (F, 4, 3) float64 [m] rest anchors; rest_length: (F, 4) float64 [m]
    capsules: (C, 2, 3) float64 [m] rest bone capsules, capsule ``b`` on bone ``b``; capsule_radius: (C,) float64 [m]
    rest_gap: (F, C) float64 [m] each rest centre's distance to each capsule's segment (``inf``: no collision)
    travel: (F,) float64 [m] how far each centre may leave where its bone carries it (``TRAVEL`` smallest semi-axes)
    names: list of str
    """

    bone: np.ndarray
    center: np.ndarray
    frame: np.ndarray
    axes: np.ndarray
    mass: np.ndarray
    anchors: np.ndarray
    rest_length: np.ndarray
    capsules: np.ndarray
    capsule_radius: np.ndarray
    rest_gap: np.ndarray
    travel: np.ndarray
    names: list

    @property
    def count(self) -> int:
        return len(self.bone)

    def targets(self, bone_transforms):
        """``(anchors (F, 4, 3), capsules (C, 2, 3), frames (F, 3, 3))`` moved by the bones' rest -> posed rigid
        transforms ``(B, 4, 4)``."""
        B = np.asarray(bone_transforms, dtype=np.float64)
        Bf = B[self.bone]
        anchors = np.einsum("fij,faj->fai", Bf[:, :3, :3], self.anchors) + Bf[:, None, :3, 3]
        frames = np.einsum("fij,fjk->fik", Bf[:, :3, :3], self.frame)
        C = len(self.capsules)
        caps = np.einsum("bij,bkj->bki", B[:C, :3, :3], self.capsules) + B[:C, None, :3, 3]
        return anchors, caps, frames

    def placed(self, bone_transforms) -> "FatState":
        """The state at rest in this pose: each centre carried by its bone, no velocity."""
        B = np.asarray(bone_transforms, dtype=np.float64)
        Bf = B[self.bone]
        anchors, caps, frames = self.targets(B)
        x = np.einsum("fij,fj->fi", Bf[:, :3, :3], self.center) + Bf[:, :3, 3]
        return FatState(x=x, v=np.zeros_like(x), anchors=anchors, capsules=caps, frame=frames)

    def rest_state(self) -> "FatState":
        """The state at rest in the rest pose."""
        return FatState(x=self.center.copy(), v=np.zeros_like(self.center), anchors=self.anchors.copy(),
                        capsules=self.capsules.copy(), frame=self.frame.copy())


@dataclass
class FatState:
    """What changes every frame (``F`` fats, ``C`` capsules).

    x: (F, 3) float64 [m] the particles (the ellipsoids' centres); v: (F, 3) float64 [m/s]
    anchors: (F, 4, 3) float64 [m], capsules: (C, 2, 3) float64 [m], frame: (F, 3, 3) float64: the last frame's
    targets (the frame is the ellipsoid's orientation the skin sees)
    """

    x: np.ndarray
    v: np.ndarray
    anchors: np.ndarray
    capsules: np.ndarray
    frame: np.ndarray

    _FIELDS = ("x", "v", "anchors", "capsules", "frame")

    def copy(self) -> "FatState":
        return FatState(*(getattr(self, n).copy() for n in self._FIELDS))

    def assign(self, other: "FatState") -> None:
        """Overwrite this state with ``other`` without allocating."""
        for n in self._FIELDS:
            np.copyto(getattr(self, n), getattr(other, n))

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, n).nbytes for n in self._FIELDS)


@dataclass
class FatControl:
    """One frame's inputs: ``anchors (F, 4, 3)``, ``capsules (C, 2, 3)`` [m] and ``frame (F, 3, 3)`` moved by the
    bones (:meth:`FatModel.targets`), ``stiffness (F,)`` and ``damping (F,)`` 0..1 (animated)."""

    anchors: np.ndarray
    capsules: np.ndarray
    frame: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray

    @classmethod
    def of(cls, model: FatModel, bone_transforms, stiffness, damping) -> "FatControl":
        """The control of a frame posed by ``bone_transforms (B, 4, 4)``, with each fat's ``stiffness`` and
        ``damping`` (scalars or ``(F,)``); ``ValueError`` for values outside 0..1."""
        F = model.count
        s = np.broadcast_to(np.asarray(stiffness, dtype=np.float64), (F,)).copy()
        d = np.broadcast_to(np.asarray(damping, dtype=np.float64), (F,)).copy()
        for name, arr in (("stiffness", s), ("damping", d)):
            bad = np.flatnonzero(~((arr >= 0.0) & (arr <= 1.0)))
            if len(bad):
                raise ValueError(f"fat {model.names[bad[0]]}: {name} must be from 0 to 1, got {arr[bad[0]]:g}.")
        anchors, caps, frames = model.targets(bone_transforms)
        return cls(anchors=anchors, capsules=caps, frame=frames, stiffness=s, damping=d)


def build_fat_model(fats, bones, capsules=None, capsule_radius=None, collide_bones=None) -> FatModel:
    """The model of ``fats`` (:class:`core.fat.primitive.FatPrimitive` at rest) hanging on ``bones (F,)``; bone
    ``capsules (C, 2, 3)`` [m] with ``capsule_radius (C,)`` [m] (None: no collisions); ``collide_bones (F,)`` bool
    (default all)."""
    fats = list(fats)
    F = len(fats)
    bone = np.asarray(bones, dtype=np.int64).reshape(-1)
    if bone.shape != (F,):
        raise ValueError(f"fat bones needs one bone per fat ({F}), got {bone.shape[0]}.")
    center = np.array([f.center for f in fats]).reshape(F, 3)
    frame = np.array([f.frame for f in fats]).reshape(F, 3, 3)
    axes = np.array([f.axes for f in fats]).reshape(F, 3)
    dist = np.array([f.anchor_distance or float(np.mean(f.axes)) for f in fats])
    anchors = center[:, None, :] + dist[:, None, None] * np.einsum("fij,aj->fai", frame, _TETRAHEDRON)
    rest_length = np.linalg.norm(anchors - center[:, None, :], axis=2)
    caps = np.zeros((0, 2, 3)) if capsules is None else np.asarray(capsules, dtype=np.float64).reshape(-1, 2, 3)
    radius = np.zeros(len(caps)) if capsule_radius is None else np.asarray(capsule_radius, dtype=np.float64)
    if radius.shape != (len(caps),):
        raise ValueError(f"capsule radius needs one radius per capsule ({len(caps)}).")
    collide = np.ones(F, dtype=bool) if collide_bones is None else np.asarray(collide_bones, dtype=bool)
    gap = segment_distance(center, caps) if len(caps) else np.zeros((F, 0))
    gap = np.where(collide[:, None] & (radius[None, :] > 0.0), gap, np.inf)
    return FatModel(bone=bone, center=center, frame=frame, axes=axes, mass=np.array([f.mass for f in fats]),
                    anchors=anchors, rest_length=rest_length, capsules=caps, capsule_radius=radius, rest_gap=gap,
                    travel=TRAVEL * axes.min(axis=1), names=[f.name for f in fats])


def segment_distance(points, capsules):
    """``(n, C)`` [m] distances from ``points (n, 3)`` to the segments of ``capsules (C, 2, 3)``."""
    a, b = capsules[:, 0], capsules[:, 1]
    s = b - a
    ss = np.maximum(np.einsum("ci,ci->c", s, s), 1e-24)
    t = np.clip(np.einsum("nci,ci->nc", points[:, None, :] - a[None], s) / ss, 0.0, 1.0)
    return np.linalg.norm(points[:, None, :] - a[None] - t[..., None] * s[None], axis=2)


class FatSolver:
    """Steps a :class:`FatModel`'s particles (module docstring)."""

    def __init__(self, model: FatModel):
        from ...kernels.fat import FatModelArrays  # numba: loaded on first use

        self.model = model
        self.arrays = FatModelArrays(rest_length=model.rest_length, axes=model.axes,
                                     cap_radius=model.capsule_radius, rest_gap=model.rest_gap, travel=model.travel)
        """The model's arrays as ``kernels/fat.fat_step`` reads them."""

    def step(self, state_in: FatState, state_out: FatState, control: FatControl, dt: float) -> None:
        """One frame of ``dt`` [s] from ``state_in`` into ``state_out`` (``kernels/fat.fat_step``); ``state_in`` is
        not written."""
        from ...kernels.fat import FatFrame, fat_step

        if not dt > 0.0:
            raise ValueError(f"the frame's time step must be greater than 0, got {dt:g} s.")
        omega = 2.0 * np.pi * stiffness_frequency(control.stiffness)
        frame = FatFrame(anchors_prev=state_in.anchors, anchors_cur=control.anchors, omega=omega,
                         zeta=np.ascontiguousarray(control.damping), frame=control.frame,
                         caps_prev=state_in.capsules, caps_cur=control.capsules)
        fat_step(self.arrays, frame, state_in.x, state_in.v, float(dt), state_out.x, state_out.v)
        np.copyto(state_out.anchors, control.anchors)
        np.copyto(state_out.capsules, control.capsules)
        np.copyto(state_out.frame, control.frame)


def step_reference(model: FatModel, state: FatState, control: FatControl, dt: float) -> FatState:
    """Numpy reference of :meth:`FatSolver.step`, vectorised over the fats (``kernels/fat.py``'s module docstring):
    returns the new state."""
    F = model.count
    from ...kernels.fat import FAT_MIN_SUBSTEPS, FAT_STEP_ANGLE

    omega = 2.0 * np.pi * stiffness_frequency(control.stiffness)
    n_sub = np.maximum(FAT_MIN_SUBSTEPS, np.ceil(omega * dt / FAT_STEP_ANGLE).astype(np.int64))
    x, v = state.x.copy(), state.v.copy()
    u = (control.anchors - state.anchors).mean(axis=1) / dt                      # (F, 3) anchors' mean velocity
    for k in range(F):
        h = dt / n_sub[k]
        for s in range(1, n_sub[k] + 1):
            t = s / n_sub[k]
            t0 = (s - 1) / n_sub[k]
            anchors = (1 - t0) * state.anchors[k] + t0 * control.anchors[k]         # (4, 3)
            d = x[k] - anchors
            length = np.linalg.norm(d, axis=1)
            force = -(0.75 * omega[k] ** 2) * ((length - model.rest_length[k]) / length)[:, None] * d
            acc = force.sum(axis=0) - 2.0 * control.damping[k] * omega[k] * (v[k] - u[k])
            v[k] = v[k] + h * acc
            x[k] = x[k] + h * v[k]
            carried = ((1 - t) * state.anchors[k] + t * control.anchors[k]).mean(axis=0)
            away = np.linalg.norm(x[k] - carried)
            if away > model.travel[k]:
                r = (x[k] - carried) / away
                x[k] = carried + model.travel[k] * r
                v[k] = u[k].copy()
            caps = (1 - t) * state.capsules + t * control.capsules
            for b in np.flatnonzero(np.isfinite(model.rest_gap[k])):
                a, e = caps[b]
                seg = e - a
                r = np.clip(np.dot(x[k] - a, seg) / max(np.dot(seg, seg), 1e-24), 0.0, 1.0)
                off = x[k] - a - r * seg
                dist = np.linalg.norm(off)
                if dist < 1e-12:
                    continue
                n = off / dist
                extent = np.linalg.norm(model.axes[k] * (control.frame[k].T @ n))
                allowed = min(model.capsule_radius[b] + extent, model.rest_gap[k, b])
                if dist < allowed:
                    x[k] = x[k] + (allowed - dist) * n
                    vn = np.dot(v[k] - u[k], n)
                    if vn < 0:
                        v[k] = v[k] - vn * n
    return FatState(x=x, v=v, anchors=control.anchors.copy(), capsules=control.capsules.copy(),
                    frame=control.frame.copy())


@dataclass
class FatInputs:
    """One frame's animated fat values: ``stiffness (F,)`` and ``damping (F,)``, 0..1 (None: each fat's own)."""

    stiffness: np.ndarray | None = None
    damping: np.ndarray | None = None
