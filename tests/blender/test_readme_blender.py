"""Every code block of the documentation (README.md, docs/*.md) marked ``<!-- runnable in Blender -->`` runs as it
is in Blender with the add-on enabled, from a fresh empty scene, in a folder where the set-up's character
(``make character``) is at ``.cache/character/`` as in the repository; what a block promises is checked by its entry
in ``PROMISES``."""
import importlib
import sys
from pathlib import Path

import pytest

import blender_session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import IN_BLENDER, REPO, blocks, markers  # noqa: E402

BLOCKS = blocks(IN_BLENDER)


def character_shot(bpy, out, folder):
    """The scripting guide's script: BCN_Epileptic with a biceps and a triceps on each arm, every mesh bound and
    baked next to the saved ``character_shot.blend``."""
    rig = next(o for o in bpy.context.scene.objects if o.type == 'ARMATURE')
    assert [m.name for m in rig.implicit_muscles.muscles] == ["biceps_Left", "biceps_Right", "triceps_Left",
                                                               "triceps_Right"]
    assert "['biceps_Left', 'biceps_Right', 'triceps_Left', 'triceps_Right']" in out
    meshes = [o for o in bpy.context.scene.objects if o.type == 'MESH' and o.find_armature() == rig]
    assert len(meshes) == 3 and all(m.implicit_skin.bound and m.implicit_skin.baked for m in meshes)
    bake = importlib.import_module(f"{blender_session.ADDON}.blender.session.bake")
    caches = sorted(p.name for p in (folder / "implicit_muscles_cache" / "character_shot").iterdir())
    assert caches == sorted(f"{bake.mesh_stem(m)}.pc2" for m in meshes)


PROMISES = {("docs/scripting.md", 0): character_shot}
"""What a block does, checked after it ran, by (page, block index): ``check(bpy, printed, folder)``."""


def test_readme_has_a_blender_script():
    found = {(page, index) for page, index, _ in BLOCKS}
    assert ("docs/scripting.md", 0) in found, "the scripting guide shows a script run in Blender"
    assert set(PROMISES) <= found, f"PROMISES names blocks that do not exist: {sorted(set(PROMISES) - found)}"
    per_page = {page: sum(1 for p, _ in found if p == page) for page in markers(IN_BLENDER)}
    assert per_page == markers(IN_BLENDER), "a runnable-in-Blender marker is not followed by a ```python block"


@pytest.mark.parametrize("page,index,code", BLOCKS, ids=[f"{page}-{index}" for page, index, _ in BLOCKS])
def test_readme_blender_block_runs(bpy, tmp_path, monkeypatch, capsys, page, index, code):
    (tmp_path / ".cache").symlink_to(REPO / ".cache", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page} Blender block {index}", "exec"), {"__name__": "__main__"})
    check = PROMISES.get((page, index))
    if check is not None:
        check(bpy, capsys.readouterr().out, tmp_path)
