"""``family_closeup.png``: a body of the family (``tests/family.py``, MakeHuman's own weights on its ``default`` rig)
at the deep-bend pose set's pose A (elbows and knees at 140 degrees, hips flexed 100), the left elbow and knee seen
from the side: dual quaternions beside Implicit Skinning, the skin drawn see-through with the vertices that lie
inside the body (deeper than ``core/skin/quality.py`` ``INSIDE_DEPTH``) in red, their count under each panel.

Run alone (Blender 5.0's ``bpy``)::

    python demo/family_closeup.py [OUT_DIR] [--member default/average] [--quick]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

DEMO_DIR = Path(__file__).resolve().parent
REPO = DEMO_DIR.parent
MEMBER = "default/average"
"""The body shown (its weights are MakeHuman's own, its rig not the one the defaults were tried on first)."""
FRAME = 25
"""The pose set's first held frame: pose A."""
JOINTS = (("elbow.L", "forearm.L"), ("knee.L", "shin.L"))
"""(crease region, the segment whose head is the joint) of each row."""
VIEW = (1.0, -0.25, 0.15)
"""Camera direction from the joint (armature space: the character's left side, a little from the front)."""
EXTENT = 0.42
"""Width of each panel's view [m]."""
SKIN = (0.62, 0.46, 0.38)
INSIDE = (0.85, 0.05, 0.04)
SEE_THROUGH = 0.6
"""Opacity of the skin, so the skin inside the body shows."""


def positions(member_name: str = MEMBER, frame: int = FRAME) -> dict:
    """Dual quaternions and Implicit Skinning at ``frame`` of the bend set: ``{panel: (x, inside, count)}``, the
    faces, and the joints' posed heads."""
    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "tools"))
    from pkgpath import make_importable
    make_importable("demo")
    from family import load_animation, load_character, member
    from family_measures import BodyMeasures
    from implicit_muscles.core.skin.deformer import ImplicitSkinDeformer
    from implicit_muscles.core.skin.field import bind_skin_field
    from implicit_muscles.core.skin.quality import INSIDE_DEPTH, measure_inside

    body = member(member_name)
    c = load_character(body)
    skin = bind_skin_field(c.vertices, c.faces, c.weights, c.heads, c.tails, c.parents, bone_names=c.names)
    d = ImplicitSkinDeformer(skin, c.vertices, c.faces, c.weights, bone_names=c.names)
    animation = load_animation(body, "bend")
    B = animation.transforms[int(np.flatnonzero(animation.frames == frame)[0])]
    ours = d.deform(B).copy()
    dqs = d.dqs_positions.copy()
    m = BodyMeasures(body, c, d.own_part, [c.names[b] for b in skin.part_bone])
    index = {n: i for i, n in enumerate(c.names)}
    out = {"faces": c.faces, "joints": {}, "panels": {}}
    for region, segment in JOINTS:
        bone = body.bone_map[segment]
        bone = bone[0] if isinstance(bone, (list, tuple)) else bone
        out["joints"][region] = (B[index[bone]] @ np.append(c.heads[index[bone]], 1.0))[:3]
    for label, x in (("dual quaternions", dqs), ("Implicit Skinning", ours)):
        inside = measure_inside(m.inside_mesh, x)
        deep = np.nan_to_num(inside.depth, nan=-1.0) > INSIDE_DEPTH
        out["panels"][label] = (x, deep, {r: inside.by_region.get(r, (0, 0.0)) for r, _ in JOINTS})
    return out


def render(out_dir: Path, quick: bool = False, member_name: str = MEMBER) -> dict:
    """Render the four panels and join them into ``family_closeup.png``; returns the figure's record."""
    import bpy
    from mathutils import Vector
    from PIL import Image, ImageDraw, ImageFont

    sys.path.insert(0, str(DEMO_DIR))
    import studio

    data = positions(member_name)
    size = 200 if quick else 560
    settings = studio.RenderSettings(size, size, samples=4 if quick else 48)
    tiles, counts = [], []
    for region, _ in JOINTS:
        row = []
        for label, (x, deep, by_region) in data["panels"].items():
            scene = studio.new_scene()
            obj = _coloured_mesh(bpy, "Body", x, data["faces"], deep)
            centre = data["joints"][region]
            direction = Vector(VIEW).normalized()
            cam_data = bpy.data.cameras.new("Camera")
            cam_data.type = 'ORTHO'
            cam_data.ortho_scale = EXTENT
            cam = bpy.data.objects.new("Camera", cam_data)
            scene.collection.objects.link(cam)
            cam.location = Vector(centre) + 2.0 * direction
            cam.rotation_euler = (-direction).to_track_quat('-Z', 'Z').to_euler()
            cam_data.clip_start, cam_data.clip_end = 0.01, 10.0
            scene.camera = cam
            studio.add_lights(centre, EXTENT)
            scene.cycles.transparent_max_bounces = 24
            path = out_dir / "frames" / f"family_{region}_{label.split()[0].lower()}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            studio.render(scene, path, settings)
            count, deepest = by_region[region]
            row.append((path, f"{label}: {count} inside, deepest {1e3 * deepest:.0f} mm"))
            counts.append({"region": region, "method": label, "inside": int(count), "deepest_mm": 1e3 * deepest})
            bpy.data.objects.remove(obj)
        tiles.append(row)
    caption = 28 if not quick else 14
    sheet = Image.new("RGB", (2 * size, 2 * (size + caption)), (235, 235, 235))
    draw = ImageDraw.Draw(sheet)
    try:
        font = ImageFont.truetype(_font(), size=caption - 8)
    except (OSError, TypeError):
        font = ImageFont.load_default()
    for r, row in enumerate(tiles):
        for k, (path, text) in enumerate(row):
            sheet.paste(Image.open(path).convert("RGB"), (k * size, r * (size + caption)))
            draw.text((k * size + 8, r * (size + caption) + size + 3), text, fill=(20, 20, 20), font=font)
    file = out_dir / "family_closeup.png"
    sheet.save(file)
    return {"file": file, "member": member_name, "frame": FRAME, "inside": counts}


def _font():
    from matplotlib import font_manager
    return font_manager.findfont("DejaVu Sans", fallback_to_default=False)


def _coloured_mesh(bpy, name, x, faces, inside):
    """The posed skin, see-through, with the vertices in ``inside (V,)`` red (a colour attribute)."""
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(x).tolist(), [], np.asarray(faces).tolist())
    mesh.polygons.foreach_set("use_smooth", np.ones(len(faces), dtype=bool))
    colour = np.tile([*SKIN, 1.0], (len(x), 1))
    colour[np.asarray(inside)] = [*INSIDE, 1.0]
    attribute = mesh.color_attributes.new("inside", 'FLOAT_COLOR', 'POINT')
    attribute.data.foreach_set("color", colour.ravel().astype(np.float32))
    glow = np.zeros((len(x), 4))
    glow[:, 3] = 1.0
    glow[np.asarray(inside)] = [*INSIDE, 1.0]
    attribute = mesh.color_attributes.new("glow", 'FLOAT_COLOR', 'POINT')
    attribute.data.foreach_set("color", glow.ravel().astype(np.float32))
    material = bpy.data.materials.new("Skin")
    material.use_nodes = True
    nodes = material.node_tree.nodes
    bsdf = nodes["Principled BSDF"]
    read = nodes.new("ShaderNodeAttribute")
    read.attribute_name = "inside"
    material.node_tree.links.new(read.outputs["Color"], bsdf.inputs["Base Color"])
    bright = nodes.new("ShaderNodeAttribute")
    bright.attribute_name = "glow"
    emission = "Emission Color" if "Emission Color" in bsdf.inputs else "Emission"
    material.node_tree.links.new(bright.outputs["Color"], bsdf.inputs[emission])
    if "Emission Strength" in bsdf.inputs:
        bsdf.inputs["Emission Strength"].default_value = 3.0
    bsdf.inputs["Roughness"].default_value = 0.55
    bsdf.inputs["Alpha"].default_value = SEE_THROUGH
    if hasattr(material, "surface_render_method"):
        material.surface_render_method = 'BLENDED'
    mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=REPO / "out" / "demo")
    parser.add_argument("--member", default=MEMBER)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    record = render(args.out, args.quick, args.member)
    print(record["file"], record["inside"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
