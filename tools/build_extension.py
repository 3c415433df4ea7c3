"""Build the per-platform extension zips into dist/ and check that each holds its numba + llvmlite wheels.

Runs Blender's own packager, ``blender_ext.py build --split-platforms``, which ships inside the bpy wheel
(``bpy/<version>/scripts/addons_core/bl_pkg/cli/blender_ext.py``), so no Blender binary is needed. The packager
silently leaves a platform without wheels when none match it, so every zip is opened and checked afterwards.

Usage: .venv/b50/bin/python tools/build_extension.py   (or `make extension`)
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "blender_manifest.toml"
DIST = ROOT / "dist"

REQUIRED_DISTRIBUTIONS = ("numba", "llvmlite")
REQUIRED_PYTHON_TAGS = ("cp311", "cp313")
PLATFORM_PYTHON_TAGS = {"macos-x64": ("cp311",)}
"""Platforms whose Blender releases all run one Python: Blender 4.5 LTS (Python 3.11) is the last for Intel Macs."""


class BuildError(Exception):
    """The build failed or produced a zip that would not work; the message says why."""


def blender_ext_script() -> Path:
    """Path of ``blender_ext.py`` inside the installed bpy wheel."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(f"bpy is not installed for {sys.executable}; run `make venv` and use .venv/b50/bin/python.")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
        if found:
            return found[-1]
    raise BuildError("blender_ext.py was not found inside the bpy wheel (expected "
                     "bpy/<version>/scripts/addons_core/bl_pkg/cli/blender_ext.py).")


def wheel_platform_matches(platform: str, wheel_platform_tag: str) -> bool:
    """Whether a wheel's platform tag (``win_amd64``, ``manylinux2014_x86_64...``) belongs to a Blender platform."""
    tag = wheel_platform_tag.lower()
    return {
        "linux-x64": "linux" in tag and "x86_64" in tag,
        "windows-x64": tag.startswith("win") and "amd64" in tag,
        "macos-arm64": tag.startswith("macosx") and ("arm64" in tag or "universal2" in tag),
        "macos-x64": tag.startswith("macosx") and ("x86_64" in tag or "universal2" in tag),
    }.get(platform, False)


def required_python_tags(platform: str) -> tuple:
    """The Python tags a platform's zip needs wheels for (``REQUIRED_PYTHON_TAGS`` unless ``PLATFORM_PYTHON_TAGS``
    says otherwise)."""
    return PLATFORM_PYTHON_TAGS.get(platform, REQUIRED_PYTHON_TAGS)


def zip_problems(zip_path: Path, platform: str) -> list[str]:
    """What is wrong with one platform's zip: missing or foreign wheels. Empty if nothing."""
    with zipfile.ZipFile(zip_path) as archive:
        wheels = [name for name in archive.namelist() if name.endswith(".whl")]
    problems = []
    found = set()
    for name in wheels:
        parts = Path(name).name[:-len(".whl")].split("-")
        dist, python_tag, platform_tag = parts[0], parts[-3], parts[-1]
        if not wheel_platform_matches(platform, platform_tag):
            problems.append(f"{zip_path.name}: holds {name}, which is not a {platform} wheel")
        found.add((dist, python_tag))
    for dist in REQUIRED_DISTRIBUTIONS:
        for python_tag in required_python_tags(platform):
            if (dist, python_tag) not in found:
                problems.append(f"{zip_path.name}: no {dist} wheel for {python_tag} ({platform})")
    return problems


def main() -> int:
    with open(MANIFEST, "rb") as fh:
        manifest = tomllib.load(fh)
    missing = [path for path in manifest.get("wheels", []) if not (ROOT / path).is_file()]
    if missing:
        raise BuildError("wheels listed in blender_manifest.toml are missing (run `make wheels`):\n  "
                         + "\n  ".join(missing))

    DIST.mkdir(exist_ok=True)
    for old in DIST.glob(f"{manifest['id']}-*.zip"):
        old.unlink()

    command = [sys.executable, str(blender_ext_script()), "build",
               "--source-dir", str(ROOT), "--output-dir", str(DIST), "--split-platforms"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"blender_ext.py build failed:\n{result.stdout}{result.stderr}")

    problems = []
    for platform in manifest["platforms"]:
        zip_path = DIST / f"{manifest['id']}-{manifest['version']}-{platform.replace('-', '_')}.zip"
        if not zip_path.is_file():
            problems.append(f"{zip_path.name} was not built (blender_ext.py said:\n{result.stdout}{result.stderr})")
            continue
        problems += zip_problems(zip_path, platform)
        size = zip_path.stat().st_size / 2**20
        print(f"build_extension: {zip_path.relative_to(ROOT)} ({size:.0f} MiB)")
    if problems:
        raise BuildError("the extension zips are incomplete:\n  " + "\n  ".join(problems))
    tags = "; ".join(f"{platform}: {' and '.join(required_python_tags(platform))}"
                     for platform in manifest["platforms"])
    print(f"build_extension: every zip holds numba and llvmlite for its Pythons ({tags})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BuildError as error:
        print(f"build_extension: ERROR: {error}", file=sys.stderr)
        sys.exit(1)
