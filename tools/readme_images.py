"""Copy the demo's pictures into docs/images/ at README size (640 px wide), with Blender's image scaling.

Run after `make demo`: `.venv/b50/bin/python tools/readme_images.py [NAME ...]` (only the pictures named, as in
docs/images/; default all).
"""
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WIDTH = 640
"""Width [px] of a README picture, unless ``WIDE`` names it."""
WIDE = {"human_frame.png": 900, "arm_curl_sheet.png": 900, "arm_shake_sheet.png": 900, "arm_shake_curves.png": 990,
        "solvers.png": 900}
"""Pictures whose detail needs more width [px]: the body frame and the contact sheet, the curves' small labels."""
PICTURES = ["muscle_activation.png", "muscle_shapes.png", "muscle_bent.png", "phi_family.png",
            "arm_curl_crease.png", "family_closeup.png", "arm_curl_sheet.png", ("arm_shake_sheet.png", "arm_shake_sheet.png", (0.12, 0.72)),
            "arm_shake_curves.png", "solvers.png",
            ("frames/human_144.png", "human_frame.png", (0.27, 0.98))]
"""Files of out/demo/ to copy, or (file in out/demo/, name in docs/images/[, (top, bottom) rows kept as fractions of
the height from the top]): the human's sheet is six frames tall, the README shows its fourth row, without the empty
space above the bodies; of the arm shake's eight frames, the five after the stop (frames 25 to 38)."""


def _crop_rows(bpy, image, top: float, bottom: float):
    """A new image holding the rows of ``image`` from ``top`` to ``bottom`` (fractions of its height from the top)."""
    import numpy as np

    w, h = image.size
    pixels = np.empty(w * h * 4, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    pixels = pixels.reshape(h, w, 4)  # Blender's rows go bottom-up
    first, last = round(h * (1.0 - bottom)), round(h * (1.0 - top))
    out = bpy.data.images.new(image.name + ".crop", w, last - first, alpha=True)
    out.pixels.foreach_set(np.ascontiguousarray(pixels[first:last]).ravel())
    return out


def main(argv=None) -> int:
    names = set(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="implicit_muscles_readme_"))
    import bpy
    out = REPO / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    for picture in PICTURES:
        source, name, rows = (picture + (None,))[:3] if isinstance(picture, tuple) else (picture, picture, None)
        if names and name not in names:
            continue
        src = REPO / "out" / "demo" / source
        if not src.exists():
            print(f"{src.relative_to(REPO)} is missing: run `make demo` first.", file=sys.stderr)
            return 1
        image = bpy.data.images.load(str(src))
        if rows is not None:
            image = _crop_rows(bpy, image, *rows)
        w, h = image.size
        width = WIDE.get(name, WIDTH)
        image.scale(width, round(h * width / w))
        image.filepath_raw = str(out / name)
        image.file_format = "PNG"
        image.save()
        print(f"docs/images/{name}: {image.size[0]}x{image.size[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
