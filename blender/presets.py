"""Muscle shape presets: where they are, finding one by name, applying one to the active muscle.

Presets are Blender preset files (``muscle = bpy.context.object.implicit_muscles.active_muscle`` then one
``muscle.<field> = value`` line per ``SHAPE_FIELDS``): the ones shipped in ``presets/implicit_muscles/muscle``,
then the user's (``bpy.utils.preset_paths``).
"""
from __future__ import annotations

import os

import bpy

PRESET_SUBDIR = os.path.join("implicit_muscles", "muscle")
SHIPPED_PRESETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "presets")
SHAPE_FIELDS = ("alpha_rest", "beta_rest", "alpha_active", "beta_active", "eccentricity_rest",
                "eccentricity_active", "width", "stiffness", "fibres", "origin_spread", "insertion_spread")
"""What a muscle preset sets (its shape and feel, never its bones or position)."""


def preset_paths() -> list:
    """Folders holding muscle presets: the ones shipped with the extension, then the user's."""
    paths = [os.path.join(SHIPPED_PRESETS, PRESET_SUBDIR)]
    for p in bpy.utils.preset_paths(PRESET_SUBDIR):
        if os.path.normpath(p) not in map(os.path.normpath, paths):
            paths.append(p)
    return [p for p in paths if os.path.isdir(p)]


def find_preset(name: str) -> str | None:
    """The preset file called ``name`` (file name without ``.py``, case and spaces ignored), or None."""
    key = name.lower().replace(" ", "_")
    for folder in preset_paths():
        for file in sorted(os.listdir(folder)):
            if file.endswith(".py") and file[:-3].lower().replace(" ", "_") == key:
                return os.path.join(folder, file)
    return None


def apply_preset_file(path: str) -> None:
    """Run a preset file (Blender's preset format: it binds ``muscle`` to the active muscle, then sets
    ``muscle.<field> = value`` lines) on the active muscle."""
    with open(path, encoding="utf-8") as f:
        code = f.read()
    exec(compile(code, path, "exec"), {"bpy": bpy, "__file__": path})
