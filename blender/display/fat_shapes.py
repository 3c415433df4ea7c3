"""The triangles the viewport draws for one armature's fats (thesis ch. 6): each an ellipsoid, where a live bound mesh
simulated it on the scene's current time or else carried rigidly by its bone (``blender/display/muscle_shapes.py`` draws them
with the muscles; nothing here needs a GPU, so it runs headless).
"""
from __future__ import annotations

import numpy as np

from ..scene import fats, units
from ..scene.live import live_meshes
from ..session import runtime

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
    items = armature.implicit_muscles.fats
    keep = [k for k, fat in enumerate(items) if not fats.fat_problem(armature, fat)]
    if not keep:
        return None
    centers, frames, axes = [], [], []
    s = units.world_scale(armature)  # centres and semi-axes are world units
    for k in keep:
        fat = items[k]
        pose = armature.pose.bones[fat.bone].matrix @ armature.data.bones[fat.bone].matrix_local.inverted()
        rest = armature.data.bones[fat.bone].matrix_local
        centers.append(units.bone_point(pose @ rest, fat.center, s)[:])
        frames.append(np.array((pose @ rest).to_3x3().normalized()))
        axes.append(tuple(a / s for a in fat.axes))
    centers, frames, axes = np.array(centers), np.array(frames), np.array(axes)
    row = {k: r for r, k in enumerate(keep)}
    now = scene.frame_current + scene.frame_subframe
    for obj in live_meshes(scene):
        bound = runtime.bound(obj) if obj.implicit_skin.armature == armature else None
        if bound is None or bound.last_error or bound.last_frame != now or bound.fat_source is None:
            continue
        batch = bound.character.fat_batch
        for j, k in enumerate(bound.fat_source):
            if batch is not None and int(k) in row:  # from the bind's core frame
                centers[row[int(k)]] = units.points_from_core(bound.core, batch.center[j:j + 1])[0]
                frames[row[int(k)]] = units.rotation(bound.core).T @ batch.frame[j]
    return centers, frames, axes


def draw_triangles(armature, scene, alpha: float, light):
    """``(vertices (N, 3) float32, colors (N, 4) float32, faces (F, 3) int32)`` of the armature's fats drawn as
    ellipsoids (``drawn_fats``), shaded by their normals against the unit direction ``light (3,)`` as the muscles
    are (``muscle_shapes.LIGHT``); or None."""
    placed = drawn_fats(armature, scene)
    if placed is None:
        return None
    centers, frames, axes = placed
    unit, faces = _unit_sphere()
    n = len(unit)
    v = centers[:, None, :] + np.einsum("fij,fkj->fki", frames, unit[None] * axes[:, None, :])
    normals = np.einsum("fij,fkj->fki", frames, unit[None] / axes[:, None, :])
    normals /= np.linalg.norm(normals, axis=2, keepdims=True)
    lit = np.maximum(normals.reshape(-1, 3) @ light.astype(np.float64), 0.0)
    colors = np.empty((len(lit), 4), dtype=np.float32)
    colors[:, :3] = FAT_COLOR * (0.55 + 0.45 * lit)[:, None].astype(np.float32)
    colors[:, 3] = alpha
    all_faces = (faces[None] + (n * np.arange(len(centers), dtype=np.int32))[:, None, None]).reshape(-1, 3)
    return v.reshape(-1, 3).astype(np.float32), colors, all_faces.astype(np.int32)
