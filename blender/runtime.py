"""Bind data of the session, per mesh object. Not stored in the .blend (bind is deterministic and is redone when a
file is reopened), except the muscles' settled rest (``REST_PROPERTY``), which makes that rebind fast.

``bind(mesh_obj, armature)`` builds a ``core.character.MuscledCharacter`` from the scene (``blender/reader.py``)
with the mesh's settings; ``bound(mesh_obj)`` returns it or None; ``unbind`` forgets it. The signature records
the vertex count and checksums of the rest positions, the bones' rest frames and the muscles' set-up, so
``stale_reason`` can say what changed since bind (the panel offers one click to bind again).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from . import reader
from .rig import BONE_FIELDS, follow_renames, muscle_problem, skin_meshes

_BOUND: dict = {}


@dataclass
class Bound:
    """One mesh's bind: the core character, where its numbers come from, and the muscles' state per frame."""

    character: object
    signature: str
    source: np.ndarray  # (fibres,) index of the Blender muscle each core muscle comes from
    rest_inverse: np.ndarray  # (B, 4, 4) inverse rest frames of the bones (armature space)
    to_mesh: np.ndarray  # (4, 4) armature space -> mesh local space
    setup: str = ""  # ``setup_digest`` of the armature at bind
    cache: dict = field(default_factory=dict)  # frame -> PBD state after that frame
    keys: dict = field(default_factory=dict)  # the armature's keyframes at the last check (``key_snapshot``)
    last_frame: int | None = None  # the frame of ``last_local``
    last_local: np.ndarray | None = None  # (V, 3) float32 positions last written [m, mesh local space]
    last_error: str = ""  # why the last frame fell back to the Armature result ("" if it did not)
    timings: dict = field(default_factory=dict)  # the last frame's stages [s] (blender/evaluate.py)

    def __post_init__(self):
        self.last_local = np.zeros((self.character.vertex_count, 3), dtype=np.float32)

    def state_for(self, frame):
        return self.cache.get(frame)

    def store(self, frame, state) -> None:
        """Cache ``frame``'s state; the frame leaving the window of recent frames is dropped unless it is a
        checkpoint (``CACHE_WINDOW``, ``CACHE_EVERY``)."""
        self.cache[frame] = state
        old = frame - CACHE_WINDOW
        if old % CACHE_EVERY:
            self.cache.pop(old, None)

    def last_cached_before(self, frame):
        earlier = [f for f in self.cache if f < frame]
        return max(earlier) if earlier else None

    def check_scene(self, mesh_obj, armature, depsgraph) -> None:
        """``ValueError`` if the scene no longer fits the bind: the mesh's vertex count, the armature's bone count,
        or where the mesh sits relative to the armature in ``depsgraph`` changed (cheap enough for every frame)."""
        count = len(mesh_obj.data.vertices)
        if count != len(self.last_local):
            raise ValueError(f"{mesh_obj.name} has {count} vertices now and had {len(self.last_local)} at bind: "
                             f"bind it again (Bind Skin).")
        bones = len(armature.pose.bones)
        if bones != len(self.rest_inverse):
            raise ValueError(f"{armature.name} has {bones} bones now and had {len(self.rest_inverse)} when "
                             f"{mesh_obj.name} was bound: bind it again (Bind Skin).")
        to_mesh = np.array(mesh_obj.evaluated_get(depsgraph).matrix_world.inverted_safe()
                           @ armature.evaluated_get(depsgraph).matrix_world)
        if np.abs(to_mesh - self.to_mesh).max() > RELATION_TOL * max(1.0, np.abs(self.to_mesh).max()):
            raise ValueError(f"{mesh_obj.name} moved relative to {armature.name} since bind (unparented, or one of "
                             f"them was moved on its own): parent it to the armature, or bind it again where it "
                             f"is (Bind Skin).")

    def keys_changed_from(self, armature):
        """The first frame whose animation changed since the last call (or bind), or None if no key changed."""
        now = key_snapshot(armature)
        first = None
        for path in set(now) | set(self.keys):
            a, b = now.get(path), self.keys.get(path)
            if a is not None and b is not None and len(a) == len(b) and np.array_equal(a, b):
                continue
            frame = _first_difference(a, b)
            first = frame if first is None else min(first, frame)
        self.keys = now
        return first

    def invalidate(self, from_frame=None) -> None:
        """Forget cached muscle states from ``from_frame`` on (all if None): after an edit of the muscles."""
        if from_frame is None:
            self.cache.clear()
        else:
            for f in [f for f in self.cache if f >= from_frame]:
                del self.cache[f]


CACHE_WINDOW = 48
CACHE_EVERY = 8
"""The muscle-state cache keeps every frame of the last ``CACHE_WINDOW`` stored and every ``CACHE_EVERY``-th frame
before them: a state is 4 kB for the arm and 80 kB for the full body, 800 MB over a 10,000-frame shot if all were
kept; this way 100 MB, and going back costs at most ``CACHE_EVERY - 1`` frames of muscle simulation."""
RELATION_TOL = 1e-5
"""Largest change of the armature -> mesh transform's entries since bind (relative to its largest entry) that
``check_scene`` accepts: float32 world matrices of a parented mesh and its armature, moved and rotated by
animation, keep their relation to about 1e-7."""

KEY_FIELDS = ("co", "handle_left", "handle_right")
_INTERPOLATION = {"CONSTANT": 0.0, "LINEAR": 1.0, "BEZIER": 2.0}


def key_snapshot(armature) -> dict:
    """``{(data path, index): (keys, 6) float64}`` of the armature's F-curves (frame, value, both handles), sorted
    by frame, and the interpolation (other modes than constant, linear and Bezier count as one)."""
    from . import animation
    out = {}
    drivers = {d.as_pointer() for d in armature.animation_data.drivers} if armature.animation_data else set()
    for fc in animation.fcurves(armature):
        if fc.as_pointer() in drivers:
            continue
        points = fc.keyframe_points
        cols = []
        for name in KEY_FIELDS:
            buf = np.empty(2 * len(points), dtype=np.float64)
            points.foreach_get(name, buf)
            cols.append(buf.reshape(-1, 2))
        modes = np.array([_INTERPOLATION.get(k.interpolation, -1.0) for k in points], dtype=np.float64)
        out[(fc.data_path, fc.array_index)] = np.column_stack(cols + [modes])
    return out


def _first_difference(a, b) -> float:
    """Frame from which curve ``a`` differs from curve ``b`` (either may be None: added or removed curve)."""
    if a is None or b is None or len(a) == 0 or len(b) == 0:
        return -np.inf
    n = min(len(a), len(b))
    diff = np.flatnonzero(np.any(a[:n] != b[:n], axis=1))
    k = int(diff[0]) if len(diff) else n
    if k == 0:
        return -np.inf  # the first key changed: the curve's value before it changes too
    return float(np.floor(min(a[k - 1, 0], b[k - 1, 0])))


def setup_digest(armature) -> str:
    """Checksum of the bones' rest frames and every muscle's set-up (all but its animated values). Bones count by
    their place in the armature, not their names: renaming a bone (which Blender does for its vertex groups too,
    and ``rig.follow_renames`` for the muscles) changes nothing that bind computes."""
    h = hashlib.sha1()
    bones = armature.data.bones
    buf = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix_local", buf)
    h.update(buf.tobytes())
    for m in armature.implicit_muscles.muscles:
        for name in m.bl_rna.properties.keys():
            if name in SETUP_IGNORED:
                continue
            value = bones.find(getattr(m, name)) if name in BONE_FIELDS else getattr(m, name)
            h.update(repr(tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) else value)
                     .encode())
    h.update(str(armature.implicit_muscles.substeps).encode())
    return h.hexdigest()[:16]


SETUP_IGNORED = {"rna_type", "name", "activation", "stiffness", "width_scale", "eccentricity_rest",
                 "eccentricity_active"}
"""Muscle properties that may change without a new bind (animated values, the name)."""


def stale_reason(mesh_obj) -> str:
    """Why the mesh's bind no longer matches the scene ("" if it does): changed topology, rest shape, rest pose or
    muscles. Reads the whole mesh: for panels and operators, not for every frame."""
    b = bound(mesh_obj)
    skin = mesh_obj.implicit_skin
    if not skin.bound or b is None:
        return ""
    count = len(mesh_obj.data.vertices)
    if count != len(b.last_local):
        return f"The mesh has {count} vertices now and had {len(b.last_local)} at bind."
    rest = np.empty(count * 3, dtype=np.float32)
    mesh_obj.data.vertices.foreach_get("co", rest)
    if signature_of(rest.reshape(-1, 3)) != b.signature:
        return "The mesh's rest shape changed since bind."
    if skin.armature is not None and setup_digest(skin.armature) != b.setup:
        return "The rest pose or the muscles' set-up changed since bind."
    return ""


def signature_of(vertices) -> str:
    """Vertex count and checksum of the rest positions ``(V, 3)`` (mesh local space)."""
    digest = hashlib.sha1(np.ascontiguousarray(vertices, dtype=np.float32).tobytes()).hexdigest()[:16]
    return f"{len(vertices)}:{digest}"


def _key(mesh_obj) -> str:
    return mesh_obj.name_full


def bind(mesh_obj, armature) -> Bound:
    from ..core.character import MuscledCharacter
    from ..core.skin.field import SkinSettings
    from ..core.skin.tracking import TrackingSettings

    follow_renames(armature)
    for m in armature.implicit_muscles.muscles:  # the muscles' set-up first: a deleted bone explains more there
        problem = muscle_problem(armature, m)
        if problem:
            raise ValueError(problem)
    rig = reader.read_rig(mesh_obj, armature, mesh_obj.implicit_skin.unweighted)
    muscles, o_b, i_b, s_b, source = reader.read_muscles(armature, rig.names)
    elsewhere = np.zeros(len(rig.names), dtype=bool)
    for other in skin_meshes(armature):
        if other != mesh_obj:
            elsewhere |= reader.bones_owning(other, armature)
    # none at all is fine: Implicit Skinning alone (a character's head, a rig before its muscles)
    keep = reader.muscles_on_skin(rig, s_b, elsewhere)
    muscles = [m for m, k in zip(muscles, keep) if k]
    o_b, i_b, s_b, source = o_b[keep], i_b[keep], s_b[keep], source[keep]
    s = mesh_obj.implicit_skin
    skin = SkinSettings(samples_per_part=s.samples_per_part, grid_resolution=s.grid_resolution,
                        unweighted="nearest" if s.unweighted == 'NEAREST' else "error")
    tracking = TrackingSettings(iterations=s.iterations, contact_angle=float(np.degrees(s.contact_angle)),
                                temporal=s.temporal, keep_volume=s.keep_volume, land_on_contact=s.land_on_contact)
    setup = setup_digest(armature)
    stored = _stored_rest(mesh_obj, setup)
    character = MuscledCharacter(rig, muscles, o_b, i_b, s_b, skin=skin, tracking=tracking, settled_rest=stored)
    if stored is None:
        _store_rest(mesh_obj, setup, character.settled_rest())
    rest_inverse = np.linalg.inv(np.array([np.array(b.matrix_local) for b in armature.data.bones]))
    to_mesh = np.array(mesh_obj.matrix_world.inverted() @ armature.matrix_world)
    co = np.empty(len(rig.vertices) * 3, dtype=np.float32)
    mesh_obj.data.vertices.foreach_get("co", co)
    out = Bound(character, signature_of(co.reshape(-1, 3)), source, rest_inverse, to_mesh, setup=setup)
    out.keys = key_snapshot(armature)
    _BOUND[_key(mesh_obj)] = out
    return out


REST_PROPERTY = "implicit_muscles_rest"
"""ID property on the mesh object: the muscles' settled rest (``MuscledCharacter.settled_rest``) and the
``setup_digest`` it belongs to. Settling 50 muscles takes seconds; with this, nothing, so a reopened file (or a
farm process) binds fast and bit for bit the same. A rest stored by an older version (the start of the settle,
without ``settled``) or for another set-up is not used: bind settles again."""


def _stored_rest(mesh_obj, setup):
    data = mesh_obj.get(REST_PROPERTY)
    if data is None or data.get("setup") != setup or not data.get("settled"):
        return None
    x, s = np.asarray(data["x"], dtype=np.float64), np.asarray(data["s"], dtype=np.float64)
    if len(x) != 3 * len(s):
        return None
    return x.reshape(-1, 3), s


def _store_rest(mesh_obj, setup, hint) -> None:
    x, s = hint
    try:
        mesh_obj[REST_PROPERTY] = {"setup": setup, "settled": 1, "x": x.ravel().tolist(), "s": s.tolist()}
    except (AttributeError, TypeError, RuntimeError):
        pass  # linked (read-only) data: bind settles from scratch each session


def bound(mesh_obj):
    return _BOUND.get(_key(mesh_obj))


def rebind(mesh_obj) -> Bound:
    """Bind again from the file's settings (a reopened file, or a session that lost its data)."""
    return bind(mesh_obj, mesh_obj.implicit_skin.armature)


def unbind(mesh_obj) -> None:
    _BOUND.pop(_key(mesh_obj), None)


def invalidate_all() -> int:
    """Forget every bound mesh's cached muscle states; returns how many meshes."""
    for b in _BOUND.values():
        b.invalidate()
    return len(_BOUND)


def clear() -> None:
    _BOUND.clear()
