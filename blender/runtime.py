"""Bind data of the session, per mesh object (not stored in the .blend: bind is deterministic and is redone).

``bind(mesh_obj, armature)`` builds a ``core.character.MuscledCharacter`` from the scene (``blender/reader.py``)
with the mesh's settings; ``bound(mesh_obj)`` returns it or None; ``unbind`` forgets it. The signature records
the vertex count and a checksum of the rest positions, so a later topology or rest edit can be detected.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from . import reader

_BOUND: dict = {}


@dataclass
class Bound:
    """One mesh's bind: the core character, where its numbers come from, and the muscles' state per frame."""

    character: object
    signature: str
    source: np.ndarray  # (fibres,) index of the Blender muscle each core muscle comes from
    rest_inverse: np.ndarray  # (B, 4, 4) inverse rest frames of the bones (armature space)
    to_mesh: np.ndarray  # (4, 4) armature space -> mesh local space
    cache: dict = field(default_factory=dict)  # frame -> PBD state after that frame

    def state_for(self, frame):
        return self.cache.get(frame)

    def store(self, frame, state) -> None:
        self.cache[frame] = state

    def last_cached_before(self, frame):
        earlier = [f for f in self.cache if f < frame]
        return max(earlier) if earlier else None

    def invalidate(self, from_frame=None) -> None:
        """Forget cached muscle states from ``from_frame`` on (all if None): after an edit of the muscles."""
        if from_frame is None:
            self.cache.clear()
        else:
            for f in [f for f in self.cache if f >= from_frame]:
                del self.cache[f]


def signature(rig) -> str:
    digest = hashlib.sha1(np.ascontiguousarray(rig.vertices, dtype=np.float32).tobytes()).hexdigest()[:16]
    return f"{len(rig.vertices)}:{digest}"


def _key(mesh_obj) -> str:
    return mesh_obj.name_full


def bind(mesh_obj, armature) -> Bound:
    from ..core.character import MuscledCharacter
    from ..core.skin_field import SkinSettings
    from ..core.tracking import TrackingSettings

    rig = reader.read_rig(mesh_obj, armature)
    muscles, o_b, i_b, s_b, source = reader.read_muscles(armature, rig.names)
    if not muscles:
        raise ValueError(f"{armature.name} has no muscles yet: add one in the Muscles tab (select two pose bones, "
                         f"press +), or bind anyway after adding them.")
    s = mesh_obj.implicit_skin
    skin = SkinSettings(samples_per_part=s.samples_per_part, grid_resolution=s.grid_resolution,
                        unweighted="error")
    tracking = TrackingSettings(iterations=s.iterations, contact_angle=float(np.degrees(s.contact_angle)),
                                temporal=s.temporal)
    character = MuscledCharacter(rig, muscles, o_b, i_b, s_b, skin=skin, tracking=tracking)
    rest_inverse = np.linalg.inv(np.array([np.array(b.matrix_local) for b in armature.data.bones]))
    to_mesh = np.array(mesh_obj.matrix_world.inverted() @ armature.matrix_world)
    out = Bound(character, signature(rig), source, rest_inverse, to_mesh)
    _BOUND[_key(mesh_obj)] = out
    return out


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
