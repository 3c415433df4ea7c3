"""A muscle's activation from a joint, on the Blender side: the muscles' joint settings read into a core
``JointDrive`` per fibre (``core/muscle/joint_drive.py``), what is wrong with them, and the one-click set-up from the
muscle's bones (``follow_joint``).

The angle is the joint bone's local rotation relative to its rest (its turn relative to its parent), taken from the
evaluated pose the frame handler reads (``playback._read``), so constraints, drivers and NLA count. A muscle follows
a bone that bends between its origin and its insertion (``related_joints``): the insertion bone or a parent of it
below their common parent, or the same on the origin's side.
"""
from __future__ import annotations

import math

import numpy as np

AXES = ("X", "Y", "Z")
DEFAULT_FLEXION = math.radians(120.0)
"""The turn ``follow_joint`` maps to full activation (an elbow flexed to 120 degrees)."""
CURVE_ITEMS = (('LINEAR', "Linear", "The activation grows evenly with the angle"),
               ('SMOOTH', "Smooth", "Slow at both ends of the range, fastest in its middle"),
               ('EASE_IN', "Ease In", "Slow at first, fast near the end of the range"),
               ('EASE_OUT', "Ease Out", "Fast at first, slow near the end of the range"))
MODE_ITEMS = (('ADD', "Add Keys", "The keyed activation adds to the joint's (at most 1)"),
              ('REPLACE', "Keys Replace", "The keyed activation alone, the joint is not read (key this mode to "
                                          "hand a stretch of the shot to the keys)"))


def _chain(bones, name) -> list:
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
    up_i, up_o = _chain(bones, insertion), _chain(bones, origin)
    common = set(up_i) & set(up_o)
    return [b for b in up_i if b not in common] + [b for b in up_o if b not in common]


def joint_problem(armature, muscle) -> str:
    """A plain sentence saying what is wrong with a muscle's joint settings, or ``""`` (none set is fine)."""
    from ..core.muscle.joint_drive import joint_drive

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
    from ..core.muscle.joint_drive import joint_drive

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
        from ..core.muscle.joint_drive import no_drive
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
    from ..core.muscle.joint_drive import driven_activation

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
    from ..core.muscle.joint_drive import driven_activation

    muscle = armature.implicit_muscles.muscles[index]
    if not muscle.joint_bone or joint_problem(armature, muscle):
        return keyed
    B = np.broadcast_to(np.eye(4), (len(armature.data.bones), 4, 4))
    return float(driven_activation([keyed], B, read_drive(armature, [index]))[0])


def _keyed_rotations(armature, bone_name: str) -> list:
    """The joint bone's local rotations (3 x 3 ``Matrix``) at each key of its rotation F-curves in the armature's
    action, in its rotation mode; empty if its rotation is not keyed."""
    from mathutils import Euler, Quaternion

    from . import animation

    pb = armature.pose.bones[bone_name]
    mode = pb.rotation_mode
    prop = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")
    path = f'pose.bones["{bone_name}"].{prop}'
    curves = {fc.array_index: fc for fc in animation.fcurves(armature) if fc.data_path == path}
    frames = sorted({k.co[0] for fc in curves.values() for k in fc.keyframe_points})
    current = list(getattr(pb, prop))
    out = []
    for f in frames:
        v = [curves[c].evaluate(f) if c in curves else current[c] for c in range(len(current))]
        if mode == 'QUATERNION':
            out.append(Quaternion(v).normalized().to_matrix())
        elif mode == 'AXIS_ANGLE':
            out.append(Quaternion(v[1:], v[0]).to_matrix())
        else:
            out.append(Euler(v, mode).to_matrix())
    return out


def _twist(R, axis) -> float:
    """Twist angle [rad] of the rotation ``R (3, 3)`` about the unit ``axis (3,)`` (``core.muscle.joint_drive``)."""
    vee = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return 2.0 * math.atan2(float(vee @ axis), 1.0 + float(np.trace(R)))


def keyed_axis(armature, bone_name: str):
    """The local axis (0, 1, 2) about which the bone turns most over its keys, or None if it is not keyed to turn."""
    rotations = [np.array(R) for R in _keyed_rotations(armature, bone_name)]
    if not rotations:
        return None
    spans = []
    for k in range(3):
        angles = [0.0] + [_twist(R, np.eye(3)[k]) for R in rotations]
        spans.append(max(angles) - min(angles))
    best = int(np.argmax(spans))
    return best if spans[best] > 1e-4 else None


def follow_joint(armature, muscle) -> str:
    """Set ``muscle`` to follow the joint it crosses, from its bones: the insertion bone's joint if it bends between
    them (else the origin's), about the bone's local axis it turns about most over its keys (or, not keyed, the
    axis whose turn shortens the muscle most), 0 at rest and full activation at ``DEFAULT_FLEXION`` the way that
    shortens the muscle, Add mode. Returns ``""``, or a sentence saying why it cannot (then nothing is
    changed)."""
    from . import rig

    problem = rig.muscle_problem(armature, muscle) if not muscle.joint_bone else ""
    if problem:
        return problem
    bones = armature.data.bones
    for label, name in (("origin", muscle.origin_bone), ("insertion", muscle.insertion_bone)):
        if name not in bones:
            return f"{muscle.name}: its {label} bone '{name}' is not in {armature.name}."
    joints = related_joints(armature, muscle.origin_bone, muscle.insertion_bone)
    if not joints:
        return (f"{muscle.name}: its origin and insertion are on the same bone '{muscle.origin_bone}', so no joint "
                f"bends it; attach its insertion to another bone first.")
    joint = muscle.insertion_bone if muscle.insertion_bone in joints else \
        muscle.origin_bone if muscle.origin_bone in joints else joints[0]
    o, i = rig.muscle_endpoints(armature, muscle, posed=False)
    bone = bones[joint]
    h = bone.head_local
    insertion_side = joint in _chain(bones, muscle.insertion_bone)
    # d|o - i|^2 / d(theta) = -2 n . ((i - h) x (o - i)) for the insertion turning about h by theta around n
    shorten = (i - h).cross(o - i) if insertion_side else (o - h).cross(i - o)
    local = bone.matrix_local.to_3x3().transposed() @ shorten
    if local.length < 1e-9 * max(1.0, (o - i).length ** 2):
        return (f"{muscle.name}: its axis passes through the joint of '{joint}', so no turn of it shortens the "
                f"muscle; set its Joint Bone, Axis and angles by hand.")
    k = keyed_axis(armature, joint)
    if k is None:
        k = max(range(3), key=lambda c: abs(local[c]))
    muscle.joint_bone = joint
    muscle.joint_axis = AXES[k]
    muscle.joint_angle_rest = 0.0
    muscle.joint_angle_active = math.copysign(DEFAULT_FLEXION, local[k])
    muscle.activation_mode = 'ADD'
    return ""


def mirrored_joint(armature, values: dict, mirrored_bone) -> str:
    """Give a mirrored copy's ``values`` (``mirror.mirrored_values``) the other side's joint bone and angles of the
    same sense: a turn mirrored across X = 0 turns about the axis ``(x, -y, -z)`` by the same angle, so the angles
    change sign where the other bone's local axis points the other way. ``mirrored_bone(armature, name)`` gives
    ``(bone, why not)``; returns ``""`` or a sentence."""
    name = values.get("joint_bone", "")
    if not name or name not in armature.data.bones:
        return ""
    other, why = mirrored_bone(armature, name)
    if other is None:
        return f"{values['name']}: no mirrored bone for its joint bone '{name}': {why}."
    bones = armature.data.bones
    k = AXES.index(values["joint_axis"])
    a = np.array(bones[name].matrix_local)[:3, k]
    b = np.array(bones[other].matrix_local)[:3, k]
    values["joint_bone"] = other
    if float(b @ (a * (1.0, -1.0, -1.0))) < 0.0:
        values["joint_angle_rest"] = -values["joint_angle_rest"]
        values["joint_angle_active"] = -values["joint_angle_active"]
    return ""
