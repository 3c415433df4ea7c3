"""The demo's animated shots, made in Blender with the add-on's own operators, as an artist would make them.

Four shots, each holding three copies of one character side by side, on the same animation (the sheets add a
column, ``distance_column.py``: the muscles copy coloured by its distance from the DQS copy):

* ``dqs``: the Armature modifier with *Preserve Volume* (dual-quaternion skinning), nothing of ours;
* ``implicit``: Implicit Skinning bound with no muscle (``Bind Skin`` on an armature without muscles);
* ``muscles``: Implicit Skinning with muscles added by ``implicit_muscles.add_muscle`` with presets;
* ``rod`` (the arm shots only): the muscles copy with its biceps' *Solver* set to *Rod (VIPER)*, the two muscle
  solvers side by side.

Shots:

* **arm_curl**: the paper's arm (``scenes/paper.py``: 2172 vertices, 3 bones, its four muscles added with their
  presets and set to the paper's shapes), the elbow keyed 0 -> 130 -> 0 degrees over 48 frames; no activation is
  keyed: the biceps follows the elbow (*Follow Joint*, full activation at 130 degrees), the brachialis reaches 0.8
  and the brachioradialis 0.3 there (their full activation lies beyond), as the core's ``biceps_curl``.
* **arm_shake**: the arm held at 70 degrees, the shoulder shaken up and down 4 cm at 4 Hz for one second, then
  held for one second; twice: first with the muscles loose (stiffness keyed 0.1), then tense (0.9).
* **human**: the dense human (Assimp's MakeHuman body, rigged, weighted and animated by ``tools/rig_human.py``:
  13,380 vertices, 21 bones) playing 240 frames of the retargeted CMU jump (30 fps). Muscles are added by the
  operator with presets on the left side: biceps, triceps, deltoid, forearm flexors and extensors, gluteus,
  quadriceps, hamstrings, gastrocnemius; handles moved, made tense and mirrored as for BCN_Epileptic below
  (18 muscles); activation keyed from the joint angles the same way. Fats are added by the operator with their
  presets (belly on the spine, buttocks on the pelvis); the curves plot the skin over each against the Implicit
  Skinning copy. The README's first picture.
* **character**: BCN_Epileptic (Assimp's test model, ``tools/fetch_character.py``; 3014 vertices, three meshes,
  54 bones) playing its own 80-frame animation. Muscles are added by the operator with presets on the left side:
  biceps, triceps, forearm flexors, quadriceps, hamstrings, gastrocnemius; their handles are moved to the front or
  the back of the limb (what an artist does with *Edit Handles*), they are made tense (stiffness 0.8), then
  *Mirror Muscle* adds the right side. Their activation is keyed every 4 frames from the joint angles of the
  animation (a flexor follows its joint's flexion). All three meshes are bound; the head has no muscle and binds
  as Implicit Skinning alone.

For each shot the child binds, saves ``<shot>.blend`` into the output folder, plays every frame once (recording
per frame the muscles copy's stage times, each muscle's volume, and the skin's distance from the DQS copy over a
probe muscle), bakes with ``implicit_muscles.bake`` (the point caches go to ``implicit_muscles_cache/`` beside the
file, so the saved file plays and renders without the add-on), saves again and renders the contact-sheet frames
and the crease close-ups with Cycles from the baked caches. The JSON result has everything the parent
(``run_demo.py``, ``plots.py``) needs for the plots, the sheets and the table.

Run by ``run_demo.py`` as a child process (``addon_session.py``): ``python demo/shots.py --child SHOTS OUT
[--quick] --result FILE``; ``SHOTS`` is a comma-separated list of the names above.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DEMO = Path(__file__).resolve().parent
REPO = DEMO.parent
sys.path.insert(0, str(DEMO))

import addon_session  # noqa: E402
import distance_column  # noqa: E402

REPO_MODULE = "im_demo"
"""Module name of the demo's extension repository: the add-on is ``bl_ext.im_demo.implicit_muscles``."""
KINDS = ("dqs", "implicit", "muscles")
ARM_GAP = {"Curl": 0.8, "Shake": 0.6}
"""[m] Between the arm copies: the straight arm is about 0.65 m long, bent to 70 degrees (the shake) 0.45 m."""
ARM_DISTANCE_MM = 5.0
"""[mm] The arm sheets' colour scale: the muscles' few millimetres (the rod's bulge and jiggle) show; the elbow's
crease, 20 mm and more, reads as its end."""
ARM_KINDS = KINDS + ("rod",)
"""The arm shots' copies: the three above and the muscles copy with its biceps as a VIPER rod (*Solver: Rod*, the
other three muscles on the paper's axis), so both solvers play the same animation side by side."""
LABELS = {"dqs": "dual quaternions", "implicit": "Implicit Skinning", "muscles": "Implicit Skinning + muscles",
          "rod": "+ muscles, the biceps\nas a rod (VIPER)", "distance": "+ muscles: distance from\ndual quaternions",
          "distance rod": "the biceps a rod: distance\nfrom dual quaternions"}
SKIN_COLOUR = (0.62, 0.40, 0.30)
"""Base colour of every skin in the renders (linear RGB)."""

CURL_KEYS = ((1, 0.0, 0.0), (25, 130.0, 1.0), (49, 0.0, 0.0))
"""The curl: (frame, elbow flexion [deg], biceps activation), Blender's smooth (Bezier) keys between; the
activation follows the flexion through each muscle's joint range, not keys."""
CURL_SHARES = {"biceps": 1.0, "brachialis": 0.8, "brachioradialis": 0.3, "triceps": 0.0}
"""Each arm muscle's activation at full flexion as a share of the biceps' (``scenes.paper.biceps_curl``)."""
SHAKE = dict(elbow_degrees=70.0, amplitude=0.04, hertz=4.0, shake_frames=24, hold_frames=24,
             stiffness=(0.1, 0.9))
"""The shake: elbow angle, shoulder motion [m] and frequency, frames shaken then held, then again tense."""

FULL_FLEXION = math.radians(90.0)
"""Flexion beyond the rest angle at which a flexor's keyed activation reaches its share."""
CHARACTER_STIFFNESS = 0.8
"""The character's muscles are tense (the artist's manual's 0.6-0.9), as a seizure's are. With the presets' 0.5, its hands
whipping at up to 3 m/s folded the loose forearm flexors where they cross the wrist for a few frames: 93.5 % of
their rest volume at worst; at 0.8 every muscle stays within 2 %."""
CHARACTER_FULL_FLEXION = math.radians(40.0)
"""BCN_Epileptic's elbows flex at most 43 degrees in its animation, its knees 79: its flexors reach their share of
activation at 40 degrees, the peak of its convulsions (at 90, the biceps reached half its activation, and the skin
over it moved at most 0.4 mm from Implicit Skinning alone)."""
HANDLE_DEPTH = 0.8
"""The character's muscle handles sit this fraction of the limb radius out from the bone, on the limb's side: clear
of the bone's collision capsule (a quarter of the limb radius) by about the muscle's own half-width (a third of the
limb radius times the profile's peak). At 0.55 (near the operator's default of 0.5) the muscles started inside the
capsules and, in the animation's fastest moves, the triceps folded around the elbow and lost 21 % of its volume."""


@dataclass(frozen=True)
class CharacterSpec:
    """A fetched character as a shot plays it: its file, the capture, the muscles the artist adds on the left side
    and how its bones are named."""

    name: str  # the copies' armature name stem, e.g. "BCN_Epileptic"
    title: str
    path: Path
    action: str | None  # the capture to play (``tests/characters.play_action``); None: the file's own
    frames: int | None  # frames played from the start (``--quick``: 48); None: the action's range
    fps: float | None  # the scene's rate, set before the import (the importer keys at the scene's rate)
    muscles: tuple  # (preset, origin, insertion, side, joint, share, origin_t, insertion_t[, depth]), see below
    joints: dict  # joint -> (upper bone, lower bone) stems whose angle is its flexion
    bone: str  # the name of a bone on a side: format with ``stem`` and ``side`` ("Left"/"Right") or ``s`` (L/R)
    probe_mesh: str  # the muscles copy's mesh that shows the biceps
    gap: float  # [m] between the copies
    stiffness: float = CHARACTER_STIFFNESS  # every muscle's
    depth: float = HANDLE_DEPTH  # where the handles sit out from the bone, in limb radii
    particles: int | None = None  # every muscle's particle count (None: the operator's)
    fats: tuple = ()  # (bone, preset) of the fats the artist adds with the operator's presets
    full_flexion: float = FULL_FLEXION  # [rad] flexion beyond rest at which a flexor reaches its share

    def side_bone(self, stem: str, side: str) -> str:
        """The bone ``stem`` on ``side`` ("Left" or "Right")."""
        return self.bone.format(stem=stem, side=side, s=side[0])


BCN_EPILEPTIC = CharacterSpec(
    name="BCN_Epileptic", title="BCN_Epileptic (Assimp's test model) playing its own animation",
    path=REPO / ".cache" / "character" / "bcn_epileptic.glb", action=None, frames=None, fps=None,
    muscles=(
        # (preset, origin bone, insertion bone, side of the limb in armature space (the character faces -Y),
        #  joint whose flexion keys the activation, share of it (extensors get a steady tone), where the handles
        #  go along the origin and the insertion bone: the operator's 0.25 and 0.15, but the triceps inserts on
        #  the elbow's tip (0.03), or it would wrap around the flexed elbow)
        ("biceps", "B_UpperArm_Left", "B_ForeArm_Left", (0.0, -1.0, 0.0), "elbow", 1.0, 0.25, 0.15),
        ("triceps", "B_UpperArm_Left", "B_ForeArm_Left", (0.0, 1.0, 0.0), None, 0.3, 0.25, 0.03),
        ("forearm_flexors", "B_ForeArm_Left", "B_Hand_Left", (0.0, -1.0, 0.0), "elbow", 0.6, 0.25, 0.15),
        ("quadriceps", "B_Hip_Left", "B_Knee_Left", (0.0, -1.0, 0.0), None, 0.3, 0.25, 0.15),
        ("hamstrings", "B_Hip_Left", "B_Knee_Left", (0.0, 1.0, 0.0), "knee", 1.0, 0.25, 0.15),
        ("gastrocnemius", "B_Knee_Left", "B_Ankle_Left", (0.0, 1.0, 0.0), "knee", 0.7, 0.25, 0.15),
    ),
    joints={"elbow": ("B_UpperArm", "B_ForeArm"), "knee": ("B_Hip", "B_Knee")},
    bone="{stem}_{side}", probe_mesh="Torso.muscles", gap=1.35, full_flexion=CHARACTER_FULL_FLEXION)

HUMAN = CharacterSpec(
    name="Human", title="A dense MakeHuman body (13,380 vertices) jumping: a CMU capture retargeted by code",
    path=REPO / ".cache" / "character" / "human_rigged.glb", action="jump", frames=240, fps=30.0,
    muscles=(
        # as BCN_Epileptic's; its left is +X. The deltoid runs from the clavicle's outer end over the shoulder,
        # the gluteus from the pelvis's back to the thigh; the last number, where given, is the handles' depth
        # instead of the spec's: the pelvis's limb radius spans the hips, so further out the gluteus stood out of
        # the buttocks. Depth, stiffness and particles below:
        # docs/design-notes.md#the-dense-human-as-the-demos-main-shot.
        ("biceps", "upper_arm.L", "forearm.L", (0.0, -1.0, 0.0), "elbow", 1.0, 0.25, 0.15),
        ("triceps", "upper_arm.L", "forearm.L", (0.0, 1.0, 0.0), None, 0.3, 0.25, 0.03),
        ("deltoid", "clavicle.L", "upper_arm.L", (1.0, 0.0, 0.0), None, 0.3, 0.6, 0.35),
        ("forearm_flexors", "forearm.L", "hand.L", (0.0, -1.0, 0.0), "elbow", 0.6, 0.25, 0.15),
        ("forearm_extensors", "forearm.L", "hand.L", (0.0, 1.0, 0.0), None, 0.3, 0.25, 0.15),
        ("gluteus", "pelvis", "thigh.L", (0.0, 1.0, 0.0), "knee", 0.5, 0.5, 0.2, 0.45),
        ("quadriceps", "thigh.L", "shin.L", (0.0, -1.0, 0.0), None, 0.3, 0.25, 0.15),
        ("hamstrings", "thigh.L", "shin.L", (0.0, 1.0, 0.0), "knee", 1.0, 0.25, 0.15),
        ("gastrocnemius", "shin.L", "foot.L", (0.0, 1.0, 0.0), "knee", 0.7, 0.25, 0.15),
    ),
    joints={"elbow": ("upper_arm", "forearm"), "knee": ("thigh", "shin")},
    bone="{stem}.{s}", probe_mesh="Body.muscles", gap=1.1, stiffness=0.9, depth=0.7, particles=10,
    fats=(("spine", "belly"), ("pelvis", "buttocks")))


@dataclass
class Shot:
    name: str
    title: str
    frames: range
    sheet_frames: list
    variants: dict  # kind -> (armature object, [mesh objects])
    probe: str  # the muscle over which the skin is compared with DQS
    probe_mesh: str  # the muscles copy's mesh (kind "muscles") that shows the probe muscle
    crease: tuple | None = None  # (frame, bone whose head is the joint, half size of the close-up [m])
    notes: dict = field(default_factory=dict)
    distance_scale_mm: float | None = None  # the distance columns' colour scale; None: from the sheet frames


# --- scenes ----------------------------------------------------------------------------------------------------

def _place_side_by_side(bpy, shot_name, variants, gap):
    """Parent each copy's armature to an empty ``<shot> <kind>`` set ``gap`` [m] apart along X (the armatures stay
    where they are relative to their parent, so the animation and the simulation are the same)."""
    for k, (kind, (armature, _)) in enumerate(variants.items()):
        holder = bpy.data.objects.new(f"{shot_name} {kind}", None)
        bpy.context.scene.collection.objects.link(holder)
        holder.location.x = k * gap
        armature.parent = holder


MUSCLED = ("muscles", "rod")
"""The kinds of copy that have muscles."""


def _arm_variants(bpy, scenes, blender_rig, name):
    variants = {}
    for kind in ARM_KINDS:  # each shot names its meshes: their baked caches share the output folder
        armature, skin = blender_rig.build_rig(scenes.arm_rig(), f"{name} Rig.{kind}", f"{name} Arm.{kind}")
        if kind in MUSCLED:
            items = blender_rig.add_arm_muscles(armature, scenes)
            if kind == "rod":
                next(item for item in items if item.name == "biceps").solver = 'ROD'
        variants[kind] = (armature, [skin])
    _place_side_by_side(bpy, name, variants, gap=ARM_GAP[name])
    return variants


def _key_elbow(blender_rig, armature, frame, degrees):
    elbow = armature.pose.bones["elbow"]
    elbow.rotation_mode = 'QUATERNION'
    elbow.rotation_quaternion = blender_rig.bone_rotation(armature, "elbow", (0.0, -1.0, 0.0), math.radians(degrees))
    elbow.keyframe_insert("rotation_quaternion", frame=frame)


def build_arm_curl(bpy, scenes, blender_rig, quick):
    variants = _arm_variants(bpy, scenes, blender_rig, "Curl")
    for armature, _ in variants.values():
        for frame, degrees, _ in CURL_KEYS:
            _key_elbow(blender_rig, armature, frame, degrees)
    follow_joint = addon_session.addon_module(REPO_MODULE, "blender.authoring.joint_follow").follow_joint
    flexion = math.radians(max(degrees for _, degrees, _ in CURL_KEYS))
    for armature in (variants[kind][0] for kind in MUSCLED):
        for item in armature.implicit_muscles.muscles:  # no activation keys: each flexor follows the elbow
            share = CURL_SHARES[item.name]
            if share <= 0.0:
                continue
            problem = follow_joint(armature, item)
            if problem:
                raise RuntimeError(problem)
            item.joint_angle_active = math.copysign(flexion / share, item.joint_angle_active)
    last = CURL_KEYS[-1][0]
    sheet = [1, 9, 17, 25, 33, 41] if not quick else [1, 25]
    return Shot("arm_curl", "The paper's biceps curl (0 -> 130 -> 0 degrees, biceps activated with it)",
                range(1, last + 1), sheet, variants, "biceps", "Curl Arm.muscles", crease=(25, "elbow", 0.1),
                distance_scale_mm=ARM_DISTANCE_MM)


def build_arm_shake(bpy, scenes, blender_rig, quick):
    from mathutils import Vector

    fcurves = addon_session.addon_module(REPO_MODULE, "blender.scene.animation").fcurves
    variants = _arm_variants(bpy, scenes, blender_rig, "Shake")
    s = SHAKE
    period = s["shake_frames"] + s["hold_frames"]
    last = 2 * period
    for armature, _ in variants.values():
        _key_elbow(blender_rig, armature, 1, s["elbow_degrees"])
        shoulder = armature.pose.bones["shoulder"]
        up = armature.data.bones["shoulder"].matrix_local.to_3x3().inverted()
        for frame in range(1, last + 1):
            within = (frame - 1) % period
            shaking = within < s["shake_frames"]
            z = s["amplitude"] * math.sin(2.0 * math.pi * s["hertz"] * within / 24.0) if shaking else 0.0
            shoulder.location = up @ Vector((0.0, 0.0, z))
            shoulder.keyframe_insert("location", frame=frame)
        for fc in fcurves(armature):
            for point in fc.keyframe_points:
                point.interpolation = 'LINEAR'
    for armature in (variants[kind][0] for kind in MUSCLED):
        for k, item in enumerate(armature.implicit_muscles.muscles):
            for frame, stiffness in ((1, s["stiffness"][0]), (period + 1, s["stiffness"][1])):
                item.stiffness = stiffness
                armature.keyframe_insert(f"implicit_muscles.muscles[{k}].stiffness", frame=frame)
        for fc in fcurves(armature):
            if fc.data_path.endswith("stiffness"):
                for point in fc.keyframe_points:
                    point.interpolation = 'CONSTANT'
    # shaking; the stop (frame 25) and the loose rod's swings after it (about 2 Hz: out at 27 and 31, back at 34,
    # out at 38); tense, shaking and stopped
    sheet = [4, 25, 27, 31, 34, 38, 52, 73] if not quick else [4, 27]
    return Shot("arm_shake", "The paper's arm shake: loose muscles (stiffness 0.1), then tense (0.9)",
                range(1, last + 1), sheet, variants, "biceps", "Shake Arm.muscles",
                notes={"loose_frames": [1, period], "tense_frames": [period + 1, last]},
                distance_scale_mm=ARM_DISTANCE_MM)


def _import_character(bpy, spec, kind):
    """Import ``spec``'s file as copy ``kind``: its armature and the meshes it deforms (named ``<mesh>.<kind>``)."""
    before = set(bpy.data.objects)
    if spec.fps is not None:
        bpy.context.scene.render.fps = int(spec.fps)  # before the import: it keys at the scene's rate
    bpy.ops.import_scene.gltf(filepath=str(spec.path), bone_heuristic="TEMPERANCE")
    new = [o for o in bpy.data.objects if o not in before]
    armature = next(o for o in new if o.type == 'ARMATURE')
    meshes = sorted((o for o in new if o.type == 'MESH' and any(m.type == 'ARMATURE' for m in o.modifiers)),
                    key=lambda o: o.name)
    if spec.action is not None:
        sys.path.insert(0, str(REPO / "tests"))
        from characters import play_action
        play_action(armature, spec.action)
    armature.name = f"{spec.name}.{kind}"
    for mesh in meshes:
        mesh.name = f"{mesh.name.split('.')[0]}.{kind}"
    for obj in new:  # the importer's bone display shape and empties are not needed in renders; meshes carried by
        # a bone (the human's eyes) are part of the body
        carried = obj.type == 'MESH' and obj.parent is armature and obj.parent_type == 'BONE'
        if obj.type != 'ARMATURE' and obj not in meshes and not carried:
            obj.hide_render = True
    return armature, meshes


def _flexion(spec, armature, joint, side):
    upper, lower = (armature.pose.bones[spec.side_bone(b, side)] for b in spec.joints[joint])
    rest = [armature.data.bones[spec.side_bone(b, side)] for b in spec.joints[joint]]
    posed = upper.matrix.col[1].xyz.angle(lower.matrix.col[1].xyz)
    at_rest = (rest[0].matrix_local.col[1].xyz).angle(rest[1].matrix_local.col[1].xyz)
    return max(0.0, posed - at_rest)


def _character_muscles(bpy, spec, armature, rig_module):
    """Add the left muscles with the operator and presets, move their handles to the limb's side, mirror them."""
    from mathutils import Vector

    bpy.context.view_layer.objects.active = armature
    items = armature.implicit_muscles.muscles
    for preset, origin, insertion, side, _, _, origin_t, insertion_t, *depth in spec.muscles:
        result = bpy.ops.implicit_muscles.add_muscle(origin_bone=origin, insertion_bone=insertion, preset=preset,
                                                     name=f"{preset}_Left")
        if result != {'FINISHED'}:
            raise RuntimeError(f"add_muscle {preset}: {result}")
        item = items[-1]
        radius = rig_module.limb_radius(armature, origin)
        for bone_name, attr, t in ((origin, "origin_point", origin_t), (insertion, "insertion_point", insertion_t)):
            bone = armature.data.bones[bone_name]
            axis = (bone.tail_local - bone.head_local).normalized()
            out = Vector(side) - axis * Vector(side).dot(axis)
            point = bone.head_local.lerp(bone.tail_local, t) + out.normalized() * ((depth or [spec.depth])[0]
                                                                                   * radius)
            setattr(item, attr, bone.matrix_local.inverted() @ point)
        item.stiffness = spec.stiffness
        if spec.particles is not None:
            item.particles = spec.particles
        if bpy.ops.implicit_muscles.mirror_muscle() != {'FINISHED'}:
            raise RuntimeError(f"mirror_muscle {preset}")
    return items


def _character_fats(bpy, spec, armature):
    """Add the spec's fats with the operator and its presets."""
    bpy.context.view_layer.objects.active = armature
    for bone, preset in spec.fats:
        if bpy.ops.implicit_muscles.add_fat(bone=bone, preset=preset) != {'FINISHED'}:
            raise RuntimeError(f"add_fat {preset} on {bone}")
    return [fat.name for fat in armature.implicit_muscles.fats]


def _build_character(bpy, spec, shot_name, quick):
    if not spec.path.is_file():
        raise RuntimeError(f"{spec.path.relative_to(REPO)} is missing: run `make character` first; it needs the "
                           f"package registry once.")
    rig_module = addon_session.addon_module(REPO_MODULE, "blender.scene.rig")
    variants = {kind: _import_character(bpy, spec, kind) for kind in KINDS}
    _place_side_by_side(bpy, spec.name, variants, gap=spec.gap)
    for armature, meshes in variants.values():
        for mesh in meshes:
            mesh.modifiers["Armature"].use_deform_preserve_volume = True
    armature = variants["muscles"][0]
    items = _character_muscles(bpy, spec, armature, rig_module)
    fats = _character_fats(bpy, spec, armature)
    scene = bpy.context.scene
    action = armature.animation_data.action
    first, last = (int(round(f)) for f in action.frame_range)
    if spec.frames is not None:
        last = min(last, first + spec.frames - 1)
    if quick:
        last = min(last, first + 47)
    scene.frame_start, scene.frame_end = first, last
    for frame in range(first, last + 1, 4 if not quick else 8):
        scene.frame_set(frame)
        for k, item in enumerate(items):
            preset, side = item.name.rsplit("_", 1)  # e.g. "forearm_flexors", "Right"
            joint, share = next(m[4:6] for m in spec.muscles if m[0] == preset)
            if joint is None:
                item.activation = share
            else:
                item.activation = share * min(1.0, _flexion(spec, armature, joint, side) / spec.full_flexion)
            armature.keyframe_insert(f"implicit_muscles.muscles[{k}].activation", frame=frame)
    frames = range(first, last + 1)
    count = 6 if not quick else 2
    sheet = [int(f) for f in np.linspace(first + 4, last - 4, count).round()]
    return Shot(shot_name, spec.title, frames, sheet, variants, "biceps_Left", spec.probe_mesh, crease=None,
                notes={"muscles": [m.name for m in items], "fats": fats})


def build_human(bpy, scenes, blender_rig, quick):
    return _build_character(bpy, HUMAN, "human", quick)


def build_character(bpy, scenes, blender_rig, quick):
    return _build_character(bpy, BCN_EPILEPTIC, "character", quick)


BUILDERS = {"human": build_human, "arm_curl": build_arm_curl, "arm_shake": build_arm_shake,
            "character": build_character}


# --- playing, baking, rendering ---------------------------------------------------------------------------------

def _evaluated(obj, depsgraph):
    """Evaluated vertex positions of ``obj`` ``(V, 3)`` [m, world space]."""
    data = obj.evaluated_get(depsgraph).data
    co = np.empty(len(data.vertices) * 3, dtype=np.float32)
    data.vertices.foreach_get("co", co)
    m = np.array(obj.matrix_world, dtype=np.float64)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def _to_armature(world, armature):
    """World positions ``(V, 3)`` in ``armature``'s space (the copies differ only by where their armatures stand,
    so they compare there)."""
    m = np.array(armature.matrix_world.inverted(), dtype=np.float64)
    return world @ m[:3, :3].T + m[:3, 3]


def _probe_vertices(bound, probe, rest):
    """Vertices of the rest mesh over the middle of muscle ``probe``: within three widths of its rest axis, between
    20 % and 80 % along it, on the muscle's side of its bone's axis: their indices."""
    names = [m.name for m in bound.character.model.muscles]
    m = names.index(probe)
    muscle = bound.character.model.muscles[m]
    axis = muscle.axis
    a, b = axis[0], axis[-1]
    e = b - a
    t = np.clip((rest - a) @ e / (e @ e), 0.0, 1.0)
    d = np.linalg.norm(rest - (a + t[:, None] * e), axis=1)
    bone = bound.character.model.origin_bones[m]
    head, tail = bound.character.model.rig.heads[bone], bound.character.model.rig.tails[bone]
    mid = 0.5 * (a + b)
    u = tail - head
    foot = head + np.clip((mid - head) @ u / (u @ u), 0.0, 1.0) * u
    outward = (mid - foot) / max(np.linalg.norm(mid - foot), 1e-9)
    side = (rest - mid) @ outward > -0.5 * muscle.width
    keep = (d < 3.0 * muscle.width) & (t > 0.2) & (t < 0.8) & side
    return np.flatnonzero(keep)


FAT_PROBE_SCALE = 1.5
"""The skin over a fat: the rest vertices inside its ellipsoid grown by this factor."""


def _fat_vertices(bound, rest) -> dict:
    """Fat name -> indices of the rest vertices over it (inside its ellipsoid grown by ``FAT_PROBE_SCALE``)."""
    out = {}
    for fat in bound.character.model.fats:
        local = (rest - fat.center) @ fat.frame / (FAT_PROBE_SCALE * fat.axes)
        out[fat.name] = np.flatnonzero((local * local).sum(axis=1) <= 1.0)
    return out


def _quality_meshes(kinds, runtime) -> dict:
    """For each Implicit Skinning copy, per bound mesh: its name, the DQS copy's mesh's name, the
    ``core.skin.quality.QualityMesh`` of the welded mesh the deformer works on, the bound record, for a mesh split
    at seams one original vertex per welded vertex (None when the mesh is welded already), and the skin field
    placed at rest."""
    QualityMesh = addon_session.addon_module(REPO_MODULE, "core.skin.quality").QualityMesh
    out = {}
    for kind in ("implicit", "muscles"):
        for mesh in kinds[kind][1]:
            b = runtime.bound(mesh)
            d = b.character.deformer
            dqs = next(o for o in kinds["dqs"][1] if o.name.split(".")[0] == mesh.name.split(".")[0])
            names = [d.bone_names[p] if d.bone_names is not None else str(p) for p in d.skin.part_bone]
            weld = b.character.model.weld
            first = None
            if not weld.identity:
                first = np.empty(len(weld.vertices), dtype=np.int64)
                first[weld.inverse[::-1]] = np.arange(len(weld.inverse))[::-1]
            out.setdefault(kind, []).append((mesh.name, dqs.name, QualityMesh.build(d.rest, d.faces, d.own_part, names),
                                             b, first, d.skin.place()))
    return out


def _record_quality(rec, meshes, world, kinds, kind):
    """One frame's skin quality of copy ``kind`` against the DQS copy, over all its bound meshes (shares of their
    faces together; the largest dihedral increase)."""
    quality = addon_session.addon_module(REPO_MODULE, "core.skin.quality")
    turned = outside = crease = total = all_turned = 0
    dihedral = 0.0
    for mesh_name, dqs_name, qmesh, b, first, rest in meshes:
        d = b.character.deformer
        shown = _to_armature(world[mesh_name], kinds[kind][0])
        dqs = _to_armature(world[dqs_name], kinds["dqs"][0])
        if first is not None:
            shown, dqs = shown[first], dqs[first]
        creased = quality.crease_vertices(d.skin, rest, d.placement, d.rest, dqs, d.own_part)
        q = quality.measure(qmesh, shown, dqs, creased)
        F = len(qmesh.faces)
        turned += int(q.turned_faces.sum())
        outside += int(F - q.crease_faces.sum())
        crease += int(q.crease_faces.sum())
        all_turned += int(round(q.turned * F))
        total += F
        dihedral = max(dihedral, q.dihedral_increase)
    rec.setdefault("turned_outside_creases", []).append(turned / max(outside, 1))
    rec.setdefault("turned", []).append(all_turned / max(total, 1))
    rec.setdefault("crease_share", []).append(crease / max(total, 1))
    rec.setdefault("dihedral_increase", []).append(dihedral)


def play(bpy, shot, runtime, frame_inputs):
    """Every frame once, in order: per frame the wall time, the muscles copy's stage times (summed over its
    meshes), its muscles' volumes [m^3], the skin's distance from DQS over the probe muscle, finiteness."""
    scene = bpy.context.scene
    kinds = shot.variants
    muscle_meshes = kinds["muscles"][1]
    probe_obj = bpy.data.objects[shot.probe_mesh]
    probe_bound = runtime.bound(probe_obj)
    rest = probe_bound.character.model.rig.vertices
    probe_index = _probe_vertices(probe_bound, shot.probe, rest)
    fat_index = _fat_vertices(probe_bound, rest)
    dqs_obj = next(o for o in kinds["dqs"][1] if o.name.split(".")[0] == probe_obj.name.split(".")[0])
    implicit_obj = next(o for o in kinds["implicit"][1] if o.name.split(".")[0] == probe_obj.name.split(".")[0])
    rod_obj = next((o for o in kinds["rod"][1] if o.name.split(".")[0] == probe_obj.name.split(".")[0]), None) \
        if "rod" in kinds else None
    rec = {"frames": [], "wall_ms": [], "stages_ms": {}, "implicit_total_ms": [], "volumes": {}, "finite": True,
           "probe": {"muscle": shot.probe, "mesh": shot.probe_mesh, "vertices": int(len(probe_index)),
                     "muscles_vs_dqs_mm": [], "implicit_vs_dqs_mm": [], "muscles_vs_implicit_mm": []},
           "fallbacks": [], "quality": {},
           "fats": {name: {"vertices": int(len(i)), "skin_vs_implicit_mm": []} for name, i in fat_index.items()}}
    if rod_obj is not None:  # the copy with the biceps as a rod: its skin over the probe and its muscles' volumes
        rec["probe"]["rod_vs_dqs_mm"] = []
        rec["rod"] = {"volumes": {}, "rest_volumes": {}}
    quality = _quality_meshes(kinds, runtime)
    stages = ("read", "pbd", "pose", "field", "tracking", "write")
    lo = {kind: np.full(3, np.inf) for kind in kinds}
    hi = {kind: np.full(3, -np.inf) for kind in kinds}
    for f in shot.frames:
        t0 = time.perf_counter()
        scene.frame_set(f)
        wall = time.perf_counter() - t0
        depsgraph = bpy.context.evaluated_depsgraph_get()
        totals = dict.fromkeys(stages, 0.0)
        for mesh in muscle_meshes:
            b = runtime.bound(mesh)
            if b.last_error:
                rec["fallbacks"].append([f, mesh.name, b.last_error])
            for k in stages:
                totals[k] += b.timings.get(k, 0.0)
        implicit_total = sum(runtime.bound(m).timings.get("total", 0.0) for m in kinds["implicit"][1])
        armature_eval = kinds["muscles"][0].evaluated_get(depsgraph)
        for mesh in muscle_meshes:
            b = runtime.bound(mesh)
            if not len(b.character.model.muscles):
                continue
            act = frame_inputs.muscle_values(armature_eval, b.source).activation
            for name, v in zip((m.name for m in b.character.model.muscles), b.character.muscle_volumes(act)):
                rec["volumes"].setdefault(name, []).append(float(v))
        if rod_obj is not None:
            b = runtime.bound(rod_obj)
            act = frame_inputs.muscle_values(kinds["rod"][0].evaluated_get(depsgraph), b.source).activation
            for name, v in zip((m.name for m in b.character.model.muscles), b.character.muscle_volumes(act)):
                rec["rod"]["volumes"].setdefault(name, []).append(float(v))
        world = {}
        for kind, (_, meshes) in kinds.items():
            for mesh in meshes:
                world[mesh.name] = w = _evaluated(mesh, depsgraph)
                rec["finite"] &= bool(np.isfinite(w).all())
                lo[kind], hi[kind] = np.minimum(lo[kind], w.min(axis=0)), np.maximum(hi[kind], w.max(axis=0))
        shown = {kind: _to_armature(world[obj.name], kinds[kind][0])
                 for kind, obj in (("dqs", dqs_obj), ("implicit", implicit_obj), ("muscles", probe_obj))}
        p = rec["probe"]
        p["muscles_vs_dqs_mm"].append(1e3 * float(np.median(
            np.linalg.norm(shown["muscles"][probe_index] - shown["dqs"][probe_index], axis=1))))
        p["implicit_vs_dqs_mm"].append(1e3 * float(np.median(
            np.linalg.norm(shown["implicit"][probe_index] - shown["dqs"][probe_index], axis=1))))
        p["muscles_vs_implicit_mm"].append(1e3 * float(np.median(
            np.linalg.norm(shown["muscles"][probe_index] - shown["implicit"][probe_index], axis=1))))
        if rod_obj is not None:
            rod_shown = _to_armature(world[rod_obj.name], kinds["rod"][0])
            p["rod_vs_dqs_mm"].append(1e3 * float(np.median(
                np.linalg.norm(rod_shown[probe_index] - shown["dqs"][probe_index], axis=1))))
        for name, index in fat_index.items():
            rec["fats"][name]["skin_vs_implicit_mm"].append(1e3 * float(np.median(
                np.linalg.norm(shown["muscles"][index] - shown["implicit"][index], axis=1))))
        for kind, meshes in quality.items():
            _record_quality(rec["quality"].setdefault(kind, {}), meshes, world, kinds, kind)
        rec["frames"].append(f)
        rec["wall_ms"].append(1e3 * wall)
        rec["implicit_total_ms"].append(1e3 * implicit_total)
        for k in stages:
            rec["stages_ms"].setdefault(k, []).append(1e3 * totals[k])
    rec["bounds"] = {kind: [lo[kind].tolist(), hi[kind].tolist()] for kind in kinds}
    rec["rest_volumes"] = {}
    for mesh in muscle_meshes + ([rod_obj] if rod_obj is not None else []):
        b = runtime.bound(mesh)
        if len(b.character.model.muscles):
            probe = b.character.state()
            b.character.reset()
            out = rec["rod"]["rest_volumes"] if mesh is rod_obj else rec["rest_volumes"]
            for name, v in zip((m.name for m in b.character.model.muscles), b.character.muscle_volumes()):
                out[name] = float(v)
            b.character.restore(probe)
    return rec


def _studio_scene(bpy, studio, shot, bounds, quality, column=None):
    """Skin material, a label under each copy, lights and a camera fitting ``bounds`` (kind -> world box of the
    copy over the whole shot); with ``column`` (a :class:`distance_column.DistanceColumn` whose box is
    ``bounds["distance"]``, or a list of them, boxes ``bounds["distance"]``, ``bounds["distance rod"]``), one colour
    bar right of the last."""
    skin = studio.muscle_material("Skin", color=SKIN_COLOUR, subsurface=0.15)
    for _, meshes in shot.variants.values():
        for mesh in meshes:
            mesh.data.materials.clear()
            mesh.data.materials.append(skin)
            mesh.data.polygons.foreach_set("use_smooth", np.ones(len(mesh.data.polygons), dtype=bool))
    columns = [] if column is None else column if isinstance(column, list) else [column]
    for c in columns:
        for obj in c.objects:
            obj.data.polygons.foreach_set("use_smooth", np.ones(len(obj.data.polygons), dtype=bool))
    lo = np.min([b[0] for b in bounds.values()], axis=0)
    hi = np.max([b[1] for b in bounds.values()], axis=0)
    size = 0.035 * float(max(hi[2] - lo[2], (hi[0] - lo[0]) / len(bounds)))
    text = studio.label_material()
    for kind, (b_lo, b_hi) in bounds.items():
        studio.label(LABELS[kind], (0.5 * (b_lo[0] + b_hi[0]), lo[1], lo[2] - 0.8 * size), size, text)
    if columns:  # one bar, right of the last column (the columns share its scale)
        d_lo, d_hi = (np.asarray(b) for b in bounds[list(k for k in bounds if k.startswith("distance"))[-1]])
        bar_lo, bar_hi = columns[-1].colour_bar(studio, np.array([d_lo[0], lo[1], lo[2]]),
                                                np.array([d_hi[0], lo[1], hi[2]]), size, text)
        lo, hi = np.minimum(lo, bar_lo), np.maximum(hi, bar_hi)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    corners = np.concatenate([corners, [[lo[0], lo[1], lo[2] - 3.2 * size]]])
    aspect = (hi[2] - lo[2] + 3.2 * size) / (hi[0] - lo[0])
    settings = studio.RenderSettings(round(quality["width"]), 2 * round(0.5 * quality["width"] * min(aspect, 1.0)
                                                                        * 1.12), samples=quality["samples"])
    studio.frame_points(bpy.context.scene, corners, settings, margin=0.03)
    studio.add_lights(0.5 * (lo + hi), float((hi - lo).max()))
    return settings


def _distance_column(bpy, shot, kind="muscles", place=1):
    """A :class:`distance_column.DistanceColumn` of the shot: copy ``kind``'s meshes against the DQS copy's,
    ``place`` copies' gaps right of the shot's last copy."""
    armature, meshes = shot.variants[kind]
    dqs_armature, dqs_meshes = shot.variants["dqs"]
    step = np.array(shot.variants["muscles"][0].matrix_world.translation
                    - shot.variants["implicit"][0].matrix_world.translation)
    last = np.array(list(shot.variants.values())[-1][0].matrix_world.translation)
    pairs = [(m, next(o for o in dqs_meshes if o.name.split(".")[0] == m.name.split(".")[0])) for m in meshes]
    offset = last + place * step - np.array(armature.matrix_world.translation)
    return distance_column.DistanceColumn(bpy, pairs, (armature, dqs_armature), offset, _evaluated, _to_armature)


def render_shot(bpy, studio, shot, rec, out_dir, quality):
    """The sheet frames, each one image of the three copies and the distance column (same camera throughout); the
    crease close-ups when the shot has them."""
    scene = bpy.context.scene
    kinds = [kind for kind in MUSCLED if kind in shot.variants]  # a column per muscled copy, on one scale
    columns = [_distance_column(bpy, shot, kind, place) for place, kind in enumerate(kinds, 1)]
    largest = 0.0
    for f in shot.sheet_frames:
        scene.frame_set(f)
        largest = max([largest] + [column.largest_mm() for column in columns])
    bounds = dict(rec["bounds"])
    for kind, column in zip(kinds, columns):
        column.scale_mm = shot.distance_scale_mm or distance_column.nice_scale(largest)
        m_lo, m_hi = (np.asarray(b) for b in rec["bounds"][kind])
        bounds["distance" if kind == "muscles" else f"distance {kind}"] = [(m_lo + column.offset).tolist(),
                                                                          (m_hi + column.offset).tolist()]
    settings = _studio_scene(bpy, studio, shot, bounds, quality, columns)
    frames_dir = out_dir / "frames"
    frames_dir.mkdir(parents=True, exist_ok=True)
    rows, seconds = [], []
    for f in shot.sheet_frames:
        scene.frame_set(f)
        for column in columns:
            column.show()
        path = frames_dir / f"{shot.name}_{f:03d}.png"
        seconds.append(studio.render(scene, path, settings))
        rows.append({"frame": f, "file": str(path)})
    for obj in [obj for column in columns for obj in column.objects]:  # the saved file keeps what the artist made
        bpy.data.objects.remove(obj)
    out = {"rows": rows, "render_seconds": seconds, "resolution": [settings.width, settings.height],
           "distance_scale_mm": columns[0].scale_mm}
    if shot.crease is not None:
        out["crease"] = render_crease(bpy, studio, shot, out_dir, quality)
    return out


def render_crease(bpy, studio, shot, out_dir, quality):
    """A close-up of the joint's inner side at the crease frame, one image per copy, same framing relative to its
    joint (seen from the side, where the forearm folds onto the upper arm)."""
    frame, bone_name, half = shot.crease
    scene = bpy.context.scene
    scene.frame_set(frame)
    settings = studio.RenderSettings(round(quality["crease"]), round(quality["crease"]), samples=quality["samples"])
    files, seconds = [], []
    for kind, (armature, _) in shot.variants.items():
        joint = armature.matrix_world @ armature.pose.bones[bone_name].head
        box = np.array([[joint.x + dx, joint.y + dy, joint.z + dz] for dx in (-1.5 * half, 0.5 * half)
                        for dy in (-half, half) for dz in (-0.6 * half, 1.4 * half)])
        for old in [o for o in scene.objects if o.type == 'CAMERA']:
            bpy.data.objects.remove(old)
        studio.frame_points(scene, box, settings, margin=0.0, elevation=0.0)
        path = out_dir / "frames" / f"{shot.name}_crease_{kind}.png"
        seconds.append(studio.render(scene, path, settings))
        files.append({"kind": kind, "file": str(path)})
    return {"frame": frame, "files": files, "render_seconds": seconds}


def run_shot(bpy, name, out_dir, quick, quality):
    import studio

    scenes = addon_session.addon_module(REPO_MODULE, "scenes.paper")
    runtime = addon_session.addon_module(REPO_MODULE, "blender.session.runtime")
    frame_inputs = addon_session.addon_module(REPO_MODULE, "blender.scene.frame_inputs")
    import blender_rig

    t0 = time.perf_counter()
    studio.new_scene()
    scene = bpy.context.scene
    shot = BUILDERS[name](bpy, scenes, blender_rig, quick)
    scene.frame_start, scene.frame_end = shot.frames[0], shot.frames[-1]
    scene.frame_set(shot.frames[0])
    t1 = time.perf_counter()
    bind_seconds = {}
    for kind in [k for k in ("implicit",) + MUSCLED if k in shot.variants]:
        for mesh in shot.variants[kind][1]:
            bpy.context.view_layer.objects.active = mesh
            tb = time.perf_counter()
            if bpy.ops.implicit_muscles.bind_skin() != {'FINISHED'}:
                raise RuntimeError(f"Bind Skin failed on {mesh.name}")
            bind_seconds[mesh.name] = time.perf_counter() - tb
    t2 = time.perf_counter()
    blend = out_dir / f"{name}.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    rec = play(bpy, shot, runtime, frame_inputs)
    t3 = time.perf_counter()
    if bpy.ops.implicit_muscles.bake(frame_start=shot.frames[0], frame_end=shot.frames[-1]) != {'FINISHED'}:
        raise RuntimeError(f"Bake failed in {name}")
    t4 = time.perf_counter()
    renders = render_shot(bpy, studio, shot, rec, out_dir, quality)
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))  # with its materials, camera, lights and baked caches
    t5 = time.perf_counter()
    meshes = {kind: [{"name": m.name, "vertices": len(m.data.vertices)} for m in meshes]
              for kind, (_, meshes) in shot.variants.items()}
    muscle_count = len(shot.variants["muscles"][0].implicit_muscles.muscles)
    particles = sum(len(runtime.bound(m).character.state().x) for m in shot.variants["muscles"][1])
    fibres = {m.name: len(runtime.bound(m).character.model.muscles) for m in shot.variants["muscles"][1]}
    return {"name": name, "title": shot.title, "blend": str(blend), "meshes": meshes, "muscles": muscle_count,
            "fibres_per_mesh": fibres,
            "particles": particles, "bones": len(shot.variants["dqs"][0].data.bones), "notes": shot.notes,
            "bind_seconds": bind_seconds, "seconds": {"build": t1 - t0, "bind": t2 - t1, "play": t3 - t2,
                                                      "bake": t4 - t3, "render": t5 - t4},
            **rec, **renders}


def _child_main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2, required=True, metavar=("SHOTS", "OUT"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    names, out_dir = args.child[0].split(","), Path(args.child[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    bpy = addon_session.enable(REPO_MODULE, "Implicit Muscles demo")
    bpy.context.preferences.filepaths.save_version = 0  # no .blend1 backups in the output folder
    quality = ({"width": 480, "crease": 160, "samples": 4} if args.quick
               else {"width": 1200, "crease": 420, "samples": 16})
    shots = []
    for name in names:
        print(f"shot {name}: build, bind, play, bake, render ...", flush=True)
        shots.append(run_shot(bpy, name, out_dir, args.quick, quality))
        s = shots[-1]["seconds"]
        print(f"shot {name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in s.items()), flush=True)
    addon_session.finish_child(args.result, {"shots": shots, "blender": bpy.app.version_string})
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1:]))
