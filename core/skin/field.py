"""The implicit skin: one compact HRBF field per bone's part, muscles joined to their part, parts composed along
the skeleton (thesis §3.1 and Fig. 6.1, paper §7.1).

Model (:class:`SkinField`, frozen, built once by :func:`bind_skin_field`): partition the mesh by highest weight,
sample each part (``core/skin/parts.py``), pull the samples that lie over a muscle of the part in under that
muscle's surface, fit one HRBF per part (``core/skin/hrbf.py``), bake it in a grid in rest space
(``core/skin/part_grid.py``) and build the composition tree:

* a leaf per part: its HRBF field, with the part's muscles clean-unioned and joined by the detail operator;
* a bone's children subtrees are combined pairwise with the contact operator, then combined with the bone's own
  leaf with the contact operator (children into parents); several roots are combined the same way. Bones without
  vertices are skipped (their children hang on the nearest ancestor that has a part).

State (:class:`SkinPlacement`, one per frame, from :func:`place_skin` / :meth:`SkinField.place`): bone transforms
``B_j = M_j M_ref_j^-1`` (rest -> posed, column vectors, ``(B, 4, 4)``) and the muscles'
:class:`core.muscle.batch.MuscleBatch` give each part grid's placement and every node's world box;
:meth:`SkinPlacement.evaluate` returns ``F`` and its gradient at any points (one numba call with the
``kernels/skin_field.SkinArrays`` and the muscles' ``MuscleArrays``).

**HRBF pull-in under muscles.** Each mesh sample of a part with muscles moves in along its normal to the depth
``d`` with ``blend(K(d / R_j), mu) = 0.5``, ``mu`` being the part's muscles (clean union of their compact fields)
at the sample, so that the composed field is 0.5 on the skin at rest and the skin lies on the fillet where HRBF and
muscle blend.

**Muscle skin offsets.** The skin sees each muscle as ``K((f_M + o) / R)``, moved in by the smallest offset
``o >= 0`` [m] that keeps it at most ``SKIN_MUSCLE_MAX`` = 0.5 on every rest vertex (:func:`muscle_offsets`, at
bind): a muscle that reaches the rest skin is seen touching it from inside, ``f_M + o >= 0`` on the skin. The muscle
itself (its simulation, its volume, its collisions) is as placed; a muscle under the skin has ``o = 0`` and is seen
unchanged.

**Fats** (``core/fat``, thesis ch. 6) move the skin by their change, not by themselves: the field of each part
whose rest vertices a fat reaches (:func:`fat_joins`; grid and muscles) is displaced by ``s_k lambda_k (f_k^0 -
f_k)``, ``f_k^0`` the fat where its bone carries it, ``f_k`` where its particle is, clamped to [0, 1]
(``kernels/fat.py``). The HRBF fits the rest skin (no pull-in under a fat), so the rest pose gives the rest mesh
exactly, and the part keeps its own fall-off. ``s_k`` [1/m] is the part's slope at its iso-surface over the fat
(at bind): a fat moved by ``d`` towards the skin moves the iso-surface by about ``d`` along its normal. A placement takes this frame's
:class:`core.fat.batch.FatBatch` (None: the fats at bind).

**References.** :meth:`SkinPlacement.evaluate_reference` and :meth:`SkinPlacement.leaf_reference` are the numpy
references of the kernel (the convention of ``core/skin``): vectorised over the query points, one node of the tree
at a time, the muscle fields from their own tested evaluation (``core.muscle.batch.evaluate_muscles``); they share
no code with the kernel's per-point loops.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from . import blend_operators as ops
from .. import validation
from .hrbf import fit_hrbf
from ..fat.batch import FatBatch
from ..fat.field import fat_displacement_reference, fat_field_reference
from ..muscle.batch import MuscleBatch
from .part_grid import DEFAULT_GRID_RESOLUTION, bake_part_grid
from .parts import (DEFAULT_MIN_PART_VERTICES, DEFAULT_SAMPLES_PER_PART, PartSamples, merge_small_parts,
                    partition_vertices, sample_parts)
from ...kernels.constants import NODE_CLEAN, NODE_CONTACT, NODE_PART, SCALAR_REACH, SCALAR_SUPPORT


@dataclass(frozen=True)
class SkinSettings:
    """Bind and composition settings (artist-facing names in the Blender panel).

    samples_per_part: target HRBF samples per part; min_part_vertices: smaller parts join their parent's;
    grid_resolution: nodes along a part grid's longest side;
    seed: sampling seed; unweighted: ``"error"`` or ``"nearest"`` (core/skin/parts.py); contact_angles: the
    controller's ``theta0, theta1`` [deg]; pull_under_muscles: the HRBF pull-in.
    """

    samples_per_part: int = DEFAULT_SAMPLES_PER_PART
    min_part_vertices: int = DEFAULT_MIN_PART_VERTICES
    grid_resolution: int = DEFAULT_GRID_RESOLUTION
    seed: int = 0
    unweighted: str = "error"
    contact_angles: tuple = (80.0, 110.0)
    pull_under_muscles: bool = True


@dataclass(frozen=True)
class SkinField:
    """Bound skin field of one mesh: the model (module docstring). Arrays per vertex ``V``, bone ``B``, part ``P``,
    node ``T``, muscle ``M``; none of them changes after :func:`bind_skin_field`."""

    settings: SkinSettings
    bone_count: int
    parts: list  # PartSamples, in part order
    hrbfs: list
    grids: list  # PartGrid
    labels: np.ndarray  # (V,) int64 part bone of each vertex
    part_bone: np.ndarray  # (P,) int64 bone of each part
    part_of_bone: np.ndarray  # (B,) int64 part of each bone, -1: the bone has no part
    muscle_part: np.ndarray  # (M,) int64 part index of each muscle, -1: joins no part
    part_muscle_start: np.ndarray  # (P+1,) int64 CSR: each part's muscles ...
    part_muscle_index: np.ndarray  # (sum,) int64 ... as muscle indices
    node_kind: np.ndarray  # (T,) int64 NODE_* (pre-order tree, kernels/skin_field.py)
    node_left: np.ndarray  # (T,) int64
    node_right: np.ndarray  # (T,) int64
    node_part: np.ndarray  # (T,) int64
    node_end: np.ndarray  # (T,) int64
    leaf_node: np.ndarray  # (P,) int64 the tree's leaf node of each part
    grid_values: np.ndarray  # (sum nx ny nz 4,) float32 packed part grids
    grid_offset: np.ndarray  # (P+1,) int64
    grid_dims: np.ndarray  # (P, 3) int64
    grid_origin: np.ndarray  # (P, 3) float64 [m]
    grid_inv_h: np.ndarray  # (P,) float64 [1/m]
    muscles: MuscleBatch | None = None  # the muscles at bind (they define the rest iso-values)
    muscle_offset: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))  # (M,) [m] muscle_offsets()
    heads: np.ndarray = None  # (B, 3) [m] rest bone heads (the joints, core/skin/joint_volume.py)
    tails: np.ndarray = None  # (B, 3) [m] rest bone tails
    parents: np.ndarray = None  # (B,) int64, -1 for a root
    grid_corners: np.ndarray = None  # (P, 8, 3) [m] rest-space corners of each part grid's box
    fats: FatBatch = dataclasses.field(default_factory=FatBatch.empty)  # (F) the fats at bind
    fat_part: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (F,) -1: none
    part_fat_start: np.ndarray = None  # (P+1,) int64 CSR: the fats that move each part (fat_joins()) ...
    part_fat_index: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (E,) ...
    fat_slope: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))  # (E,) [1/m] and by what slope

    @property
    def part_count(self) -> int:
        return len(self.parts)

    @property
    def nbytes(self) -> int:
        """Memory of the per-frame field data (grids, tree, tables) [bytes]."""
        arrays = [self.grid_values, self.grid_offset, self.grid_dims, self.grid_origin, self.grid_inv_h,
                  self.node_kind, self.node_left, self.node_right, self.node_part, self.node_end,
                  ops.table("clean"), ops.table("blend")]
        return int(sum(a.nbytes for a in arrays))

    def place(self, bone_transforms=None, muscles: MuscleBatch | None = None,
              fats: FatBatch | None = None) -> "SkinPlacement":
        """This frame's placement (:func:`place_skin`)."""
        return place_skin(self, bone_transforms, muscles, fats)

    def without_muscles(self) -> "SkinField":
        """The same parts, grids and tree with no muscle joined (shares the arrays): the skin the muscles are kept
        inside (paper §6.3)."""
        return dataclasses.replace(
            self, muscle_part=np.full(0, -1, dtype=np.int64),
            part_muscle_start=np.zeros(len(self.parts) + 1, dtype=np.int64),
            part_muscle_index=np.zeros(0, dtype=np.int64), muscles=None, muscle_offset=np.zeros(0),
            fats=FatBatch.empty(), fat_part=np.zeros(0, dtype=np.int64), part_fat_start=None,
            part_fat_index=np.zeros(0, dtype=np.int64), fat_slope=np.zeros(0))


@dataclass(frozen=True)
class SkinPlacement:
    """The skin field placed for one frame: the state (module docstring). Arrays per part ``P``, node ``T``."""

    model: SkinField
    grid_binv: np.ndarray  # (P, 3, 4) float64 world -> rest rigid transform of each part grid
    node_bounds: np.ndarray  # (T, 6) float64 [m] world box of each node (min xyz, max xyz)
    muscles: MuscleBatch | None  # this frame's muscles (None: no muscles)
    arrays: tuple  # kernels.skin_field.SkinArrays
    muscle_arrays: tuple  # kernels.fusiform.MuscleArrays of this frame's muscles
    fats: FatBatch = None  # this frame's fats

    @property
    def kernel_args(self) -> tuple:
        """``(arrays, muscle_arrays)``: the field as the kernels take it (``kernels/skin_field.py``)."""
        return self.arrays, self.muscle_arrays

    def evaluate(self, points, out=None):
        """Composed field ``F (n,)`` and gradient ``(n, 3)`` [1/m] at world ``points (n, 3)`` [m] (numba).

        ``out``: optional ``(values (n,), grads (n, 3))`` float64 arrays to fill (no allocation).
        """
        from ...kernels.skin_field import skin_field

        pts = validation.points(points, "query points", min_count=0)
        n = len(pts)
        if out is None:
            values, grads = np.empty(n), np.empty((n, 3))
        else:
            values, grads = out
        skin_field(pts, self.arrays, self.muscle_arrays, values, grads)
        return values, grads

    def leaf_reference(self, points, details: bool = False):
        """Numpy reference of every leaf (a part's HRBF grid with its muscles joined by the detail operator):
        lists of ``values (n,)`` and ``grads (n, 3)`` per part, at world ``points (n, 3)`` [m].
        ``details``: also the lists of the HRBF's ``(h, grad h)`` and the muscles' union ``(mu, grad mu)``. A part's
        fats displace the result (``kernels/fat.py``)."""
        m = self.model
        pts = validation.points(points, "query points", min_count=0)
        n = len(pts)
        B = np.zeros((m.part_count, 4, 4))
        B[:, :3, :] = self.grid_binv
        B[:, 3, 3] = 1.0
        part_v, part_g, parts_h, parts_mu = [], [], [], []
        mv = mg = None
        if self.muscles is not None and self.muscles.muscle_count:
            mv, mg = _compact_muscles(self.muscles, pts, m.muscle_offset)
        for p, g in enumerate(m.grids):
            v, gr = g.sample(pts, np.linalg.inv(B[p]))
            mu, mgr = np.zeros(n), np.zeros((n, 3))
            for k in m.part_muscle_index[m.part_muscle_start[p]:m.part_muscle_start[p + 1]]:
                G, G1, G2 = ops.lookup(ops.table("clean"), mu, mv[:, k])
                use = mv[:, k] > 0
                mgr = np.where(use[:, None], G1[:, None] * mgr + G2[:, None] * mg[:, k], mgr)
                mu = np.where(use, G, mu)
            G, G1, G2 = ops.lookup(ops.table("blend"), v, mu)
            has = mu > 0
            leaf_v = np.where(has, G, v)
            leaf_g = np.where(has[:, None], G1[:, None] * gr + G2[:, None] * mgr, gr)
            start = _part_fat_start(m)
            if start[p] < start[p + 1]:
                d, dg = np.zeros(n), np.zeros((n, 3))
                box = self.fats.bounds()
                carried = self.fats.carried_center
                for j in range(start[p], start[p + 1]):
                    k = m.part_fat_index[j]
                    inside = np.all((pts >= box[k, :3]) & (pts <= box[k, 3:]), axis=1)
                    dk, dgk = fat_displacement_reference(pts, self.fats.center[k], carried[k], self.fats.frame[k],
                                                         self.fats.axes[k], m.fat_slope[j])
                    d += np.where(inside, dk, 0.0)
                    dg += np.where(inside[:, None], dgk, 0.0)
                moved = leaf_v + d
                clamped = (moved <= 0.0) | (moved >= 1.0)
                leaf_v = np.where(d != 0.0, np.clip(moved, 0.0, 1.0), leaf_v)
                leaf_g = np.where((d != 0.0)[:, None], np.where(clamped[:, None], 0.0, leaf_g + dg), leaf_g)
            part_v.append(leaf_v)
            part_g.append(leaf_g)
            parts_h.append((v, gr))
            parts_mu.append((mu, mgr))
        if details:
            return part_v, part_g, parts_h, parts_mu
        return part_v, part_g

    def evaluate_reference(self, points):
        """Numpy reference of :meth:`evaluate` (module docstring), for tests."""
        m = self.model
        pts = validation.points(points, "query points", min_count=0)
        part_v, part_g = self.leaf_reference(pts)
        T = len(m.node_kind)
        val = [None] * T
        grad = [None] * T
        for i in range(T - 1, -1, -1):
            b = self.node_bounds[i]
            inside = np.all((pts >= b[:3]) & (pts <= b[3:]), axis=1)
            if m.node_kind[i] == NODE_PART:
                v, gr = part_v[m.node_part[i]], part_g[m.node_part[i]]
            else:
                a, c = m.node_left[i], m.node_right[i]
                f1, f2, g1, g2 = val[a], val[c], grad[a], grad[c]
                if m.node_kind[i] == NODE_CONTACT:
                    n1, n2 = np.linalg.norm(g1, axis=1), np.linalg.norm(g2, axis=1)
                    ok = (n1 > 1e-12) & (n2 > 1e-12)
                    cos_t = np.where(ok, np.einsum("ij,ij->i", g1, g2) / np.where(ok, n1 * n2, 1.0), 1.0)
                    alpha = np.where(ok, ops.controller(cos_t, np.radians(m.settings.contact_angles[0]),
                                                        np.radians(m.settings.contact_angles[1])), 0.0)
                    G, G1, G2 = ops.contact(f1, f2, alpha)
                elif m.node_kind[i] == NODE_CLEAN:
                    G, G1, G2 = ops.lookup(ops.table("clean"), f1, f2)
                else:
                    first = f1 >= f2
                    G, G1, G2 = np.maximum(f1, f2), first.astype(float), (~first).astype(float)
                G = np.where(f2 <= 0, f1, np.where(f1 <= 0, f2, G))
                G1 = np.where(f2 <= 0, 1.0, np.where(f1 <= 0, 0.0, G1))
                G2 = np.where(f2 <= 0, 0.0, np.where(f1 <= 0, 1.0, G2))
                v, gr = G, G1[:, None] * g1 + G2[:, None] * g2
            val[i] = np.where(inside, v, 0.0)
            grad[i] = np.where(inside[:, None], gr, 0.0)
        return val[0], grad[0]


_BOX_CORNERS = np.array([[i & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], dtype=np.float64)


@functools.cache
def _no_muscle_arrays():
    """The kernels' muscle arrays of no muscle (shared, never written)."""
    return MuscleBatch.allocate([], np.zeros((0, 4)), []).kernel_arrays()


def place_skin(model: SkinField, bone_transforms=None, muscles: MuscleBatch | None = None,
               fats: FatBatch | None = None) -> SkinPlacement:
    """Place the part grids and node boxes of ``model`` for one frame (``kernels/skin_field.place_nodes``).

    bone_transforms: ``(B, 4, 4)`` rest -> posed rigid transforms ``B_j`` (None: rest pose; callers check rigidity).
    muscles: the muscles' batch (same muscle order as at bind; None: the bind-time muscles).
    fats: this frame's :class:`core.fat.batch.FatBatch` (same fat order as at bind; None: the fats at bind).
    """
    from ...kernels.skin_field import SkinArrays, place_nodes

    B, muscles = _placement_inputs(model, bone_transforms, muscles)
    fats = _fat_inputs(model, fats)
    has_muscles = muscles is not None and muscles.muscle_count > 0
    muscle_arrays = muscles.kernel_arrays() if has_muscles else _no_muscle_arrays()
    cos0, cos1 = np.cos(np.radians(model.settings.contact_angles))
    arrays = SkinArrays(
        node_kind=model.node_kind, node_left=model.node_left, node_right=model.node_right,
        node_part=model.node_part, node_end=model.node_end, grid_values=model.grid_values,
        grid_offset=model.grid_offset, grid_dims=model.grid_dims, grid_origin=model.grid_origin,
        grid_inv_h=model.grid_inv_h, part_muscle_start=model.part_muscle_start,
        part_muscle_index=model.part_muscle_index, skin_offset=model.muscle_offset,
        clean_table=ops.table("clean"), blend_table=ops.table("blend"), cos0=float(cos0), cos1=float(cos1),
        grid_binv=np.empty((model.part_count, 3, 4)), node_bounds=np.empty((len(model.node_kind), 6)),
        chord_dev=np.empty(muscle_arrays.muscle_scalar.shape[0]),
        axis_along=np.empty((muscle_arrays.axis_points.shape[0], 4)),
        part_fat_start=_part_fat_start(model), part_fat_index=model.part_fat_index, fat_part=model.fat_part,
        fat_slope=model.fat_slope, fat_axes=np.ascontiguousarray(fats.axes, dtype=np.float64),
        fat_center=np.ascontiguousarray(fats.center, dtype=np.float64),
        fat_frame=np.ascontiguousarray(fats.frame, dtype=np.float64), fat_bounds=fats.bounds(),
        fat_carried=np.ascontiguousarray(fats.carried_center, dtype=np.float64))
    place_nodes(B, model.part_bone, model.grid_corners, model.muscle_part if has_muscles else _NO_PART, arrays,
                muscle_arrays)
    return SkinPlacement(model=model, grid_binv=arrays.grid_binv, node_bounds=arrays.node_bounds,
                         muscles=muscles if has_muscles else None, arrays=arrays, muscle_arrays=muscle_arrays,
                         fats=fats)


_NO_PART = np.zeros(0, dtype=np.int64)


def _part_fat_start(model: SkinField) -> np.ndarray:
    """``(P+1,)`` the CSR start of each part's fats (all empty for a model bound without fats)."""
    if model.part_fat_start is None:
        return np.zeros(model.part_count + 1, dtype=np.int64)
    return model.part_fat_start


def _fat_inputs(model: SkinField, fats):
    """This frame's fats for :func:`place_skin`, checked against the bind (``ValueError`` with a sentence)."""
    if fats is None:
        return model.fats
    if fats.count != len(model.fat_part):
        raise ValueError(f"the skin was bound with {len(model.fat_part)} fats, got {fats.count}.")
    if not (np.isfinite(fats.center).all() and np.isfinite(fats.frame).all()
            and np.isfinite(fats.carried_center).all()):
        raise ValueError("a fat's centre or frame contains NaN or infinite values; check the pose.")
    return fats


def _placement_inputs(model: SkinField, bone_transforms, muscles):
    """``(B (B, 4, 4) float64, muscles)`` of :func:`place_skin`, checked (``ValueError`` with a sentence)."""
    if bone_transforms is None:
        B = np.ascontiguousarray(np.broadcast_to(np.eye(4), (model.bone_count, 4, 4)))
    else:
        B = np.ascontiguousarray(bone_transforms, dtype=np.float64)
        if B.shape != (model.bone_count, 4, 4):
            raise ValueError(f"bone transforms must have shape ({model.bone_count}, 4, 4), got {B.shape}.")
        if not np.isfinite(B.sum()):
            raise ValueError("bone transforms contain NaN or infinite values; check the pose.")
    if muscles is None:
        muscles = model.muscles
    elif muscles.muscle_count != len(model.muscle_part):
        raise ValueError(f"the skin was bound with {len(model.muscle_part)} muscles, got {muscles.muscle_count}.")
    return B, muscles


def place_reference(model: SkinField, bone_transforms=None, muscles: MuscleBatch | None = None,
                    fats: FatBatch | None = None):
    """Numpy reference of :func:`place_skin`'s kernel, for tests: ``(grid_binv (P, 3, 4), node_bounds (T, 6),
    chord_dev (M,))``."""
    from ...kernels.skin_field import node_boxes

    B, muscles = _placement_inputs(model, bone_transforms, muscles)
    Bp = B[model.part_bone]
    # rigid inverse [R^T | -R^T t]
    Rt = np.transpose(Bp[:, :3, :3], (0, 2, 1))
    grid_binv = np.concatenate([Rt, -np.einsum("pij,pj->pi", Rt, Bp[:, :3, 3])[:, :, None]], axis=2)
    # leaf boxes: the 8 corners of each grid box moved by B_j, then the part's muscles' reach
    world = np.einsum("pij,pkj->pki", Bp[:, :3, :3], model.grid_corners) + Bp[:, None, :3, 3]
    boxes = np.concatenate([world.min(axis=1), world.max(axis=1)], axis=1)
    chord_dev = np.zeros(0)
    if muscles is not None and muscles.muscle_count:
        # the skin sees K((f_M + o) / R): nothing beyond reach + R - o from the axis
        cut = np.maximum(muscles.muscle_scalar[:, SCALAR_REACH] + muscles.muscle_scalar[:, SCALAR_SUPPORT]
                         - model.muscle_offset, 0.0)
        joined = model.muscle_part >= 0
        lows, highs = boxes[:, :3], boxes[:, 3:]
        np.minimum.at(lows, model.muscle_part[joined], muscles.muscle_bounds[joined, :3] - cut[joined, None])
        np.maximum.at(highs, model.muscle_part[joined], muscles.muscle_bounds[joined, 3:] + cut[joined, None])
        chord_dev = _chord_deviation(muscles)
    fats = _fat_inputs(model, fats)
    if fats.count:
        start = _part_fat_start(model)
        owner = np.repeat(np.arange(model.part_count), np.diff(start))
        fb = fats.bounds()[model.part_fat_index]
        lows, highs = boxes[:, :3], boxes[:, 3:]
        np.minimum.at(lows, owner, fb[:, :3])
        np.maximum.at(highs, owner, fb[:, 3:])
    bounds = np.empty((len(model.node_kind), 6))
    node_boxes(boxes, model.node_kind, model.node_part, model.node_left, model.node_right, bounds)
    return grid_binv, bounds, chord_dev


def _chord_deviation(m: MuscleBatch) -> np.ndarray:
    """``(M,)`` [m] each muscle axis's largest distance from its chord (the kernel's cheap rejection test)."""
    P = m.axis_points
    first = P[m.axis_start[:-1]]
    last = P[m.axis_start[1:] - 1]
    owner = np.repeat(np.arange(m.muscle_count), np.diff(m.axis_start))
    e = (last - first)[owner]
    t = np.clip(np.einsum("ij,ij->i", P - first[owner], e) / np.maximum(np.einsum("ij,ij->i", e, e), 1e-30),
                0.0, 1.0)
    dist = np.linalg.norm(P - first[owner] - t[:, None] * e, axis=1)
    return np.maximum.reduceat(dist, m.axis_start[:-1])


def _compact_muscles(muscles: MuscleBatch, points, offsets):
    """Every muscle's compact field as the skin sees it, ``K((f_M + o) / R)`` with its offset ``o`` [m]
    (module docstring), and its gradient, at ``points (n, 3)``: ``values (n, M)``, ``grads (n, M, 3)``."""
    from .hrbf import compact
    from ..muscle.batch import evaluate_muscles

    if muscles is None or not muscles.muscle_count:
        return np.zeros((len(points), 0)), np.zeros((len(points), 0, 3))
    raw, grads = evaluate_muscles(muscles, points)
    R = muscles.muscle_scalar[:, SCALAR_SUPPORT]
    k, dk = compact(raw + offsets[None, :], R[None, :])
    return k, dk[..., None] * grads


def muscle_offsets(vertices, muscles: MuscleBatch, muscle_part) -> np.ndarray:
    """``(M,)`` [m]: how far in each muscle's surface has to move for the skin to see it at most
    ``SKIN_MUSCLE_MAX`` on every rest vertex (0 for a muscle that stays under the skin; module docstring)."""
    from ..muscle.batch import evaluate_muscles

    out = np.zeros(muscles.muscle_count)
    if not muscles.muscle_count or not len(vertices):
        return out
    raw, _ = evaluate_muscles(muscles, vertices)
    R = muscles.muscle_scalar[:, SCALAR_SUPPORT]
    need = np.max(_SKIN_MUSCLE_DEPTH * R[None, :] - raw, axis=0)
    return np.where(muscle_part >= 0, np.maximum(need, 0.0), 0.0)


SKIN_MUSCLE_MAX = 0.5
"""The most a muscle's compact field may be on the rest skin (module docstring)."""
_SKIN_MUSCLE_DEPTH = 0.0
"""``K(x) = SKIN_MUSCLE_MAX`` at ``x = f / R = 0`` (thesis eq. 3.1; checked by a test)."""


def _muscle_union_at(points, muscles: MuscleBatch, muscle_ids, offsets):
    """The clean union of the compact fields of ``muscle_ids`` as the skin sees them (with their ``offsets``) at
    ``points (n, 3)``: the detail operator's ``mu``."""
    mu = np.zeros(len(points))
    values, _ = _compact_muscles(muscles, points, offsets)
    for k in muscle_ids:
        mu = ops.lookup(ops.table("clean"), mu, values[:, k])[0]
    return mu


FAT_NEAR = 3
"""A fat moves the field of every part with at least this many rest vertices where its change is fully taken
(within ``REACH_FULL`` of its smallest semi-axes of its surface, ``kernels/fat.reach_weight``), or whose own field
reads at least ``FAT_FIELD`` on that many of those vertices."""
FAT_FIELD = 0.1
"""A part whose field reads this much on the skin a fat moves meets that skin's part in the composition (a crease's
contact): the fat moves it too, by the same slope, so both fields move together."""


def fat_joins(model: "SkinField", vertices):
    """Which parts each fat moves and by what slope: ``(start (P+1,), index (E,), slope (E,))``, CSR by part, ``index``
    the fats, ``slope`` [1/m] ``s`` of each (part, fat). The fat's skin is the rest vertices within ``REACH_FULL``
    smallest semi-axes of its surface. It moves every part with at least ``FAT_NEAR`` of those vertices (a fat over
    the border of two parts moves both), ``s`` the median gradient length of the part's own field (grid and muscles,
    at rest) there, so that a change ``D`` [m] of the fat moves the part's iso-surface by about ``D``; and every part
    whose field reads at least ``FAT_FIELD`` on ``FAT_NEAR`` of them (a part meeting that skin at a crease), ``s``
    the median gradient length of those vertices' own parts there, so both fields move alike. A fat near no part's
    vertices moves its bone's part, ``s`` the slope of ``K(f / R)`` at its iso-value, ``15 / (16 R)``, ``R`` the
    part's support."""
    from ...kernels.fat import REACH_FULL

    fats = model.fats
    P = model.part_count
    entries = [[] for _ in range(P)]
    rest = model.place()
    for k in range(fats.count):
        if model.fat_part[k] < 0:
            continue
        f0, _ = fat_field_reference(vertices, fats.center[k], fats.frame[k], fats.axes[k])
        near = np.flatnonzero(f0 <= REACH_FULL * fats.support[k])
        found = False
        if len(near):
            values, grads = rest.leaf_reference(vertices[near])
            own_part = _label_parts(model, model.labels[near])
            slope_own = np.linalg.norm(np.asarray(grads)[own_part, np.arange(len(near))], axis=1)
            for p in range(P):
                own = model.labels[near] == model.part_bone[p]
                if np.count_nonzero(own) >= FAT_NEAR:
                    entries[p].append((k, float(np.median(np.linalg.norm(grads[p][own], axis=1)))))
                    found = True
                    continue
                reach = values[p] >= FAT_FIELD
                if np.count_nonzero(reach) >= FAT_NEAR:
                    # the part meets the fat's skin: moved by the slope of the skin's own parts there
                    entries[p].append((k, float(np.median(slope_own[reach]))))
                    found = True
        if not found:
            p = model.fat_part[k]
            entries[p].append((k, 15.0 / (16.0 * model.parts[p].radius)))
    start = np.zeros(P + 1, dtype=np.int64)
    np.cumsum([len(e) for e in entries], out=start[1:])
    flat = [x for e in entries for x in e]
    return (start, np.array([k for k, _ in flat], dtype=np.int64),
            np.array([slope for _, slope in flat], dtype=np.float64))


def _label_parts(model: "SkinField", labels) -> np.ndarray:
    """``(n,)`` the part of each vertex's bone ``labels (n,)``."""
    part_of = np.full(int(max(model.part_bone.max(), labels.max())) + 1, -1, dtype=np.int64)
    part_of[model.part_bone] = np.arange(model.part_count)
    return part_of[labels]


def _pull_under_muscles(samples: PartSamples, muscles: MuscleBatch, muscle_ids, offsets):
    """Move each mesh sample in along its normal so that at the skin ``blend(K(f_H), mu) = 0.5`` (module
    docstring), ``mu`` the part's muscles: returns the moved sample points ``(N, 3)``."""
    from .hrbf import compact

    n_mesh = len(samples.points) - samples.caps
    if n_mesh <= 0 or not len(muscle_ids):
        return samples.points
    p, nrm = samples.points[:n_mesh], samples.normals[:n_mesh]
    mu = _muscle_union_at(p, muscles, muscle_ids, offsets)
    # HRBF value h in [0, 0.5] with blend(h, mu) = 0.5, by bisection (blend is increasing in h; h = 0.5 if mu is
    # too weak to reach the skin's level, nothing to pull then)
    lo, hi = np.zeros(n_mesh), np.full(n_mesh, 0.5)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        over = ops.arc_union("blend", mid, mu) > 0.5
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    target = np.where(mu < 0.5, hi, 0.0)
    # depth d below the skin with K(d / R) = target: f_H is distance-like near its samples, so h(skin) = K(d / R)
    R = samples.radius
    dlo, dhi = np.zeros(n_mesh), np.full(n_mesh, R)
    for _ in range(40):
        mid = 0.5 * (dlo + dhi)
        above = compact(mid, R)[0] > target
        dlo = np.where(above, mid, dlo)
        dhi = np.where(above, dhi, mid)
    depth = np.where(target < 0.5 - 1e-9, dhi, 0.0)
    out = samples.points.copy()
    out[:n_mesh] = p - depth[:, None] * nrm
    return out


def _group_by_part(item_part, part_count: int):
    """Items (muscles or fats) grouped by the skin part they join: ``(lists, start, index)``, ``lists[p]`` the
    items of part ``p``, ``index[start[p]:start[p + 1]]`` the same flattened (``start (parts + 1,)``, int64);
    items of part ``-1`` join none."""
    lists = [np.flatnonzero(item_part == p) for p in range(part_count)]
    start = np.zeros(part_count + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=start[1:])
    index = np.concatenate(lists).astype(np.int64) if lists else np.zeros(0, dtype=np.int64)
    return lists, start, index


def _build_tree(part_of_bone, parents):
    """Pre-order arrays of the composition tree (module docstring)."""
    B = len(parents)

    def part_ancestor(j):
        a = parents[j]
        while a >= 0 and part_of_bone[a] < 0:
            a = parents[a]
        return a

    children = {j: [] for j in range(B)}
    roots = []
    for j in range(B):
        if part_of_bone[j] < 0:
            continue
        a = part_ancestor(j)
        (children[a] if a >= 0 else roots).append(j)

    kinds, left, right, part = [], [], [], []

    # build nested tuples first, then flatten in pre-order
    def combine(trees):
        while len(trees) > 1:
            trees = [("op", trees[i], trees[i + 1]) if i + 1 < len(trees) else trees[i]
                     for i in range(0, len(trees), 2)]
        return trees[0]

    def subtree(j):
        leaf = ("part", part_of_bone[j])
        kids = [subtree(c) for c in children[j]]
        return ("op", leaf, combine(kids)) if kids else leaf

    root = combine([subtree(r) for r in roots])
    end = []

    def flatten(node):
        i = len(kinds)
        kinds.append(NODE_PART if node[0] == "part" else NODE_CONTACT)
        left.append(-1)
        right.append(-1)
        part.append(node[1] if node[0] == "part" else -1)
        end.append(-1)
        if node[0] == "op":
            left[i] = flatten(node[1])
            right[i] = flatten(node[2])
        end[i] = len(kinds)
        return i

    flatten(root)
    as_int = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    return as_int(kinds), as_int(left), as_int(right), as_int(part), as_int(end)


def bind_skin_field(vertices, faces, weights, heads, tails, parents, muscles: MuscleBatch | None = None,
                    muscle_bones=None, settings: SkinSettings | None = None, bone_names=None,
                    fats: FatBatch | None = None, fat_bones=None) -> SkinField:
    """Bind the implicit skin of a mesh in its rest pose (module docstring).

    vertices (V, 3) [m], faces (F, 3) int (triangles), weights (V, B), heads/tails (B, 3) [m] rest bone ends in the
    mesh's space, parents (B,) int (-1: root); muscles: their batch at rest; muscle_bones (M,) int: the bone whose
    part each muscle joins (-1: none); fats: the fats at rest (:class:`core.fat.batch.FatBatch`), each joining the
    part of ``fat_bones (F,)`` int (-1: none). ``ValueError`` with a plain sentence on bad input.
    """
    s = settings or SkinSettings()
    v = validation.points(vertices, "mesh vertices", min_count=4)
    f = np.asarray(faces, dtype=np.int64)
    if f.ndim != 2 or f.shape[1] != 3 or not len(f):
        raise ValueError("the mesh needs triangle faces, as a (faces, 3) index table.")
    if f.min() < 0 or f.max() >= len(v):
        raise ValueError("a face refers to a vertex that does not exist.")
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != len(v):
        raise ValueError(f"weights must be a ({len(v)} vertices, bones) table, got shape {w.shape}.")
    heads = validation.points(heads, "bone heads")
    tails = validation.points(tails, "bone tails")
    parents = np.asarray(parents, dtype=np.int64)
    B = w.shape[1]
    if heads.shape != (B, 3) or tails.shape != (B, 3) or parents.shape != (B,):
        raise ValueError(f"bone heads, tails and parents must describe the {B} bones of the weight table.")
    if np.any(parents >= B) or np.any(parents < -1):
        raise ValueError("a bone's parent index is out of range.")
    labels = merge_small_parts(partition_vertices(w, s.unweighted, v, heads, tails, bone_names), parents,
                               s.min_part_vertices)
    parts = sample_parts(v, f, labels, heads, tails, parents, s.samples_per_part, s.seed, bone_names)
    part_of_bone = np.full(B, -1, dtype=np.int64)
    for p, ps in enumerate(parts):
        part_of_bone[ps.bone] = p
    M = 0 if muscles is None else muscles.muscle_count
    mb = np.full(M, -1, dtype=np.int64) if muscle_bones is None else np.asarray(muscle_bones, dtype=np.int64)
    if mb.shape != (M,):
        raise ValueError(f"muscle_bones needs one bone per muscle ({M}).")
    if np.any((mb < -1) | (mb >= B)):
        raise ValueError("a muscle's skin bone index is out of range.")
    # a muscle joins its skin bone's part, or the part of the nearest ancestor that has one (a bone with too few
    # vertices shares its parent's part)
    owner_part = part_of_bone.copy()
    for j in range(B):
        a = j
        while a >= 0 and part_of_bone[a] < 0:
            a = parents[a]
        owner_part[j] = part_of_bone[a] if a >= 0 else -1
    muscle_part = np.where(mb >= 0, owner_part[np.maximum(mb, 0)], -1)
    for k in np.flatnonzero((mb >= 0) & (muscle_part < 0)):
        name = bone_names[mb[k]] if bone_names is not None else f"bone {mb[k]}"
        raise ValueError(f"muscle {muscles.names[k]} joins the skin of {name}, but neither {name} nor any bone "
                         f"above it owns skin vertices; pick another skin bone for the muscle.")
    lists, start, index = _group_by_part(muscle_part, len(parts))
    offsets = muscle_offsets(v, muscles, muscle_part) if M else np.zeros(0)
    fats = FatBatch.empty() if fats is None else fats
    fb = np.full(fats.count, -1, dtype=np.int64) if fat_bones is None else np.asarray(fat_bones, dtype=np.int64)
    if fb.shape != (fats.count,):
        raise ValueError(f"fat_bones needs one bone per fat ({fats.count}).")
    if np.any((fb < -1) | (fb >= B)):
        raise ValueError("a fat's bone index is out of range.")
    fat_part = np.where(fb >= 0, owner_part[np.maximum(fb, 0)], -1)
    for k in np.flatnonzero((fb >= 0) & (fat_part < 0)):
        name = bone_names[fb[k]] if bone_names is not None else f"bone {fb[k]}"
        raise ValueError(f"a fat joins the skin of {name}, but neither {name} nor any bone above it owns skin "
                         f"vertices; hang the fat on another bone.")
    hrbfs, grids = [], []
    for p, ps in enumerate(parts):
        points = ps.points
        if s.pull_under_muscles and M and len(lists[p]):
            points = _pull_under_muscles(ps, muscles, lists[p], offsets)
        h = fit_hrbf(points, ps.normals)
        hrbfs.append(h)
        grids.append(bake_part_grid(h, ps.radius, points, heads[ps.bone], tails[ps.bone], ps.bone,
                                    s.grid_resolution))
    kinds, left, right, part, end = _build_tree(part_of_bone, parents)
    grid_offsets = np.zeros(len(grids) + 1, dtype=np.int64)
    np.cumsum([g.values.size for g in grids], out=grid_offsets[1:])
    leaf_node = np.empty(len(parts), dtype=np.int64)
    leaves = np.flatnonzero(kinds == NODE_PART)
    leaf_node[part[leaves]] = leaves
    model = SkinField(
        settings=s, bone_count=B, parts=parts, hrbfs=hrbfs, grids=grids, labels=labels,
        part_bone=np.array([ps.bone for ps in parts], dtype=np.int64), part_of_bone=part_of_bone,
        muscle_part=muscle_part, part_muscle_start=start, part_muscle_index=index, node_kind=kinds, node_left=left,
        node_right=right, node_part=part, node_end=end, leaf_node=leaf_node,
        grid_values=np.concatenate([g.values.reshape(-1) for g in grids]).astype(np.float32),
        grid_offset=grid_offsets, grid_dims=np.array([g.values.shape[:3] for g in grids], dtype=np.int64),
        grid_origin=np.array([g.origin for g in grids]), grid_inv_h=np.array([1.0 / g.spacing for g in grids]),
        muscles=muscles, muscle_offset=offsets, heads=heads, tails=tails, parents=parents,
        grid_corners=np.stack([g.box[0] + _BOX_CORNERS * (g.box[1] - g.box[0]) for g in grids]),
        fats=fats, fat_part=fat_part)
    if not fats.count:
        return model
    fat_start, fat_index, fat_slope = fat_joins(model, v)
    return dataclasses.replace(model, part_fat_start=fat_start, part_fat_index=fat_index, fat_slope=fat_slope)
