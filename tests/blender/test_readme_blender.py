"""Every code block in README.md marked ``<!-- runnable in Blender -->`` runs as it is in Blender with the add-on
enabled, from a fresh empty scene, in a folder where the set-up's character (``make character``) is at
``.cache/character/`` as in the repository; what it promises (the muscles, the binds, the bake) is checked."""
import importlib
import re
from pathlib import Path

import pytest

import blender_session

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- runnable in Blender -->\s*```python\n(.*?)```", re.S)
BLOCKS = BLOCK.findall((REPO / "README.md").read_text())


def test_readme_has_a_blender_script():
    assert len(BLOCKS) >= 1


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_blender_block_runs(bpy, tmp_path, monkeypatch, capsys, index):
    (tmp_path / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[index], f"README.md Blender block {index}", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    rig = next(o for o in bpy.context.scene.objects if o.type == 'ARMATURE')
    assert [m.name for m in rig.implicit_muscles.muscles] == ["biceps_Left", "biceps_Right", "triceps_Left",
                                                               "triceps_Right"]
    assert "['biceps_Left', 'biceps_Right', 'triceps_Left', 'triceps_Right']" in out
    meshes = [o for o in bpy.context.scene.objects if o.type == 'MESH' and o.find_armature() == rig]
    assert len(meshes) == 3 and all(m.implicit_skin.bound and m.implicit_skin.baked for m in meshes)
    bake = importlib.import_module(f"{blender_session.ADDON}.blender.session.bake")
    caches = sorted(p.name for p in (tmp_path / "implicit_muscles_cache" / "character_shot").iterdir())
    assert caches == sorted(f"{bake.mesh_stem(m)}.pc2" for m in meshes)
