"""The family of rigged bodies (``tests/family.py``, built by ``make character``) loads into sane numpy arrays.

Every member loads with the counts its manifest states; the MakeHuman bodies carry MakeHuman's own weights
(compared value for value with the JSON on one body) and every bone of their rig's JSON; each bone map names
bones of its member; on the REDUCED members the deep-bend pose set measures its target angles within 1 degree on
the posed bones, its first frame is the rest pose and the jump starts on the floor; the three body shapes differ
as they should; the glTF members hold their files' arrays, and Testwuson, turned Z up, still plays its own
actions as its file does. Without the built family (``make character``) these tests skip and say so. Loading
needs the bpy module (Blender 5.0 or 4.2: the .blend files are written by 4.2, which 5.0 reads).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from characters import CHARACTER_PATH, HUMAN_PATH  # noqa: E402
from family import (BEND_KEYS, FAMILY, FAMILY_COMMAND, REDUCED, bend_angles, expected_bend,  # noqa: E402
                    load_animation, load_character, manifest, member, shape_measures, slots_of)

MPFB2 = Path(__file__).resolve().parents[2] / ".cache" / "family" / "mpfb2"
COUNTS = {"default": (13380, 26756, 163), "game_engine": (13380, 26756, 53), "cmu_mb": (13380, 26756, 31),
          "mixamo": (13380, 26756, 52), "human": (13380, 26756, 21), "bcn_epileptic": (3014, 5126, 54),
          "testwuson": (3205, 3732, 38)}
"""rig -> (vertices, triangles, bones). Testwuson's 38 are its file's 37 and the Root the build adds."""
ROW_SUMS = {"default": (0.99979, 1.000001), "game_engine": (0.99989, 1.000001), "cmu_mb": (0.99989, 1.000001),
            "mixamo": (0.2, 1.4981), "human": (1 - 1e-5, 1 + 1e-5), "bcn_epileptic": (1 - 2e-6, 1 + 2e-6),
            "testwuson": (1 - 2e-6, 1 + 2e-6)}
"""rig -> the range the weights' row sums lie in, as measured: MakeHuman's files keep weights above 1e-4 only
(rows 2e-4 short of 1 at worst), and its mixamo weights are not normalised (6042 of 13,380 rows off 1 by more than
1e-3, from 0.2 to 1.498); the glTF members' are."""
_LOADED = {}


def _need(m):
    if not m.path.is_file() or not m.manifest.is_file():
        pytest.skip(f"{m.path.name} is missing: the set-up step `{FAMILY_COMMAND}` builds the family")


def _character(m):
    _need(m)
    if m.name not in _LOADED:
        _LOADED[m.name] = load_character(m)
    return _LOADED[m.name]


def test_the_family_table():
    names = [m.name for m in FAMILY]
    assert names == ["default/average", "default/heavy", "default/slim", "game_engine/average", "game_engine/heavy",
                     "game_engine/slim", "cmu_mb/average", "mixamo/average", "human", "bcn_epileptic", "testwuson"]
    assert [m.name for m in REDUCED] == ["default/average", "game_engine/heavy", "human"]
    assert [m.name for m in FAMILY if m.held_out] == ["cmu_mb/average", "mixamo/average"]
    assert len({m.path for m in FAMILY}) == len(FAMILY) and all(m.path.suffix == ".blend" for m in FAMILY)
    for m in FAMILY:
        slots = [slot for slot, _ in slots_of(m.bone_map)]
        assert slots[0] == "pelvis" and {"chest", "neck", "head", "upper_arm.L", "toe.R"} <= set(slots)
        assert len(set(name for _, name in slots_of(m.bone_map))) == len(slots), f"{m.name}: a bone mapped twice"
    assert member("game_engine/heavy").bone_map["upper_arm.L"] == "upperarm_l"
    assert member("bcn_epileptic").bone_map["upper_arm.L"] == "B_UpperArm_Left"
    assert member("mixamo/average").bone_map["hand.R"] == "mixamorig:RightHand"


@pytest.mark.parametrize("m", FAMILY, ids=lambda m: m.name)
def test_member_loads_with_its_counts(m):
    c = _character(m)
    vertices, triangles, bones = COUNTS[m.rig]
    assert c.vertices.shape == (vertices, 3) and c.faces.shape == (triangles, 3)
    assert c.weights.shape == (vertices, bones) and len(c.names) == len(set(c.names)) == bones
    for array in (c.vertices, c.weights, c.heads, c.tails):
        assert np.isfinite(array).all()
    assert (c.parents[1:] < np.arange(1, bones)).all() and np.count_nonzero(c.parents < 0) == 1
    found = manifest(m)
    assert (found["vertices"], found["triangles"], found["bones"]) == (vertices, triangles, bones)
    np.testing.assert_allclose(c.vertices.max(axis=0) - c.vertices.min(axis=0), found["bounding_box_m"], atol=1e-4)
    if m.kind == "mpfb2":
        assert c.mesh_names == ("Body",) and found["faces"] == {"quads": 13378, "triangles": 0}
        assert abs(c.vertices[:, 2].min()) < 1e-6, "the feet are not on z = 0"


@pytest.mark.parametrize("m", FAMILY, ids=lambda m: m.name)
def test_weights_are_artist_made(m):
    """Every vertex weighted; many distinct weights (not all equal); row sums within the measured range."""
    w = _character(m).weights
    total = w.sum(axis=1)
    low, high = ROW_SUMS[m.rig]
    assert (w >= 0).all() and (total > 0).all(), f"{np.count_nonzero(total <= 0)} unweighted vertices"
    assert low <= total.min() and total.max() <= high, (total.min(), total.max())
    assert len(np.unique(np.round(w[w > 0], 6))) > 200
    assert np.count_nonzero(w, axis=1).max() > 1 and (np.count_nonzero(w, axis=1) == 1).mean() < 0.9


def test_mpfb2_weights_are_makehumans_exactly():
    """game_engine/heavy's vertex groups are weights.game_engine.json's body entries, to single precision."""
    m = member("game_engine/heavy")
    c = _character(m)
    expected = np.zeros_like(c.weights)
    source = json.loads((MPFB2 / "rigs" / "standard" / "weights.game_engine.json").read_text())["weights"]
    for name, pairs in source.items():
        for i, weight in pairs:
            if i < len(expected):
                expected[i, c.names.index(name)] = np.float32(weight)
    np.testing.assert_array_equal(c.weights, expected)
    bones = [n for n in source if not any(i < len(expected) for i, _ in source[n])]
    assert bones == ["Root"] and manifest(m)["bones_without_weights"] == ["Root"]


@pytest.mark.parametrize("m", [m for m in FAMILY if m.kind == "mpfb2"], ids=lambda m: m.name)
def test_mpfb2_bones_are_the_rigs_json(m):
    c = _character(m)
    data = json.loads((MPFB2 / "rigs" / "standard" / f"rig.{m.rig}.json").read_text())
    bones = data["bones"] if isinstance(data.get("bones"), dict) else data      # mixamo's JSON wraps its bones
    assert sorted(c.names) == sorted(bones)
    parents = {n: (c.names[p] if p >= 0 else "") for n, p in zip(c.names, c.parents)}
    assert parents == {n: b["parent"] for n, b in bones.items()}


@pytest.mark.parametrize("m", FAMILY, ids=lambda m: m.name)
def test_bone_map_names_existing_bones(m):
    c = _character(m)
    missing = [name for _, name in slots_of(m.bone_map) if name not in c.names]
    assert not missing
    assert manifest(m)["bone_map"] == m.bone_map
    index = {n: b for b, n in enumerate(c.names)}
    heads = {slot: c.heads[index[name]] for slot, name in slots_of(m.bone_map)}
    assert heads["thigh.L"][0] > 0 > heads["thigh.R"][0] and heads["upper_arm.L"][0] > 0 > heads["upper_arm.R"][0]


@pytest.mark.parametrize("m", REDUCED, ids=lambda m: m.name)
def test_bend_reaches_its_angles(m):
    """Elbows and knees 140, hips 100 at frames 25 and 31; shoulders 150, wrists 80, twist 45 at 79 and 85; rest
    angles elsewhere; all measured on the posed bones (within 1 degree; the build measured within 0.01)."""
    c = _character(m)
    bend = load_animation(m, "bend")
    assert bend.fps == 24.0 and bend.frames.tolist() == list(range(1, 110)) and "jump" in bend.names
    rest = bend_angles(c, bend, 1, m.bone_map)
    for frame, pose in BEND_KEYS:
        expected = expected_bend(rest, pose)
        measured = bend_angles(c, bend, frame, m.bone_map)
        misses = {k: round(measured[k] - expected[k], 3) for k in measured if abs(measured[k] - expected[k]) > 1.0}
        assert not misses, (frame, pose, misses)
    stated = manifest(m)["bend"]
    assert stated["largest_miss_deg"] < 0.05 and abs(stated["A"]["elbow.L"] - 140) < 0.05


@pytest.mark.parametrize("m", REDUCED, ids=lambda m: m.name)
def test_first_frames(m):
    """bend's first frame is the rest pose; jump's is the capture's first frame, the feet on the rest floor."""
    c = _character(m)
    bend = load_animation(m, "bend", stride=108)
    assert bend.frames.tolist() == [1, 109] and bend.skew < 1e-4
    for transforms in bend.transforms:
        np.testing.assert_allclose(transforms, np.broadcast_to(np.eye(4), transforms.shape), atol=1e-6)
    jump = load_animation(m, "jump", stride=5)
    assert jump.fps == 30.0 and jump.frames[0] == 1 and jump.frames[-1] >= 681
    first = jump.transforms[0]
    blended = np.einsum("vb,bij->vij", c.weights / c.weights.sum(axis=1, keepdims=True), first)
    posed = np.einsum("vij,vj->vi", blended[:, :3, :3], c.vertices) + blended[:, :3, 3]
    assert abs(posed[:, 2].min() - c.vertices[:, 2].min()) < 0.005
    pelvis = c.names.index(m.bone_map["pelvis"])
    height = (jump.transforms[:, pelvis] @ np.append(c.heads[pelvis], 1.0))[:, 2]
    up = height > height[0] + 0.12
    assert np.count_nonzero(up[1:] & ~up[:-1]) >= 5, "the jumps are missing"


def test_body_shapes_differ():
    """heavy wider than average wider than slim at the waist and the upper arm, on the bodies' own joints."""
    measures = {shape: shape_measures(_character(member(f"game_engine/{shape}")), member("game_engine/heavy").bone_map)
                for shape in ("heavy", "average", "slim")}
    for key in ("waist_area_m2", "waist_width_m", "waist_depth_m", "upper_arm_area_m2", "upper_arm_width_m"):
        assert measures["heavy"][key] > 1.1 * measures["average"][key] > 1.1 * 1.1 * measures["slim"][key], key
    assert measures["heavy"]["upper_arm_area_m2"] > 3 * measures["average"]["upper_arm_area_m2"]
    assert measures == {shape: manifest(member(f"game_engine/{shape}"))["shape_measures"] for shape in measures}
    heights = [np.ptp(_character(member(f"game_engine/{s}")).vertices[:, 2]) for s in ("heavy", "average", "slim")]
    assert heights[0] > heights[1] > heights[2]


def test_average_body_is_the_project_human():
    """Assimp's MakeHuman body (the human's) is MakeHuman's default: the average shape, lifted 0.5 mm, in another
    vertex order (compared coordinate by coordinate, sorted)."""
    average, human = _character(member("default/average")), _character(member("human"))
    lifted = human.vertices - [0.0, 0.0, human.vertices[:, 2].min()]
    gap = np.abs(np.sort(average.vertices, axis=0) - np.sort(lifted, axis=0)).max()
    assert gap < 2e-4, gap


def test_gltf_members_hold_their_files_arrays():
    """The human's and BCN_Epileptic's .blend hold the vertices, weights and bone heads of their .glb."""
    for m, path in ((member("human"), HUMAN_PATH), (member("bcn_epileptic"), CHARACTER_PATH)):
        if not path.is_file():
            pytest.skip(f"{path.name} is missing")
        mine, theirs = _character(m), load_character(path)
        assert mine.names == theirs.names and mine.mesh_names == theirs.mesh_names
        np.testing.assert_allclose(mine.vertices, theirs.vertices, atol=1e-6)
        np.testing.assert_allclose(mine.weights, theirs.weights, atol=1e-7)
        np.testing.assert_allclose(mine.heads, theirs.heads, atol=1e-5)


def _skin_in_world(path, action: str, frame: int, fps=None) -> np.ndarray:
    """The skinned mesh's vertices in world space at a frame of an action, as Blender evaluates them."""
    import bpy

    from characters import _fresh_import, play_action

    _fresh_import(Path(path), fps)
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    play_action(rig, action)
    bpy.context.scene.frame_set(frame)
    body = next(o for o in bpy.data.objects if o.type == "MESH" and o.modifiers).evaluated_get(
        bpy.context.evaluated_depsgraph_get())
    co = np.array([v.co for v in body.data.vertices])
    matrix = np.array(body.matrix_world)
    return co @ matrix[:3, :3].T + matrix[:3, 3]


def test_testwuson_is_turned_and_keeps_its_actions():
    """Testwuson's armature turn is in its bones now (armature space = world: Z up, feet on z = 0, facing -Y, left
    at +X) and its own actions move the skin in the world as in its .glb (to 1e-5 m)."""
    m = member("testwuson")
    c = _character(m)
    assert abs(c.vertices[:, 2].min()) < 1e-4 and c.vertices[:, 2].max() > 1.5 and np.ptp(c.vertices[:, 1]) > 3.2
    index = {n: b for b, n in enumerate(c.names)}
    assert c.heads[index["Neck"], 1] < -0.9 < 1.5 < c.heads[index["Tail06"], 1], "the head is not towards -Y"
    assert c.heads[index["ForeLeg_L_01"], 0] > 0 > c.heads[index["ForeLeg_R_01"], 0]
    assert c.parents[0] == -1 and c.names[0] == "Root" and manifest(m)["added_root_over"] == [
        "Spine_Back01", "Spine_Front01"]
    if not m.source.is_file():
        pytest.skip(f"{m.source.name} is missing")
    for action, frame in (("Wuson_Run", 10), ("Wuson_Walk", 50)):
        gap = np.abs(_skin_in_world(m.source, action, frame, 30) - _skin_in_world(m.path, action, frame)).max()
        assert gap < 1e-5, (action, gap)
