"""Real rigged characters as numpy arrays, read with the bpy module (tests and benchmarks; not shipped).

The character file comes from ``tools/fetch_character.py`` (part of the set-up): ``BCN_Epileptic.X`` from
Debian's ``assimp-testmodels``, converted to ``.cache/character/bcn_epileptic.glb``. ``load_character`` imports
a file into a fresh, empty Blender scene and returns its skinned mesh and skeleton in ARMATURE space at REST
pose, in metres (glTF's unit; the empty scene's unit scale is 1):

    sys.path.insert(0, "tests")                     # tests/ is not a package
    from characters import CHARACTER_PATH, load_character
    character = load_character(CHARACTER_PATH)
    character.vertices.shape    # (3014, 3) for BCN_Epileptic: torso 1170 + head 1196 + legs 648

What BCN_Epileptic holds (bpy 5.0.1 and 4.2.23 give the same arrays): 3014 vertices, 5126 triangles, 54 bones
(one root, B_Root_Pelvis_L); every vertex weighted by 1 to 3 bones, rows summing to 1 (to 2e-6); every bone
owns vertices by highest weight. Bounding box 0.586 x 0.378 x 1.814 m (metres: a 1.81 m human), Z up (the
glTF importer turns glTF's Y up into Blender's Z up), facing -Y, left at +X, arms hanging at the sides (not a
T-pose: shoulder to wrist 87 degrees below horizontal). The origin is at the pelvis, not the feet (z from -1.024
to 0.790). The armature object sits at the origin with an identity transform. The three meshes are not welded to
each other, and each is split along its UV/normal seams (2632 distinct positions for 3014 vertices): welded by
position they are still open (68, 20 and 42 boundary edges for head, legs and torso).

Only ``bpy`` is imported lazily (inside ``load_character``), so this module also imports where bpy is absent.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHARACTER_PATH = REPO / ".cache" / "character" / "bcn_epileptic.glb"
"""Where ``tools/fetch_character.py`` writes the converted character."""
FETCH_COMMAND = "python3 tools/fetch_character.py"
"""The set-up step that makes CHARACTER_PATH (run from the repository root)."""


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


def _import(path: Path) -> None:
    import bpy

    suffix = path.suffix.lower()
    if suffix in (".glb", ".gltf"):
        # The bone heuristic moves only the tails (and bone rolls): vertices, weights, heads and the deformation
        # are the same with each. TEMPERANCE puts tails at the children (see Character.tails).
        bpy.ops.import_scene.gltf(filepath=str(path), bone_heuristic="TEMPERANCE")
    elif suffix == ".fbx":
        bpy.ops.import_scene.fbx(filepath=str(path))
    else:
        raise ValueError(f"{path.name}: load_character reads .glb, .gltf or .fbx files, not {suffix or 'no suffix'}.")


def load_character(path) -> Character:
    """Import ``path`` (.glb/.gltf/.fbx) into a fresh empty scene and return its skinned character at rest pose.

    The armature that skins the most vertices is taken; if several mesh objects are skinned by it (BCN_Epileptic
    has three: Torso, Head, Legs), they are all joined, ordered by object name, with ``vertex_mesh`` telling them
    apart (faces stay separate: the meshes are not welded). Meshes without an armature (the glTF importer's bone
    display "Icosphere", props) are ignored. Vertex positions are ``armature.matrix_world^-1 @ mesh.matrix_world
    @ co``: where the armature modifier takes them at rest pose. Raises ValueError if nothing in the file is
    skinned, FileNotFoundError if the file is missing.
    """
    import bpy

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such character file; `{FETCH_COMMAND}` makes {CHARACTER_PATH.name}.")
    # an empty scene; not read_factory_settings: with Blender 4.2's bpy module, loading factory settings after an
    # add-on that registers properties was enabled and disabled in the same process crashes the process at exit
    bpy.ops.wm.read_homefile(use_empty=True)
    _import(path)
    scale = bpy.context.scene.unit_settings.scale_length
    if scale != 1.0:
        raise ValueError(f"{path.name}: the scene's unit scale is {scale}, expected 1 (metres) after importing.")

    skinned = {}
    for obj in bpy.data.objects:
        armature = _armature_of(obj) if obj.type == "MESH" else None
        if armature is not None and len(obj.data.vertices) > 0:
            skinned.setdefault(armature.name, []).append(obj)
    if not skinned:
        raise ValueError(f"{path.name}: no mesh in this file is skinned to an armature.")
    armature_name = max(skinned, key=lambda name: sum(len(o.data.vertices) for o in skinned[name]))
    armature = bpy.data.objects[armature_name]
    meshes = sorted(skinned[armature_name], key=lambda o: o.name)

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
