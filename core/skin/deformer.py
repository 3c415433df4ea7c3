"""Implicit Skinning of one mesh, one frame at a time: DQS start, iso-surface tracking, ARAP relaxation (thesis
ch. 3, paper §7.2). Bone transforms and the muscles' state in, vertex positions out.

:class:`ImplicitSkinDeformer` owns the bind data: the skin field (``core/skin/field.py``), the vertices'
iso-values ``e_i = F_0(v_ref_i)`` (the composed field at rest, muscles included), the normalised influences for
DQS (``core/skin/skinning.py``) and the one-rings with clamped cotangent weights (``core/skin/mesh_rings.py``).
:meth:`ImplicitSkinDeformer.deform` runs the frame's stages and records their times in ``timings`` [s]:

* ``pose``: checks the transforms, DQS positions and rotations (numba);
* ``field``: places the part grids and node boxes, takes the muscles' new state;
* ``tracking``: ``kernels/tracking.py`` (projection, contact stop, contact landing, ARAP; ``land_on_contact``,
  default on, may be switched between frames; ``landable (V,)`` the vertices it may move: not those past a contact
  surface at rest), then, with ``keep_volume`` (default),
  ``kernels/joint_volume.py``: the volume the tracked skin lost at each bent joint is given back
  (``core/skin/joint_volume.py``). ``tracked`` keeps the positions before that step, ``volume_deficits (J,)`` [m^3]
  what each joint of ``joint_regions`` had lost (zeros when ``keep_volume`` is off).

Positions are in the armature's (unscaled) space, the same space as the rest vertices and the bone transforms.
A frame whose result would hold a non-finite coordinate raises ``ValueError`` and leaves ``out`` as the DQS result
(the caller can show that instead).
"""
from __future__ import annotations

import time

import numpy as np

from .. import validation
from .joint_volume import (FULL_BEND, MAX_BULGE, NEWTON_STEPS, NEWTON_TOL, VOLUME_TOL, bind_joint_regions,
                           no_joint_regions)
from .mesh_rings import border_vertices, cotangent_rings
from .field import SkinField
from .skinning import check_rigid, dqs, influences
from .tracking import TrackingSettings
from ...kernels.constants import NODE_PART


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
        skin.update(None)
        self.iso, _ = skin.evaluate(self.rest)
        V = len(self.rest)
        self._rot = np.empty((V, 3, 3))
        self._p = np.empty((V, 3))
        self._anchor = np.empty((V, 3))
        self._normal = np.empty((V, 3))
        self._g_prev = np.zeros((V, 3))
        self.state = np.zeros(V, dtype=np.int8)
        self.active = np.zeros(V, dtype=np.bool_)
        self.dqs_positions = np.empty((V, 3))
        self.tracked = np.empty((V, 3))
        self.volume_deficits = np.zeros(self.joint_regions.count)
        self._ring_dist = np.empty(V, dtype=np.int64)
        self._bulge_normal = np.zeros((V, 3))
        self._grad = np.zeros((V, 3))
        self.timings: dict = {}
        self.last_sweeps = 0
        part_of_bone = np.full(skin.bone_count, -1)
        part_of_bone[skin.part_bone] = np.arange(skin.part_count)
        self.own_part = part_of_bone[skin.labels].astype(np.int64)
        """``(V,)`` each vertex's part (the part of the bone it is labelled with)."""
        self.leaf_nodes = leaf_nodes(skin)
        self.landable = ~contact_passed_at(skin, self.rest, self.own_part, self.settings.landing_angle)
        """``(V,)`` vertices the contact landing may move: all but those already past a contact surface at rest
        (two parts a model builds overlapping, like legs pressed together)."""
        self.land_on_contact = self.settings.land_on_contact
        """Land vertices that pass a contact surface on it (``settings.land_on_contact`` at bind; may be switched
        between frames, the Blender panel's *Land on Contact* does)."""
        self._nowhere = np.zeros(V, dtype=np.bool_)
        self._previous = None
        self._previous_frame = None

    @property
    def vertex_count(self) -> int:
        return len(self.rest)

    def deform(self, bone_transforms, muscles=None, out=None, frame=None) -> np.ndarray:
        """Vertex positions ``(V, 3)`` [m] for ``bone_transforms (B, 4, 4)`` (rest -> posed, rigid) and the
        muscles' :class:`core.muscle.batch.MuscleBatch` (None: the bind-time muscles, unchanged).

        ``out``: optional ``(V, 3)`` float64 array to write into. ``frame``: the frame number, used only by the
        temporal mode (start from the previous result when ``frame`` follows the previous call's).
        """
        from ...kernels.joint_volume import restore
        from ...kernels.tracking import track

        s = self.settings
        t0 = time.perf_counter()
        B = check_rigid(bone_transforms, self.bone_names)
        if B.shape[0] != self.skin.bone_count:
            raise ValueError(f"expected transforms for {self.skin.bone_count} bones, got {B.shape[0]}.")
        x = np.empty((self.vertex_count, 3)) if out is None else out
        dqs(self.rest, self.influences, B, self.dqs_positions, self._rot)
        t1 = time.perf_counter()
        self.skin.update(B, muscles)
        field = self.skin.kernel_field()
        t2 = time.perf_counter()
        consecutive = (s.temporal and frame is not None and self._previous is not None
                       and self._previous_frame is not None and frame == self._previous_frame + 1)
        x[:] = self._previous if consecutive else self.dqs_positions
        self.last_sweeps = track(x, self._rot, self.rest, self.iso, self.rings.start, self.rings.neighbour,
                                 self.rings.weight, field, s.lambdas(), s.eps, np.cos(np.radians(s.contact_angle)),
                                 s.contact_band, s.bisect_steps, s.trust * self.mesh_size,
                                 s.max_step * self.mesh_size, s.dilation,
                                 s.quiet * self.mesh_size,
                                 s.final_sweeps, s.final_tolerance * self.mesh_size,
                                 self._p, self._anchor, self._normal, self._g_prev, self.state, self.active,
                                 self.pinned, self.leaf_nodes[self.own_part], self.leaf_nodes,
                                 self.landable if self.land_on_contact else self._nowhere,
                                 np.cos(np.radians(s.landing_angle)), s.landing_steps)
        self.tracked[:] = x
        regions = self.joint_regions
        self.volume_deficits[:] = 0.0
        if self.keep_volume and regions.count:
            restore(x, self.faces, B, regions.bones, regions.parent_bones, FULL_BEND, regions.face_part,
                    regions.centres, regions.rest_volume, MAX_BULGE * regions.radii, regions.face_start,
                    regions.faces, regions.vertex_start, regions.vertices, regions.profile, self.state,
                    self.rings.start, self.rings.neighbour, self.pinned, s.volume_gap, s.volume_rings, VOLUME_TOL,
                    NEWTON_STEPS, NEWTON_TOL, self._ring_dist, self._bulge_normal, self._grad, self.volume_deficits)
        t3 = time.perf_counter()
        self.timings = {"pose": t1 - t0, "field": t2 - t1, "tracking": t3 - t2}
        if not np.all(np.isfinite(x)):
            x[:] = self.dqs_positions
            raise ValueError("Implicit Skinning produced non-finite positions this frame; the DQS result is "
                             "given instead.")
        if s.temporal:
            self._previous = self.tracked.copy()
            self._previous_frame = frame
        return x


def contact_passed_at(skin: SkinField, points, own_part, landing_angle: float) -> np.ndarray:
    """``(n,)`` bool: whether each of ``points (n, 3)`` [m], a vertex of part ``own_part (n,)``, has passed a
    contact surface in the skin field's current pose (``kernels/tracking.beyond_contact``, gradients facing by more
    than ``landing_angle`` [deg])."""
    from ...kernels.tracking import contact_passed

    leaves = leaf_nodes(skin)
    pts = np.ascontiguousarray(points, dtype=np.float64)
    out = np.zeros(len(pts), dtype=np.bool_)
    contact_passed(pts, leaves[own_part], leaves, np.cos(np.radians(landing_angle)), skin.kernel_field(), out)
    return out


def leaf_nodes(skin: SkinField) -> np.ndarray:
    """``(P,)`` int64: the composition tree's leaf node of each part."""
    out = np.empty(skin.part_count, dtype=np.int64)
    leaves = np.flatnonzero(skin.node_kind == NODE_PART)
    out[skin.node_part[leaves]] = leaves
    return out
