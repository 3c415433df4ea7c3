"""The implicit skin: one compact HRBF field per bone's part, muscles joined to their part, parts composed along
the skeleton (thesis §3.1 and Fig. 6.1, paper §7.1).

Model (:class:`SkinField`, frozen, built once by :func:`bind_skin_field`): partition the mesh by highest weight,
sample each part (``core/skin/parts.py``), fit one HRBF per part to its rest skin (``core/skin/hrbf.py``), bake it in
a grid in rest space (``core/skin/part_grid.py``) and build the composition tree:

* a leaf per part: its HRBF field, displaced by the change of the muscles and fats that move it (below);
* a bone's children subtrees are combined pairwise with the contact operator, then combined with the bone's own
  leaf with the contact operator (children into parents); several roots are combined the same way. Bones without
  vertices are skipped (their children hang on the nearest ancestor that has a part).

State (:class:`SkinPlacement`, one per frame, from :func:`place_skin` / :meth:`SkinField.place`): bone transforms
``B_j = M_j M_ref_j^-1`` (rest -> posed, column vectors, ``(B, 4, 4)``) and the muscles'
:class:`core.muscle.batch.MuscleBatch` give each part grid's placement, the bind-time muscles laid between their
ends and every node's world box; :meth:`SkinPlacement.evaluate` returns ``F`` and its gradient at any points (one
numba call with the ``kernels/skin_field.SkinArrays`` and the muscles' ``MuscleArrays``).

**Muscles** move the skin by their change, not by themselves (docs/design-notes.md#the-skin-follows-a-muscles-change):
the field of each part whose rest vertices a muscle's change reaches (:func:`muscle_joins`) is displaced by ``s_k w_k
lambda_k T_k(f_k^0 - f_k)``, ``f_k^0`` the muscle at bind (its settled rest, rest activation) laid between this frame's
ends (:func:`carried_muscles`), ``f_k`` the muscle this frame, ``T_k`` a saturation at the muscle's travel, ``lambda_k``
the weight of ``f_k^0`` and ``w_k`` a fade towards its ends at a bent joint (:func:`joint_bends`,
``kernels/muscle_change.py``). ``s_k`` [1/m] is the part's slope at its iso-surface over the muscle (at bind): a muscle
whose surface moves by ``D`` under the skin moves the iso-surface by about ``D`` along its normal, all around the
muscle, and the part keeps its own fall-off, so the contact operators at the creases see the same kind of field as
without muscles.

**Fats** (``core/fat``, thesis ch. 6) move the skin the same way: the field of each part whose rest vertices a fat
reaches (:func:`fat_joins`) is displaced by ``s_k lambda_k (f_k^0 - f_k)``, ``f_k^0`` the fat where its bone carries
it, ``f_k`` where its particle is (``kernels/fat.py``). A placement takes this frame's
:class:`core.fat.batch.FatBatch` (None: the fats at bind). The muscles' and fats' displacements add up; the sum is
clamped to [0, 1].

The HRBF fits the rest skin (nothing is pulled in under a muscle or a fat), so the rest pose with the bind-time
muscles and fats gives the rest mesh exactly.

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
from .rest_body import RestBody
from .parts import (DEFAULT_MIN_PART_VERTICES, DEFAULT_SAMPLES_PER_PART, merge_small_parts,
                    partition_vertices, sample_parts)
from ...kernels.constants import NODE_CLEAN, NODE_CONTACT, NODE_PART, SCALAR_LENGTH, SCALAR_REACH, SCALAR_SUPPORT
from ...kernels.fat import REACH_FULL
from ...kernels.muscle_change import (MUSCLE_END_FADE, MUSCLE_REACH_FALL, MUSCLE_REACH_FULL, MUSCLE_TRAVEL,
                                      SWELL_TAIL, TRAVEL_KNEE)


@dataclass(frozen=True)
class SkinSettings:
    """Bind and composition settings (artist-facing names in the Blender panel).

    samples_per_part: target HRBF samples per part; min_part_vertices: smaller parts join their parent's;
    grid_resolution: nodes along a part grid's longest side;
    seed: sampling seed; unweighted: ``"error"`` or ``"nearest"`` (core/skin/parts.py); contact_angles: the
    controller's ``theta0, theta1`` [deg].
    """

    samples_per_part: int = DEFAULT_SAMPLES_PER_PART
    min_part_vertices: int = DEFAULT_MIN_PART_VERTICES
    grid_resolution: int = DEFAULT_GRID_RESOLUTION
    seed: int = 0
    unweighted: str = "error"
    contact_angles: tuple = (80.0, 110.0)


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
    muscle_part: np.ndarray  # (M,) int64 part of each muscle's skin bone (its carrier), -1: joins no part
    part_muscle_start: np.ndarray  # (P+1,) int64 CSR: the muscles that move each part (muscle_joins()) ...
    part_muscle_index: np.ndarray  # (E_M,) int64 ... as muscle indices
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
    muscles: MuscleBatch | None = None  # the muscles at bind (their change from these moves the skin)
    muscle_end_bones: np.ndarray = None  # (M, 2) int64 each muscle's origin and insertion bones (-1: not known)
    muscle_slope: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))  # (E_M,) [1/m] muscle_joins()
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

    @functools.cached_property
    def muscle_leaves(self):
        """The muscle joins by muscle (the skin kernel's ``muscle_leaf_*``): ``(start (M+1,), leaf node (E_M,), slope
        (E_M,))``, each muscle's parts in the order of ``part_muscle_start``; made once per model."""
        M = len(self.muscle_part)
        if M == 0:
            return _no_muscle_leaves()
        owner = np.repeat(np.arange(self.part_count), np.diff(self.part_muscle_start))
        order = np.argsort(self.part_muscle_index, kind="stable")
        start = np.zeros(M + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.part_muscle_index, minlength=M), out=start[1:])
        return (start, np.ascontiguousarray(self.leaf_node[owner[order]], dtype=np.int64),
                np.ascontiguousarray(self.muscle_slope[order], dtype=np.float64))

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
            part_muscle_index=np.zeros(0, dtype=np.int64), muscles=None, muscle_slope=np.zeros(0),
            fats=FatBatch.empty(), fat_part=np.zeros(0, dtype=np.int64), part_fat_start=None,
            part_fat_index=np.zeros(0, dtype=np.int64), fat_slope=np.zeros(0))


@dataclass(frozen=True)
class SkinPlacement:
    """The skin field placed for one frame: the state (module docstring). Arrays per part ``P``, node ``T``."""

    model: SkinField
    grid_binv: np.ndarray  # (P, 3, 4) float64 world -> rest rigid transform of each part grid
    node_bounds: np.ndarray  # (T, 6) float64 [m] world box of each node (min xyz, max xyz)
    muscles: MuscleBatch | None  # this frame's muscles (None: no muscles)
    carried: MuscleBatch | None  # the bind-time muscles laid between this frame's ends (None: no muscles)
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
        """Numpy reference of every leaf (a part's HRBF grid displaced by its muscles' and fats' change, clamped to
        [0, 1]): lists of ``values (n,)`` and ``grads (n, 3)`` per part, at world ``points (n, 3)`` [m].
        ``details``: also the lists of the HRBF's ``(h, grad h)`` and of the displacement ``(d, grad d)``."""
        m = self.model
        pts = validation.points(points, "query points", min_count=0)
        n = len(pts)
        B = np.zeros((m.part_count, 4, 4))
        B[:, :3, :] = self.grid_binv
        B[:, 3, 3] = 1.0
        part_v, part_g, parts_h, parts_d = [], [], [], []
        change = None
        if self.muscles is not None and len(m.part_muscle_index):
            change = _muscle_change_reference(self.carried, self.muscles, self.arrays.carried_bend, pts)
        fat_start = _part_fat_start(m)
        for p, g in enumerate(m.grids):
            v, gr = g.sample(pts, np.linalg.inv(B[p]))
            d, dg = np.zeros(n), np.zeros((n, 3))
            for j in range(m.part_muscle_start[p], m.part_muscle_start[p + 1]):
                k = m.part_muscle_index[j]
                d += m.muscle_slope[j] * change[0][:, k]
                dg += m.muscle_slope[j] * change[1][:, k]
            if fat_start[p] < fat_start[p + 1]:
                box = self.fats.bounds()
                carried = self.fats.carried_center
                for j in range(fat_start[p], fat_start[p + 1]):
                    k = m.part_fat_index[j]
                    inside = np.all((pts >= box[k, :3]) & (pts <= box[k, 3:]), axis=1)
                    dk, dgk = fat_displacement_reference(pts, self.fats.center[k], carried[k], self.fats.frame[k],
                                                         self.fats.axes[k], m.fat_slope[j])
                    d += np.where(inside, dk, 0.0)
                    dg += np.where(inside[:, None], dgk, 0.0)
            moved = v + d
            clamped = (moved <= 0.0) | (moved >= 1.0)
            leaf_v = np.where(d != 0.0, np.clip(moved, 0.0, 1.0), v)
            leaf_g = np.where((d != 0.0)[:, None], np.where(clamped[:, None], 0.0, gr + dg), gr)
            part_v.append(leaf_v)
            part_g.append(leaf_g)
            parts_h.append((v, gr))
            parts_d.append((d, dg))
        if details:
            return part_v, part_g, parts_h, parts_d
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
    """Place the part grids, the laid bind-time muscles and the node boxes of ``model`` for one frame
    (``kernels/skin_field.place_nodes``).

    bone_transforms: ``(B, 4, 4)`` rest -> posed rigid transforms ``B_j`` (None: rest pose; callers check rigidity).
    muscles: the muscles' batch (same muscle order as at bind; None: the bind-time muscles).
    fats: this frame's :class:`core.fat.batch.FatBatch` (same fat order as at bind; None: the fats at bind).
    """
    from ...kernels.muscle_change import muscle_cells
    from ...kernels.skin_field import SkinArrays, place_nodes

    B, muscles = _placement_inputs(model, bone_transforms, muscles)
    fats = _fat_inputs(model, fats)
    has_muscles = muscles is not None and muscles.muscle_count > 0
    muscle_arrays = muscles.kernel_arrays() if has_muscles else _no_muscle_arrays()
    carried = carried_muscles(model, B, muscles) if has_muscles else None
    c = carried.kernel_arrays() if has_muscles else _no_muscle_arrays()
    cos0, cos1 = np.cos(np.radians(model.settings.contact_angles))
    by_muscle = model.muscle_leaves if has_muscles else _no_muscle_leaves()
    cells = muscle_cells(c.muscle_scalar, c.muscle_bounds)
    arrays = SkinArrays(
        node_kind=model.node_kind, node_left=model.node_left, node_right=model.node_right,
        node_part=model.node_part, node_end=model.node_end, grid_values=model.grid_values,
        grid_offset=model.grid_offset, grid_dims=model.grid_dims, grid_origin=model.grid_origin,
        grid_inv_h=model.grid_inv_h, part_muscle_start=model.part_muscle_start,
        part_muscle_index=model.part_muscle_index, muscle_leaf_start=by_muscle[0], muscle_leaf=by_muscle[1],
        muscle_leaf_slope=by_muscle[2],
        clean_table=ops.table("clean"), blend_table=ops.table("blend"), cos0=float(cos0), cos1=float(cos1),
        grid_binv=np.empty((model.part_count, 3, 4)), node_bounds=np.empty((len(model.node_kind), 6)),
        axis_along=np.empty((muscle_arrays.axis_points.shape[0], 4)),
        part_fat_start=_part_fat_start(model), part_fat_index=model.part_fat_index, fat_part=model.fat_part,
        fat_slope=model.fat_slope, fat_axes=np.ascontiguousarray(fats.axes, dtype=np.float64),
        fat_center=np.ascontiguousarray(fats.center, dtype=np.float64),
        fat_frame=np.ascontiguousarray(fats.frame, dtype=np.float64), fat_bounds=fats.bounds(),
        fat_carried=np.ascontiguousarray(fats.carried_center, dtype=np.float64),
        carried_start=c.axis_start, carried_cumulative=c.axis_cumulative, carried_seg_length=c.seg_length,
        carried_seg_angle=c.seg_angle, carried_scale=c.axis_scale, carried_scalar=c.muscle_scalar,
        carried_exponent=c.muscle_exponent, carried_points=c.axis_points, carried_tangent=c.axis_tangent,
        carried_normal=c.axis_normal, carried_seg_tangent=c.seg_tangent, carried_bounds=c.muscle_bounds,
        carried_along=np.empty((c.axis_points.shape[0], 4)),
        carried_bend=joint_bends(model, B) if has_muscles else np.zeros(0),
        carried_dev=np.empty(c.muscle_scalar.shape[0]), chord_dev=np.empty(muscle_arrays.muscle_scalar.shape[0]),
        cell_origin=cells[0], cell_inv_h=float(cells[1]), cell_dims=cells[2], cell_start=cells[3],
        cell_muscle=cells[4])
    place_nodes(B, model.part_bone, model.grid_corners, arrays, muscle_arrays)
    return SkinPlacement(model=model, grid_binv=arrays.grid_binv, node_bounds=arrays.node_bounds,
                         muscles=muscles if has_muscles else None, carried=carried, arrays=arrays,
                         muscle_arrays=muscle_arrays, fats=fats)


@functools.cache
def _no_muscle_leaves():
    """The kernel's ``muscle_leaf_*`` of no muscle (shared, never written)."""
    return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)


def carried_muscles(model: SkinField, bone_transforms, muscles: MuscleBatch) -> MuscleBatch:
    """The bind-time muscles (``model.muscles``) laid between this frame's ends: ``f^0`` of
    ``kernels/muscle_change.py``.

    Each bind axis is turned by its skin part's bone (``B (B, 4, 4)``, rest -> posed; a muscle that joins no part:
    by none), then by the least rotation that lays its chord (first to last axis point) along this frame's chord
    of ``muscles`` (same order), and stretched along the chord to its length, its first point on this frame's
    first. The shapes, widths and supports are the bind's; the axis geometry (arc lengths, tangents, normals,
    boxes) is rebuilt (``kernels/axis.axis_geometry``; a few hundred axis points, vectorised numpy). A muscle that
    keeps its bind shape between its ends therefore reads no change, whatever the bones between them do; at the
    bind pose, and under a rigid motion of the whole body, this is the bind muscle moved rigidly."""
    from ...kernels.fusiform import MuscleArrays

    rest = model.muscles
    a, now = rest.kernel_arrays(), muscles.kernel_arrays()
    M = rest.muscle_count
    first, last = a.axis_start[:-1], a.axis_start[1:] - 1
    T = np.broadcast_to(np.eye(4), (M, 4, 4)).copy()
    joined = model.muscle_part >= 0
    T[joined] = np.asarray(bone_transforms, dtype=np.float64)[model.part_bone[model.muscle_part[joined]]]
    chord0 = a.axis_points[last] - a.axis_points[first]
    chord1 = now.axis_points[last] - now.axis_points[first]
    length0, length1 = np.linalg.norm(chord0, axis=1), np.linalg.norm(chord1, axis=1)
    u0 = chord0 / length0[:, None]
    turned = np.einsum("mij,mj->mi", T[:, :3, :3], u0)
    R = np.einsum("mij,mjk->mik", _least_rotation(turned, chord1 / length1[:, None]), T[:, :3, :3])
    owner = np.repeat(np.arange(M), np.diff(a.axis_start))
    rel = a.axis_points - a.axis_points[first][owner]
    along = np.einsum("pi,pi->p", rel, u0[owner])
    laid = np.einsum("pij,pj->pi", R[owner], rel + ((length1 / length0 - 1.0)[owner] * along)[:, None] * u0[owner])
    # written as the bind points plus their move, so that the bind pose gives the bind points bit for bit
    points = a.axis_points + ((now.axis_points[first] - a.axis_points[first])[owner] + (laid - rel))
    end_normals = np.stack([np.einsum("mij,mj->mi", R, a.axis_normal[first]),
                            np.einsum("mij,mj->mi", R, a.axis_normal[last])], axis=1)
    scalar = a.muscle_scalar.copy()
    arrays = MuscleArrays(a.axis_start, np.zeros_like(points), np.zeros_like(a.axis_cumulative),
                          np.zeros_like(points), np.zeros_like(points), np.zeros_like(points),
                          np.zeros_like(a.seg_length), np.zeros_like(a.seg_angle), scalar, a.muscle_exponent,
                          np.zeros_like(a.muscle_bounds), a.axis_scale)
    carried = dataclasses.replace(rest, arrays=arrays, length=np.zeros(M), status=np.zeros(M, dtype=np.int64))
    carried._geometry(points, end_normals)
    scalar[:, SCALAR_LENGTH] = carried.length
    # a muscle laid where it was bound keeps its bind geometry bit for bit (the rest pose reads no change at all)
    kept = np.logical_and.reduceat(np.all(points == a.axis_points, axis=1), first)
    if kept.any():
        at = kept[owner]
        for name in ("axis_cumulative", "axis_tangent", "axis_normal", "seg_tangent", "seg_length", "seg_angle"):
            getattr(arrays, name)[at] = getattr(a, name)[at]
        scalar[kept] = a.muscle_scalar[kept]
        arrays.muscle_bounds[kept] = a.muscle_bounds[kept]
    return carried


def _least_rotation(a, b):
    """``(M, 3, 3)`` the least rotations taking the unit vectors ``a (M, 3)`` to ``b (M, 3)`` (Rodrigues' formula
    about ``a x b``; the identity where they are equal, a half turn about an axis normal to ``a`` where they are
    opposite)."""
    v = np.cross(a, b)
    c = np.einsum("mi,mi->m", a, b)
    K = np.zeros((len(a), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    K[:, 1, 0], K[:, 2, 0], K[:, 2, 1] = v[:, 2], -v[:, 1], v[:, 0]
    opposite = c <= -1.0 + 1e-12
    scale = np.where(opposite, 0.0, 1.0 / np.where(opposite, 1.0, 1.0 + c))
    R = np.eye(3) + K + scale[:, None, None] * (K @ K)
    if opposite.any():
        n = np.cross(a[opposite], np.where(np.abs(a[opposite, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]))
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        R[opposite] = 2.0 * n[:, :, None] * n[:, None, :] - np.eye(3)
    return R


def joint_bends(model: SkinField, bone_transforms) -> np.ndarray:
    """``(M,)`` how far each muscle's joint is bent this frame, in [0, 1]: ``(1 - cos theta) / 2`` of the angle
    ``theta`` of the rotation between its origin's and its insertion's bone (``model.muscle_end_bones``; 0 where
    they are not known) under ``B (B, 4, 4)``, rest -> posed (0 at the rest pose)."""
    M = len(model.muscle_part)
    ends = model.muscle_end_bones
    if ends is None:
        return np.zeros(M)
    R = np.asarray(bone_transforms, dtype=np.float64)[:, :3, :3]
    o, i = R[np.maximum(ends[:, 0], 0)], R[np.maximum(ends[:, 1], 0)]
    trace = np.einsum("mji,mji->m", o, i)  # tr(R_o^T R_i)
    return np.where((ends >= 0).all(axis=1), np.clip((3.0 - trace) / 4.0, 0.0, 1.0), 0.0)


def travel_reference(D, c):
    """Numpy reference of ``kernels/muscle_change.travel``: ``(T, dT/dD)`` of the changes ``D (n,)`` [m], a thinning
    saturated at ``c`` [m], a swelling going on at ``SWELL_TAIL`` beyond the knee."""
    D = np.asarray(D, dtype=np.float64)
    g = np.where(D >= 0.0, SWELL_TAIL, 0.0)
    a = np.abs(D)
    knee = TRAVEL_KNEE * c
    k = (1.0 - g) / (3.0 * TRAVEL_KNEE * TRAVEL_KNEE)
    r = D / c
    inside = a < knee
    beyond = np.copysign(c * (TRAVEL_KNEE * (2.0 + g) / 3.0) + g * (a - knee), D)
    return np.where(inside, D - k * D * r * r, beyond), np.where(inside, 1.0 - 3.0 * k * r * r, g)


def _muscle_change_reference(carried: MuscleBatch, muscles: MuscleBatch, bend, points):
    """``w_k lambda_k(f_k^0) T_k(f_k^0 - f_k)`` of every muscle at ``points (n, 3)`` and its gradient: ``(values
    (n, M), grads (n, M, 3))`` (``kernels/muscle_change.py``, without the slope); ``bend (M,)`` the joints' bends
    (:func:`joint_bends`)."""
    from ..muscle.batch import evaluate_muscles

    f0, g0 = evaluate_muscles(carried, points)
    f1, g1 = evaluate_muscles(muscles, points)
    R = carried.muscle_scalar[:, SCALAR_SUPPORT][None, :]
    t = np.clip((f0 - MUSCLE_REACH_FULL * R) / (MUSCLE_REACH_FALL * R), 0.0, 1.0)
    lam, dlam = 1.0 - t * t * (3.0 - 2.0 * t), -6.0 * t * (1.0 - t) / (MUSCLE_REACH_FALL * R)
    D = f0 - f1
    t, dt = travel_reference(D, MUSCLE_TRAVEL * R)
    w, gw = _end_weight_reference(carried, bend, points)
    values = w * lam * t
    grads = (w * dlam * t)[..., None] * g0 + (w * lam * dt)[..., None] * (g0 - g1) + (lam * t)[..., None] * gw
    return values, grads


def _end_weight_reference(carried: MuscleBatch, bend, points):
    """Numpy reference of ``kernels/muscle_change.end_weight`` for every muscle at ``points (n, 3)``: ``(w (n, M),
    grad w (n, M, 3))``."""
    start = carried.axis_start
    rho = MUSCLE_END_FADE * carried.muscle_scalar[:, SCALAR_LENGTH]
    w = np.ones((len(points), len(rho)))
    gw = np.zeros((len(points), len(rho), 3))
    for end in (carried.axis_points[start[:-1]], carried.axis_points[start[1:] - 1]):
        e = points[:, None, :] - end[None, :, :]
        t = np.minimum(np.linalg.norm(e, axis=2) / rho[None, :], 1.0)
        s = 1.0 - bend[None, :] + bend[None, :] * t * t * (3.0 - 2.0 * t)
        ds = bend[None, :] * 6.0 * (1.0 - t) / rho[None, :] ** 2
        gw = gw * s[..., None] + (w * ds)[..., None] * e
        w = w * s
    return w, gw


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
    carried)``, ``carried`` the :func:`carried_muscles` (None without muscles)."""
    from ...kernels.skin_field import node_boxes

    B, muscles = _placement_inputs(model, bone_transforms, muscles)
    Bp = B[model.part_bone]
    # rigid inverse [R^T | -R^T t]
    Rt = np.transpose(Bp[:, :3, :3], (0, 2, 1))
    grid_binv = np.concatenate([Rt, -np.einsum("pij,pj->pi", Rt, Bp[:, :3, 3])[:, :, None]], axis=2)
    # leaf boxes: the 8 corners of each grid box moved by B_j, then the part's muscles' reach
    world = np.einsum("pij,pkj->pki", Bp[:, :3, :3], model.grid_corners) + Bp[:, None, :3, 3]
    boxes = np.concatenate([world.min(axis=1), world.max(axis=1)], axis=1)
    carried = None
    if muscles is not None and muscles.muscle_count:
        # a muscle's change moves nothing beyond reach + (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) R of its carried
        # axis
        carried = carried_muscles(model, B, muscles)
        scal = carried.muscle_scalar
        cut = scal[:, SCALAR_REACH] + (MUSCLE_REACH_FULL + MUSCLE_REACH_FALL) * scal[:, SCALAR_SUPPORT]
        owner = np.repeat(np.arange(model.part_count), np.diff(model.part_muscle_start))
        k = model.part_muscle_index
        lows, highs = boxes[:, :3], boxes[:, 3:]
        np.minimum.at(lows, owner, carried.muscle_bounds[k, :3] - cut[k, None])
        np.maximum.at(highs, owner, carried.muscle_bounds[k, 3:] + cut[k, None])
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
    return grid_binv, bounds, carried


FAT_NEAR = 3
"""A fat moves the field of every part with at least this many rest vertices where its change is fully taken (within
``REACH_FULL`` of its support radius ``R`` of its surface, ``kernels/fat.reach_weight``), a muscle every part with
that many where its change is taken at all (within ``MUSCLE_REACH_FULL + MUSCLE_REACH_FALL`` of ``R``); and either
moves every part whose own field reads at least ``FAT_FIELD`` on that many of those vertices."""
FAT_FIELD = 0.1
"""A part whose field reads this much on the skin a fat or muscle moves meets that skin's part in the composition (a
crease's contact): the change moves it too, by the same slope, so both fields move together."""


def fat_joins(model: "SkinField", vertices):
    """Which parts each fat moves and by what slope: ``(start (P+1,), index (E,), slope (E,))``, CSR by part, ``index``
    the fats, ``slope`` [1/m] ``s`` of each (part, fat) (:func:`_joins`, the fat's field where its bone carries it at
    rest, ``R`` its smallest semi-axis)."""
    fats = model.fats
    f0 = np.zeros((len(vertices), fats.count))
    for k in range(fats.count):
        f0[:, k] = fat_field_reference(vertices, fats.center[k], fats.frame[k], fats.axes[k])[0]
    return _joins(model, vertices, f0, fats.support, model.fat_part, REACH_FULL)


def muscle_joins(model: "SkinField", vertices):
    """Which parts each muscle's change moves and by what slope: ``(start (P+1,), index (E,), slope (E,))``, as
    :func:`fat_joins` (:func:`_joins`, the muscle's field at bind, ``R`` its support), over all the skin its change
    reaches: the parts on both sides of a joint the muscle crosses move together, so a bent joint's contact surface
    moves with the muscle instead of one side passing the other."""
    from ..muscle.batch import evaluate_muscles

    f0, _ = evaluate_muscles(model.muscles, vertices)
    return _joins(model, vertices, f0, model.muscles.muscle_scalar[:, SCALAR_SUPPORT], model.muscle_part,
                  MUSCLE_REACH_FULL + MUSCLE_REACH_FALL)


def _joins(model: "SkinField", vertices, f0, support, item_part, within):
    """Which parts each item (fat or muscle) moves and by what slope, from its field at rest ``f0 (V, K)`` [m] on the
    rest ``vertices (V, 3)``, its support ``R`` ``support (K,)`` [m] and its own part ``item_part (K,)`` (-1: none):
    ``(start (P+1,), index (E,), slope (E,))``, CSR by part. The item's skin is the rest vertices within
    ``within R`` of its surface. It moves every part with at least ``FAT_NEAR`` of those vertices (an item over
    the border of two parts moves both), ``s`` the median gradient length of the part's own field (at rest) there,
    so that a change ``D`` [m] of the item moves the part's iso-surface by about ``D``; and every part whose field
    reads at least ``FAT_FIELD`` on ``FAT_NEAR`` of them (a part meeting that skin at a crease), ``s`` the median
    gradient length of those vertices' own parts there, so both fields move alike. An item near no part's vertices
    moves its own part, ``s`` the slope of ``K(f / R)`` at its iso-value, ``15 / (16 R)``, ``R`` the part's
    support."""
    P = model.part_count
    entries = [[] for _ in range(P)]
    rest = model.without_muscles().place()
    near_any = np.flatnonzero(np.any((f0 <= within * np.asarray(support)[None, :]) & (item_part >= 0)[None, :],
                                     axis=1))
    at = np.full(len(vertices), -1, dtype=np.int64)
    at[near_any] = np.arange(len(near_any))
    all_values, all_grads = rest.leaf_reference(vertices[near_any])  # once for every item's skin
    all_values, all_grads = np.asarray(all_values), np.asarray(all_grads)
    for k in range(len(support)):
        if item_part[k] < 0:
            continue
        near = np.flatnonzero(f0[:, k] <= within * support[k])
        found = False
        if len(near):
            values, grads = all_values[:, at[near]], all_grads[:, at[near]]
            own_part = _label_parts(model, model.labels[near])
            slope_own = np.linalg.norm(grads[own_part, np.arange(len(near))], axis=1)
            for p in range(P):
                own = model.labels[near] == model.part_bone[p]
                if np.count_nonzero(own) >= FAT_NEAR:
                    entries[p].append((k, float(np.median(np.linalg.norm(grads[p][own], axis=1)))))
                    found = True
                    continue
                reach = values[p] >= FAT_FIELD
                if np.count_nonzero(reach) >= FAT_NEAR:
                    # the part meets the item's skin: moved by the slope of the skin's own parts there
                    entries[p].append((k, float(np.median(slope_own[reach]))))
                    found = True
        if not found:
            p = item_part[k]
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


@dataclass(frozen=True)
class SkinBindOptions:
    """The keyword arguments of :func:`bind_skin_field`, each None by default.

    settings: :class:`SkinSettings` (None: the defaults); muscles: their batch at rest (None: no muscles);
    muscle_bones (M,) int: the bone whose part each muscle joins (-1: none; None: none joins); muscle_end_bones (M, 2)
    int: each muscle's origin and insertion bones (None: not known; the muscles' change then does not fade at bent
    joints, ``kernels/muscle_change.end_weight``); bone_names (B,) str: the bones' names in error messages (None:
    their indices); fats: the fats at rest (:class:`core.fat.batch.FatBatch`, None: no fats), each joining the part
    of ``fat_bones (F,)`` int (-1: none; None: none joins).
    """

    settings: SkinSettings | None = None
    muscles: MuscleBatch | None = None
    muscle_bones: np.ndarray | None = None
    muscle_end_bones: np.ndarray | None = None
    bone_names: list | None = None
    fats: FatBatch | None = None
    fat_bones: np.ndarray | None = None


def bind_skin_field(vertices, faces, weights, heads, tails, parents, **options) -> SkinField:
    """Bind the implicit skin of a mesh in its rest pose (module docstring).

    vertices (V, 3) [m], faces (F, 3) int (triangles), weights (V, B), heads/tails (B, 3) [m] rest bone ends in the
    mesh's space, parents (B,) int (-1: root); options: the fields of :class:`SkinBindOptions` by name (``settings``,
    ``muscles``, ``muscle_bones``, ``muscle_end_bones``, ``bone_names``, ``fats``, ``fat_bones``). ``ValueError``
    with a plain sentence on bad input.
    """
    o = SkinBindOptions(**options)
    s = o.settings or SkinSettings()
    bone_names = o.bone_names
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
    # a muscle or fat joins its bone's part, or the part of the nearest ancestor that has one (a bone with too few
    # vertices shares its parent's part)
    fats = FatBatch.empty() if o.fats is None else o.fats
    fat_part = _fat_parts(fats, o.fat_bones, _owner_parts(part_of_bone, parents), bone_names)
    hrbfs, grids = [], []
    body = RestBody.build(v, f)
    for p, ps in enumerate(parts):
        h = fit_hrbf(ps.points, ps.normals)
        hrbfs.append(h)
        grids.append(bake_part_grid(h, ps.radius, ps.points, heads[ps.bone], tails[ps.bone], ps.bone,
                                    s.grid_resolution, ends=ps.ends, body=body))
    kinds, left, right, part, end = _build_tree(part_of_bone, parents)
    grid_offsets = np.zeros(len(grids) + 1, dtype=np.int64)
    np.cumsum([g.values.size for g in grids], out=grid_offsets[1:])
    leaf_node = np.empty(len(parts), dtype=np.int64)
    leaves = np.flatnonzero(kinds == NODE_PART)
    leaf_node[part[leaves]] = leaves
    model = SkinField(
        settings=s, bone_count=B, parts=parts, hrbfs=hrbfs, grids=grids, labels=labels,
        part_bone=np.array([ps.bone for ps in parts], dtype=np.int64), part_of_bone=part_of_bone,
        muscle_part=np.zeros(0, dtype=np.int64), part_muscle_start=np.zeros(len(parts) + 1, dtype=np.int64),
        part_muscle_index=np.zeros(0, dtype=np.int64), node_kind=kinds, node_left=left,
        node_right=right, node_part=part, node_end=end, leaf_node=leaf_node,
        grid_values=np.concatenate([g.values.reshape(-1) for g in grids]).astype(np.float32),
        grid_offset=grid_offsets, grid_dims=np.array([g.values.shape[:3] for g in grids], dtype=np.int64),
        grid_origin=np.array([g.origin for g in grids]), grid_inv_h=np.array([1.0 / g.spacing for g in grids]),
        muscles=None, muscle_end_bones=None, heads=heads, tails=tails, parents=parents,
        grid_corners=np.stack([g.box[0] + _BOX_CORNERS * (g.box[1] - g.box[0]) for g in grids]),
        fats=fats, fat_part=fat_part)
    if fats.count:
        fat_start, fat_index, fat_slope = fat_joins(model, v)
        model = dataclasses.replace(model, part_fat_start=fat_start, part_fat_index=fat_index, fat_slope=fat_slope)
    if o.muscles is None or not o.muscles.muscle_count:
        return model
    return join_muscles(model, v, o.muscles, o.muscle_bones, o.muscle_end_bones, bone_names)


def _fat_parts(fats: FatBatch, fat_bones, owner_part, bone_names) -> np.ndarray:
    """``(F,)`` int64 the part each fat joins (-1: none), from its bone ``fat_bones (F,)`` (None: none joins) and
    ``owner_part (B,)`` (:func:`_owner_parts`); ``ValueError`` naming a bone out of range or without skin."""
    B = len(owner_part)
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
    return fat_part


def join_muscles(model: SkinField, vertices, muscles: MuscleBatch, muscle_bones=None, muscle_end_bones=None,
                 bone_names=None) -> SkinField:
    """``model`` (bound without muscles) with ``muscles`` joined (:func:`bind_skin_field`'s arguments of the same
    names; ``vertices (V, 3)`` [m] the rest mesh it was bound on): the muscles at rest become the bind-time muscles
    whose change moves the skin, each joining the part of its skin bone (:func:`muscle_joins`). A host that settles
    its muscles inside the skin (paper §6.3) binds the skin first, keeps the muscles inside
    :meth:`SkinField.without_muscles` while they settle, then joins them where they came to rest."""
    if len(model.muscle_part):
        raise ValueError("this skin has muscles joined already; join them to the skin bound without muscles.")
    v = validation.points(vertices, "mesh vertices")
    B = model.bone_count
    parents = model.parents
    part_of_bone = model.part_of_bone
    M = 0 if muscles is None else muscles.muscle_count
    mb = np.full(M, -1, dtype=np.int64) if muscle_bones is None else np.asarray(muscle_bones, dtype=np.int64)
    if mb.shape != (M,):
        raise ValueError(f"muscle_bones needs one bone per muscle ({M}).")
    if np.any((mb < -1) | (mb >= B)):
        raise ValueError("a muscle's skin bone index is out of range.")
    ends = None if muscle_end_bones is None else np.asarray(muscle_end_bones, dtype=np.int64)
    if ends is not None and (ends.shape != (M, 2) or np.any((ends < -1) | (ends >= B))):
        raise ValueError(f"muscle_end_bones needs an origin and an insertion bone index per muscle ({M}).")
    owner_part = _owner_parts(part_of_bone, parents)
    muscle_part = np.where(mb >= 0, owner_part[np.maximum(mb, 0)], -1)
    for k in np.flatnonzero((mb >= 0) & (muscle_part < 0)):
        name = bone_names[mb[k]] if bone_names is not None else f"bone {mb[k]}"
        raise ValueError(f"muscle {muscles.names[k]} joins the skin of {name}, but neither {name} nor any bone "
                         f"above it owns skin vertices; pick another skin bone for the muscle.")
    model = dataclasses.replace(model, muscles=muscles, muscle_part=muscle_part, muscle_end_bones=ends)
    muscle_start, muscle_index, muscle_slope = muscle_joins(model, v)
    return dataclasses.replace(model, part_muscle_start=muscle_start, part_muscle_index=muscle_index,
                               muscle_slope=muscle_slope)


def _owner_parts(part_of_bone, parents) -> np.ndarray:
    """``(B,)`` the part each bone's muscles and fats join: its own, or its nearest ancestor's that has one (-1:
    none)."""
    owner_part = part_of_bone.copy()
    for j in range(len(part_of_bone)):
        a = j
        while a >= 0 and part_of_bone[a] < 0:
            a = parents[a]
        owner_part[j] = part_of_bone[a] if a >= 0 else -1
    return owner_part
