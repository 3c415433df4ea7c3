"""Follow Joint: a muscle set up in one click to take its activation from the joint it crosses, from its bones and the
joint bone's keys (the settings it writes are read per frame by ``blender/scene/joint.py``).
"""
from __future__ import annotations

import math

import numpy as np
from mathutils import Euler, Quaternion

from ..scene import animation, rig
from ..scene.joint import AXES, bone_chain, related_joints

DEFAULT_FLEXION = math.radians(120.0)
"""The turn ``follow_joint`` maps to full activation (an elbow flexed to 120 degrees)."""


def _keyed_rotations(armature, bone_name: str) -> list:
    """The joint bone's local rotations (3 x 3 ``Matrix``) at each key of its rotation F-curves in the armature's
    action, in its rotation mode; empty if its rotation is not keyed."""
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
    insertion_side = joint in bone_chain(bones, muscle.insertion_bone)
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
