"""blender_manifest.toml checked by the packager that ships inside this environment's bpy wheel (``blender_ext.py``),
as ``blender --command extension validate`` checks it (with Blender's own list of tags), and what the issue asked
of it: the files permission and why, tags, a website, and numba + llvmlite for every platform it names."""
import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
with open(REPO_ROOT / "blender_manifest.toml", "rb") as _fh:
    MANIFEST = tomllib.load(_fh)
PYTHONS = {"linux-x64": {"cp311", "cp313"}, "windows-x64": {"cp311", "cp313"}, "macos-arm64": {"cp311", "cp313"},
           "macos-x64": {"cp311"}}
"""The Pythons of each platform's Blender releases (4.5 LTS, Python 3.11, is the last for Intel Macs)."""


def _bpy_scripts() -> Path:
    """``bpy/<version>/scripts`` of the installed bpy wheel (found without importing bpy)."""
    spec = importlib.util.find_spec("bpy")
    assert spec is not None and spec.submodule_search_locations, "no bpy module in this environment"
    found = [p for location in spec.submodule_search_locations for p in sorted(Path(location).glob("*/scripts"))]
    assert found, "the bpy wheel has no scripts folder"
    return found[-1]


def _blender_ext() -> Path:
    return _bpy_scripts() / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"


def _validate(source: Path) -> subprocess.CompletedProcess:
    """``blender_ext.py validate`` with the tags Blender accepts, as Blender's ``extension validate`` runs it."""
    tags = _bpy_scripts() / "modules" / "_bpy_internal" / "extensions" / "tags.py"
    return subprocess.run([sys.executable, str(_blender_ext()), "validate", "--valid-tags", str(tags), str(source)],
                          capture_output=True, text=True, timeout=120)


def test_the_manifest_validates_with_blenders_packager_and_tags():
    result = _validate(REPO_ROOT)
    assert result.returncode == 0 and "Success" in result.stdout, result.stdout + result.stderr


def test_the_validation_refuses_a_tag_blender_does_not_know(tmp_path):
    text = (REPO_ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    assert 'tags = ["Animation", "Rigging", "Physics"]' in text
    (tmp_path / "blender_manifest.toml").write_text(text.replace('"Physics"', '"Muscles"'), encoding="utf-8")
    shutil.copy(REPO_ROOT / "__init__.py", tmp_path / "__init__.py")
    result = _validate(tmp_path)
    assert result.returncode != 0 and 'invalid tag "Muscles"' in result.stdout + result.stderr


def test_the_manifest_asks_for_files_and_says_why():
    assert MANIFEST["permissions"] == {"files": "Bake point caches next to the .blend and cache compiled kernels"}
    assert MANIFEST["tags"] == ["Animation", "Rigging", "Physics"]
    assert MANIFEST["website"].startswith("https://")


@pytest.mark.parametrize("platform", sorted(PYTHONS))
def test_blender_packs_numba_and_llvmlite_for_each_python_of_each_platform(platform):
    spec = importlib.util.spec_from_file_location("blender_ext", _blender_ext())
    blender_ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(blender_ext)
    assert platform in MANIFEST["platforms"]
    packed = blender_ext.paths_filter_wheels_by_platform(MANIFEST["wheels"], platform)
    found = {tuple(Path(w).name.split("-")[i] for i in (0, 2)) for w in packed}
    assert found == {(dist, python) for dist in ("numba", "llvmlite") for python in PYTHONS[platform]}
