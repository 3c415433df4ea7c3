"""Muscle shape presets through Blender's own preset machinery: the shipped presets on Blender's preset path, the
menu applying them with ``script.execute_preset`` and showing the one applied, **-** removing the preset shown but
never a shipped one, user presets in the user's folder across a restart, and the scripting names."""
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import blender_session
from blender_scenes import make_arm

PRESET_SUBDIR = "implicit_muscles/muscle"
MENU = "IMPLICIT_MUSCLES_MT_presets"
SHIPPED = ("Biceps", "Triceps", "Brachialis", "Brachioradialis", "Forearm_Flexors", "Forearm_Extensors", "Deltoid",
           "Pectoral", "Dorsal", "Abdominals", "Gluteus", "Quadriceps", "Hamstrings", "Gastrocnemius")


def _ops(bpy):
    return bpy.ops.implicit_muscles


def _arm_with_muscle(bpy):
    rig, (mesh,) = make_arm(bpy)
    assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", name="calf") == {'FINISHED'}
    return rig, mesh, rig.implicit_muscles.muscles[0]


def _menu_items(bpy) -> dict:
    """The presets menu as drawn: ``{text: (operator idname, properties)}`` for each item."""
    menu = getattr(bpy.types, MENU)
    fake = types.SimpleNamespace(layout=blender_session.ContextRecordingLayout(), bl_idname=MENU,
                                 **{k: getattr(menu, k) for k in dir(menu) if k.startswith("preset_")})
    fake.path_menu = types.MethodType(bpy.types.Menu.path_menu, fake)
    menu.draw(fake, bpy.context)
    return {text: (idname, vars(props)) for idname, text, props, _ in fake.layout.buttons}


def _click(bpy, item):
    """Run a menu item's operator with the properties the menu gave it, as a click does."""
    idname, props = item
    module, name = idname.split(".")
    return getattr(getattr(bpy.ops, module), name)(**props)


def _label(bpy) -> str:
    return getattr(bpy.types, MENU).bl_label


def _panel_menu_text(bpy) -> str:
    layout = blender_session.ContextRecordingLayout()
    bpy.types.IMPLICIT_MUSCLES_PT_muscles_data.draw(types.SimpleNamespace(layout=layout), bpy.context)
    (text,) = [entry[1] for entry in layout.log if entry[0] == "menu" and entry[2] == MENU]
    return text


def _user_preset(bpy, name) -> Path:
    """Where a user preset called ``name`` lives: the user's script folder, which extension updates leave alone."""
    return Path(bpy.utils.user_resource('SCRIPTS', path=os.path.join("presets", PRESET_SUBDIR))) / f"{name}.py"


def test_shipped_presets_are_on_blenders_preset_path(bpy):
    files = {f for folder in bpy.utils.preset_paths(PRESET_SUBDIR) for f in os.listdir(folder)}
    assert {f"{name}.py" for name in SHIPPED} <= files
    assert bpy.utils.preset_find("Forearm Flexors", PRESET_SUBDIR, display_name=True)


def test_the_menu_applies_a_preset_shows_its_name_and_keeps_the_width(bpy):
    rig, _, muscle = _arm_with_muscle(bpy)
    width = muscle.width
    items = _menu_items(bpy)
    assert {"Biceps", "Forearm Flexors", "Gastrocnemius"} <= set(items)
    assert _click(bpy, items["Gastrocnemius"]) == {'FINISHED'}
    assert (muscle.alpha_active, muscle.beta_active) == (4, 8)  # paper Fig. 11
    assert muscle.width == width  # fitted to the limb when added
    assert _label(bpy) == "Gastrocnemius" and _panel_menu_text(bpy) == "Gastrocnemius"


def test_minus_removes_the_preset_shown_and_never_a_shipped_one(bpy):
    rig, _, muscle = _arm_with_muscle(bpy)
    for name, alpha in (("Loose A", 2), ("Loose B", 5)):
        muscle.alpha_rest = alpha
        assert _ops(bpy).save_preset(name=name) == {'FINISHED'}
    assert _label(bpy) == "Loose B"  # the last one saved
    assert _click(bpy, _menu_items(bpy)["Loose A"]) == {'FINISHED'}
    assert muscle.alpha_rest == 2 and _label(bpy) == "Loose A"
    assert _ops(bpy).save_preset(remove_active=True) == {'FINISHED'}
    assert not _user_preset(bpy, "Loose_A").exists() and _user_preset(bpy, "Loose_B").exists()
    assert _label(bpy) == "Presets"
    assert _click(bpy, _menu_items(bpy)["Biceps"]) == {'FINISHED'}
    assert _ops(bpy).save_preset(remove_active=True) == {'CANCELLED'}  # "Unable to remove default presets"
    assert bpy.utils.preset_find("Biceps", PRESET_SUBDIR)


def test_user_presets_live_in_the_user_folder_and_survive_a_restart(bpy):
    rig, _, muscle = _arm_with_muscle(bpy)
    muscle.alpha_rest, muscle.beta_active = 7, 2
    assert _ops(bpy).save_preset(name="My Calf") == {'FINISHED'}
    saved = _user_preset(bpy, "My_Calf")
    assert saved.is_file()
    assert blender_session.REPO_ROOT not in saved.resolve().parents  # not inside the extension
    script = ("import bpy, blender_session\n"
              "blender_session.ensure_repository()\n"
              "blender_session.enable()\n"
              f"print('FOUND', bpy.utils.preset_find('My_Calf', {PRESET_SUBDIR!r}), flush=True)\n"
              "import os\n"
              "os._exit(0)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                            cwd=Path(__file__).parent, env=dict(os.environ))
    found = [line for line in result.stdout.splitlines() if line.startswith("FOUND ")]
    assert found and Path(found[0][len("FOUND "):]).resolve() == saved.resolve(), result.stdout + result.stderr


def test_scripts_apply_presets_by_name_with_the_armature_or_its_mesh_active(bpy):
    rig, (mesh,) = make_arm(bpy)
    assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", preset="biceps") == {'FINISHED'}
    muscle = rig.implicit_muscles.muscles[0]
    assert (muscle.alpha_rest, muscle.beta_rest, muscle.alpha_active, muscle.beta_active) == (3, 3, 4, 7)
    assert _label(bpy) == "Biceps"
    bpy.context.view_layer.objects.active = mesh  # the mesh's armature is found
    width = muscle.width
    assert _ops(bpy).apply_preset(preset="forearm flexors") == {'FINISHED'}
    assert _label(bpy) == "Forearm Flexors" and muscle.width == width
    with pytest.raises(RuntimeError, match="No muscle preset called 'nope'"):
        _ops(bpy).apply_preset(preset="nope")


def test_a_broken_user_preset_is_refused_with_a_sentence(bpy):
    rig, _, muscle = _arm_with_muscle(bpy)
    path = _user_preset(bpy, "Broken")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("import bpy\nmuscle = bpy.context.object.implicit_muscles.active_muscle\n"
                    "muscle.alpha_rest = 4\nmuscle.beta_rest = thre\n", encoding="utf-8")
    before = {name: getattr(muscle, name) for name in ("alpha_rest", "beta_rest", "width")}
    with pytest.raises(RuntimeError, match="The muscle preset Broken could not be applied .*Broken.py"):
        _ops(bpy).apply_preset(preset="broken")
    assert {name: getattr(muscle, name) for name in before} == before  # the lines before the typo are undone
