"""A muscle's activation from a joint, on the Blender side: the muscles' joint settings read into a core
``JointDrive`` per fibre (``core/muscle/joint_drive.py``), what is wrong with them, and this frame's activation.
The one-click set-up from the muscle's bones is ``blender/authoring/joint_follow.py``.

The angle is the joint bone's local rotation relative to its rest (its turn relative to its parent), taken from the
evaluated pose the frame handler reads (``playback._read``), so constraints, drivers and NLA count. A muscle follows
a bone that bends between its origin and its insertion (``related_joints``): the insertion bone or a parent of it
below their common parent, or the same on the origin's side.
"""
from __future__ import annotations

import numpy as np

AXES = ("X", "Y", "Z")
CURVE_ITEMS = (('LINEAR', "Linear", "The activation grows evenly with the angle"),
               ('SMOOTH', "Smooth", "Slow at both ends of the range, fastest in its middle"),
               ('EASE_IN', "Ease In", "Slow at first, fast near the end of the range"),
               ('EASE_OUT', "Ease Out", "Fast at first, slow near the end of the range"))
MODE_ITEMS = (('ADD', "Add Keys", "The keyed activation adds to the joint's (at most 1)"),
              ('REPLACE', "Keys Replace", "The keyed activation alone, the joint is not read (key this mode to "
                                          "hand a stretch of the shot to the keys)"))


def bone_chain(bones, name) -> list:
    """``name`` and its parents, nearest first."""
    out, bone = [], bones[name]
    while bone is not None:
        out.append(bone.name)
        bone = bone.parent
    return out


def related_joints(armature, origin: str, insertion: str) -> list:
    """The bones whose turn bends a muscle from ``origin`` to ``insertion``: the insertion bone and its parents
    below the bones' common parent, then the origin bone and its parents below it (empty for one bone)."""
    bones = armature.data.bones
    up_i, up_o = bone_chain(bones, insertion), bone_chain(bones, origin)
    common = set(up_i) & set(up_o)
    return [b for b in up_i if b not in common] + [b for b in up_o if b not in common]


def joint_problem(armature, muscle) -> str:
    """A plain sentence saying what is wrong with a muscle's joint settings, or ``""`` (none set is fine)."""
    from ...core.muscle.joint_drive import joint_drive

    name = muscle.joint_bone
    if not name:
        return ""
    bones = armature.data.bones
    if name not in bones:
        return (f"{muscle.name}: its joint bone '{name}' is not in {armature.name} (renamed or deleted?); pick a "
                f"bone in its Joint panel, or clear it.")
    if muscle.origin_bone in bones and muscle.insertion_bone in bones \
            and name not in related_joints(armature, muscle.origin_bone, muscle.insertion_bone):
        return (f"{muscle.name}: its joint bone '{name}' does not bend between its origin bone "
                f"'{muscle.origin_bone}' and its insertion bone '{muscle.insertion_bone}' (it must be one of them "
                f"or a parent of one below their common parent); pick such a bone, or press Follow Joint.")
    try:
        joint_drive([0], [-1], [(1.0, 0.0, 0.0)], [muscle.joint_angle_rest], [muscle.joint_angle_active],
                    names=[muscle.name])
    except ValueError as ex:
        return str(ex)
    return ""


def follows_joints(muscles) -> bool:
    """True if one of ``muscles`` follows a joint and reads it (mode Add)."""
    return any(m.joint_bone and m.activation_mode == 'ADD' for m in muscles)


def read_drive(armature, source):
    """The core ``JointDrive`` of the fibres whose Blender muscles are ``source (fibres,)``, from ``armature`` (the
    original or the evaluated object: its animated angles and modes). ``ValueError`` naming the muscle for a bad
    setting (``joint_problem``)."""
    from ...core.muscle.joint_drive import joint_drive

    items = armature.implicit_muscles.muscles
    bones = armature.data.bones
    fields = {"bone": [], "parent": [], "axis": [], "rest": [], "active": [], "curve": [], "mode": []}
    per_muscle = {}
    for k in np.unique(np.asarray(source, dtype=np.int64)):
        m = items[int(k)]
        if m.joint_bone:
            bone = bones.get(m.joint_bone)
            if bone is None or m.joint_bone not in related_joints(armature, m.origin_bone, m.insertion_bone):
                raise ValueError(joint_problem(armature, m))  # the range is checked below, for all at once
            frame = np.array(bone.matrix_local)
            per_muscle[int(k)] = (bones.find(bone.name), bones.find(bone.parent.name) if bone.parent else -1,
                                  frame[:3, AXES.index(m.joint_axis)], m.joint_angle_rest, m.joint_angle_active,
                                  m.joint_curve.lower(), m.activation_mode.lower(), m.name)
        else:
            per_muscle[int(k)] = (-1, -1, (0.0, 0.0, 0.0), 0.0, 1.0, "linear", m.activation_mode.lower(), m.name)
    rows = [per_muscle[int(k)] for k in source]
    if not rows:
        from ...core.muscle.joint_drive import no_drive
        return no_drive(0)
    b, p, a, r, t, c, mo, n = zip(*rows)
    return joint_drive(b, p, a, r, t, curve=list(c), mode=list(mo), names=n)


def rest_transforms(armature) -> np.ndarray:
    """``(B, 4, 4)`` inverse rest frames of ``armature``'s bones (armature space)."""
    bones = armature.data.bones
    buf = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix_local", buf)
    return np.linalg.inv(buf.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64))


def frame_activation(armature_eval, source, keyed, transforms=None) -> np.ndarray:
    """``(fibres,)`` this frame's activation of the fibres ``source``: ``keyed (fibres,)`` with each muscle's joint
    added (``core.muscle.joint_drive.driven_activation``). ``transforms (B, 4, 4)``: the bones' rest -> pose
    transforms of this frame (default: read from ``armature_eval``'s pose)."""
    from ...core.muscle.joint_drive import driven_activation

    if not follows_joints(armature_eval.implicit_muscles.muscles):
        return keyed
    if transforms is None:
        bones = armature_eval.pose.bones
        buf = np.empty(len(bones) * 16, dtype=np.float32)
        bones.foreach_get("matrix", buf)
        transforms = buf.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64) @ rest_transforms(armature_eval)
    return driven_activation(keyed, transforms, read_drive(armature_eval, source))


def rest_activation(armature, index: int, keyed: float) -> float:
    """The activation muscle ``index`` has in the rest pose with ``keyed`` as its own value (what bind takes)."""
    from ...core.muscle.joint_drive import driven_activation

    muscle = armature.implicit_muscles.muscles[index]
    if not muscle.joint_bone or joint_problem(armature, muscle):
        return keyed
    B = np.broadcast_to(np.eye(4), (len(armature.data.bones), 4, 4))
    return float(driven_activation([keyed], B, read_drive(armature, [index]))[0])
