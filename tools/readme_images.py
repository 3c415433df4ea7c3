"""Copy the demo's pictures into docs/images/ at README size (640 px wide), with Blender's image scaling.

Run after `make demo`: `.venv/b50/bin/python tools/readme_images.py`.
"""
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WIDTH = 640
PICTURES = ["muscle_activation.png", "muscle_shapes.png", "muscle_bent.png", "phi_family.png",
            "arm_curl_crease.png", "arm_curl_sheet.png", "arm_shake_curves.png",
            ("frames/character_032.png", "character_frame.png")]
"""Files of out/demo/ to copy, or (file in out/demo/, name in docs/images/): the character's sheet is six frames
tall, the README shows its third row."""


def main() -> int:
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="implicit_muscles_readme_"))
    import bpy
    out = REPO / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    for picture in PICTURES:
        source, name = picture if isinstance(picture, tuple) else (picture, picture)
        src = REPO / "out" / "demo" / source
        if not src.exists():
            print(f"{src.relative_to(REPO)} is missing: run `make demo` first.", file=sys.stderr)
            return 1
        image = bpy.data.images.load(str(src))
        w, h = image.size
        image.scale(WIDTH, round(h * WIDTH / w))
        image.filepath_raw = str(out / name)
        image.file_format = "PNG"
        image.save()
        print(f"docs/images/{name}: {image.size[0]}x{image.size[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
