"""Muscle shape presets through Blender's own preset machinery.

A preset is a Blender preset file (``muscle = bpy.context.object.implicit_muscles.active_muscle`` then one
``muscle.<field> = value`` line per ``SHAPE_FIELDS``). The shipped ones live in
``presets/implicit_muscles/muscle/`` inside the extension, whose root is registered with
``bpy.utils.register_preset_path`` (Blender looks for ``presets/<subdir>`` under a registered folder); the user's
own are written by ``AddPresetBase`` into the user's script folder (``presets/implicit_muscles/muscle/``), which
an update or reinstall of the extension leaves alone. ``bpy.utils.preset_paths(PRESET_SUBDIR)`` lists both.

Applying a preset goes through ``script.execute_preset``, from the menu or from :func:`apply_preset_file`: it sets
the menu's label to the preset's name, so the panel shows it and **-** removes that preset. Blender refuses to
remove a preset inside an extension, so the shipped ones cannot be deleted from the panel. A preset keeps the
muscle's width (``remember_muscle`` and ``keep_width``, the menu's ``reset_cb`` and ``post_cb``): the width is
fitted to the limb when the muscle is added, and a preset's width would be relative to nothing.
"""
from __future__ import annotations

import os

import bpy

from ..scene.rig import armature_of

PRESET_SUBDIR = os.path.join("implicit_muscles", "muscle")
EXTENSION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The extension's folder, which holds ``presets/``: the path given to ``bpy.utils.register_preset_path``."""
MENU = "IMPLICIT_MUSCLES_MT_presets"
"""The presets menu (``operators/muscles.py``); its ``bl_label`` is the preset last applied or saved."""
NO_PRESET_LABEL = "Presets"
"""The menu's label while no preset has been applied or saved (Blender's own, after a removal)."""
SHAPE_FIELDS = ("alpha_rest", "beta_rest", "alpha_active", "beta_active", "eccentricity_rest",
                "eccentricity_active", "width", "stiffness", "fibres", "origin_spread", "insertion_spread")
"""What a saved muscle preset holds (its shape and feel, never its bones or position; the width is kept)."""

_before: tuple | None = None  # (armature name, muscle path, {field: value}) of the muscle a preset last ran on


def register() -> None:
    bpy.utils.register_preset_path(EXTENSION_ROOT)


def unregister() -> None:
    bpy.utils.unregister_preset_path(EXTENSION_ROOT)


def _key(name: str) -> str:
    return name.lower().replace(" ", "_")


def find_preset(name: str) -> str | None:
    """The preset file called ``name`` (file name without ``.py``; case, spaces and underscores alike), the user's
    first, then the shipped ones; or None."""
    for folder in bpy.utils.preset_paths(PRESET_SUBDIR):
        for file in sorted(os.listdir(folder)):
            if file.endswith(".py") and _key(file[:-3]) == _key(name):
                return os.path.join(folder, file)
    return None


def preset_label(path: str) -> str:
    """The name the menu shows for a preset file (as ``script.execute_preset`` sets it)."""
    return bpy.path.display_name(os.path.basename(path), title_case=False)


def shown_preset() -> str:
    """The menu's label: the preset last applied or saved, or ``NO_PRESET_LABEL``."""
    menu = getattr(bpy.types, MENU, None)
    return menu.bl_label if menu is not None else NO_PRESET_LABEL


def _active_muscle(context):
    """``(armature, its active muscle)`` of the context's object (or of the active mesh's armature); either may
    be None."""
    armature = armature_of(context.object)
    return armature, (armature.implicit_muscles.active_muscle if armature is not None else None)


def _same_muscle(armature, muscle) -> bool:
    return muscle is not None and _before is not None and _before[:2] == (armature.name_full, muscle.path_from_id())


def remember_muscle(context, _filepath=None) -> None:
    """Before a preset runs: remember the active muscle's ``SHAPE_FIELDS`` (the menu's ``reset_cb``)."""
    global _before
    armature, muscle = _active_muscle(context)
    _before = None if muscle is None else (armature.name_full, muscle.path_from_id(),
                                           {field: getattr(muscle, field) for field in SHAPE_FIELDS})


def keep_width(context, _filepath=None) -> None:
    """After a preset ran: give the active muscle back the width it had (the menu's ``post_cb``)."""
    armature, muscle = _active_muscle(context)
    if _same_muscle(armature, muscle) and muscle.width != _before[2]["width"]:
        muscle.width = _before[2]["width"]


def _undo_preset(armature) -> None:
    """Give the active muscle of ``armature`` back every value the last preset may have written."""
    muscle = armature.implicit_muscles.active_muscle
    if _same_muscle(armature, muscle):
        for field, value in _before[2].items():
            if getattr(muscle, field) != value:
                setattr(muscle, field, value)


def apply_preset_file(path: str, armature=None) -> None:
    """Apply the preset file ``path`` to the active muscle of ``armature`` (default: the context's, or the active
    mesh's armature) with ``script.execute_preset``, as the menu does. A file that cannot run changes nothing and
    raises ``ValueError`` with a plain sentence."""
    context = bpy.context
    armature = armature if armature is not None else armature_of(context.object)
    if armature is None or armature.implicit_muscles.active_muscle is None:
        raise ValueError("Select an armature with a muscle (or a mesh bound to one) to apply a preset.")
    try:
        with context.temp_override(object=armature):
            bpy.ops.script.execute_preset(filepath=path, menu_idname=MENU)
    except RuntimeError as ex:
        _undo_preset(armature)
        lines = [line for line in str(ex).splitlines() if line.strip()]
        detail = lines[-1].removeprefix("Error: ") if lines else type(ex).__name__
        raise ValueError(f"The muscle preset {preset_label(path)} could not be applied ({detail}); "
                         f"fix or remove the file {os.path.basename(path)}.") from None
