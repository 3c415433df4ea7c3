"""Real rigged characters as numpy arrays, read with the bpy module (tests and benchmarks; not shipped).

The character files come from the set-up (``make character``):

* ``CHARACTER_PATH``, ``.cache/character/bcn_epileptic.glb``: ``BCN_Epileptic.X`` from Debian's
  ``assimp-testmodels``, converted by ``tools/fetch_character.py``;
* ``HUMAN_PATH``, ``.cache/character/human_rigged.glb``: the dense MakeHuman body of the same package, rigged,
  weighted and animated with three motion captures by ``tools/rig_human.py`` (what it holds: below).

``load_character`` imports a file into a fresh, empty Blender scene and returns its skinned mesh and skeleton in
ARMATURE space at REST pose, in metres (glTF's unit; the empty scene's unit scale is 1); ``load_animation``
returns the file's action names and one action's bone transforms, frame by frame:

    sys.path.insert(0, "tests")                     # tests/ is not a package
    from characters import CHARACTER_PATH, HUMAN_PATH, load_animation, load_character
    character = load_character(CHARACTER_PATH)
    character.vertices.shape    # (3014, 3) for BCN_Epileptic: torso 1170 + head 1196 + legs 648
    human = load_character(HUMAN_PATH)              # (13380, 3): the welded body, 21 bones
    jump = load_animation(HUMAN_PATH, "jump", stride=2)
    jump.names, jump.fps, jump.frames[:3]           # ('jump', 'climb', 'boxing'), 30.0, [1 3 5]
    jump.transforms.shape                           # (344, 21, 4, 4): posed = transforms[f, b] @ rest, per bone

What BCN_Epileptic holds (bpy 5.0.1 and 4.2.23 give the same arrays): 3014 vertices, 5126 triangles, 54 bones
(one root, B_Root_Pelvis_L); every vertex weighted by 1 to 3 bones, rows summing to 1 (to 2e-6); every bone
owns vertices by highest weight. Bounding box 0.586 x 0.378 x 1.814 m (metres: a 1.81 m human), Z up (the
glTF importer turns glTF's Y up into Blender's Z up), facing -Y, left at +X, arms hanging at the sides (not a
T-pose: shoulder to wrist 87 degrees below horizontal). The origin is at the pelvis, not the feet (z from -1.024
to 0.790). The armature object sits at the origin with an identity transform. The three meshes are not welded to
each other, and each is split along its UV/normal seams (2632 distinct positions for 3014 vertices): welded by
position they are still open (68, 20 and 42 boundary edges for head, legs and torso).

What the human holds (bpy 5.0.1 and 4.2.23 give the same arrays): the body only, 13,380 vertices, 26,756
triangles, one closed surface (the file is written without UVs and with one normal per vertex, so it stays welded
without ``merge_vertices``), 1.659 m, Z up, facing -Y, left at +X, feet at z = 0, A-pose (arms 49 degrees below
horizontal, elbows bent 35 degrees); the eyes are a separate mesh parented to the ``head`` bone, not skinned, so
``load_character`` leaves them out. 21 bones (``pelvis``, ``spine``, ``chest``, ``neck``, ``head``, and
``clavicle``, ``upper_arm``, ``forearm``, ``hand``, ``thigh``, ``shin``, ``foot``, ``toe`` with ``.L`` / ``.R``);
1 to 4 weights per vertex summing to 1 (bone heat). Actions at 30 fps, keyed on every frame from 1: ``jump`` 688
frames, ``climb`` 1128, ``boxing`` 921. BCN_Epileptic has one action, ``Epileptisch``: frames 0..99 at 30 fps.

To play the human in a Blender scene: set the scene to 30 fps *before* importing (glTF keys times in seconds and
Blender's importer converts them at the scene's rate), import it, then pick the action:

    bpy.context.scene.render.fps = 30               # or int(gltf_fps(HUMAN_PATH))
    bpy.ops.import_scene.gltf(filepath=str(HUMAN_PATH))
    play_action(bpy.data.objects["HumanRig"], "jump")   # mutes the NLA tracks, sets the frame range 1..688

The loaders also read ``.blend`` files (appended, objects and actions, into a fresh empty scene) and take a member
of the family of rigged bodies (``tests/family.py``: anything with a ``path``) in place of a path:

    from family import member                      # tests/family.py
    body = load_character(member("game_engine/heavy"))     # (13380, 3), 53 bones, MakeHuman's weights
    bend = load_animation(member("game_engine/heavy"), "bend", stride=1)
    bend.fps                                        # 24.0: an action's own "fps" property comes first

Only ``bpy`` is imported lazily (inside the loaders), so this module also imports where bpy is absent.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHARACTER_PATH = REPO / ".cache" / "character" / "bcn_epileptic.glb"
"""Where ``tools/fetch_character.py`` writes the converted character."""
FETCH_COMMAND = "python3 tools/fetch_character.py"
"""The set-up step that makes CHARACTER_PATH (run from the repository root)."""
HUMAN_PATH = REPO / ".cache" / "character" / "human_rigged.glb"
"""Where ``tools/rig_human.py`` writes the rigged, animated MakeHuman body."""
HUMAN_COMMAND = "make character"
"""The set-up step that makes HUMAN_PATH (fetch_character.py, then rig_human.py with Blender 5.0's bpy)."""
FAMILY_COMMAND = "make character"
"""The set-up step that makes the family's .blend files (fetch_family.py, then build_family.py with Blender 4.2)."""


@dataclass(frozen=True)
class Character:
    """A skinned character at rest pose. All positions in the armature object's space, in metres.

    V vertices, F triangles, B bones. Bone order is the armature's own (``armature.data.bones``, parents before
    children) and is the column order of ``weights`` and the row order of ``heads``/``tails``/``parents``.
    """
    vertices: np.ndarray
    """(V, 3) float64, metres: rest positions of all skinned meshes, joined in ``mesh_names`` order."""
    faces: np.ndarray
    """(F, 3) int64: triangles (Blender's loop triangles) indexing ``vertices``."""
    weights: np.ndarray
    """(V, B) float64 >= 0: vertex group weights, column b = bone ``names[b]``; groups that name no bone are
    dropped. Raw weights, not normalised (Blender's armature modifier divides by the row sum)."""
    heads: np.ndarray
    """(B, 3) float64, metres: ``bone.head_local``."""
    tails: np.ndarray
    """(B, 3) float64, metres: ``bone.tail_local``. glTF has no tails: the importer's "TEMPERANCE" heuristic
    puts a tail on the local axis nearest the child, which is on the only child's head to within 1 cm for all but
    one bone of BCN_Epileptic (the default "BLENDER" heuristic leaves tails up to 0.6 m away from the child)."""
    parents: np.ndarray
    """(B,) int64: index of each bone's parent, -1 for a root."""
    names: tuple
    """B bone names."""
    armature_name: str
    """Name of the armature object in the imported scene."""
    mesh_names: tuple
    """Names of the skinned mesh objects that were joined, in the order of their vertices."""
    vertex_mesh: np.ndarray
    """(V,) int64: index into ``mesh_names`` of the mesh each vertex came from."""

    def summary(self) -> dict:
        """Plain numbers for reports: counts, unweighted vertices, bones owning no vertex, bounding box (m)."""
        total = self.weights.sum(axis=1)
        owner = np.argmax(self.weights, axis=1)
        owned = np.bincount(owner[total > 0], minlength=len(self.names))
        size = self.vertices.max(axis=0) - self.vertices.min(axis=0)
        return {
            "vertices": len(self.vertices), "triangles": len(self.faces), "bones": len(self.names),
            "meshes": list(self.mesh_names), "unweighted_vertices": int(np.count_nonzero(total <= 0)),
            "weight_sum_range": [float(total.min()), float(total.max())],
            "bones_owning_no_vertex": [self.names[b] for b in np.flatnonzero(owned == 0)],
            "bounding_box_m": [round(float(s), 4) for s in size],
        }


def _armature_of(obj):
    """The armature object that skins a mesh object (armature modifier first, then armature parenting), or None."""
    for modifier in obj.modifiers:
        if modifier.type == "ARMATURE" and modifier.object is not None:
            return modifier.object
    if obj.parent is not None and obj.parent.type == "ARMATURE" and obj.parent_type == "ARMATURE":
        return obj.parent
    return None


def _import(path: Path, bone_heuristic: str = "TEMPERANCE") -> None:
    import bpy

    suffix = path.suffix.lower()
    if suffix in (".glb", ".gltf"):
        # The bone heuristic moves only the tails (and bone rolls): vertices, weights, heads and the deformation
        # are the same with each. TEMPERANCE puts tails at the children (see Character.tails).
        bpy.ops.import_scene.gltf(filepath=str(path), bone_heuristic=bone_heuristic)
    elif suffix == ".fbx":
        bpy.ops.import_scene.fbx(filepath=str(path))
    elif suffix == ".blend":
        # appended, not linked: every object (with its data, modifiers, parents, animation) and every action
        with bpy.data.libraries.load(str(path), link=False) as (source, target):
            target.objects = list(source.objects)
            target.actions = list(source.actions)
        for obj in target.objects:
            if obj is not None:
                bpy.context.scene.collection.objects.link(obj)
    else:
        raise ValueError(f"{path.name}: characters.py reads .glb, .gltf, .fbx or .blend files, not "
                         f"{suffix or 'no suffix'}.")


def _fresh_import(path: Path, fps: float | None = None, bone_heuristic: str = "TEMPERANCE") -> None:
    """An empty scene (at ``fps``, if given), then ``path`` imported into it."""
    import bpy

    if not path.is_file():
        command = (HUMAN_COMMAND if path.name == HUMAN_PATH.name else FAMILY_COMMAND if path.suffix == ".blend"
                   else FETCH_COMMAND)
        raise FileNotFoundError(f"{path}: no such character file; `{command}` makes {path.name}.")
    # an empty scene; not read_factory_settings: with Blender 4.2's bpy module, loading factory settings after an
    # add-on that registers properties was enabled and disabled in the same process crashes the process at exit
    bpy.ops.wm.read_homefile(use_empty=True)
    if fps is not None:
        bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = int(round(fps)), 1.0
    _import(path, bone_heuristic)
    scale = bpy.context.scene.unit_settings.scale_length
    if scale != 1.0:
        raise ValueError(f"{path.name}: the scene's unit scale is {scale}, expected 1 (metres) after importing.")


def _skinned(path: Path):
    """The armature that skins the most vertices, and the mesh objects it skins, ordered by name."""
    import bpy

    skinned = {}
    for obj in bpy.data.objects:
        armature = _armature_of(obj) if obj.type == "MESH" else None
        if armature is not None and len(obj.data.vertices) > 0:
            skinned.setdefault(armature.name, []).append(obj)
    if not skinned:
        raise ValueError(f"{path.name}: no mesh in this file is skinned to an armature.")
    armature_name = max(skinned, key=lambda name: sum(len(o.data.vertices) for o in skinned[name]))
    return bpy.data.objects[armature_name], sorted(skinned[armature_name], key=lambda o: o.name)


def _path_of(path_or_member) -> Path:
    """A path, or a family member's .blend (``tests/family.py``: anything with a ``path``)."""
    return Path(getattr(path_or_member, "path", path_or_member))


def load_character(path) -> Character:
    """Import ``path`` (.glb/.gltf/.fbx/.blend, or a family member) into a fresh empty scene and return its skinned
    character at rest pose.

    The armature that skins the most vertices is taken; if several mesh objects are skinned by it (BCN_Epileptic
    has three: Torso, Head, Legs), they are all joined, ordered by object name, with ``vertex_mesh`` telling them
    apart (faces stay separate: the meshes are not welded). Meshes without an armature (the glTF importer's bone
    display "Icosphere", props, the human's eyes, which are parented to a bone) are ignored. Vertex positions are
    ``armature.matrix_world^-1 @ mesh.matrix_world @ co``: where the armature modifier takes them at rest pose.
    Raises ValueError if nothing in the file is skinned, FileNotFoundError if the file is missing.
    """
    path = _path_of(path)
    _fresh_import(path)
    armature, meshes = _skinned(path)
    armature_name = armature.name

    bones = list(armature.data.bones)
    names = tuple(bone.name for bone in bones)
    column = {name: b for b, name in enumerate(names)}
    heads = np.array([bone.head_local for bone in bones], dtype=np.float64).reshape(-1, 3)
    tails = np.array([bone.tail_local for bone in bones], dtype=np.float64).reshape(-1, 3)
    parents = np.array([column[bone.parent.name] if bone.parent else -1 for bone in bones], dtype=np.int64)

    to_armature = np.array(armature.matrix_world.inverted(), dtype=np.float64)
    vertices, faces, weights, vertex_mesh = [], [], [], []
    offset = 0
    for index, obj in enumerate(meshes):
        mesh = obj.data
        count = len(mesh.vertices)
        co = np.empty(count * 3, dtype=np.float32)  # Blender's own types: foreach_get copies them directly
        mesh.vertices.foreach_get("co", co)
        matrix = to_armature @ np.array(obj.matrix_world, dtype=np.float64)
        vertices.append(co.reshape(-1, 3).astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3])

        mesh.calc_loop_triangles()
        triangles = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", triangles)
        faces.append(triangles.reshape(-1, 3).astype(np.int64) + offset)

        group_column = {group.index: column.get(group.name) for group in obj.vertex_groups}
        w = np.zeros((count, len(names)), dtype=np.float64)
        for vertex in mesh.vertices:
            for element in vertex.groups:
                b = group_column.get(element.group)
                if b is not None:
                    w[vertex.index, b] += element.weight
        weights.append(w)
        vertex_mesh.append(np.full(count, index, dtype=np.int64))
        offset += count

    return Character(
        vertices=np.concatenate(vertices), faces=np.concatenate(faces), weights=np.concatenate(weights),
        heads=heads, tails=tails, parents=parents, names=names, armature_name=armature_name,
        mesh_names=tuple(obj.name for obj in meshes), vertex_mesh=np.concatenate(vertex_mesh))


@dataclass(frozen=True)
class Animation:
    """One action of a character file, sampled frame by frame: bone transforms in ARMATURE space.

    ``transforms[i, b]`` takes a rest position (armature space, as ``Character.vertices``) to where bone b puts it
    at frame ``frames[i]``: ``pose_bone.matrix @ bone.matrix_local^-1``, the matrix linear blend skinning blends.
    Bones in ``load_character``'s order (``armature.data.bones``) for the same file.
    """
    names: tuple
    """Every action of the armature, in the file's order (glTF: its animations' names)."""
    action: str | None
    """The action sampled (None if the file has no action; the arrays are then empty)."""
    bones: tuple
    """B bone names, the order of the transforms' second axis (= ``Character.names``)."""
    frames: np.ndarray
    """(F,) int64: the frames sampled, from the action's first to its last, every ``stride``."""
    transforms: np.ndarray
    """(F, B, 4, 4) float64: deform matrices, rotation parts projected onto the nearest rotation (see ``skew``)."""
    skew: float
    """Largest ``|R^T R - I|`` of Blender's own matrices, before that projection: they are single precision, and a
    long chain of bones (6 from the pelvis to a hand) leaves them 2e-6 off orthonormal for the human."""
    fps: float
    """Frames per second the frames count in: the action's own ``fps`` property if it has one (the family's
    .blend files), else the scene's, set from the file's key times before importing."""
    armature_name: str


def gltf_fps(path) -> float | None:
    """The frame rate of a .glb/.gltf file's animations, from the key times of its most-keyed sampler (glTF keys
    times in seconds, and Blender's importer turns them into frames at the scene's rate); None if nothing is
    animated or the file is not glTF."""
    path = Path(path)
    if path.suffix.lower() == ".gltf":
        document = json.loads(path.read_text())
    elif path.suffix.lower() == ".glb":
        with open(path, "rb") as fh:
            fh.seek(12)
            length, kind = struct.unpack("<II", fh.read(8))   # the first chunk is the JSON one
            if kind != 0x4E4F534A:
                return None
            document = json.loads(fh.read(length))
    else:
        return None
    inputs = [document["accessors"][sampler["input"]] for animation in document.get("animations", [])
              for sampler in animation["samplers"]]
    inputs = [a for a in inputs if a["count"] > 1 and a["max"][0] > a["min"][0]]
    if not inputs:
        return None
    most = max(inputs, key=lambda a: a["count"])
    fps = (most["count"] - 1) / (most["max"][0] - most["min"][0])
    return float(round(fps)) if abs(fps - round(fps)) < 0.01 * fps else fps


def actions_of(armature) -> dict:
    """name -> action for every action of an imported armature: the glTF importer keeps each animation of the
    file as an action on a (muted) NLA track named after the animation, and makes the last one active. The track
    names are the file's animation names (Blender 4.2 names the actions themselves ``<animation>_<armature>``,
    5.0 ``<animation>``); an active action on no track is listed under its own name."""
    data = armature.animation_data
    if data is None:
        return {}
    actions = {}
    for track in data.nla_tracks:
        for strip in track.strips:
            if strip.action is not None and track.name not in actions:
                actions[track.name] = strip.action
    if data.action is not None and data.action not in actions.values():
        actions[data.action.name] = data.action
    return actions


def play_action(armature, name: str) -> tuple:
    """Make action ``name`` (a key of ``actions_of``) the one an imported armature plays, alone: mutes every NLA
    track, assigns the action (and its slot, Blender 4.4+), sets the scene's frame range to the action's; returns
    (first, last) frame. Use it in a demo scene after importing HUMAN_PATH, e.g. ``play_action(rig, "jump")``."""
    import bpy

    action = actions_of(armature)[name]
    data = armature.animation_data
    for track in data.nla_tracks:
        track.mute = True
    data.action = action
    if hasattr(data, "action_slot") and data.action_slot is None and len(action.slots):
        data.action_slot = action.slots[0]
    data.action_influence, data.action_blend_type = 1.0, "REPLACE"
    first, last = (int(round(f)) for f in action.frame_range)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = first, last
    return first, last


def load_animation(path, action: str | None = None, stride: int = 1) -> Animation:
    """Import ``path`` (or a family member) into a fresh empty scene and sample one action of the armature
    ``load_character`` takes.

    ``names`` lists every action; ``action`` picks the one sampled (None: the first; a name not in ``names`` is
    a KeyError). The scene's frame rate is set from the file's key times before importing (``gltf_fps``), so that
    keys land on whole frames (Blender's default 24 fps would put a 30 fps file's keys 0.8 frames apart). Every
    ``stride``-th frame from the action's first to its last is sampled with ``scene.frame_set`` (the meshes'
    modifiers are switched off first: only the pose is evaluated). A file without actions gives empty arrays.

    glTF files are imported with the bone heuristic "BLENDER" here (bones on the glTF nodes' own axes; the
    transforms do not depend on it, but their rounding does): with "TEMPERANCE", the human's pelvis would point
    at its spine, against its thighs, and Blender's single-precision rest matrices of a child pointing against
    its parent are 6e-5 off orthonormal (2e-6 with "BLENDER"). The rotations are then projected onto the nearest
    rotation in double precision (``skew`` says how far Blender's were).
    """
    import bpy

    path = _path_of(path)
    if stride < 1:
        raise ValueError(f"stride must be 1 or more, not {stride}")
    fps = gltf_fps(path) if path.is_file() else None
    _fresh_import(path, fps, bone_heuristic="BLENDER")
    armature, _ = _skinned(path)
    scene = bpy.context.scene
    bones = tuple(armature.data.bones)
    names = tuple(bone.name for bone in bones)
    actions = actions_of(armature)
    if action is None:
        action = next(iter(actions), None)
    elif action not in actions:
        raise KeyError(f"{path.name} has no action {action!r}; it has {sorted(actions)}")
    fps = scene.render.fps / scene.render.fps_base
    if action is not None and actions[action].get("fps"):
        fps = float(actions[action]["fps"])
        scene.render.fps, scene.render.fps_base = int(round(fps)), 1.0
    if action is None:
        return Animation(names=(), action=None, bones=names, frames=np.zeros(0, dtype=np.int64),
                         transforms=np.zeros((0, len(bones), 4, 4)), skew=0.0, fps=fps, armature_name=armature.name)

    first, last = play_action(armature, action)
    for obj in bpy.data.objects:
        for modifier in obj.modifiers:
            modifier.show_viewport = False
    frames = np.arange(first, last + 1, stride, dtype=np.int64)
    rest_inverse = np.linalg.inv(np.array([bone.matrix_local for bone in bones], dtype=np.float64))
    pose = np.empty((len(frames), len(bones) * 16), dtype=np.float32)
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        armature.pose.bones.foreach_get("matrix", pose[i])
    # foreach_get gives each matrix column by column
    transforms = np.swapaxes(pose.reshape(len(frames), len(bones), 4, 4), -1, -2).astype(np.float64) @ rest_inverse
    rotations = transforms[..., :3, :3]
    skew = float(np.abs(np.swapaxes(rotations, -1, -2) @ rotations - np.eye(3)).max()) if len(frames) else 0.0
    transforms[..., :3, :3] = nearest_rotations(rotations)
    return Animation(names=tuple(actions), action=action, bones=names, frames=frames, transforms=transforms,
                     skew=skew, fps=fps, armature_name=armature.name)


def nearest_rotations(matrices: np.ndarray) -> np.ndarray:
    """(..., 3, 3) the rotation nearest each matrix (polar decomposition: U V^T of its SVD, with det +1)."""
    u, _, vt = np.linalg.svd(matrices)
    sign = np.sign(np.linalg.det(u @ vt))
    u[..., :, 2] *= sign[..., None]
    return u @ vt
