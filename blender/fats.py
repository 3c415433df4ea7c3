"""Fat primitives on the armature (thesis ch. 6): their presets, their set-up read into the core, and their keys
when one is removed (their animated values per frame: ``blender/frame_inputs.py``). The property group is ``blender/fat_properties.py``; the
operators ``operators/fats.py``; the core ``core/fat``.

A preset places a new fat on its bone relative to the limb: its centre ``along`` the bone (0 head, 1 tail) and
``depth`` limb radii out along the bone's local Z (``-`` for the back), its semi-axes ``(across, along, out)`` in limb
radii (``rig.limb_radius``), so it lies clear of the bone's capsule (a quarter of a limb radius) and its outer side
0.92 limb radii out, just under the skin, which it then makes.
"""
from __future__ import annotations

import numpy as np
from mathutils import Vector

from . import rig as rig_utils

PRESETS = {
    # name: (along, depth, (across, along, out), stiffness, damping)
    "belly": (0.5, 0.6, (0.6, 0.5, 0.32), 0.25, 0.1),
    "chest": (0.6, 0.65, (0.55, 0.35, 0.27), 0.4, 0.15),
    "buttocks": (0.35, -0.6, (0.6, 0.45, 0.32), 0.3, 0.1),
    "thigh": (0.4, 0.62, (0.55, 0.9, 0.3), 0.35, 0.15),
}
"""The shipped fat presets (module docstring)."""
SETUP_IGNORED = {"rna_type", "name", "stiffness", "damping"}
"""Fat properties that may change without a new bind (animated values, the name)."""


def preset_key(name: str) -> str:
    """A preset's key from a name as typed (case, spaces and underscores alike), or ``""`` if there is none."""
    key = name.strip().lower().replace("_", " ")
    return key if key in PRESETS else ""


def apply_preset(armature, fat, preset: str) -> None:
    """Place and size ``fat`` on its bone by ``preset`` (a key of ``PRESETS``), relative to the limb."""
    along, depth, axes, stiffness, damping = PRESETS[preset]
    bone = armature.data.bones[fat.bone]
    radius = rig_utils.limb_radius(armature, fat.bone)
    fat.center = (0.0, along * bone.length, depth * radius)
    fat.axes = tuple(a * radius for a in axes)
    fat.stiffness, fat.damping = stiffness, damping


def fat_problem(armature, fat) -> str:
    """A plain sentence saying what is wrong with a fat's set-up, or ``""``."""
    if not fat.bone:
        return f"{fat.name}: no bone is set; pick the bone it hangs on in the fat's panel."
    if fat.bone not in armature.data.bones:
        return (f"{fat.name}: its bone '{fat.bone}' is not in {armature.name} (renamed or deleted?); pick a bone in "
                f"the fat's panel.")
    if min(fat.axes) <= 0.0:
        return f"{fat.name}: its semi-axes must all be greater than 0, got {tuple(round(a, 4) for a in fat.axes)}."
    return ""


def read_fats(armature, names: tuple):
    """``(fats, bones, collide, source)``: ``core.fat.primitive.FatPrimitive`` at rest in the armature's space, the
    bone index each hangs on ``(F,)``, whether it collides with the bones ``(F,)`` and the index of its Blender fat
    ``(F,)``; ``ValueError`` with a sentence for a fat that cannot be read."""
    from ..core.fat import FatPrimitive

    index = {n: i for i, n in enumerate(names)}
    out, bones, collide = [], [], []
    for fat in armature.implicit_muscles.fats:
        problem = fat_problem(armature, fat)
        if problem:
            raise ValueError(problem)
        frame = armature.data.bones[fat.bone].matrix_local
        rotation = np.array(frame.to_3x3().normalized())
        try:
            out.append(FatPrimitive(center=(frame @ Vector(fat.center))[:], axes=tuple(fat.axes), frame=rotation,
                                    stiffness=fat.stiffness, damping=fat.damping, name=fat.name))
        except ValueError as ex:
            raise ValueError(str(ex)) from None
        bones.append(index[fat.bone])
        collide.append(fat.collide_bones)
    F = len(out)
    return (out, np.array(bones, dtype=np.int64).reshape(F), np.array(collide, dtype=bool).reshape(F),
            np.arange(F, dtype=np.int64))


def digest_into(h, armature) -> None:
    """Feed every fat's set-up (all but its animated values and name) into the hash ``h`` (``binding.setup_digest``)."""
    bones = armature.data.bones
    for fat in armature.implicit_muscles.fats:
        for name in fat.bl_rna.properties.keys():
            if name in SETUP_IGNORED:
                continue
            value = bones.find(fat.bone) if name == "bone" else getattr(fat, name)
            h.update(repr(tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) else value)
                     .encode())


FAT_COLOR = np.array((0.95, 0.78, 0.45), dtype=np.float32)
"""Linear RGB of the drawn fats."""
DRAW_RINGS, DRAW_SIDES = 8, 12
"""Latitude rings and longitude sides of a drawn fat."""


def _unit_sphere():
    """``(points (N, 3), faces (F, 3) int32)`` of a latitude-longitude unit sphere with poles."""
    lat = np.pi * np.arange(1, DRAW_RINGS) / DRAW_RINGS
    lon = 2.0 * np.pi * np.arange(DRAW_SIDES) / DRAW_SIDES
    ring = np.stack([np.outer(np.sin(lat), np.cos(lon)), np.outer(np.sin(lat), np.sin(lon)),
                     np.repeat(np.cos(lat)[:, None], DRAW_SIDES, axis=1)], axis=-1).reshape(-1, 3)
    points = np.concatenate([[(0.0, 0.0, 1.0)], ring, [(0.0, 0.0, -1.0)]])
    S, last = DRAW_SIDES, len(points) - 1
    faces = [(0, 1 + k, 1 + (k + 1) % S) for k in range(S)]
    for r in range(DRAW_RINGS - 2):
        for k in range(S):
            a, b = 1 + r * S + k, 1 + r * S + (k + 1) % S
            faces += [(a, a + S, b), (b, a + S, b + S)]
    base = 1 + (DRAW_RINGS - 2) * S
    faces += [(last, base + (k + 1) % S, base + k) for k in range(S)]
    return points, np.array(faces, dtype=np.int32)


def drawn_fats(armature, scene):
    """``(centers (F, 3), frames (F, 3, 3), axes (F, 3))`` of the armature's fats as the viewport shows them on the
    scene's current time, armature space: as a live bound mesh simulated them on this time, else carried rigidly by
    their bone's pose; fats that cannot be read are left out (``None`` for none)."""
    from . import runtime
    from .live import live_meshes

    items = armature.implicit_muscles.fats
    keep = [k for k, fat in enumerate(items) if not fat_problem(armature, fat)]
    if not keep:
        return None
    centers, frames, axes = [], [], []
    for k in keep:
        fat = items[k]
        pose = armature.pose.bones[fat.bone].matrix @ armature.data.bones[fat.bone].matrix_local.inverted()
        rest = armature.data.bones[fat.bone].matrix_local
        centers.append((pose @ rest @ Vector(fat.center))[:])
        frames.append(np.array((pose @ rest).to_3x3().normalized()))
        axes.append(tuple(fat.axes))
    centers, frames, axes = np.array(centers), np.array(frames), np.array(axes)
    row = {k: r for r, k in enumerate(keep)}
    now = scene.frame_current + scene.frame_subframe
    for obj in live_meshes(scene):
        bound = runtime.bound(obj) if obj.implicit_skin.armature == armature else None
        if bound is None or bound.last_error or bound.last_frame != now or bound.fat_source is None:
            continue
        batch = bound.character.fat_batch
        for j, k in enumerate(bound.fat_source):
            if batch is not None and int(k) in row:
                centers[row[int(k)]], frames[row[int(k)]] = batch.center[j], batch.frame[j]
    return centers, frames, axes


def draw_triangles(armature, scene, alpha: float):
    """``(vertices (N, 3) float32, colors (N, 4) float32, faces (F, 3) int32)`` of the armature's fats drawn as
    ellipsoids (``drawn_fats``), shaded by their normals as the muscles are (``display_mesh.LIGHT``); or None."""
    from .display_mesh import LIGHT

    placed = drawn_fats(armature, scene)
    if placed is None:
        return None
    centers, frames, axes = placed
    unit, faces = _unit_sphere()
    n = len(unit)
    v = centers[:, None, :] + np.einsum("fij,fkj->fki", frames, unit[None] * axes[:, None, :])
    normals = np.einsum("fij,fkj->fki", frames, unit[None] / axes[:, None, :])
    normals /= np.linalg.norm(normals, axis=2, keepdims=True)
    lit = np.maximum(normals.reshape(-1, 3) @ LIGHT.astype(np.float64), 0.0)
    colors = np.empty((len(lit), 4), dtype=np.float32)
    colors[:, :3] = FAT_COLOR * (0.55 + 0.45 * lit)[:, None].astype(np.float32)
    colors[:, 3] = alpha
    all_faces = (faces[None] + (n * np.arange(len(centers), dtype=np.int32))[:, None, None]).reshape(-1, 3)
    return v.reshape(-1, 3).astype(np.float32), colors, all_faces.astype(np.int32)
