"""Implicit Skinning of one mesh, one frame at a time: DQS start, iso-surface tracking, ARAP relaxation (thesis
ch. 3, paper §7.2). Bone transforms and the muscles' state in, vertex positions out.

:class:`ImplicitSkinDeformer` owns the bind data: the skin field's model (``core/skin/field.py``), the vertices'
iso-values ``e_i = F_0(v_ref_i)`` (the composed field at rest, muscles included), the normalised influences for
DQS (``core/skin/skinning.py``), the one-rings with clamped cotangent weights (``core/skin/mesh_rings.py``) and the
kernels' structs built from them once. :meth:`ImplicitSkinDeformer.deform` runs the frame's stages and records
their times in ``timings`` [s]:

* ``pose``: checks the transforms, DQS positions and rotations (numba);
* ``field``: places the skin field (:meth:`core.skin.field.SkinField.place`, kept in ``placement``);
* ``tracking``: ``kernels/tracking.py`` (projection, contact stop, contact landing, ARAP; ``land_on_contact``,
  default on, may be switched between frames; ``landable (V,)`` the vertices it may move: not those past a contact
  surface at rest); then, with ``keep_volume`` (default), ``kernels/joint_volume.py``: the volume the tracked skin
  lost at each bent joint is given back (``core/skin/joint_volume.py``); ``tracked`` keeps the positions before
  that step, ``volume_deficits (J,)`` [m^3] what each joint of ``joint_regions`` had lost (zeros when
  ``keep_volume`` is off); then, with ``limit_correction`` (default), ``kernels/skin_correction.py``: the
  correction against the DQS result, less the muscles' push, is scaled by each vertex's ``trust (V,)`` in the
  field, capped at ``correction_cap (V,)`` [m] (longer at a contact and under a fat) and smoothed, and the push is
  added back (``core/skin/trust.py``;
  vertices of trust 0 are not tracked); then, with ``resolve_creases`` (default), ``kernels/crease.py``: the skin
  left inside the body at a crease is pushed back onto the skin it passed (``core/skin/crease.py``;
  ``crease_pushed (V,)`` the vertices it moved).

``tracking_stages`` [s] splits ``tracking``: ``track`` (the kernel), ``volume``, ``correction`` and ``crease``;
``scratch`` holds the kernel's per-vertex outcome (``active``, ``state``, ``evaluations``: field evaluations per
vertex).

Positions are in the armature's (unscaled) space, the same space as the rest vertices and the bone transforms.
A frame whose result would hold a non-finite coordinate raises ``ValueError`` and leaves ``out`` as the DQS result
(the caller can show that instead).
"""
from __future__ import annotations

import time

import numpy as np

from .. import validation
from ..quality import RENDER, EvaluationQuality
from .joint_volume import bind_joint_regions, no_joint_regions
from .mesh_rings import border_vertices, cotangent_rings
from .field import SkinField, SkinPlacement
from .parts import vertex_normals
from .skinning import check_rigid, dqs, influences
from .tracking import STATE_CONTACT, TrackingSettings
from .trust import edge_scale, field_trust


class ImplicitSkinDeformer:
    """Bind once (``rest_vertices (V, 3)`` [m], ``faces (F, 3)``, ``weights (V, B)``), then :meth:`deform` per frame.

    The skin field must have been bound from the same mesh; its muscles at bind time define the rest iso-values.
    """

    def __init__(self, skin: SkinField, rest_vertices, faces, weights, settings: TrackingSettings | None = None,
                 bone_names=None):
        self.skin = skin
        self.settings = (settings or TrackingSettings()).validated()
        self.rest = validation.points(rest_vertices, "rest vertices")
        if len(self.rest) != len(skin.labels):
            raise ValueError(f"the skin field was bound on {len(skin.labels)} vertices, the mesh has "
                             f"{len(self.rest)}; bind again after editing the mesh.")
        self.bone_names = bone_names
        self.influences = influences(weights, skin.labels)
        self.rings = cotangent_rings(self.rest, faces)
        self.pinned = border_vertices(faces, len(self.rest)) if self.settings.pin_borders \
            else np.zeros(len(self.rest), dtype=np.bool_)
        self.mesh_size = float(np.linalg.norm(np.ptp(self.rest, axis=0)))
        self.faces = np.ascontiguousarray(np.asarray(faces, dtype=np.int64).reshape(-1, 3))
        self.joint_regions = no_joint_regions() if skin.heads is None else bind_joint_regions(
            self.rest, self.faces, weights, skin.labels, skin.heads, skin.tails, skin.parents,
            self.settings.volume_region)
        self.keep_volume = self.settings.keep_volume
        """Give back the volume lost at bent joints (``settings.keep_volume`` at bind; may be switched between
        frames, the Blender panel's *Keep Joint Volume* does)."""
        self.placement: SkinPlacement = skin.place()
        """The skin field as placed for the last frame (at rest after bind)."""
        self.iso, rest_grads = self.placement.evaluate(self.rest)
        V = len(self.rest)
        self.own_part = skin.part_of_bone[skin.labels]
        """``(V,)`` int64 each vertex's part (the part of the bone it is labelled with)."""
        self.limit_correction = self.settings.limit_correction
        """Limit the correction against the DQS result by trust, cap and smoothing (``core/skin/trust.py``;
        ``settings.limit_correction`` at bind; may be switched between frames, the Blender panel's *Limit
        Corrections* does)."""
        self.trust = field_trust(self.rest, vertex_normals(self.rest, self.faces), self.iso, rest_grads,
                                 self.own_part, skin.part_count, self.rings.start, self.rings.neighbour)
        """``(V,)`` each vertex's trust in the skin field, 0..1 (``core/skin/trust.py``); with the limit on, a
        vertex of trust 0 is not tracked."""
        self.correction_cap = self.settings.correction_cap * edge_scale(self.rest, self.rings.start,
                                                                         self.rings.neighbour)
        """``(V,)`` [m] the longest correction of each vertex against its DQS position."""
        self._rot = np.empty((V, 3, 3))
        self.dqs_positions = np.empty((V, 3))
        self.tracked = np.empty((V, 3))
        self.volume_deficits = np.zeros(self.joint_regions.count)
        self.timings: dict = {}
        self.tracking_stages: dict = {}
        self.last_sweeps = 0
        self.landable = ~contact_passed_at(self.placement, self.rest, self.own_part, self.settings.landing_angle)
        """``(V,)`` vertices the contact landing may move: all but those already past a contact surface at rest."""
        self.land_on_contact = self.settings.land_on_contact
        """Land vertices that pass a contact surface on it (``settings.land_on_contact`` at bind; may be switched
        between frames, the Blender panel's *Land on Contact* does)."""
        self.resolve_creases = self.settings.resolve_creases
        """Push the skin left inside the body at creases back (``settings.resolve_creases`` at bind; may be switched
        between frames)."""
        self.crease_pushed = np.zeros(V, dtype=np.bool_)
        """``(V,)`` bool the vertices the last frame's crease stage pushed."""
        self._build_kernel_structs()
        self._previous = None
        self._previous_frame = None

    def _build_kernel_structs(self) -> None:
        """The kernels' bind-time structs (``kernels/tracking.py``, ``kernels/joint_volume.py``)."""
        from ...kernels.joint_volume import VolumeMesh, VolumeScratch
        from ...kernels.skin_correction import CorrectionMesh
        from ...kernels.tracking import TrackMesh, track_scratch

        V = len(self.rest)
        mesh = TrackMesh(rest=self.rest, iso=self.iso, ring_start=self.rings.start,
                         ring_neighbour=self.rings.neighbour, ring_weight=self.rings.weight,
                         own_leaf=self.skin.leaf_node[self.own_part], leaf_nodes=self.skin.leaf_node,
                         landable=self.landable, pinned=self.pinned)
        unlanded = np.zeros(V, dtype=np.bool_)
        untrusted = self.pinned | (self.trust <= 0.0)
        self._track_mesh = {(land, limit): mesh._replace(landable=self.landable if land else unlanded,
                                                         pinned=untrusted if limit else self.pinned)
                            for land in (True, False) for limit in (True, False)}
        """The tracked mesh, with and without the contact landing (``land_on_contact``), with and without the
        untrusted vertices left out (``limit_correction``)."""
        self._track_params = self.settings.kernel_params(self.mesh_size)
        self.scratch = track_scratch(V)
        """The tracking's work arrays; ``scratch.state`` and ``scratch.active`` are the last frame's outcome."""
        self._unknown_gap = np.full(V, np.nan)
        """The correction's ``start_gap`` when the tracking did not start at the DQS positions (temporal mode)."""
        self._volume_mesh = VolumeMesh(faces=self.faces, ring_start=self.rings.start,
                                       ring_neighbour=self.rings.neighbour, pinned=self.pinned)
        self._volume_regions = self.joint_regions.kernel_arrays()
        self._volume_params = self.settings.volume_params()
        self._volume_scratch = VolumeScratch(dist=np.empty(V, dtype=np.int64), normal=np.zeros((V, 3)),
                                             grad=np.zeros((V, 3)))
        self._correction_mesh = CorrectionMesh(trust=np.where(self.pinned, 0.0, self.trust),
                                               cap=self.correction_cap, ring_start=self.rings.start,
                                               ring_neighbour=self.rings.neighbour,
                                               own_leaf=mesh.own_leaf, leaf_nodes=mesh.leaf_nodes,
                                               cos_land=self._track_params.cos_land,
                                               sweeps=int(self.settings.correction_smoothing))
        self._correction_scratch = (np.empty((V, 3)), np.empty((V, 3)), np.zeros(V, dtype=np.bool_))
        from .crease import crease_mesh, crease_params

        edges = np.linalg.norm(self.rest[self.faces[:, [1, 2, 0]]] - self.rest[self.faces], axis=2)
        self._crease_params = crease_params(self.settings, self.mesh_size, float(edges.mean()))
        self._crease_mesh = crease_mesh(self.rest, self.faces, self.rings, self.pinned, self.own_part,
                                        self._crease_params)
        self._by_quality: dict = {}
        """``_quality_structs`` of the qualities used so far."""

    @property
    def state(self) -> np.ndarray:
        """``(V,)`` int8 each vertex's last tracking outcome (``STATE_*``)."""
        return self.scratch.state

    @property
    def active(self) -> np.ndarray:
        """``(V,)`` bool the vertices the last frame worked on."""
        return self.scratch.active

    @property
    def rotations(self) -> np.ndarray:
        """``(V, 3, 3)`` each vertex's dual-quaternion rotation in the last :meth:`deform` (the ARAP's ``R_i``)."""
        return self._rot

    @property
    def vertex_count(self) -> int:
        return len(self.rest)

    def _quality_structs(self, quality: EvaluationQuality):
        """``(TrackParams, CorrectionMesh)`` of ``quality`` (``core/quality.py``): the bound settings' iterations,
        final ARAP sweeps and correction sweeps, each lowered to the quality's where it sets fewer; built once per
        quality."""
        if quality.is_render:
            return self._track_params, self._correction_mesh
        key = (quality.tracking_iterations, quality.arap_sweeps, quality.correction_sweeps)
        structs = self._by_quality.get(key)
        if structs is None:
            from dataclasses import replace

            s = self.settings
            lowered = replace(
                s, iterations=min(s.iterations, quality.tracking_iterations or s.iterations),
                final_sweeps=s.final_sweeps if quality.arap_sweeps is None else min(s.final_sweeps,
                                                                                     quality.arap_sweeps),
                correction_smoothing=s.correction_smoothing if quality.correction_sweeps is None else min(
                    s.correction_smoothing, quality.correction_sweeps))
            structs = (lowered.kernel_params(self.mesh_size),
                       self._correction_mesh._replace(sweeps=int(lowered.correction_smoothing)))
            self._by_quality[key] = structs
        return structs

    def deform(self, bone_transforms, muscles=None, out=None, frame=None,
               quality: EvaluationQuality = RENDER, fats=None) -> np.ndarray:
        """Vertex positions ``(V, 3)`` [m] for ``bone_transforms (B, 4, 4)`` (rest -> posed, rigid) and the
        muscles' :class:`core.muscle.batch.MuscleBatch` (None: the bind-time muscles, unchanged), with the
        tracking iterations and sweeps of ``quality`` (``core/quality.py``; default: the bound settings); ``fats``:
        this frame's :class:`core.fat.batch.FatBatch` (None: the fats at bind).

        ``out``: optional ``(V, 3)`` float64 array to write into. ``frame``: the frame number, used only by the
        temporal mode (start from the previous result when ``frame`` follows the previous call's).
        """
        from ...kernels.crease import resolve_creases
        from ...kernels.joint_volume import restore
        from ...kernels.skin_correction import limit_correction
        from ...kernels.tracking import track

        t0 = time.perf_counter()
        B = check_rigid(bone_transforms, self.bone_names)
        if B.shape[0] != self.skin.bone_count:
            raise ValueError(f"expected transforms for {self.skin.bone_count} bones, got {B.shape[0]}.")
        x = np.empty((self.vertex_count, 3)) if out is None else out
        dqs(self.rest, self.influences, B, self.dqs_positions, self._rot)
        t1 = time.perf_counter()
        self.placement = self.skin.place(B, muscles, fats)
        t2 = time.perf_counter()
        consecutive = (self.settings.temporal and frame is not None and self._previous is not None
                       and self._previous_frame is not None and frame == self._previous_frame + 1)
        x[:] = self._previous if consecutive else self.dqs_positions
        mesh = self._track_mesh[bool(self.land_on_contact), bool(self.limit_correction)]
        track_params, correction_mesh = self._quality_structs(quality)
        self.last_sweeps = track(x, self._rot, mesh, *self.placement.kernel_args, track_params, self.scratch)
        ta = time.perf_counter()
        self.tracked[:] = x
        self.volume_deficits[:] = 0.0
        if self.keep_volume and self.joint_regions.count:
            restore(x, B, self.scratch.state, self._volume_mesh, self._volume_regions, self._volume_params,
                    self._volume_scratch, self.volume_deficits)
        tb = time.perf_counter()
        if self.limit_correction:
            gap = self._unknown_gap if consecutive else self.scratch.start_gap
            limit_correction(x, self.dqs_positions, gap, correction_mesh, *self.placement.kernel_args,
                             *self._correction_scratch)
        tc = time.perf_counter()
        self.crease_pushed[:] = False
        if self.resolve_creases:
            seeds = (self.scratch.start_gap >= 0.0) | (self.scratch.state == STATE_CONTACT)
            resolve_creases(x, self._rot, seeds, self._crease_mesh, self._crease_params, self.crease_pushed)
        t3 = time.perf_counter()
        self.timings = {"pose": t1 - t0, "field": t2 - t1, "tracking": t3 - t2}
        self.tracking_stages = {"track": ta - t2, "volume": tb - ta, "correction": tc - tb, "crease": t3 - tc}
        if not np.all(np.isfinite(x)):
            x[:] = self.dqs_positions
            raise ValueError("Implicit Skinning produced non-finite positions this frame; the DQS result is "
                             "given instead.")
        if self.settings.temporal:
            self._previous = self.tracked.copy()
            self._previous_frame = frame
        return x


def contact_passed_at(placement: SkinPlacement, points, own_part, landing_angle: float) -> np.ndarray:
    """``(n,)`` bool: whether each of ``points (n, 3)`` [m], a vertex of part ``own_part (n,)``, has passed a
    contact surface of the skin field as placed (``kernels/tracking.beyond_contact``, gradients facing by more
    than ``landing_angle`` [deg])."""
    from ...kernels.tracking import contact_passed

    leaves = placement.model.leaf_node
    pts = np.ascontiguousarray(points, dtype=np.float64)
    out = np.zeros(len(pts), dtype=np.bool_)
    contact_passed(pts, leaves[own_part], leaves, float(np.cos(np.radians(landing_angle))), *placement.kernel_args,
                   out)
    return out
