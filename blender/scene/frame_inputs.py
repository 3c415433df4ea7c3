"""What a frame reads from the evaluated armature (the depsgraph the frame handler is given, so playback, scripts and
renders read the same values): the bones' transforms from rest, the muscles' animated inputs with their joints'
activation, and the fats' animated stiffness and damping (``blender/session/playback.py`` reads them for every frame and
every gap it simulates).
"""
from __future__ import annotations

import numpy as np

from . import joint


def bone_transforms(armature_eval, rest_inverse) -> np.ndarray:
    """``B_j = M_j M_ref_j^-1`` ``(B, 4, 4)`` from the evaluated pose (armature space)."""
    bones = armature_eval.pose.bones
    buf = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix", buf)
    M = buf.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)  # foreach_get gives column-major matrices
    return M @ rest_inverse


def muscle_values(armature_eval, source, transforms=None, fats=None):
    """The frame's animated inputs as one :class:`core.pbd.control.MuscleInputs`: per core fibre ``(fibres,)`` the
    evaluated muscles' activation (with the joint's of the muscles that follow one, from the pose ``transforms (B,
    4, 4)``, default read from ``armature_eval``; ``blender/scene/joint.py``), stiffness, width scale, and the
    eccentricity of the animated rest and active flatness mixed by the activation (paper §5.2); ``fats``: the fats'
    (:func:`fat_values`, or None)."""
    from ...core.muscle.primitive import eccentricity_at
    from ...core.pbd.control import MuscleInputs

    muscles = armature_eval.implicit_muscles.muscles
    n = len(muscles)
    out = []
    for name in ("activation", "stiffness", "width_scale", "eccentricity_rest", "eccentricity_active"):
        buf = np.empty(n, dtype=np.float32)
        muscles.foreach_get(name, buf)
        out.append(buf.astype(np.float64)[source])
    act, stiff, scale, e0, e1 = out
    act = joint.frame_activation(armature_eval, source, act, transforms)
    return MuscleInputs(act, stiff, scale, eccentricity_at(e0, e1, np.asarray(act, dtype=np.float64)), fats)


def fat_values(armature_eval, source):
    """The evaluated fats' animated stiffness and damping ``(F,)`` for the core fats ``source (F,)`` come from, as
    one ``core.fat.dynamics.FatInputs``."""
    from ...core.fat.dynamics import FatInputs

    fats = armature_eval.implicit_muscles.fats
    out = []
    for name in ("stiffness", "damping"):
        buf = np.empty(len(fats), dtype=np.float32)
        fats.foreach_get(name, buf)
        out.append(np.clip(buf.astype(np.float64), 0.0, 1.0)[source])
    return FatInputs(stiffness=out[0], damping=out[1])
