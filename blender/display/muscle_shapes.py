"""The triangles the viewport draws for one armature's muscles (``blender/display/viewport.py`` draws them; nothing here
needs a GPU, so it runs headless).

:func:`rig_mesh` samples every muscle's surface with ``core/muscle/surface.py`` ``batch_surfaces`` (rings along
the axis, one numba kernel for all muscles) in the armature's space:

* the muscles a live, bound mesh of the armature shows (``blender/session/playback.py`` evaluated it on this frame) are
  drawn as that mesh's core simulated them: their PBD axes, widths and profiles (``MuscledCharacter.muscle_batch``),
  each fibre coloured as its muscle;
* every other muscle (nothing bound yet, a baked mesh, a muscle no mesh shows) is drawn straight from its origin to
  its insertion in the current pose, with its activation (a joint's included), flatness and width scale (the volume law bulges a
  shortened muscle), as the muscle's set-up describes it;
* the fats, as ellipsoids where the live mesh simulated them or carried by their bones (``blender/display/fat_shapes.py``).

Colours: a colour per muscle (:data:`PALETTE`, by the muscle's place in the list), or by activation (blue at 0, red
at 1); each vertex shaded by its normal against a fixed light (:data:`LIGHT`) so the shapes read without scene
lights. :class:`DrawMesh` ``key`` changes exactly when something drawn changes, so the GPU batch is rebuilt only then.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from mathutils import Matrix, Vector

from ..scene import rig as rig_utils, units
from ..scene.joint import frame_activation
from ..scene.live import live_meshes
from ..session import runtime
from . import fat_shapes

RINGS, SIDES = 16, 12
"""Inner rings and sides of each drawn muscle (one more ring at each end)."""
STRAIGHT_PARTICLES = 8
"""Axis points between origin and insertion of a muscle drawn straight."""
PALETTE = np.array([(0.85, 0.25, 0.22), (0.90, 0.55, 0.20), (0.80, 0.75, 0.25), (0.40, 0.75, 0.30),
                    (0.25, 0.65, 0.75), (0.30, 0.40, 0.85), (0.60, 0.35, 0.80), (0.85, 0.35, 0.60)],
                   dtype=np.float32)
"""Colours of muscles 0, 1, ... (repeating), linear RGB."""
RELAXED, ACTIVE = np.array((0.20, 0.35, 0.90), dtype=np.float32), np.array((0.90, 0.15, 0.10), dtype=np.float32)
"""Colours at activation 0 and 1 (mixed linearly between)."""
LIGHT = np.array((0.35, -0.45, 0.82), dtype=np.float32) / np.float32(np.linalg.norm((0.35, -0.45, 0.82)))
"""Unit direction of the fixed light in the armature's space."""
IN_FRONT_ALPHA = 0.45
"""Opacity of muscles drawn over the skin (*In Front*); depth-tested muscles are opaque."""


@dataclass
class DrawMesh:
    """One armature's drawn muscles, armature space: ``vertices (N, 3) float32 [m]``, ``colors (N, 4) float32``,
    ``faces (F, 3) int32``; ``in_front``: drawn over the skin; ``key`` a value that changes when any of these
    does."""

    vertices: np.ndarray
    colors: np.ndarray
    faces: np.ndarray
    key: tuple
    in_front: bool


def _live_batches(armature, scene) -> list:
    """``[(MuscleBatch, source (fibres,), S (4, 4))]`` of the armature's live meshes that evaluated the scene's
    current time, each in its bind's core frame ``S`` (``blender/scene/units.py``)."""
    now = scene.frame_current + scene.frame_subframe
    out = []
    for obj in live_meshes(scene):
        if obj.implicit_skin.armature != armature:
            continue
        bound = runtime.bound(obj)
        if bound is None or bound.last_error or bound.last_frame != now:
            continue
        batch = bound.character.muscle_batch
        if batch is not None and batch.muscle_count:
            out.append((batch, np.asarray(bound.source, dtype=np.int64), bound.core))
    return out


def activations(armature) -> np.ndarray:
    """``(M,)`` each muscle's activation in the current pose: its own value with its joint's (``blender/scene/joint.py``)."""
    muscles = armature.implicit_muscles.muscles
    keyed = np.empty(len(muscles), dtype=np.float32)
    muscles.foreach_get("activation", keyed)
    try:
        return frame_activation(armature, np.arange(len(muscles)), keyed.astype(np.float64))
    except ValueError:  # a bad joint setting: the muscle list and the bind say why
        return keyed.astype(np.float64)


def straight_batch(armature, indices):
    """``(MuscleBatch, source)`` of the armature's muscles ``indices`` drawn straight in the current pose (module
    docstring), in the armature's core frame now (``units.core_frame``: its widths are world units); muscles that
    cannot be drawn (a missing bone, origin at the insertion) are left out."""
    from ...core.muscle.batch import MuscleBatch

    muscles = armature.implicit_muscles.muscles
    S = units.core_frame(armature)
    turn, s = Matrix(units.rotation(S).tolist()), units.scale(S)
    points, normals, rows, source = [], [], [], []
    driven = activations(armature)
    for k in indices:
        m = muscles[k]
        if rig_utils.muscle_problem(armature, m):
            continue
        o, i = rig_utils.muscle_endpoints(armature, m, posed=True)
        o0, i0 = rig_utils.muscle_endpoints(armature, m, posed=False)
        axis = i - o
        if axis.length < 1e-6 or (i0 - o0).length < 1e-6:
            continue
        frame = rig_utils.bone_frame(armature, m.origin_bone, posed=True)
        direction = axis.normalized()
        x = frame.to_3x3() @ Vector((1.0, 0.0, 0.0))
        n = x - direction * x.dot(direction)
        if n.length < 1e-6:
            n = frame.to_3x3() @ Vector((0.0, 0.0, 1.0))
            n = n - direction * n.dot(direction)
        if n.length < 1e-6:
            continue
        n = turn @ (Matrix.Rotation(m.twist, 3, direction) @ n.normalized())
        points.append(units.points_to_core(S, np.linspace(o[:], i[:], STRAIGHT_PARTICLES + 2)))
        normals.append((n[:], n[:]))
        a = float(driven[k])
        rows.append((m.alpha_rest - 1, m.beta_rest - 1, m.alpha_active - 1, m.beta_active - 1,
                     np.pi * m.width ** 2 * s * (i0 - o0).length, a,
                     (1.0 - a) * m.eccentricity_rest + a * m.eccentricity_active, m.width_scale))
        source.append(k)
    if not rows:
        return None, np.zeros(0, dtype=np.int64)
    rows = np.array(rows, dtype=np.float64)
    batch = MuscleBatch.allocate([STRAIGHT_PARTICLES + 2] * len(rows), rows[:, :4].astype(np.int64), rows[:, 4])
    batch.update(np.concatenate(points), np.array(normals), rows[:, 5], rows[:, 6], rows[:, 7])
    return batch, np.array(source, dtype=np.int64)


def _colors(normals, owner, armature, mode: str, alpha: float) -> np.ndarray:
    """``(N, 4)`` float32: each vertex's muscle colour (``owner (N,)`` the muscle's index) shaded by its normal."""
    if mode == 'ACTIVATION':
        a = np.clip(activations(armature), 0.0, 1.0)[:, None].astype(np.float32)
        base = ((1.0 - a) * RELAXED + a * ACTIVE)[owner]
    else:
        base = PALETTE[owner % len(PALETTE)]
    # elementwise, not ``normals @ LIGHT``: a BLAS call wakes its thread pool, slow when the cores are busy
    lit = normals[:, 0] * LIGHT[0] + normals[:, 1] * LIGHT[1] + normals[:, 2] * LIGHT[2]
    shade = np.float32(0.55) + np.float32(0.45) * np.maximum(lit, np.float32(0.0))
    out = np.empty((len(normals), 4), dtype=np.float32)
    out[:, :3] = base * shade[:, None]
    out[:, 3] = alpha
    return out


def rig_mesh(armature, scene) -> DrawMesh | None:
    """What the viewport draws for ``armature``'s muscles on ``scene``'s current time (module docstring), or None if
    nothing is to be drawn (*Show Muscles* off, no muscles)."""
    from ...core.muscle.surface import batch_surfaces

    props = armature.implicit_muscles
    count = len(props.muscles)
    if not props.show_muscles or not (count or len(props.fats)):
        return None
    parts = _live_batches(armature, scene)
    shown = set()
    for _, source, _ in parts:
        shown.update(int(k) for k in source)
    rest = [k for k in range(count) if k not in shown]
    if rest:
        batch, source = straight_batch(armature, rest)
        if batch is not None:
            parts.append((batch, source, units.core_frame(armature)))
    in_front = bool(props.show_in_front)
    alpha = IN_FRONT_ALPHA if in_front else 1.0
    vertices, colors, faces, offset = [], [], [], 0
    for batch, source, S in parts:
        v, n, f = batch_surfaces(batch, RINGS, SIDES)
        if not units.is_identity(S):  # drawn in armature space
            v = units.points_from_core(S, v).astype(np.float32)
            n = (n @ units.rotation(S).astype(np.float32))
        owner = np.repeat(source, len(v) // len(source))
        vertices.append(v)
        colors.append(_colors(n, owner, armature, props.display_color, alpha))
        faces.append(f + offset)
        offset += len(v)
    fat = fat_shapes.draw_triangles(armature, scene, alpha, LIGHT)  # the fats as ellipsoids
    if fat is not None:
        vertices.append(fat[0])
        colors.append(fat[1])
        faces.append(fat[2] + offset)
    if not vertices:
        return None
    vertices, colors, faces = np.concatenate(vertices), np.concatenate(colors), np.concatenate(faces)
    key = zlib.crc32(colors.tobytes(), zlib.crc32(vertices.tobytes(), len(faces)))  # faces follow the counts
    return DrawMesh(vertices, colors, faces, (key, in_front), in_front)
