"""The absolute skin measures on a family member (``core/skin/quality.py``), shared by the tests, ``make bench`` and
the demo (not shipped).

    sys.path.insert(0, "tests")
    from family import member, load_character, load_animation
    from family_measures import BodyMeasures
    body = member("game_engine/heavy")
    c = load_character(body)
    m = BodyMeasures(body, c)                       # crease regions from the bone map, the meshes built once
    frame = m.frame(x, lbs, dqs_positions, placement)   # one frame's measures (FrameMeasures)
    frame.inside.count, frame.inside.by_region["elbow.L"]

Crease regions (``CREASES``): around each of the elbows, knees, groins (thigh against pelvis and belly), armpits
and the neck, the vertices whose highest-weight bone belongs to the joint's segments (a segment is its mapped bone
and the bones under it down to the next mapped one: a twist bone counts with its limb) and that lie within
``CREASE_REACH`` of the distal segment's length from the joint.

Per frame: **inside** (vertices of the result inside the body deeper than ``INSIDE_DEPTH``, by crease region, and
the deepest), **smoothness** (the share of faces turned by more than 45 degrees against the linear Armature result
outside the contact creases, and the largest increase of the angle between neighbouring faces against rest) and,
for the rest pose, **rest** (the largest distance from the rest mesh).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CREASE_REACH = 0.5
"""A crease region reaches this share of its distal segment's length from the joint."""
CREASES = (
    ("elbow", "upper_arm", "forearm", ("upper_arm", "forearm")),
    ("knee", "thigh", "shin", ("thigh", "shin")),
    ("groin", "pelvis", "thigh", ("pelvis", "spine", "thigh")),
    ("armpit", "chest", "upper_arm", ("clavicle", "chest", "upper_arm")),
)
"""Per sided crease: name, the proximal and distal segments (the joint is the distal's head) and the segments whose
vertices belong to it. The neck (``neck``: head, neck and chest, at the neck's head) is added once."""


def segment_bones(names, parents, bone_map: dict) -> dict:
    """Semantic segment -> bone indices: its mapped bone(s) and every bone below them down to (without) the next
    mapped bone."""
    index = {n: i for i, n in enumerate(names)}
    mapped = {}
    for key, value in bone_map.items():
        for name in (value if isinstance(value, (list, tuple)) else [value]):
            if name in index:
                mapped[index[name]] = key
    children = {i: [] for i in range(len(names))}
    for i, p in enumerate(parents):
        if p >= 0:
            children[int(p)].append(i)
    out = {}
    for b, key in mapped.items():
        stack, bones = [b], []
        while stack:
            j = stack.pop()
            bones.append(j)
            stack += [k for k in children[j] if k not in mapped]
        out.setdefault(key, []).extend(bones)
    return out


def crease_joints(character, bone_map: dict) -> tuple:
    """``(names, joints)`` for :func:`core.skin.quality.joint_regions` (module docstring)."""
    seg = segment_bones(character.names, character.parents, bone_map)
    index = {n: i for i, n in enumerate(character.names)}

    def bones(stem, side):
        out = []
        for s in stem:
            key = f"{s}.{side}" if f"{s}.{side}" in seg else s
            out += seg.get(key, [])
        return out

    def head_and_length(key):
        b = index[bone_map[key] if not isinstance(bone_map[key], list) else bone_map[key][0]]
        return character.heads[b], float(np.linalg.norm(character.tails[b] - character.heads[b]))

    names, joints = [], []
    for side in ("L", "R"):
        for crease, _, distal, members in CREASES:
            key = f"{distal}.{side}"
            if key not in bone_map:
                continue
            head, length = head_and_length(key)
            names.append(f"{crease}.{side}")
            joints.append((bones(members, side), head, CREASE_REACH * length * (2.0 if crease == "groin" else 1.0)))
    if "neck" in bone_map and "head" in bone_map:
        head, length = head_and_length("neck")
        _, head_length = head_and_length("head")
        names.append("neck")
        joints.append((bones(("neck", "head", "chest"), "C"), head, length + CREASE_REACH * head_length))
    return tuple(names), joints


@dataclass
class FrameMeasures:
    """One frame's measures (module docstring)."""

    inside: object  # core.skin.quality.InsideSkin
    smoothness: object  # core.skin.quality.SkinQuality (reference: the linear Armature result)

    def as_dict(self) -> dict:
        creases, deepest = self.inside.in_regions()
        return {"inside": self.inside.as_dict(), "inside_creases": creases, "deepest_creases_mm": 1e3 * deepest,
                "turned_outside_creases": self.smoothness.turned_outside_creases,
                "dihedral_increase": self.smoothness.dihedral_increase}


class BodyMeasures:
    """The measures' meshes of one character, built once (module docstring)."""

    def __init__(self, body, character, own_part=None, part_names=()):
        from implicit_muscles.core.skin import quality as Q

        self.character = character
        self.crease_names, joints = crease_joints(character, body.bone_map)
        region = Q.joint_regions(character.vertices, character.weights, character.heads, joints)
        self.region = region
        self.inside_mesh = Q.InsideMesh.build(character.vertices, character.faces, region, self.crease_names)
        owner = np.argmax(character.weights, axis=1) if own_part is None else own_part
        names = part_names or character.names
        self.quality_mesh = Q.QualityMesh.build(character.vertices, character.faces, owner, names)

    def frame(self, x, lbs, skin=None, rest_placement=None, placement=None, own_part=None) -> FrameMeasures:
        """The measures of positions ``x (V, 3)`` [m] against the linear result ``lbs (V, 3)``; the contact creases
        of the smoothness measure from the skin field (``core.skin.quality.crease_vertices``) when ``skin`` and the
        placements are given, none otherwise."""
        from implicit_muscles.core.skin import quality as Q

        crease = None
        if skin is not None:
            crease = Q.crease_vertices(skin, rest_placement, placement, self.character.vertices, lbs, own_part)
        return FrameMeasures(inside=Q.measure_inside(self.inside_mesh, x),
                             smoothness=Q.measure(self.quality_mesh, x, lbs, crease))

    def rest_error(self, x) -> float:
        """[m] The largest distance of ``x (V, 3)`` from the rest mesh."""
        return float(np.linalg.norm(np.asarray(x) - self.character.vertices, axis=1).max())
