"""World units at the boundary between Blender and the core.

A rig's data can be in any unit and turned any way inside its armature object: Blender's FBX importer leaves a
Mixamo or game-engine character's bones and mesh in centimetres, Y up, under an armature object scaled 0.01 and
turned 90 degrees about X. The core's tolerances, margins and step lengths are in metres, so it is given the
armature's space as the world sees it, its **core frame**: armature space taken through the similarity part of the
armature object's world transform at bind, ``S = s R`` (``core_frame``: its rotation ``R`` and its uniform scale
``s``, the cube root of the transform's determinant; no translation, and what is left of a non-uniform scale stays
in armature space). A character then gives the same world-space result whatever its object's scale and turn.

Every length the add-on stores or shows is in world units: a muscle's width, bone radius and spreads, a fat's
semi-axes, and the points in a bone's rest frame (a muscle's origin and insertion, a fat's centre), which are the
bone frame's axes at world scale (``bone_point`` and ``point_in_bone`` turn them into armature-space points and
back). A rig whose object is neither scaled nor turned has ``S`` the identity, and nothing changes for it.
"""
from __future__ import annotations

import numpy as np
from mathutils import Vector


def similarity(matrix) -> tuple:
    """``(s, R (3, 3))`` of a ``(4, 4)`` or ``(3, 3)`` transform: its uniform scale (cube root of the determinant's
    size) and its nearest rotation (a reflection is left out: ``R`` is always a proper rotation)."""
    a = np.array(matrix, dtype=np.float64)[:3, :3]
    det = float(np.linalg.det(a))
    s = abs(det) ** (1.0 / 3.0)
    if not np.isfinite(s) or s <= 1e-12:
        return 1.0, np.eye(3)
    u, _, vt = np.linalg.svd(a)
    if np.linalg.det(u @ vt) < 0.0:
        u[:, -1] = -u[:, -1]
    return s, u @ vt


def world_scale(obj) -> float:
    """The uniform scale of ``obj``'s world transform (1 for an object neither scaled nor parented to a scaled
    one): world units per unit of its data."""
    return similarity(obj.matrix_world)[0]


def core_frame(armature) -> np.ndarray:
    """``(4, 4)`` ``S = s R``: armature space -> the core's frame (module docstring), from the armature object's
    world transform now (a bind keeps the one it was made with)."""
    s, r = similarity(armature.matrix_world)
    out = np.eye(4)
    out[:3, :3] = s * r
    return out


def is_identity(S) -> bool:
    """Whether the core frame ``S`` is the identity (to the last bits of a float32 transform)."""
    return bool(np.abs(np.asarray(S) - np.eye(4)).max() < 1e-9)


def points_to_core(S, points) -> np.ndarray:
    """``(N, 3)`` armature-space points taken into the core frame ``S``."""
    p = np.asarray(points, dtype=np.float64)
    return p @ S[:3, :3].T + S[:3, 3]


def points_from_core(S, points) -> np.ndarray:
    """``(N, 3)`` core-frame points back in armature space."""
    inv = np.linalg.inv(S)
    p = np.asarray(points, dtype=np.float64)
    return p @ inv[:3, :3].T + inv[:3, 3]


def rotation(S) -> np.ndarray:
    """``(3, 3)`` the rotation of the core frame ``S`` (directions turn by it; lengths scale by ``scale(S)``)."""
    return np.asarray(S)[:3, :3] / scale(S)


def scale(S) -> float:
    """The uniform scale ``s`` of the core frame ``S``."""
    return float(abs(np.linalg.det(np.asarray(S)[:3, :3])) ** (1.0 / 3.0))


def transforms_to_core(S, transforms) -> np.ndarray:
    """``(B, 4, 4)`` armature-space rest -> pose transforms as the core frame sees them, ``S B S^-1``."""
    if is_identity(S):
        return transforms
    return S @ transforms @ np.linalg.inv(S)


def bone_point(frame, point, s: float) -> Vector:
    """The armature-space point of ``point``, given in the bone frame ``frame`` (``bone.matrix_local`` or a pose
    bone's ``matrix``) in world units, on an armature of world scale ``s`` (``world_scale``)."""
    return frame @ (Vector(point) / s)


def point_in_bone(frame, armature_point, s: float) -> Vector:
    """``armature_point`` in the bone frame ``frame``, in world units (the inverse of ``bone_point``)."""
    return (frame.inverted() @ Vector(armature_point)) * s
