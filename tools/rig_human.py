"""Rig, weight and animate the MakeHuman test body: ``.cache/character/human.glb`` -> ``human_rigged.glb``.

Inputs (``tools/fetch_character.py`` makes them): ``human.glb``, Assimp's ``Collada/human.zae`` converted (a
MakeHuman body: 13,380 positions, closed, genus 0, 1.66 m, Z up, facing -Y, A-pose; and its eyes, a separate open
mesh; no skeleton), and three motion captures in ``captures/``.

Output: ``.cache/character/human_rigged.glb``, holding

* ``Body``: the welded body (13,380 vertices, no UVs, smooth vertex normals, so every glTF importer gets it
  welded), skinned to the armature ``HumanRig`` by automatic (bone heat) weights, at most 4 per vertex, normalised;
* ``Eyes``: a rigid child of the ``head`` bone (bone parenting, not skinned);
* ``HumanRig``: 21 bones, ``pelvis > spine > chest > neck > head`` and on each side ``clavicle > upper_arm >
  forearm > hand`` (on ``chest``) and ``thigh > shin > foot > toe`` (on ``pelvis``), named ``.L`` / ``.R``; the
  pelvis (the root, which carries the motion's translation) points backwards from the hips' centre;
* three actions at 30 fps keyed on frames 1..N, one glTF animation each: ``jump`` (CMU 01_01: standing forward
  jumps, 688 frames), ``climb`` (CMU 01_03: walks, steps onto a 0.8 m obstacle and down again, 1128 frames) and
  ``boxing`` (Boxing_Toes: footwork and punches, goes down to the floor near the end, 921 frames). Blender's
  importer puts each on an NLA track named after it (its action is named the same by Blender 5.0,
  ``<name>_HumanRig`` by 4.2), and turns key times into frames at the scene's rate: set the scene to 30 fps before
  importing (``tests/characters.py`` does; ``load_animation``, ``play_action``);
* plain materials (the imported ones are a mirror and an eye texture left without UVs): skin and eye colours.

How:

1. import ``human.glb`` with ``merge_vertices=True`` (the file splits the body at its UV seams; the cross-sections
   and bone heat need the welded, closed surface);
2. landmarks from horizontal cross-sections (the loops where the plane Z=z cuts the mesh, every 0.5 % of the
   height): crotch (the leg loops merge), armpit (the arm loops merge with the torso), wrist (thinnest arm loop
   above the fingers), elbow (the bend of the arm's centre line), knee (thinnest leg loop mid-leg), ankle (where
   the foot starts), neck (thinnest loop under the head), toe tip and heel (extremes of the foot);
3. an armature on those landmarks, the body parented to it with automatic weights (a vertex left unweighted is an
   error), then the pelvis bone turned to point backwards (``turn_pelvis_back``: upright, it points against the
   thighs, and Blender's rest matrices of the legs come out 4e-5 off orthonormal), the eyes parented to the head
   bone;
4. each capture retargeted by world-space rotation copy: a target bone T copying source joint S gets
   ``R_T(f) = D_S(f) @ A_T``, with ``D_S(f)`` S's world rotation at frame f relative to the capture's rest pose
   and ``A_T`` T's rest orientation turned by the smallest rotation that points T along S's rest segment (the
   A-pose turned into the capture's rest pose). The pelvis follows the capture's hips, their displacement scaled
   by the ratio of leg lengths. Each clip is turned about Z so that its first frame faces -Y, starts over the
   origin, and is lifted so that the skinned feet touch the floor (the body's lowest rest point) in its first
   frame; no IK, no foot locking, so feet slide or float a few cm later on. Resampled to 30 fps (quaternions
   normalised-lerped), keyed on every frame 1..N;
5. export with ``export_animation_mode='ACTIONS'``.

Run with the Blender 5.0 bpy module: ``.venv/b50/bin/python tools/rig_human.py [--force]`` (``make character``
does). It takes a few seconds and is deterministic. It is idempotent: ``human_rigged.stamp.json`` records the
SHA-256 of the inputs and of this script and the bpy version; when they match, it only prints the path.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "character"
BODY_INPUT = CACHE / "human.glb"
CAPTURE_DIR = CACHE / "captures"
OUTPUT = CACHE / "human_rigged.glb"
STAMP = CACHE / "human_rigged.stamp.json"

FPS = 30
"""Frame rate of every action."""
ARMATURE_NAME = "HumanRig"
MAX_INFLUENCES = 4
"""Weights kept per vertex (what glTF's one JOINTS_0/WEIGHTS_0 set holds)."""
SKIN_COLOUR = (0.5903, 0.44, 0.338)
"""The body's base colour (linear RGB), the one its file gives."""
EYE_COLOUR = (0.8, 0.78, 0.75)
"""The eyes' (their iris was a texture)."""


# --- captures and how they map onto the rig ---------------------------------------------------------------------

def _cmu_map() -> dict:
    """Target bone -> (source joint, joint or ``.end`` site whose rest position gives the source's direction)."""
    mapping = {"pelvis": ("Hips", "Spine"), "spine": ("Spine", "Spine1"), "chest": ("Spine1", "Neck1"),
               "neck": ("Neck", "Head"), "head": ("Head", "Head.end")}
    for side, long, short in (("L", "Left", "L"), ("R", "Right", "R")):
        mapping.update({
            f"clavicle.{side}": (f"{long}Shoulder", f"{long}Arm"),
            f"upper_arm.{side}": (f"{long}Arm", f"{long}ForeArm"),
            f"forearm.{side}": (f"{long}ForeArm", f"{long}Hand"),
            f"hand.{side}": (f"{long}Hand", f"{short}Fingers.end"),
            f"thigh.{side}": (f"{long}UpLeg", f"{long}Leg"),
            f"shin.{side}": (f"{long}Leg", f"{long}Foot"),
            f"foot.{side}": (f"{long}Foot", f"{long}ToeBase"),
            f"toe.{side}": (f"{long}ToeBase", f"{long}ToeBase.end"),
        })
    return mapping


def _boxing_map() -> dict:
    mapping = {"pelvis": ("Hips", "Ab"), "spine": ("Ab", "Chest"), "chest": ("Chest", "Neck"),
               "neck": ("Neck", "Head"), "head": ("Head", "Head.end")}
    for side, long in (("L", "Left"), ("R", "Right")):
        mapping.update({
            f"clavicle.{side}": (f"{long}Collar", f"{long}Shoulder"),
            f"upper_arm.{side}": (f"{long}Shoulder", f"{long}Elbow"),
            f"forearm.{side}": (f"{long}Elbow", f"{long}Wrist"),
            f"hand.{side}": (f"{long}Wrist", f"{long}Wrist.end"),
            f"thigh.{side}": (f"{long}Hip", f"{long}Knee"),
            f"shin.{side}": (f"{long}Knee", f"{long}Ankle"),
            f"foot.{side}": (f"{long}Ankle", f"{long}Toes"),
            f"toe.{side}": (f"{long}Toes", f"{long}Toes.end"),
        })
    return mapping


@dataclass(frozen=True)
class Clip:
    action: str
    capture: str
    """File name in CAPTURE_DIR."""
    mapping: dict
    first: int
    """First source frame used, 0-based (1 skips the CMU files' T-pose reference frame)."""


CLIPS = (
    Clip("jump", "01_01.bvh", _cmu_map(), first=1),
    Clip("climb", "01_03.bvh", _cmu_map(), first=1),
    Clip("boxing", "Boxing_Toes.bvh", _boxing_map(), first=0),
)


# --- the skeleton -------------------------------------------------------------------------------------------------

def _bone_table() -> list:
    """(name, head landmark, tail landmark, parent, connected), parents before children."""
    bones = [("pelvis", "hips", "waist", None, False), ("spine", "waist", "chest", "pelvis", False),
             ("chest", "chest", "neck_base", "spine", True), ("neck", "neck_base", "head_base", "chest", True),
             ("head", "head_base", "head_top", "neck", True)]
    for s in "LR":
        bones += [(f"clavicle.{s}", f"clavicle_{s}", f"shoulder_{s}", "chest", False),
                  (f"upper_arm.{s}", f"shoulder_{s}", f"elbow_{s}", f"clavicle.{s}", True),
                  (f"forearm.{s}", f"elbow_{s}", f"wrist_{s}", f"upper_arm.{s}", True),
                  (f"hand.{s}", f"wrist_{s}", f"hand_tip_{s}", f"forearm.{s}", True),
                  (f"thigh.{s}", f"hip_{s}", f"knee_{s}", "pelvis", False),
                  (f"shin.{s}", f"knee_{s}", f"ankle_{s}", f"thigh.{s}", True),
                  (f"foot.{s}", f"ankle_{s}", f"ball_{s}", f"shin.{s}", True),
                  (f"toe.{s}", f"ball_{s}", f"toe_{s}", f"foot.{s}", True)]
    return bones


BONES = _bone_table()
"""Bone heat weighs the body against these segments; the pelvis is then turned to point backwards (see
``turn_pelvis_back``), the others keep them."""
PELVIS_LENGTH = 0.1
"""Length of the pelvis bone once turned backwards (m): from the hips' centre into the buttocks."""


# --- cross-sections -----------------------------------------------------------------------------------------------

def slice_loops(co: np.ndarray, tris: np.ndarray, z: float) -> list:
    """Loops (ordered (N, 2) XY arrays) where the plane Z=z cuts a closed triangle mesh."""
    s = co[:, 2] - z
    s = np.where(s == 0, 1e-9, s)
    above = s[tris] > 0
    cut = above.any(1) & ~above.all(1)
    tri, side = tris[cut], above[cut]
    pairs = ((0, 1), (1, 2), (2, 0))
    crossing = np.stack([side[:, a] != side[:, b] for a, b in pairs], 1)
    keys = np.stack([np.minimum(tri[:, a], tri[:, b]) * (1 << 32) + np.maximum(tri[:, a], tri[:, b])
                     for a, b in pairs], 1)
    neighbours = {}
    for a, b in keys[crossing].reshape(-1, 2):   # each cut triangle joins its two crossing edges
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)

    def point(key):
        i, j = int(key >> 32), int(key & 0xFFFFFFFF)
        t = s[i] / (s[i] - s[j])
        return co[i, :2] + (co[j, :2] - co[i, :2]) * t

    seen, loops = set(), []
    for start in neighbours:
        if start in seen:
            continue
        loop, previous, current = [start], None, start
        seen.add(start)
        while True:
            ahead = [n for n in neighbours[current] if n != previous and n not in seen]
            if not ahead:
                break
            previous, current = current, ahead[0]
            seen.add(current)
            loop.append(current)
        loops.append(np.array([point(k) for k in loop]))
    return loops


def loop_stats(p: np.ndarray, z: float) -> dict:
    """Area, centroid (3D, at height z) and XY extent of one loop."""
    x, y = p[:, 0], p[:, 1]
    cross = x * np.roll(y, -1) - np.roll(x, -1) * y
    area = 0.5 * cross.sum()
    if abs(area) < 1e-12:
        centre = p.mean(0)
    else:
        centre = np.array([((x + np.roll(x, -1)) * cross).sum(), ((y + np.roll(y, -1)) * cross).sum()]) / (6 * area)
    return dict(z=z, area=abs(area), c=np.array([centre[0], centre[1], z]), xmin=x.min(), xmax=x.max(),
                ymin=y.min(), ymax=y.max())


def section(co: np.ndarray, tris: np.ndarray, z: float) -> list:
    """Outer loops at height z, largest first (loops inside another loop's box, e.g. the mouth, are dropped)."""
    loops = sorted((loop_stats(p, z) for p in slice_loops(co, tris, z) if len(p) > 2), key=lambda d: -d["area"])
    outer = []
    for d in loops:
        if not any(o["xmin"] <= d["xmin"] and d["xmax"] <= o["xmax"] and o["ymin"] <= d["ymin"]
                   and d["ymax"] <= o["ymax"] for o in outer):
            outer.append(d)
    return outer


# --- landmarks ----------------------------------------------------------------------------------------------------

class Sections:
    """The body's cross-sections every 0.5 % of its height, and the questions the landmarks ask of them."""

    def __init__(self, co: np.ndarray, tris: np.ndarray):
        self.co = co
        self.floor, self.top = co[:, 2].min(), co[:, 2].max()
        self.height = self.top - self.floor
        self.step = 0.005 * self.height
        self.zs = np.arange(self.floor + self.step, self.top - self.step / 2, self.step)
        self.levels = [section(co, tris, z) for z in self.zs]
        self.width = np.array([(t["xmax"] - t["xmin"]) if t else np.inf for t in map(self.torso, range(len(self.zs)))])

    def across(self, i: int) -> list:
        """Loops at level i that span x=0 (the torso, or the merged legs)."""
        return [d for d in self.levels[i] if d["xmin"] < 0 < d["xmax"]]

    def torso(self, i: int):
        loops = self.across(i)
        return max(loops, key=lambda d: d["area"]) if loops else None

    def side(self, i: int, sign: int) -> list:
        """Loops at level i wholly on one side (sign +1: +X, the body's left)."""
        return [d for d in self.levels[i] if not (d["xmin"] < 0 < d["xmax"]) and np.sign(d["c"][0]) == sign]

    def level(self, z: float) -> int:
        return int(np.argmin(abs(self.zs - z)))

    def torso_point(self, z: float, back: float = 0.3) -> np.ndarray:
        """On the mid-plane at height z, moved from the torso's centroid towards the back (+Y) by ``back``."""
        d = self.torso(self.level(z))
        return np.array([0.0, d["c"][1] + back * (d["ymax"] - d["c"][1]), z])


def torso_landmarks(s: Sections) -> dict:
    z0, height, zs = s.floor, s.height, s.zs
    # crotch: the lowest level (above the feet) where one loop spans x=0: the legs have merged
    i_crotch = next(i for i in range(len(zs)) if s.across(i) and zs[i] > z0 + 0.2 * height)
    # armpit: the highest level (below the head) with loops on both sides besides the torso
    i_armpit = max(i for i in range(i_crotch, len(zs))
                   if zs[i] < z0 + 0.9 * height and s.side(i, 1) and s.side(i, -1))
    up = [i for i in range(i_armpit + 1, len(zs)) if zs[i] < z0 + 0.95 * height]
    i_neck = min(up, key=lambda i: s.width[i])
    i_neck_base = max(i for i in up if i <= i_neck and s.width[i] > 1.5 * s.width[i_neck])
    hip_z = zs[i_crotch] + 0.05 * height
    i_waist = min((i for i in range(len(zs)) if hip_z < zs[i] < zs[i_armpit] - 0.05 * height),
                  key=lambda i: s.width[i])
    # skull base: above the narrowest neck level, at the Y of the loop of least area there (not the chin's)
    i_neck_area = min(up, key=lambda i: s.torso(i)["area"] if s.torso(i) else np.inf)
    head_base = np.array([0.0, s.torso_point(zs[i_neck_area], back=0.2)[1], zs[i_neck] + 0.02 * height])
    return dict(
        i_crotch=i_crotch, i_armpit=i_armpit, crotch=zs[i_crotch], armpit=zs[i_armpit],
        hips=s.torso_point(hip_z, back=0.0), waist=s.torso_point(zs[i_waist]),
        chest=s.torso_point(0.5 * (zs[i_waist] + zs[i_neck_base])), neck_base=s.torso_point(zs[i_neck_base], back=0.2),
        head_base=head_base, head_top=np.array([0.0, head_base[1], s.top]))


def arm_landmarks(s: Sections, t: dict, sign: int) -> dict:
    """Shoulder, elbow, wrist and finger tip of one arm (sign +1: left, at +X)."""
    arm = []
    for i in range(t["i_armpit"], t["i_crotch"], -1):   # one loop per level, down from the armpit
        loops = s.side(i, sign)
        if len(loops) != 1:
            break                                       # several loops: fingers and thumb, the hand has begun
        arm.append(loops[0])
    lower = arm[len(arm) // 2:]
    wrist = min(lower, key=lambda d: d["area"])
    i_wrist = arm.index(wrist)
    # elbow: the centre farthest from the chord armpit -> wrist (the arm's bend)
    a, b = arm[0]["c"], wrist["c"]
    u = (b - a) / np.linalg.norm(b - a)
    distance = [np.linalg.norm((d["c"] - a) - np.dot(d["c"] - a, u) * u) for d in arm[:i_wrist]]
    i_elbow = int(np.argmax(distance[2:i_wrist - 2])) + 2
    # shoulder: on the upper arm's axis (a line through the centres armpit..elbow) 0.04 H above the armpit, its X
    # averaged with (the torso's half-width there - the upper arm's radius)
    centres = np.array([d["c"] for d in arm[:i_elbow]])
    mean = centres.mean(0)
    axis = np.linalg.svd(centres - mean)[2][0]
    axis = axis if axis[2] > 0 else -axis
    z_shoulder = t["armpit"] + 0.04 * s.height
    on_line = mean + axis * (z_shoulder - mean[2]) / axis[2]
    torso = s.torso(s.level(z_shoulder))
    half = torso["xmax"] if sign > 0 else -torso["xmin"]
    radius = np.sqrt(arm[i_elbow // 2]["area"] * abs(axis[2]) / np.pi)
    shoulder = np.array([0.5 * (on_line[0] + sign * (half - radius)), on_line[1], z_shoulder])
    # finger tip: the mean of the lowest 2 % of this side's vertices below the wrist
    co = s.co
    hand = co[(np.sign(co[:, 0]) == sign) & (co[:, 2] < wrist["z"]) & (co[:, 2] > t["crotch"])
              & (abs(co[:, 0]) > abs(wrist["c"][0]) - 0.05)]
    tip = hand[np.argsort(hand[:, 2])[: max(5, len(hand) // 50)]].mean(0)
    neck_base = t["neck_base"]
    return dict(clavicle=np.array([sign * 0.02, neck_base[1], neck_base[2] - 0.02 * s.height]), shoulder=shoulder,
                elbow=arm[i_elbow]["c"], wrist=wrist["c"], hand_tip=tip)


def leg_landmarks(s: Sections, t: dict, sign: int) -> dict:
    """Hip, knee, ankle, ball and toe tip of one leg, and the heel's Y (sign +1: left, at +X)."""
    z0, height, co = s.floor, s.height, s.co
    leg = []
    for i in range(t["i_crotch"] - 1, -1, -1):          # the largest loop on this side per level, below the crotch
        loops = [d for d in s.levels[i] if np.sign(d["c"][0]) == sign and abs(d["c"][0]) < 0.25 * height]
        leg.append(max(loops, key=lambda d: d["area"]))
    leg = leg[::-1]                                      # bottom -> top
    lz = np.array([d["z"] for d in leg])
    area = np.array([d["area"] for d in leg])
    depth = np.array([d["ymax"] - d["ymin"] for d in leg])
    # ankle: the lowest level whose front-back depth is below 1.25 x that of the thinnest shin loop
    i_shin = int(np.argmin(np.where(lz < z0 + 0.25 * (t["crotch"] - z0), area, np.inf)))
    i_ankle = next(i for i in range(i_shin + 1) if depth[i] < 1.25 * depth[i_shin])
    # knee: the thinnest loop between 35 % and 65 % of the way from the ankle to the crotch
    low, high = lz[i_ankle] + 0.35 * (t["crotch"] - lz[i_ankle]), lz[i_ankle] + 0.65 * (t["crotch"] - lz[i_ankle])
    i_knee = int(np.argmin(np.where((lz > low) & (lz < high), area, np.inf)))
    thigh = leg[-int(0.03 * height / s.step) - 1]["c"]  # the thigh's centre 3 % H below the crotch
    hip = np.array([thigh[0], t["hips"][1], t["hips"][2]])
    foot = co[(np.sign(co[:, 0]) == sign) & (co[:, 2] < lz[i_ankle])]
    toe_tip = foot[np.argmin(foot[:, 1])]
    heel_y = foot[:, 1].max()
    ball_y = heel_y + 0.72 * (toe_tip[1] - heel_y)
    near = foot[abs(foot[:, 1] - ball_y) < 0.01]
    ball = np.array([near[:, 0].mean(), ball_y, z0 + 0.35 * (near[:, 2].max() - z0)])
    return dict(hip=hip, knee=leg[i_knee]["c"], ankle=leg[i_ankle]["c"], ball=ball,
                toe=np.array([ball[0], toe_tip[1], ball[2]]))


def landmarks(co: np.ndarray, tris: np.ndarray) -> dict:
    """Every joint position the bone table names, from a closed body mesh (Z up, facing -Y, arms clear)."""
    s = Sections(co, tris)
    t = torso_landmarks(s)
    points = {k: v for k, v in t.items() if isinstance(v, np.ndarray)}
    for sign, suffix in ((1, "L"), (-1, "R")):
        for name, p in {**arm_landmarks(s, t, sign), **leg_landmarks(s, t, sign)}.items():
            points[f"{name}_{suffix}"] = p
    return points


# --- rotations (numpy, batched over leading axes) -----------------------------------------------------------------

def axis_rotation(axis: str, degrees: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations about X, Y or Z."""
    a = np.radians(degrees)
    c, s = np.cos(a), np.sin(a)
    m = np.zeros(a.shape + (3, 3))
    i, j = {"X": (1, 2), "Y": (2, 0), "Z": (0, 1)}[axis]
    k = 3 - i - j
    m[..., k, k] = 1.0
    m[..., i, i] = m[..., j, j] = c
    m[..., i, j], m[..., j, i] = -s, s
    return m


def smallest_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The 3x3 rotation by the smallest angle turning unit vector a onto unit vector b."""
    axis = np.cross(a, b)
    sin, cos = np.linalg.norm(axis), float(np.dot(a, b))
    if sin < 1e-12:
        if cos > 0:
            return np.eye(3)
        axis = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
        sin = np.linalg.norm(axis)
    k = axis / sin
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    angle = np.arctan2(sin, cos)
    return np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx


def matrix_to_quaternion(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations -> (..., 4) unit quaternions (w, x, y, z), Blender's order."""
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    r = 0.5 * np.sqrt(np.maximum(trace, 1e-12))
    f = 0.25 / r
    d21, d02, d10 = m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]
    s01, s02, s12 = m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1]
    candidates = np.stack([
        np.stack([r[..., 0], d21 * f[..., 0], d02 * f[..., 0], d10 * f[..., 0]], -1),
        np.stack([d21 * f[..., 1], r[..., 1], s01 * f[..., 1], s02 * f[..., 1]], -1),
        np.stack([d02 * f[..., 2], s01 * f[..., 2], r[..., 2], s12 * f[..., 2]], -1),
        np.stack([d10 * f[..., 3], s02 * f[..., 3], s12 * f[..., 3], r[..., 3]], -1)], -2)
    q = np.take_along_axis(candidates, trace.argmax(-1)[..., None, None], -2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def quaternion_to_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = np.moveaxis(q / np.linalg.norm(q, axis=-1, keepdims=True), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


# --- BVH ----------------------------------------------------------------------------------------------------------

BVH_TO_BLENDER = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
"""BVH's Y up, +Z towards the viewer -> Blender's Z up, -Y towards the viewer (what Blender's BVH importer does)."""


@dataclass
class Capture:
    """A BVH capture. Joints in file order (parents first); an end site is a joint ``<parent>.end`` without channels."""
    names: list
    parents: list
    offsets: np.ndarray
    """(J, 3) rest offsets from the parent, BVH axes and units."""
    channels: list
    motion: np.ndarray
    """(F, C) channel values, one row per frame."""
    fps: float

    def world_rotations(self) -> np.ndarray:
        """(F, J, 3, 3) world rotations in Blender axes, relative to the rest pose (where all are identity)."""
        frames = len(self.motion)
        local = np.empty((frames, len(self.names), 3, 3))
        column = 0
        for j, channels in enumerate(self.channels):
            rotation = np.broadcast_to(np.eye(3), (frames, 3, 3)).copy()
            for name in channels:
                if name.endswith("rotation"):
                    rotation = rotation @ axis_rotation(name[0].upper(), self.motion[:, column])
                column += 1
            local[:, j] = rotation
        world = np.empty_like(local)
        for j, parent in enumerate(self.parents):
            world[:, j] = local[:, j] if parent < 0 else world[:, parent] @ local[:, j]
        return BVH_TO_BLENDER @ world @ BVH_TO_BLENDER.T

    def root_positions(self) -> np.ndarray:
        """(F, 3) the root joint's position per frame, Blender axes, capture units."""
        names = self.channels[0]
        xyz = [self.motion[:, names.index(f"{a}position")] for a in "XYZ"]
        return (np.stack(xyz, -1) + self.offsets[0]) @ BVH_TO_BLENDER.T

    def rest_positions(self) -> np.ndarray:
        """(J, 3) joint positions in the rest pose, Blender axes, capture units."""
        positions = np.zeros((len(self.names), 3))
        for j, parent in enumerate(self.parents):
            positions[j] = self.offsets[j] + (positions[parent] if parent >= 0 else 0.0)
        return positions @ BVH_TO_BLENDER.T


def read_bvh(path: Path) -> Capture:
    tokens = path.read_text().split()
    names, parents, offsets, channels, stack = [], [], [], [], []
    i = 1                                               # after HIERARCHY
    while tokens[i] != "MOTION":
        token = tokens[i]
        if token in ("ROOT", "JOINT", "End"):
            names.append(tokens[i + 1] if token != "End" else names[stack[-1]] + ".end")
            parents.append(stack[-1] if stack else -1)
            channels.append([])
            i += 2
        elif token == "{":
            stack.append(len(names) - 1)
            i += 1
        elif token == "}":
            stack.pop()
            i += 1
        elif token == "OFFSET":
            offsets.append([float(v) for v in tokens[i + 1:i + 4]])
            i += 4
        elif token == "CHANNELS":
            count = int(tokens[i + 1])
            channels[-1] = tokens[i + 2:i + 2 + count]
            i += 2 + count
        else:
            raise ValueError(f"{path.name}: unexpected {token!r} in the hierarchy")
    # MOTION Frames: N Frame Time: T, then the rows (a file may hold more rows than its header says)
    frame_time = float(tokens[i + 5])
    values = np.array(tokens[i + 6:], dtype=np.float64)
    width = sum(len(c) for c in channels)
    motion = values[: len(values) // width * width].reshape(-1, width)
    fps = 1.0 / frame_time
    fps = float(round(fps)) if abs(fps - round(fps)) < 1e-3 * fps else fps   # 0.0083333 s: 120 fps
    return Capture(names, parents, np.array(offsets), channels, motion, fps)


# --- retargeting (numpy) ------------------------------------------------------------------------------------------

@dataclass
class Rig:
    """The armature at rest, in armature space (the armature object sits at the origin)."""
    names: list
    parents: np.ndarray
    rest: np.ndarray
    """(B, 4, 4) ``bone.matrix_local``."""
    lengths: np.ndarray
    directions: np.ndarray
    """(B, 3) unit vectors along each bone's landmark segment (BONES): the bone's Y axis, but for the pelvis."""

    def index(self, name: str) -> int:
        return self.names.index(name)

    def relative(self) -> np.ndarray:
        """(B, 4, 4) each bone's rest matrix in its parent's (its own for the root)."""
        rel = self.rest.copy()
        for b, p in enumerate(self.parents):
            if p >= 0:
                rel[b] = np.linalg.inv(self.rest[p]) @ self.rest[b]
        return rel

    def deform(self, quaternions: np.ndarray, root: np.ndarray) -> np.ndarray:
        """(F, B, 4, 4) deform matrices (pose matrix @ rest^-1) of local pose rotations (F, B, 4) and the root
        bone's armature-space head position (F, 3); what Blender's pose evaluation gives for these keys."""
        frames = len(quaternions)
        local = np.broadcast_to(np.eye(4), (frames, len(self.names), 4, 4)).copy()
        local[..., :3, :3] = quaternion_to_matrix(quaternions)
        rel = self.relative()
        pose = np.empty_like(local)
        for b, p in enumerate(self.parents):
            if p < 0:
                pose[:, b] = self.rest[b] @ local[:, b]
                pose[:, b, :3, 3] = root
            else:
                pose[:, b] = pose[:, p] @ rel[b] @ local[:, b]
        return pose @ np.linalg.inv(self.rest)


@dataclass
class Motion:
    """One retargeted clip at FPS: local pose rotations (F, B, 4) and the root bone's head (F, 3), armature space."""
    quaternions: np.ndarray
    root: np.ndarray


def target_rotations(rig: Rig, capture: Capture, clip: Clip) -> np.ndarray:
    """(F, B, 3, 3) armature-space orientation of every target bone, per source frame from clip.first on."""
    world = capture.world_rotations()[clip.first:]
    rest = capture.rest_positions()
    joint = {name: j for j, name in enumerate(capture.names)}
    rotations = np.empty((len(world), len(rig.names), 3, 3))
    for b, name in enumerate(rig.names):
        source, toward = clip.mapping[name]
        d_source = rest[joint[toward]] - rest[joint[source]]
        aligned = smallest_rotation(rig.directions[b], d_source / np.linalg.norm(d_source))
        rotations[:, b] = world[:, joint[source]] @ (aligned @ rig.rest[b, :3, :3])
    return rotations


def retarget(rig: Rig, capture: Capture, clip: Clip) -> Motion:
    """The capture on the rig at the source's frame rate: world rotation copy, hips displacement scaled by the legs'
    length ratio, turned so that the first frame faces -Y (the body's facing) and starts over the rest pelvis."""
    rotations = target_rotations(rig, capture, clip)
    joint = {name: j for j, name in enumerate(capture.names)}
    rest = capture.rest_positions()
    source_leg = sum(np.linalg.norm(rest[joint[clip.mapping[bone][1]]] - rest[joint[clip.mapping[bone][0]]])
                     for bone in ("thigh.L", "shin.L"))
    scale = (rig.lengths[rig.index("thigh.L")] + rig.lengths[rig.index("shin.L")]) / source_leg
    hips = capture.root_positions()[clip.first:]
    displacement = (hips - hips[0]) * scale

    pelvis = rig.index("pelvis")
    forward = rotations[0, pelvis] @ rig.rest[pelvis, :3, :3].T @ np.array([0.0, -1.0, 0.0])
    turn = axis_rotation("Z", np.degrees(-np.pi / 2 - np.arctan2(forward[1], forward[0])))
    rotations = turn @ rotations
    root = rig.rest[pelvis, :3, 3] + displacement @ turn.T

    parent_rotations = np.empty_like(rotations)        # each bone's parent's pose rotation times its rest offset
    rel = rig.relative()
    for b, p in enumerate(rig.parents):
        parent_rotations[:, b] = rig.rest[b, :3, :3] if p < 0 else rotations[:, p] @ rel[b, :3, :3]
    local = np.swapaxes(parent_rotations, -1, -2) @ rotations
    return Motion(continuous(matrix_to_quaternion(local)), root)


def continuous(q: np.ndarray) -> np.ndarray:
    """Flip quaternions (F, B, 4) frame by frame into the hemisphere of the previous frame's."""
    q = q.copy()
    for f in range(1, len(q)):
        flip = np.einsum("bi,bi->b", q[f], q[f - 1]) < 0
        q[f, flip] *= -1
    return q


def resample(motion: Motion, source_fps: float, fps: float = FPS) -> Motion:
    """Motion at ``fps`` from its first frame to its last whole output frame: nlerp and lerp between source frames."""
    count = int(np.floor((len(motion.root) - 1) * fps / source_fps + 1e-9)) + 1
    position = np.arange(count) * source_fps / fps
    i0 = np.minimum(np.floor(position).astype(int), len(motion.root) - 1)
    i1 = np.minimum(i0 + 1, len(motion.root) - 1)
    a = (position - i0)[:, None]
    q = (1 - a[:, None]) * motion.quaternions[i0] + a[:, None] * motion.quaternions[i1]
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return Motion(q, (1 - a) * motion.root[i0] + a * motion.root[i1])


def skin(deform: np.ndarray, vertices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Linear blend skinning of rest vertices (V, 3) by deform matrices (B, 4, 4) and weights (V, B)."""
    blended = np.einsum("vb,bij->vij", weights, deform)
    return np.einsum("vij,vj->vi", blended[:, :3, :3], vertices) + blended[:, :3, 3]


def stand_on_floor(motion: Motion, rig: Rig, vertices: np.ndarray, weights: np.ndarray) -> Motion:
    """Lift (or lower) the whole clip so that the skinned body's lowest point in its first frame is at the body's
    lowest rest point (the floor)."""
    feet = vertices[:, 2] < vertices[:, 2].min() + 0.15
    first = rig.deform(motion.quaternions[:1], motion.root[:1])[0]
    lowest = skin(first, vertices[feet], weights[feet])[:, 2].min()
    lift = vertices[:, 2].min() - lowest
    return Motion(motion.quaternions, motion.root + np.array([0.0, 0.0, lift]))


def lowest_foot_points(motion: Motion, rig: Rig, vertices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(F,) per frame the lowest foot vertex, each moved rigidly by its strongest bone (a cheap LBS stand-in)."""
    deform = rig.deform(motion.quaternions, motion.root)
    owner = np.argmax(weights, axis=1)
    lowest = np.full(len(deform), np.inf)
    for name in ("foot.L", "toe.L", "foot.R", "toe.R"):
        b = rig.index(name)
        points = vertices[owner == b]
        z = np.einsum("fj,vj->fv", deform[:, b, 2, :3], points) + deform[:, b, 2, 3][:, None]
        lowest = np.minimum(lowest, z.min(axis=1))
    return lowest


# --- Blender ------------------------------------------------------------------------------------------------------

def import_body(bpy, path: Path):
    """A fresh empty scene with the welded body and the eyes, unparented from the importer's empty, renamed."""
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_scene.gltf(filepath=str(path), merge_vertices=True)
    meshes = sorted((o for o in bpy.data.objects if o.type == "MESH"), key=lambda o: -len(o.data.vertices))
    if len(meshes) != 2:
        raise RuntimeError(f"{path.name}: expected two meshes (body, eyes), found {[o.name for o in meshes]}")
    for obj in meshes:
        world = obj.matrix_world.copy()
        obj.parent = None
        obj.matrix_world = world
    for obj in [o for o in bpy.data.objects if o.type == "EMPTY"]:
        bpy.data.objects.remove(obj)
    body, eyes = meshes
    body.name, body.data.name, eyes.name, eyes.data.name = "Body", "Body", "Eyes", "Eyes"
    return body, eyes


def mesh_arrays(obj):
    """World-space vertices (V, 3) and loop triangles (T, 3) of a mesh object."""
    mesh = obj.data
    co = np.empty(len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", co)
    matrix = np.array(obj.matrix_world)
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
    mesh.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3], tris.reshape(-1, 3)


def smooth_vertex_normals(bpy, obj) -> None:
    """Drop the imported custom normals and shade smooth: one normal per vertex, so the exporter splits nothing."""
    with bpy.context.temp_override(object=obj, active_object=obj, selected_objects=[obj]):
        bpy.ops.mesh.customdata_custom_splitnormals_clear()
    obj.data.shade_smooth()


def plain_material(bpy, obj, name: str, colour: tuple, roughness: float) -> None:
    """Replace the object's materials by one Principled BSDF of a flat colour. The imported ones are converted
    from specular-glossiness with an IOR of 1000 (a mirror), and the eyes' texture has no UVs left to map it."""
    material = bpy.data.materials.new(name)
    if material.node_tree is None:          # Blender < 5.0: a new material has no nodes until asked
        material.use_nodes = True
    bsdf = next(node for node in material.node_tree.nodes if node.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (*colour, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    bsdf.inputs["IOR"].default_value = 1.4
    material.diffuse_color = (*colour, 1.0)
    obj.data.materials.clear()
    obj.data.materials.append(material)


def build_armature(bpy, points: dict):
    from mathutils import Vector

    armature = bpy.data.armatures.new(ARMATURE_NAME)
    rig = bpy.data.objects.new(ARMATURE_NAME, armature)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    for name, head, tail, parent, connected in BONES:
        bone = armature.edit_bones.new(name)
        bone.head, bone.tail = Vector(points[head]), Vector(points[tail])
        arm_bone = name.startswith(("clavicle", "upper_arm", "forearm", "hand"))
        bone.align_roll(Vector((0, 0, 1)) if arm_bone else Vector((0, -1, 0)))
        if parent:
            bone.parent = armature.edit_bones[parent]
            bone.use_connect = connected
    bpy.ops.object.mode_set(mode="OBJECT")
    return rig


def rig_arrays(rig, points: dict) -> Rig:
    bones = list(rig.data.bones)
    names = [b.name for b in bones]
    segments = {name: points[tail] - points[head] for name, head, tail, _, _ in BONES}
    directions = np.array([segments[name] / np.linalg.norm(segments[name]) for name in names])
    lengths = np.array([np.linalg.norm(segments[name]) for name in names])
    return Rig(names=names, parents=np.array([names.index(b.parent.name) if b.parent else -1 for b in bones]),
               rest=np.array([np.array(b.matrix_local) for b in bones]), lengths=lengths, directions=directions)


def turn_pelvis_back(bpy, rig) -> None:
    """Point the pelvis bone backwards (+Y) from the same head, after the weights were made with it upright.

    Upright, the pelvis points against the thighs, and Blender builds a child's rest matrix from its direction in
    the parent's frame in single precision, badly when that direction is near the parent's -Y: the thighs' rest
    matrices (and their children's) came out 4e-5 off orthonormal, and posed transforms as far from rigid.
    Backwards, the spine and the thighs are both at right angles to it. The head (the pivot) does not move, so the
    weights and the deformation are the same."""
    from mathutils import Vector

    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    pelvis = rig.data.edit_bones["pelvis"]
    pelvis.tail = pelvis.head + Vector((0.0, PELVIS_LENGTH, 0.0))
    pelvis.align_roll(Vector((0, 0, 1)))
    bpy.ops.object.mode_set(mode="OBJECT")


def bind(bpy, body, rig) -> np.ndarray:
    """Parent the body with automatic weights, keep the MAX_INFLUENCES largest, normalise; (V, B) weights in the
    rig's bone order."""
    bpy.ops.object.select_all(action="DESELECT")
    body.select_set(True)
    rig.select_set(True)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    bpy.ops.object.select_all(action="DESELECT")
    body.select_set(True)
    bpy.context.view_layer.objects.active = body
    bpy.ops.object.vertex_group_limit_total(group_select_mode="ALL", limit=MAX_INFLUENCES)
    bpy.ops.object.vertex_group_normalize_all(group_select_mode="ALL", lock_active=False)
    names = [b.name for b in rig.data.bones]
    column = {g.index: names.index(g.name) for g in body.vertex_groups if g.name in names}
    weights = np.zeros((len(body.data.vertices), len(names)))
    for vertex in body.data.vertices:
        for element in vertex.groups:
            if element.group in column:
                weights[vertex.index, column[element.group]] += element.weight
    return weights


def attach_eyes(bpy, eyes, rig) -> None:
    """The eyes follow the head bone rigidly: object parented to the bone, not skinned."""
    world = eyes.matrix_world.copy()
    eyes.parent = rig
    eyes.parent_type = "BONE"
    eyes.parent_bone = "head"
    bpy.context.view_layer.update()
    eyes.matrix_world = world
    bpy.context.view_layer.update()


def write_action(bpy, rig, name: str, motion: Motion, rig_data: Rig):
    """An action keyed on frames 1..F: every bone's rotation_quaternion, the root's location; linear keys."""
    action = bpy.data.actions.new(name)
    action.use_fake_user = True
    rig.animation_data_create()
    rig.animation_data.action = action
    frames = np.arange(1, len(motion.root) + 1, dtype=np.float64)
    root = rig_data.index("pelvis")
    location = (motion.root - rig_data.rest[root, :3, 3]) @ rig_data.rest[root, :3, :3]   # into the bone's rest frame
    channels = [(b, "rotation_quaternion", i, motion.quaternions[:, b, i])
                for b in range(len(rig_data.names)) for i in range(4)]
    channels += [(root, "location", i, location[:, i]) for i in range(3)]
    for b, prop, index, values in channels:
        bone = rig_data.names[b]
        rig.pose.bones[bone].rotation_mode = "QUATERNION"
        curve = action.fcurve_ensure_for_datablock(rig, f'pose.bones["{bone}"].{prop}', index=index,
                                                   group_name=bone)
        curve.keyframe_points.add(len(frames))
        curve.keyframe_points.foreach_set("co", np.stack([frames, values], -1).ravel())
        curve.keyframe_points.foreach_set("interpolation", np.full(len(frames), 1))   # LINEAR
        curve.update()
    return action


def export(bpy, objects, path: Path) -> None:
    """Write the objects and every action as .glb (through a temporary file beside ``path``)."""
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = FPS, 1.0
    bpy.ops.object.select_all(action="DESELECT")
    for obj in objects:
        obj.select_set(True)
    fd, tmp_name = tempfile.mkstemp(prefix=path.stem + ".", suffix=".glb", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        bpy.ops.export_scene.gltf(
            filepath=str(tmp), export_format="GLB", use_selection=True, export_texcoords=False,
            export_normals=True, export_animations=True, export_animation_mode="ACTIONS",
            export_force_sampling=True, export_frame_range=False, export_anim_slide_to_zero=False,
            export_skins=True, export_influence_nb=MAX_INFLUENCES, export_def_bones=False, export_extras=False)
        tmp.chmod(0o644)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


# --- the run ------------------------------------------------------------------------------------------------------

def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def inputs() -> list:
    return [BODY_INPUT] + [CAPTURE_DIR / clip.capture for clip in CLIPS]


def stamp() -> dict:
    """What the stamp records: the inputs' and this script's SHA-256 and the bpy version."""
    return {"inputs": {p.relative_to(ROOT).as_posix(): sha256(p) for p in inputs()},
            "script": sha256(Path(__file__).resolve()), "bpy": importlib.metadata.version("bpy")}


def up_to_date() -> bool:
    try:
        return OUTPUT.stat().st_size > 0 and json.loads(STAMP.read_text()) == stamp()
    except (OSError, ValueError):
        return False


def check_rest(rig_data: Rig) -> None:
    rotations = rig_data.rest[:, :3, :3]
    skew = np.abs(np.swapaxes(rotations, -1, -2) @ rotations - np.eye(3)).max(axis=(1, 2))
    if skew.max() > 1e-6:
        raise RuntimeError(f"rest matrix of {rig_data.names[int(skew.argmax())]} is {skew.max():.1e} off orthonormal")


def animate(bpy, rig, rig_data: Rig, vertices: np.ndarray, weights: np.ndarray) -> dict:
    """One action per clip on the rig (none left active); per action: frames, pelvis heights, foot heights."""
    actions = {}
    for clip in CLIPS:
        capture = read_bvh(CAPTURE_DIR / clip.capture)
        motion = resample(retarget(rig_data, capture, clip), capture.fps)
        motion = stand_on_floor(motion, rig_data, vertices, weights)
        write_action(bpy, rig, clip.action, motion, rig_data)
        lowest = lowest_foot_points(motion, rig_data, vertices, weights)
        actions[clip.action] = dict(
            frames=len(motion.root), seconds=round(len(motion.root) / FPS, 1),
            pelvis_z=[round(float(f(motion.root[:, 2])), 3) for f in (np.min, np.max)],
            lowest_foot_z=[round(float(f(lowest)), 3) for f in (np.min, np.median, np.max)])
    rig.animation_data.action = None
    return actions


def make() -> dict:
    """Build OUTPUT; return the summary's numbers."""
    import bpy

    times = {}
    start = time.perf_counter()
    body, eyes = import_body(bpy, BODY_INPUT)
    vertices, tris = mesh_arrays(body)
    points = landmarks(vertices, tris)
    times["landmarks"] = time.perf_counter() - start

    rig = build_armature(bpy, points)
    mark = time.perf_counter()
    weights = bind(bpy, body, rig)
    times["weights"] = time.perf_counter() - mark
    unweighted = int(np.count_nonzero(weights.sum(axis=1) <= 0))
    if unweighted:
        raise RuntimeError(f"{unweighted} of {len(weights)} vertices got no weight from bone heat")
    turn_pelvis_back(bpy, rig)
    attach_eyes(bpy, eyes, rig)
    smooth_vertex_normals(bpy, body)
    plain_material(bpy, body, "Skin", SKIN_COLOUR, 0.6)
    plain_material(bpy, eyes, "Eye", EYE_COLOUR, 0.3)

    mark = time.perf_counter()
    rig_data = rig_arrays(rig, points)
    check_rest(rig_data)
    actions = animate(bpy, rig, rig_data, vertices, weights)
    times["retarget"] = time.perf_counter() - mark

    mark = time.perf_counter()
    export(bpy, (rig, body, eyes), OUTPUT)
    times["export"] = time.perf_counter() - mark
    owners = np.bincount(np.argmax(weights, axis=1), minlength=len(rig_data.names))
    return dict(vertices=len(vertices), triangles=len(tris), eyes_vertices=len(eyes.data.vertices),
                height=round(float(np.ptp(vertices[:, 2])), 3), bones=len(rig_data.names),
                unweighted=unweighted, influences_max=int(np.count_nonzero(weights, axis=1).max()),
                vertices_per_bone=dict(zip(rig_data.names, owners.tolist())), actions=actions,
                seconds={k: round(v, 2) for k, v in times.items()})


def report(summary: dict) -> None:
    print(f"{OUTPUT.relative_to(ROOT)}: body {summary['vertices']} vertices, {summary['triangles']} triangles, "
          f"{summary['height']} m; eyes {summary['eyes_vertices']} vertices on the head bone; {summary['bones']} "
          f"bones; unweighted vertices {summary['unweighted']} (at most {summary['influences_max']} weights each)")
    print("  vertices per bone (strongest weight): "
          + ", ".join(f"{k} {v}" for k, v in summary["vertices_per_bone"].items()))
    for name, a in summary["actions"].items():
        print(f"  action {name}: {a['frames']} frames at {FPS} fps ({a['seconds']} s); pelvis z {a['pelvis_z']} m; "
              f"lowest foot point per frame min/median/max {a['lowest_foot_z']} m")
    print("  seconds: " + ", ".join(f"{k} {v}" for k, v in summary["seconds"].items()))


def main(argv: list) -> int:
    unknown = [arg for arg in argv if arg != "--force"]
    if unknown:
        print(f"rig_human.py: unknown argument {unknown[0]!r}; usage: rig_human.py [--force]", file=sys.stderr)
        return 2
    try:
        version = importlib.metadata.version("bpy")
    except importlib.metadata.PackageNotFoundError:
        version = "none"
    if not version.split(".")[0].isdigit() or int(version.split(".")[0]) < 5:
        print(f"rig_human.py: needs Blender 5.0's bpy module (this Python has {version}): run it with "
              f"`.venv/b50/bin/python` (`make character` does)", file=sys.stderr)
        return 2
    missing = [p for p in inputs() if not p.is_file()]
    if missing:
        print(f"rig_human.py: {missing[0].relative_to(ROOT)} is missing: run `python3 tools/fetch_character.py` "
              f"first", file=sys.stderr)
        return 2
    if "--force" not in argv and up_to_date():
        print(OUTPUT)
        return 0
    # Blender reads its user folder when bpy is first imported: a temporary one, so no preferences are touched
    with tempfile.TemporaryDirectory(prefix="rig-human-blender-user-") as user:
        os.environ.setdefault("BLENDER_USER_RESOURCES", user)
        start = time.perf_counter()
        try:
            summary = make()
        except RuntimeError as error:
            print(f"rig_human.py: {error}", file=sys.stderr)
            return 1
        summary["seconds"]["total"] = round(time.perf_counter() - start, 2)
    STAMP.write_text(json.dumps(stamp(), indent=1) + "\n")
    report(summary)
    print(OUTPUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
