"""The rod model: what does not change while the rods move (masses, inertias, rest lengths, radii and frames).

:func:`build_rod_model` builds a frozen :class:`RodModel` once from the muscles at rest (their current axes);
its kernel arrays (:class:`kernels.rod.RodModelArrays`) are packed at construction. Units: metres, seconds,
kilograms. The equations are in ``kernels/rod.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..pbd.model import capsule_radii, csr, segment_distance
from . import frames as _frames
from .settings import RodSettings

def jiggle_frequency(k) -> np.ndarray:
    """Natural frequency [Hz] of a muscle's first transverse mode for the artist stiffness ``k`` in [0, 1]: the axis
    solver's law ``F_HALF (k / (1 - k))^F_EXPONENT`` (``kernels/pbd.py``: 1.9 Hz at 0.1, 10 Hz at 0.5, 19 Hz at
    0.7), vectorised; 0 at ``k = 0``, infinite at ``k = 1``."""
    from ...kernels.contact import F_EXPONENT, F_HALF  # numba: loaded on first use, after the host set its cache

    k = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore"):
        ratio = np.where(k < 1.0, k / np.maximum(1.0 - k, 1e-300), np.inf)
    return F_HALF * ratio ** F_EXPONENT


@dataclass(frozen=True, eq=False)
class RodModel:
    """Static description of the rods of ``M`` muscles (``P`` vertices, ``F = P + M`` frames, ``B`` capsules).

    settings: RodSettings
    names: (M,) str
    axis_start: (M+1,) int64          CSR: vertices of muscle m are axis_start[m] .. axis_start[m+1]-1; its frames
                                      are axis_start[m] + m .. axis_start[m+1] + m (kernels/rod.py)
    rest_points: (P, 3) [m]           rest axes
    rest_length: (P,) [m]             rest length of segment (k, k+1); last row of a muscle unused
    rest_radius: (P,) [m]             rest radius r0 = w0 Phi(s) of each vertex (the rod's width at scale 1)
    mass: (P,) [kg]                   lumped vertex masses by length (the ends' too; they are kinematic)
    inv_mass: (P,) [1/kg]             0 at the ends
    scale_inv_mass: (P,) [1/(kg m^2)] 2 / (m r^2), r the rest radius floored at min_mass_fraction of the largest
    frame_inv_inertia: (F,) [1/(kg m^2)]  segment frames 1 / (m (r^2/4 + l^2/12)), anchors 0
    rest_frames: (F, 4)               frames at rest (w, x, y, z)
    darboux_rest: (F, 4)              conj(q_i) q_{i+1} at rest; last row of a muscle unused
    belly: (P,) bool                  segment (k, k+1) contracts with the activation (not a tendon)
    rest_span: (M,) [m]               rest arc length L
    line_density: (M,) [kg/m]         mass per unit rest length (mu): the muscle's mass over L (the lumped
                                      vertex masses are mu times their half segments)
    core_radius: (M,) [m]             w0 = sqrt(V / (pi L)), the radius of the equivalent cylinder
    volume: (M,) [m^3]
    rest_normals: (M, 2, 3)           endpoint normals at rest
    cap_start (M+1,), cap_index (C,) int64, cap_radius (C,) [m]   CSR: capsules each muscle collides with
    rest_capsules: (B, 2, 3) [m]
    touch_start (M+1,), touch_chain (T,) int64, touch_bundle (T,) bool   CSR: the muscle chains each rod collides
                                      with, and whether that chain is a fibre of the rod's own bundle
                                      (``core.rod.contacts.muscle_touches``)
    chain_rod: (O,) int64             the rod each chain is, -1 for an axis muscle's chain (its particles come with
                                      each frame, ``RodSolver.step``'s ``chains``)
    arrays: kernels.rod.RodModelArrays
    """

    settings: RodSettings
    names: tuple
    axis_start: np.ndarray
    rest_points: np.ndarray
    rest_length: np.ndarray
    rest_radius: np.ndarray
    mass: np.ndarray
    inv_mass: np.ndarray
    scale_inv_mass: np.ndarray
    frame_inv_inertia: np.ndarray
    rest_frames: np.ndarray
    darboux_rest: np.ndarray
    belly: np.ndarray
    rest_span: np.ndarray
    line_density: np.ndarray
    core_radius: np.ndarray
    volume: np.ndarray
    rest_normals: np.ndarray
    cap_start: np.ndarray
    cap_index: np.ndarray
    cap_radius: np.ndarray
    rest_capsules: np.ndarray
    touch_start: np.ndarray
    touch_chain: np.ndarray
    touch_bundle: np.ndarray
    chain_rod: np.ndarray
    arrays: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        from ...kernels.rod import RodModelArrays  # numba: loaded on first use

        def c(a, dtype=np.float64):
            return np.ascontiguousarray(a, dtype=dtype)

        object.__setattr__(self, "arrays", RodModelArrays(
            axis_start=c(self.axis_start, np.int64), inv_mass=c(self.inv_mass),
            scale_inv_mass=c(self.scale_inv_mass), frame_inv_inertia=c(self.frame_inv_inertia),
            rest_length=c(self.rest_length), rest_radius=c(self.rest_radius), belly=c(self.belly, np.bool_),
            darboux_rest=c(self.darboux_rest), cap_start=c(self.cap_start, np.int64),
            cap_index=c(self.cap_index, np.int64), cap_radius=c(self.cap_radius),
            touch_start=c(self.touch_start, np.int64), touch_chain=c(self.touch_chain, np.int64),
            touch_bundle=c(self.touch_bundle, np.bool_), chain_rod=c(self.chain_rod, np.int64)))

    @property
    def muscle_count(self) -> int:
        return len(self.axis_start) - 1

    @property
    def vertex_count(self) -> int:
        return len(self.inv_mass)

    @property
    def frame_count(self) -> int:
        return len(self.frame_inv_inertia)

    @property
    def capsule_count(self) -> int:
        return len(self.rest_capsules)

    def frame_start(self, m: int) -> int:
        """Index of muscle ``m``'s origin anchor in the frame arrays."""
        return int(self.axis_start[m]) + m

    def stiffnesses(self, k) -> tuple:
        """``(EI [N m^2], EA [N])`` per muscle for the artist stiffness ``k (M,)`` in [0, 1]: EI puts the first
        transverse mode of a rod pinned at both ends, ``omega = (pi / L)^2 sqrt(EI / mu)``, at
        :func:`jiggle_frequency`; ``EA = shear_ratio 4 EI / w0^2`` (a solid disc of the muscle's radius)."""
        omega = 2.0 * np.pi * jiggle_frequency(k)
        with np.errstate(invalid="ignore", over="ignore"):
            ei = self.line_density * omega ** 2 * self.rest_span ** 4 / np.pi ** 4
            ea = self.settings.shear_ratio * 4.0 * ei / self.core_radius ** 2
        return np.ascontiguousarray(ei), np.ascontiguousarray(ea)

    def rod_volume(self, x, s) -> np.ndarray:
        """``(M,)`` [m^3] the rods' volumes ``sum pi (r0_a s_a) (r0_b s_b) |x_b - x_a|`` over the segments, which
        the volume constraints keep (at rest: about the muscle's volume)."""
        x = np.asarray(x, dtype=np.float64)
        r = self.rest_radius * np.asarray(s, dtype=np.float64)
        d = np.linalg.norm(np.diff(x, axis=0), axis=1)
        seg = np.pi * r[:-1] * r[1:] * d
        return np.array([seg[a:b - 1].sum() for a, b in zip(self.axis_start[:-1], self.axis_start[1:])])


def build_rod_model(muscles: Sequence, settings: RodSettings | None = None, capsules=None, capsule_radius=None,
                    bone_collisions=None, capsule_margin: float | None = None, touches=None,
                    chain_rod=None) -> RodModel:
    """Build the rod model of ``muscles`` (:class:`core.muscle.primitive.FusiformMuscle`; rest = their current
    axes, rest radii their profiles at their current activation).

    capsules: (B, 2, 3) [m] bone segments at rest; capsule_radius [m]: (B,) or (M, B), as
    ``core.pbd.model.build_pbd_model``; bone_collisions: (M,) bool (default all True); capsule_margin [m]: a muscle
    collides with the capsules within its reach plus this margin at rest (default a quarter of its length).
    touches, chain_rod: the muscle contacts (``core.rod.contacts.muscle_touches``; default none): per rod a list
    of ``(chain, bundle)`` pairs and ``(O,)`` the rod index of each chain, -1 for an axis muscle's.
    """
    settings = (settings or RodSettings()).validated()
    muscles = list(muscles)
    if not muscles:
        raise ValueError("a rod model needs at least one muscle.")
    count = len(muscles)
    rods = _rods(muscles, settings)
    caps = np.zeros((0, 2, 3)) if capsules is None else np.asarray(capsules, dtype=np.float64).reshape(-1, 2, 3)
    if not np.all(np.isfinite(caps)):
        raise ValueError("bone capsules contain NaN or infinite coordinates.")
    radius = capsule_radii(capsule_radius, count, len(caps))
    with_bones = np.ones(count, dtype=bool) if bone_collisions is None else \
        np.asarray(bone_collisions, dtype=bool).reshape(-1)
    if len(with_bones) != count:
        raise ValueError(f"bone_collisions needs one entry per muscle ({count}), got {len(with_bones)}.")
    axis_start, rest, rest_radius = rods["axis_start"], rods["rest_points"], rods["rest_radius"]
    cap_lists = []
    for i in range(count):
        a, b = axis_start[i], axis_start[i + 1]
        margin = 0.25 * rods["rest_span"][i] if capsule_margin is None else float(capsule_margin)
        reach = rest_radius[a:b].max() * 2.0  # room for a bulge
        cap_lists.append([c for c in range(len(caps)) if with_bones[i] and segment_distance(
            rest[a], rest[b - 1], caps[c, 0], caps[c, 1]) < reach + radius[i, c] + margin])
    cap_start, cap_index = csr(cap_lists)
    cap_radius = np.array([radius[i, c] for i, near in enumerate(cap_lists) for c in near], dtype=np.float64)
    return RodModel(
        settings=settings, names=tuple(getattr(m, "name", str(i)) for i, m in enumerate(muscles)), **rods,
        volume=np.array([m.volume for m in muscles]), cap_start=cap_start, cap_index=cap_index,
        cap_radius=cap_radius, rest_capsules=caps, **_touches(touches, chain_rod, count))


def _rods(muscles, settings: RodSettings) -> dict:
    """The rods of ``muscles`` at their current axes, as :class:`RodModel` fields: the layout, rest lengths and
    radii, masses by length (a uniform beam of density mu, design notes) and the inverse masses and inertias, the
    rest frames and Darboux vectors, the belly, and per muscle its span, line density and core radius."""
    count = len(muscles)
    counts = np.array([m.particle_count + 2 for m in muscles], dtype=np.int64)
    axis_start = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(counts, out=axis_start[1:])
    rest = np.concatenate([m.axis for m in muscles])
    P, F = len(rest), len(rest) + count
    out = dict(axis_start=axis_start, rest_points=rest, rest_length=np.zeros(P), rest_radius=np.zeros(P),
               mass=np.zeros(P), inv_mass=np.zeros(P), scale_inv_mass=np.zeros(P),
               frame_inv_inertia=np.zeros(F), rest_frames=np.zeros((F, 4)), darboux_rest=np.zeros((F, 4)),
               belly=np.zeros(P, dtype=bool), rest_span=np.zeros(count), line_density=np.zeros(count),
               core_radius=np.zeros(count), rest_normals=np.array([m.endpoint_normals() for m in muscles]))
    for i, muscle in enumerate(muscles):
        _rod(i, muscle, settings, out)
    return out


def _rod(i, muscle, settings: RodSettings, out: dict) -> None:
    """Rod ``i`` (``muscle``) into the rows of :func:`_rods`' arrays ``out``."""
    a, b = out["axis_start"][i], out["axis_start"][i + 1]
    pts = out["rest_points"][a:b]
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    if np.any(seg <= 1e-9):
        raise ValueError(f"muscle {muscle.name}: two axis points are at the same place; a rod needs distinct "
                         f"points.")
    mass = out["mass"]
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    s = cum / cum[-1]
    out["rest_length"][a:b - 1] = seg
    r0 = muscle.width * muscle.profile_at(s)
    out["rest_radius"][a:b] = r0
    r = np.maximum(r0, max(settings.min_mass_fraction, 1e-6) * r0.max())
    h = 0.5 * (np.concatenate([seg, [0.0]]) + np.concatenate([[0.0], seg]))  # half segments around a vertex
    # masses by length alone (not by cross-section as the axis's): a uniform beam of density mu (design notes)
    mass[a:b] = muscle.volume * settings.density * h / h.sum()
    out["inv_mass"][a + 1:b - 1] = 1.0 / mass[a + 1:b - 1]
    out["scale_inv_mass"][a:b] = 2.0 / (mass[a:b] * r * r)
    f0 = a + i
    m_seg = 0.5 * (mass[a:b - 1] + mass[a + 1:b])
    r_seg = 0.5 * (r[:-1] + r[1:])
    out["frame_inv_inertia"][f0 + 1:f0 + (b - a)] = 1.0 / (m_seg * (r_seg ** 2 / 4.0 + seg ** 2 / 12.0))
    q = _rest_frames(pts, seg, out["rest_normals"][i])
    out["rest_frames"][f0:f0 + len(q)] = q
    out["darboux_rest"][f0:f0 + len(q) - 1] = _frames.qmul(_frames.conj(q[:-1]), q[1:])
    mid = 0.5 * (s[:-1] + s[1:])
    out["belly"][a:b - 1] = (mid >= settings.tendon_fraction) & (mid <= 1.0 - settings.tendon_fraction)
    out["rest_span"][i] = cum[-1]
    out["line_density"][i] = mass[a:b].sum() / cum[-1]  # the beam's density, the kinematic ends' share included
    out["core_radius"][i] = np.sqrt(muscle.volume / (np.pi * cum[-1]))


def _rest_frames(pts, seg, normals) -> np.ndarray:
    """``(n + 1, 4)`` rest frames of a rod at ``pts (n, 3)`` (segment lengths ``seg``) with end normals ``normals
    (2, 3)``: anchors from the end normals, segments parallel transported from the origin normal, signs consistent
    along the rod."""
    t0 = (pts[1] - pts[0]) / seg[0]
    t1 = (pts[-1] - pts[-2]) / seg[-1]
    q = np.zeros((len(pts) + 1, 4))
    q[0] = _frames.frame_quaternion(_frames.perpendicular(normals[0], t0), t0)
    q[1:-1] = _frames.transported_frames(pts, normals[0])
    q[-1] = _frames.frame_quaternion(_frames.perpendicular(normals[1], t1), t1)
    for j in range(1, len(q)):  # consistent signs along the rod
        if np.dot(q[j], q[j - 1]) < 0.0:
            q[j] = -q[j]
    return q


def _touches(touches, chain_rod, count) -> dict:
    """The muscle contacts as :class:`RodModel`'s ``touch_start``, ``touch_chain``, ``touch_bundle`` and
    ``chain_rod`` (checked; default: none, each rod its own chain)."""
    touches = [[] for _ in range(count)] if touches is None else [list(t) for t in touches]
    chain_rod = np.arange(count, dtype=np.int64) if chain_rod is None else \
        np.asarray(chain_rod, dtype=np.int64).reshape(-1)
    if len(touches) != count:
        raise ValueError(f"touches needs one list per rod ({count}), got {len(touches)}.")
    if np.any(chain_rod >= count) or sorted(chain_rod[chain_rod >= 0].tolist()) != list(range(count)):
        raise ValueError("chain_rod must name each rod once (and -1 for the axis muscles).")
    if any(not 0 <= int(o) < len(chain_rod) or chain_rod[int(o)] == i for i, t in enumerate(touches) for o, _ in t):
        raise ValueError("a rod's touches must name other muscles of the chains.")
    touch_start, touch_chain = csr([[int(o) for o, _ in t] for t in touches])
    touch_bundle = np.array([bool(bb) for t in touches for _, bb in t], dtype=bool)
    return dict(touch_start=touch_start, touch_chain=touch_chain, touch_bundle=touch_bundle, chain_rod=chain_rod)


def elastic_energy(model: RodModel, x, s, q, stiffness) -> dict:
    """The rods' elastic energies [J] that the constraints' compliances stand for (``kernels/rod.py``), summed over
    all muscles at stiffness ``k (M,)``: ``stretch`` ``sum 1/2 EA l0 |(x_b - x_a)/l0 - d3|^2``, ``bend``
    ``sum 1/2 (4 EI / l_mid) |Im(conj(q_a) q_b -+ Omega0)|^2`` and ``smooth`` ``sum 1/2 (smoothing EI / l0)
    (s_b - s_a)^2`` (activation 0). Each is the continuum energy (VIPER eqs. 11, 14, 13) integrated by the midpoint
    rule, so it does not depend on the vertex count."""
    x, s, q = (np.asarray(a, dtype=np.float64) for a in (x, s, q))
    ei, ea = model.stiffnesses(np.broadcast_to(np.asarray(stiffness, dtype=np.float64), (model.muscle_count,)))
    out = {"stretch": 0.0, "bend": 0.0, "smooth": 0.0}
    L0 = model.rest_length
    for m in range(model.muscle_count):
        a, b = int(model.axis_start[m]), int(model.axis_start[m + 1])
        f0, n = a + m, b - a
        d = _frames.directors(q[f0 + 1:f0 + n])[:, 2]
        gamma = (x[a + 1:b] - x[a:b - 1]) / L0[a:b - 1, None] - d
        out["stretch"] += float(0.5 * ea[m] * np.sum(L0[a:b - 1] * np.einsum("ij,ij->i", gamma, gamma)))
        om = _frames.qmul(_frames.conj(q[f0:f0 + n]), q[f0 + 1:f0 + n + 1])
        rest = model.darboux_rest[f0:f0 + n]
        minus, plus = om - rest, om + rest
        diff = np.where((np.sum(minus ** 2, 1) <= np.sum(plus ** 2, 1))[:, None], minus, plus)[:, 1:]
        l_mid = np.concatenate([[0.5 * L0[a]], 0.5 * (L0[a:b - 2] + L0[a + 1:b - 1]), [0.5 * L0[b - 2]]])
        out["bend"] += float(0.5 * np.sum(4.0 * ei[m] / l_mid * np.einsum("ij,ij->i", diff, diff)))
        ds = np.diff(s[a:b])
        out["smooth"] += float(0.5 * model.settings.smoothing * ei[m] * np.sum(ds ** 2 / L0[a:b - 1]))
    return out
