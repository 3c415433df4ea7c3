"""What each built zip in dist/ holds: its own platform's wheels, the extension sources, and nothing else.

Blender's packager does not warn when a platform gets no wheel, and a stale zip would test old code, so the zips
are checked against the manifest and the source tree. Needs `make extension` first (it does not build anything).
"""
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHIPPED_DIRS = ("core", "kernels", "operators", "panels", "blender", "presets", "farm")
"""Source folders that ship inside the extension."""
NOT_SHIPPED = ("tests/", "bench/", "demo/", "scenes/", "tools/", "out/", "dist/", "build/", ".venv/", ".ci/", ".git/", "Makefile")
REQUIRED_DISTRIBUTIONS = ("numba", "llvmlite")
REQUIRED_PYTHON_TAGS = {"linux-x64": ("cp311", "cp313"), "windows-x64": ("cp311", "cp313"),
                        "macos-arm64": ("cp311", "cp313"), "macos-x64": ("cp311",)}
"""The Pythons of each platform's Blender releases (4.5 LTS, Python 3.11, is the last for Intel Macs)."""
WHEEL_PLATFORM_TAGS = {
    "linux-x64": lambda tag: "linux" in tag and "x86_64" in tag,
    "windows-x64": lambda tag: tag.startswith("win") and "amd64" in tag,
    "macos-arm64": lambda tag: tag.startswith("macosx") and ("arm64" in tag or "universal2" in tag),
    "macos-x64": lambda tag: tag.startswith("macosx") and ("x86_64" in tag or "universal2" in tag),
}

with open(REPO_ROOT / "blender_manifest.toml", "rb") as _fh:
    MANIFEST = tomllib.load(_fh)


def _zip_path(platform: str) -> Path:
    path = REPO_ROOT / "dist" / f"{MANIFEST['id']}-{MANIFEST['version']}-{platform.replace('-', '_')}.zip"
    if not path.is_file():
        pytest.fail(f"{path.relative_to(REPO_ROOT)} is missing: run `make extension` first.", pytrace=False)
    return path


def _wheels(names):
    """(distribution, python tag, platform tag) of each wheel in a zip listing."""
    wheels = []
    for name in names:
        if name.endswith(".whl"):
            parts = Path(name).name[:-len(".whl")].split("-")
            wheels.append((parts[0], parts[-3], parts[-1]))
    return wheels


def _shipped_sources():
    """Source files that must be in every zip, as zip member names."""
    files = ["__init__.py", "blender_manifest.toml", "LICENSE"]
    for folder in SHIPPED_DIRS:
        files += [path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / folder).rglob("*")
                  if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".nbi", ".nbc")]
    return files


def test_manifest_targets_four_platforms():
    assert MANIFEST["platforms"] == ["linux-x64", "windows-x64", "macos-arm64", "macos-x64"]
    assert len(MANIFEST["wheels"]) == len(REQUIRED_DISTRIBUTIONS) * sum(map(len, REQUIRED_PYTHON_TAGS.values()))


@pytest.mark.parametrize("platform", MANIFEST["platforms"])
def test_zip_has_numba_and_llvmlite_for_the_pythons_of_its_platform(platform):
    with zipfile.ZipFile(_zip_path(platform)) as archive:
        wheels = _wheels(archive.namelist())
    foreign = [w for w in wheels if not WHEEL_PLATFORM_TAGS[platform](w[2])]
    assert not foreign, f"wheels of another platform in the {platform} zip: {foreign}"
    found = {(dist, python_tag) for dist, python_tag, _ in wheels}
    pythons = REQUIRED_PYTHON_TAGS[platform]
    missing = [(d, p) for d in REQUIRED_DISTRIBUTIONS for p in pythons if (d, p) not in found]
    assert not missing, f"the {platform} zip lacks wheels for {missing}"
    assert len(wheels) == len(REQUIRED_DISTRIBUTIONS) * len(pythons)


@pytest.mark.parametrize("platform", MANIFEST["platforms"])
def test_zip_has_the_sources_and_a_platform_manifest(platform):
    with zipfile.ZipFile(_zip_path(platform)) as archive:
        names = set(archive.namelist())
        generated = tomllib.loads(archive.read("blender_manifest.toml").decode())
    for required in ("blender_manifest.toml", "__init__.py", "LICENSE"):
        assert required in names
    for folder in ("core/", "kernels/"):
        assert any(name.startswith(folder) and name.endswith(".py") for name in names), f"no {folder} in the zip"
    assert generated["id"] == MANIFEST["id"] and generated["version"] == MANIFEST["version"]
    assert generated["build"]["generated"]["platforms"] == [platform]


@pytest.mark.parametrize("platform", MANIFEST["platforms"])
def test_zip_leaves_out_tests_tools_and_local_files(platform):
    with zipfile.ZipFile(_zip_path(platform)) as archive:
        names = archive.namelist()
    unwanted = [name for name in names
                if name.startswith(NOT_SHIPPED) or "__pycache__/" in name or name.endswith((".pyc", ".nbi", ".nbc"))]
    assert not unwanted, f"the {platform} zip holds files that must not ship: {unwanted[:10]}"


@pytest.mark.parametrize("platform", MANIFEST["platforms"])
def test_zip_matches_the_source_tree(platform):
    with zipfile.ZipFile(_zip_path(platform)) as archive:
        names = set(archive.namelist())
        missing = [name for name in _shipped_sources() if name not in names]
        stale = [name for name in names if not name.endswith(".whl") and name != "blender_manifest.toml"
                 and (not (REPO_ROOT / name).is_file() or archive.read(name) != (REPO_ROOT / name).read_bytes())]
    assert not missing and not stale, (
        f"dist/ is out of date (missing: {missing[:5]}, changed or removed: {stale[:5]}): run `make extension`.")
