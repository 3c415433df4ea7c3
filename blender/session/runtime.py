"""The session's binds, per mesh object, and whether each still fits the scene.

``bind(mesh_obj, armature)`` reads the scene once (``binding.describe``), builds the core character
(``binding.build``) and keeps a ``Bound``; ``bound(mesh_obj)`` returns it or None; ``unbind`` forgets it. Binds are
not stored in the .blend (bind is deterministic and is redone when a file is reopened), except the muscles' settled
rest (``binding.REST_PROPERTY``).

Staleness (what changed since bind: topology, rest shape, rest pose or muscles' set-up) is computed when the data
changes and stored in ``Bound.stale``, which the panel reads (``stored_stale``): "" at bind; ``on_mesh_changed`` and
``on_armature_changed`` on depsgraph updates and on load (``blender/session/handlers.py``); ``on_setup_changed`` when a
muscle's set-up property is set (``blender/props/``). ``stale_reason`` computes it now.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.frame_cache import CACHE_EVERY, CACHE_WINDOW, FrameCache
from . import binding

_BOUND: dict = {}

__all__ = ["Bound", "CACHE_EVERY", "CACHE_WINDOW", "RELATION_TOL", "bind", "bound", "rebind", "unbind",
           "invalidate_all", "clear", "stale_reason", "stored_stale", "on_mesh_changed", "on_armature_changed",
           "on_setup_changed"]

RELATION_TOL = 1e-5
"""Largest change of the armature -> mesh transform's entries since bind, relative to its largest entry, that
``Bound.check_scene`` accepts."""


@dataclass
class Bound:
    """One mesh's bind: the core character, where its numbers come from, and the muscles' state per frame."""

    character: object
    signature: str  # ``binding.signature_of`` the rest positions at bind
    source: np.ndarray  # (fibres,) index of the Blender muscle each core muscle comes from
    rest_inverse: np.ndarray  # (B, 4, 4) inverse rest frames of the bones (armature space)
    to_mesh: np.ndarray  # (4, 4) armature space -> mesh local space
    setup: str = ""  # ``binding.setup_digest`` of the armature at bind
    cache: FrameCache = field(default_factory=FrameCache)  # PBD state after each frame (render quality), and keys
    preview_cache: FrameCache = field(default_factory=FrameCache)  # the same at preview quality (blender/session/quality.py)
    last_frame: int | None = None  # the frame of ``last_local``
    last_local: np.ndarray | None = None  # (V, 3) float32 positions last written [m, mesh local space]
    last_error: str = ""  # why the last frame fell back to the Armature result ("" if it did not)
    timings: dict = field(default_factory=dict)  # the last frame's stages [s] (blender/session/playback.py)
    stale_mesh: str = ""  # what changed in the mesh since bind ("" if nothing), from the last check
    stale_setup: str = ""  # what changed in the rest pose or muscles since bind, from the last check
    own_write: bool = False  # the next mesh update comes from writing the positions, not from an edit
    fat_source: np.ndarray = None  # (F,) index of the Blender fat each core fat comes from (blender/scene/fats.py)
    core: np.ndarray = None  # (4, 4) the core frame S at bind: armature space -> the core's (blender/scene/units.py)

    def __post_init__(self):
        self.last_local = np.zeros((self.character.vertex_count, 3), dtype=np.float32)
        if self.core is None:
            self.core = np.eye(4)

    def state_for(self, frame):
        """The muscles' state cached after ``frame`` at render quality, or None."""
        return self.cache.get(frame)

    def cache_for(self, quality) -> FrameCache:
        """The cache of the states simulated at ``quality`` (``core/quality.py``)."""
        return self.preview_cache if quality.name == "preview" else self.cache

    @property
    def caches(self) -> tuple:
        """Both caches: render quality, preview quality."""
        return self.cache, self.preview_cache

    @property
    def stale(self) -> str:
        """Why the bind no longer fits the scene, as of the last check ("" if it fits)."""
        return self.stale_mesh or self.stale_setup

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


def _key(mesh_obj) -> str:
    return mesh_obj.name_full


def bind(mesh_obj, armature) -> Bound:
    """Bind ``mesh_obj`` to ``armature`` and its muscles in the rest pose; ``ValueError`` naming the problem."""
    scene = binding.describe(mesh_obj, armature)
    character = binding.build(scene)
    if scene.settled_rest is None:
        binding.store_rest(mesh_obj, scene.setup, character.model.settled_rest(), scene.core)
    out = Bound(character, scene.signature, scene.source, scene.rest_inverse, scene.to_mesh, setup=scene.setup,
                cache=FrameCache(keys=scene.keys), preview_cache=FrameCache(keys=scene.keys),
                fat_source=scene.fat_source, core=scene.core)
    _BOUND[_key(mesh_obj)] = out
    return out


def bound(mesh_obj):
    """The mesh's ``Bound`` in this session, or None."""
    return _BOUND.get(_key(mesh_obj))


def rebind(mesh_obj) -> Bound:
    """Bind again from the file's settings (a reopened file, or a session that lost its data)."""
    return bind(mesh_obj, mesh_obj.implicit_skin.armature)


def unbind(mesh_obj) -> None:
    _BOUND.pop(_key(mesh_obj), None)


def invalidate_all() -> int:
    """Forget every bound mesh's cached muscle states; returns how many meshes."""
    for b in _BOUND.values():
        for cache in b.caches:
            cache.invalidate()
    return len(_BOUND)


def clear() -> None:
    _BOUND.clear()


def _mesh_reason(mesh_obj, b) -> str:
    count = len(mesh_obj.data.vertices)
    if count != len(b.last_local):
        return f"The mesh has {count} vertices now and had {len(b.last_local)} at bind."
    if binding.rest_signature(mesh_obj) != b.signature:
        return "The mesh's rest shape changed since bind."
    return ""


def _setup_reason(mesh_obj, b) -> str:
    armature = mesh_obj.implicit_skin.armature
    if armature is not None and binding.setup_digest(armature) != b.setup:
        return "The rest pose or the muscles' set-up changed since bind."
    return ""


def on_mesh_changed(mesh_obj) -> None:
    """Check the mesh's vertex count and rest shape against its bind (reads every vertex); stores the result."""
    b = bound(mesh_obj)
    if b is not None and mesh_obj.implicit_skin.bound:
        b.stale_mesh = _mesh_reason(mesh_obj, b)


def on_armature_changed(mesh_obj) -> None:
    """Check the armature's rest pose and muscles' set-up against the mesh's bind; stores the result."""
    b = bound(mesh_obj)
    if b is not None and mesh_obj.implicit_skin.bound:
        b.stale_setup = _setup_reason(mesh_obj, b)


def on_setup_changed(armature) -> None:
    """``on_armature_changed`` for every mesh bound to ``armature`` in this session."""
    import bpy
    if not _BOUND:
        return
    for obj in bpy.data.objects:
        if obj.type == 'MESH' and obj.name_full in _BOUND and obj.implicit_skin.armature == armature:
            on_armature_changed(obj)


def stale_reason(mesh_obj) -> str:
    """Why the mesh's bind no longer matches the scene ("" if it does), checked now and stored: changed topology,
    rest shape, rest pose or muscles. Reads the whole mesh: for operators, not for panels (``stored_stale``)."""
    on_mesh_changed(mesh_obj)
    on_armature_changed(mesh_obj)
    return stored_stale(mesh_obj)


def stored_stale(mesh_obj) -> str:
    """``stale_reason`` as of the last check ("" if the mesh is not bound in this session)."""
    b = bound(mesh_obj)
    if b is None or not mesh_obj.implicit_skin.bound:
        return ""
    return b.stale
