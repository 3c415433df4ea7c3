"""Fat primitives on the armature (thesis ch. 6) as bind reads them: what is wrong with one's set-up, their set-up
read into the core, and the checksum of it that says whether a bind still fits. The property group is
``blender/props/fat.py``; new fats' presets ``blender/authoring/fat_presets.py``; their animated values per frame
``blender/scene/frame_inputs.py``; their drawing ``blender/display/fat_shapes.py``; the operators ``operators/fats.py``; the core
``core/fat``.
"""
from __future__ import annotations

import numpy as np

from . import units

SETUP_IGNORED = {"rna_type", "name", "stiffness", "damping"}
"""Fat properties that may change without a new bind (animated values, the name)."""


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


def read_fats(armature, names: tuple, S=None):
    """``(fats, bones, collide, source)``: ``core.fat.primitive.FatPrimitive`` at rest in the armature's core frame
    ``S`` (``blender/scene/units.py``; default: the identity), the bone index each hangs on ``(F,)``, whether it
    collides with the bones ``(F,)`` and the index of its Blender fat ``(F,)``; ``ValueError`` with a sentence for
    a fat that cannot be read. Centres and semi-axes are world units, as stored."""
    from ...core.fat import FatPrimitive

    S = np.eye(4) if S is None else np.asarray(S, dtype=np.float64)
    s = units.world_scale(armature)

    index = {n: i for i, n in enumerate(names)}
    out, bones, collide = [], [], []
    for fat in armature.implicit_muscles.fats:
        problem = fat_problem(armature, fat)
        if problem:
            raise ValueError(problem)
        frame = armature.data.bones[fat.bone].matrix_local
        rotation = units.rotation(S) @ np.array(frame.to_3x3().normalized())
        center = units.points_to_core(S, np.array([units.bone_point(frame, fat.center, s)[:]]))[0]
        try:
            out.append(FatPrimitive(center=tuple(center), axes=tuple(fat.axes), frame=rotation,
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
