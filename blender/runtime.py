"""Bind data of the session, per mesh object (not stored in the .blend: bind is deterministic and is redone).

``bind(mesh_obj, armature)`` builds a ``core.character.MuscledCharacter`` from the scene (``blender/reader.py``)
with the mesh's settings; ``bound(mesh_obj)`` returns it or None; ``unbind`` forgets it. The signature records
the vertex count and a checksum of the rest positions, so a later topology or rest edit can be detected.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from . import reader

_BOUND: dict = {}


@dataclass
class Bound:
    character: object
    signature: str
    source: np.ndarray  # (fibres,) index of the Blender muscle each core muscle comes from


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
    out = Bound(character, signature(rig), source)
    _BOUND[_key(mesh_obj)] = out
    return out


def bound(mesh_obj):
    return _BOUND.get(_key(mesh_obj))


def unbind(mesh_obj) -> None:
    _BOUND.pop(_key(mesh_obj), None)


def clear() -> None:
    _BOUND.clear()
