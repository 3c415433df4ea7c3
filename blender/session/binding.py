"""What bind reads from the scene, as one immutable description, and the one core call that builds from it.

``describe(mesh_obj, armature)`` reads the mesh at rest, its weights and the bones (``blender/scene/reader.py``), the
muscles this mesh shows with their set-up, the mesh's settings, and the muscles' settled rest stored in the file
(``REST_PROPERTY``) into a frozen ``SceneDescription``; it changes nothing in the scene except following renamed
bones (``rig.follow_renames``) and writing back moved handles (``handles.sync``). ``build(description)`` makes the
``core.character.MuscledCharacter``. ``setup_digest`` and ``signature_of`` are the checksums that say later whether
the scene still fits the bind.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..authoring import handles
from ..scene import animation, fats as fat_items, reader, units
from ..scene.rig import BONE_FIELDS, follow_renames, muscle_problem, skin_meshes

REST_PROPERTY = "implicit_muscles_rest"
"""ID property on the mesh object: the muscles' settled rest (``CharacterModel.settled_rest``) and the
``setup_digest`` it belongs to, so a reopened file (or a farm process) binds with no settling and bit for bit the
same. A rest without ``settled`` or for another set-up is not used: bind settles again."""

SETUP_IGNORED = {"rna_type", "name", "activation", "stiffness", "width_scale", "eccentricity_rest",
                 "eccentricity_active", "origin_handle", "insertion_handle", "joint_bone", "joint_axis",
                 "joint_angle_rest", "joint_angle_active", "joint_curve", "activation_mode"}
"""Muscle properties that may change without a new bind (animated values, the joint settings read per frame, the
name, the handle empties)."""


@dataclass(frozen=True, eq=False)
class SceneDescription:
    """Everything bind takes from the scene (the armature's core frame ``core``, world units;
    ``blender/scene/units.py``).

    ``rig``: ``core.rig.Rig`` of the mesh at rest; ``muscles``: ``FusiformMuscle`` at rest, the fibres this mesh
    shows; ``origin_bones``, ``insertion_bones``, ``skin_bones``: ``(fibres,)`` int64 bone indices; ``source``:
    ``(fibres,)`` int64 index of the Blender muscle each fibre comes from; ``collisions``: the fibres'
    ``core.pbd.collisions.MuscleCollisions`` (``reader.read_collisions``); ``pbd``: ``PBDSettings`` with the rig's
    *Substeps* and *Friction*; ``skin``, ``tracking``: the mesh's ``SkinSettings`` and ``TrackingSettings``;
    ``settled_rest``: ``(x (P, 3), particle_s (P,))`` stored in the file for this set-up, or None; ``setup``: ``setup_digest`` of
    the armature; ``signature``: ``signature_of`` the rest positions; ``rest_inverse``: ``(B, 4, 4)`` inverse rest
    frames of the bones; ``to_mesh``: ``(4, 4)`` armature space -> mesh local space; ``keys``:
    ``animation.key_snapshot`` of the armature; ``fats``: ``FatPrimitive`` at rest that this mesh shows,
    ``fat_bones``, ``fat_collide``, ``fat_source``: ``(F,)`` their bones, bone collisions and Blender fat indices
    (``blender/scene/fats.py``); ``solvers``: ``(fibres,)`` each fibre's solver name, ``'AXIS'`` or ``'ROD'``
    (``reader.read_solvers``)."""

    rig: object
    muscles: tuple
    origin_bones: np.ndarray
    insertion_bones: np.ndarray
    skin_bones: np.ndarray
    source: np.ndarray
    collisions: object
    pbd: object
    skin: object
    tracking: object
    settled_rest: tuple | None
    setup: str
    signature: str
    rest_inverse: np.ndarray
    to_mesh: np.ndarray
    keys: dict
    fats: tuple = ()
    fat_bones: np.ndarray = None
    fat_collide: np.ndarray = None
    fat_source: np.ndarray = None
    solvers: tuple = ()
    core: np.ndarray = None


def describe(mesh_obj, armature) -> SceneDescription:
    """Read the scene for binding ``mesh_obj`` to ``armature``; ``ValueError`` naming the problem and its fix."""
    from ...core.pbd.settings import PBDSettings
    from ...core.skin.field import SkinSettings
    from ...core.skin.tracking import TrackingSettings

    follow_renames(armature)
    handles.sync(armature)  # a handle moved since the timer's last check
    for m in armature.implicit_muscles.muscles:  # the muscles' set-up first: a deleted bone explains more there
        problem = muscle_problem(armature, m)
        if problem:
            raise ValueError(problem)
    s = mesh_obj.implicit_skin
    S = units.core_frame(armature)
    rig = reader.read_rig(mesh_obj, armature, s.unweighted, S=S)
    muscles, o_b, i_b, s_b, source = reader.read_muscles(armature, rig.names, S=S)
    elsewhere = np.zeros(len(rig.names), dtype=bool)
    for other in skin_meshes(armature):
        if other != mesh_obj:
            elsewhere |= reader.bones_owning(other, armature)
    keep = reader.muscles_on_skin(rig, s_b, elsewhere)  # none at all is fine: Implicit Skinning alone
    fats, f_b, f_c, f_s = fat_items.read_fats(armature, rig.names, S=S)
    keep_fat = reader.muscles_on_skin(rig, f_b, elsewhere)  # the fats on this mesh's bones, as for the muscles
    skin = SkinSettings(samples_per_part=s.samples_per_part, grid_resolution=s.grid_resolution,
                        unweighted="nearest" if s.unweighted == 'NEAREST' else "error")
    tracking = TrackingSettings(iterations=s.iterations, contact_angle=float(np.degrees(s.contact_angle)),
                                temporal=s.temporal, keep_volume=s.keep_volume, land_on_contact=s.land_on_contact,
                                limit_correction=s.limit_correction)
    setup = setup_digest(armature)
    co = np.empty(len(rig.vertices) * 3, dtype=np.float32)
    mesh_obj.data.vertices.foreach_get("co", co)
    return SceneDescription(
        rig=rig, muscles=tuple(m for m, k in zip(muscles, keep) if k), origin_bones=o_b[keep],
        insertion_bones=i_b[keep], skin_bones=s_b[keep], source=source[keep],
        collisions=reader.read_collisions(armature, source[keep]),
        pbd=PBDSettings(substeps=armature.implicit_muscles.substeps,
                        contact_friction=armature.implicit_muscles.friction), skin=skin, tracking=tracking,
        settled_rest=stored_rest(mesh_obj, setup, S), setup=setup, signature=signature_of(co.reshape(-1, 3)),
        rest_inverse=np.linalg.inv(np.array([np.array(b.matrix_local) for b in armature.data.bones])),
        to_mesh=np.array(mesh_obj.matrix_world.inverted() @ armature.matrix_world),
        keys=animation.key_snapshot(armature),
        fats=tuple(f for f, k in zip(fats, keep_fat) if k), fat_bones=f_b[keep_fat], fat_collide=f_c[keep_fat],
        fat_source=f_s[keep_fat], solvers=reader.read_solvers(armature, source[keep]), core=S)


def build(scene: SceneDescription):
    """The ``core.character.MuscledCharacter`` of a scene description (which stays as it was: the character
    settles copies of its muscles)."""
    import copy

    from ...core.character import CharacterSettings, CharacterSetup, MuscledCharacter

    setup = CharacterSetup(scene.rig, tuple(copy.deepcopy(list(scene.muscles))), scene.origin_bones,
                           scene.insertion_bones, scene.skin_bones, collisions=scene.collisions,
                           solvers=tuple(scene.solvers) or None, fats=tuple(scene.fats), fat_bones=scene.fat_bones,
                           fat_collide_bones=scene.fat_collide)
    settings = CharacterSettings(pbd=scene.pbd, skin=scene.skin, tracking=scene.tracking)
    return MuscledCharacter.bind(setup, settings, settled_rest=scene.settled_rest)


def setup_digest(armature) -> str:
    """Checksum of the bones' rest frames, every muscle's set-up (all but its animated values and name) and the
    armature object's world scale (the muscles' lengths are world units, so scaling the object changes them
    relative to its bones). Bones count by their place in the armature, not their names (``rig.follow_renames``
    keeps muscles on renamed bones)."""
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
    h.update(repr(armature.implicit_muscles.friction).encode())
    h.update(f"{units.world_scale(armature):.6g}".encode())  # the stored lengths are world units
    fat_items.digest_into(h, armature)
    return h.hexdigest()[:16]


def signature_of(vertices) -> str:
    """Vertex count and checksum of the rest positions ``(V, 3)`` (mesh local space)."""
    digest = hashlib.sha1(np.ascontiguousarray(vertices, dtype=np.float32).tobytes()).hexdigest()[:16]
    return f"{len(vertices)}:{digest}"


def rest_signature(mesh_obj) -> str:
    """``signature_of`` the mesh's rest positions now (reads every vertex)."""
    count = len(mesh_obj.data.vertices)
    rest = np.empty(count * 3, dtype=np.float32)
    mesh_obj.data.vertices.foreach_get("co", rest)
    return signature_of(rest.reshape(-1, 3))


CORE_TOL = 1e-6
"""Largest difference of a stored rest's core frame entries from the bind's (relative to its scale) that lets the
bind use it."""


def stored_rest(mesh_obj, setup, S=None):
    """The settled rest ``(x (P, 3), particle_s (P,))`` stored on ``mesh_obj`` for ``setup`` in the core frame ``S``
    (default: the identity; a rest stored without one was stored in it), or None."""
    data = mesh_obj.get(REST_PROPERTY)
    if data is None or data.get("setup") != setup or not data.get("settled"):
        return None
    S = np.eye(4) if S is None else np.asarray(S, dtype=np.float64)
    frame = np.asarray(data["core"], dtype=np.float64).reshape(4, 4) if "core" in data else np.eye(4)
    if np.abs(frame - S).max() > CORE_TOL * units.scale(S):
        return None
    x, s = np.asarray(data["x"], dtype=np.float64), np.asarray(data["s"], dtype=np.float64)
    if len(x) != 3 * len(s):
        return None
    return x.reshape(-1, 3), s


def store_rest(mesh_obj, setup, rest, S=None) -> None:
    """Store the settled rest ``(x, particle_s)``, in the core frame ``S`` (default: the identity), on ``mesh_obj``
    (skipped on linked, read-only data)."""
    x, s = rest
    data = {"setup": setup, "settled": 1, "x": x.ravel().tolist(), "s": s.tolist()}
    if S is not None and not units.is_identity(S):
        data["core"] = np.asarray(S, dtype=np.float64).ravel().tolist()
    try:
        mesh_obj[REST_PROPERTY] = data
    except (AttributeError, TypeError, RuntimeError):
        pass
