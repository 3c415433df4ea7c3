"""Download the numba + llvmlite wheels that blender_manifest.toml lists into wheels/.

The manifest is the single source of truth: each listed file name gives the distribution, version, Python tag and
platform to ask pip for. A file already in wheels/ is not downloaded again. The script rewrites nothing: if pip
hands back a file whose name differs from the manifest's (a new build on the registry, a different platform tag),
it stops with a message saying which names to put in the manifest.

Usage: python3.11 tools/fetch_wheels.py   (or `make wheels`)
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "blender_manifest.toml"
WHEEL_DIR = ROOT / "wheels"

# Platform tags to offer pip for each wheel platform family. pip does not widen manylinux tags by itself, so the
# linux list names the common ones; for macOS pip accepts every older macOS version below the one given.
PIP_PLATFORMS = {
    "linux-x64": ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"],
    "windows-x64": ["win_amd64"],
    "macos-arm64": ["macosx_14_0_arm64"],
    "macos-x64": ["macosx_11_0_x86_64"],
}

UNREACHABLE_HINTS = (
    "NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
    "Name or service not known", "ConnectTimeout", "ReadTimeout", "Network is unreachable", "ProxyError",
    "Connection refused",
)


class FetchError(Exception):
    """A problem the user has to act on; the message says what to do."""


def blender_platform(wheel_platform_tag: str) -> str:
    """``manylinux2014_x86_64.manylinux_2_17_x86_64`` -> ``linux-x64``; raise FetchError if unknown."""
    tag = wheel_platform_tag.lower()
    if "linux" in tag and "x86_64" in tag:
        return "linux-x64"
    if tag.startswith("win") and "amd64" in tag:
        return "windows-x64"
    if tag.startswith("macosx") and ("arm64" in tag or "universal2" in tag):
        return "macos-arm64"
    if tag.startswith("macosx") and "x86_64" in tag:
        return "macos-x64"
    raise FetchError(f"blender_manifest.toml lists a wheel for platform tag {wheel_platform_tag!r}, which this "
                     f"script does not know how to download; known platforms: {', '.join(PIP_PLATFORMS)}.")


def manifest_wheels() -> list[str]:
    """File names of the wheels listed in the manifest, in manifest order."""
    with open(MANIFEST, "rb") as fh:
        manifest = tomllib.load(fh)
    paths = manifest.get("wheels", [])
    names = []
    for path in paths:
        if not path.startswith("./wheels/") or "/" in path[len("./wheels/"):]:
            raise FetchError(f"blender_manifest.toml: wheel path {path!r} must look like './wheels/<file>.whl'.")
        names.append(path[len("./wheels/"):])
    if not names:
        raise FetchError("blender_manifest.toml lists no wheels.")
    return names


def group_requests(names: list[str]) -> dict[tuple[str, str], list[str]]:
    """Group wheel names by (Blender platform, Python tag): one pip call per group."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name in names:
        parts = name[:-len(".whl")].split("-")
        if len(parts) != 5:
            raise FetchError(f"blender_manifest.toml: {name!r} is not a wheel name "
                             "(distribution-version-python-abi-platform.whl).")
        _dist, _version, python_tag, _abi, platform_tag = parts
        if not python_tag.startswith("cp") or not python_tag[2:].isdigit():
            raise FetchError(f"blender_manifest.toml: {name!r} is not a CPython wheel (python tag {python_tag!r}).")
        groups[(blender_platform(platform_tag), python_tag)].append(name)
    return groups


def python_version(python_tag: str) -> str:
    """``cp311`` -> ``3.11``."""
    digits = python_tag[2:]
    return f"{digits[0]}.{digits[1:]}"


def requirement(name: str) -> str:
    """``numba-0.62.1-cp311-...whl`` -> ``numba==0.62.1``."""
    dist, version = name.split("-")[:2]
    return f"{dist.replace('_', '-')}=={version}"


def download(platform: str, python_tag: str, names: list[str], into: Path) -> list[str]:
    """Ask pip for the wheels ``names`` (one platform, one Python); return the file names pip saved."""
    command = [
        sys.executable, "-m", "pip", "download",
        "--only-binary=:all:", "--no-deps", "--implementation", "cp",
        "--python-version", python_version(python_tag),
        *[arg for tag in PIP_PLATFORMS[platform] for arg in ("--platform", tag)],
        "--timeout", "60", "--retries", "2", "--progress-bar", "off",
        "--dest", str(into),
        *[requirement(name) for name in names],
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        log = "\n".join(line for line in output.splitlines() if "is ignored: it is neither" not in line)
        if any(hint in output for hint in UNREACHABLE_HINTS):
            raise FetchError(
                "The package registry cannot be reached, so the numba/llvmlite wheels cannot be downloaded.\n"
                "Check the network connection (or pip's proxy / index settings) and run `make wheels` again.\n"
                f"pip said:\n{log[-3000:]}")
        raise FetchError(
            f"pip could not download {', '.join(requirement(n) for n in names)} for {platform}, "
            f"Python {python_version(python_tag)}.\npip said:\n{log[-3000:]}")
    return sorted(path.name for path in into.glob("*.whl"))


def main() -> int:
    names = manifest_wheels()
    WHEEL_DIR.mkdir(exist_ok=True)
    present = {path.name for path in WHEEL_DIR.glob("*.whl") if zipfile.is_zipfile(path)}
    groups = group_requests(names)

    fetched = 0
    for (platform, python_tag), group in sorted(groups.items()):
        missing = [name for name in group if name not in present]
        if not missing:
            continue
        print(f"fetch_wheels: downloading {', '.join(missing)}", flush=True)
        with tempfile.TemporaryDirectory(prefix="fetch-wheels-") as tmp:
            got = download(platform, python_tag, missing, Path(tmp))
            if sorted(missing) != got:
                raise FetchError(
                    "The wheels the registry serves do not match blender_manifest.toml.\n"
                    f"  manifest lists:   {', '.join(sorted(missing))}\n"
                    f"  registry served:  {', '.join(got) or '(nothing)'}\n"
                    "Put the served names in the manifest's `wheels` list (and check the zips with "
                    "`make extension`), or pin versions that match.")
            for name in got:
                shutil.move(str(Path(tmp) / name), WHEEL_DIR / name)
                fetched += 1

    extra = sorted({path.name for path in WHEEL_DIR.glob("*.whl")} - set(names))
    if extra:
        raise FetchError(
            "wheels/ holds wheels that blender_manifest.toml does not list (they would be packed into every zip):\n  "
            + "\n  ".join(extra) + "\nDelete them, or list them in the manifest.")
    print(f"fetch_wheels: {len(names)} wheels in wheels/ match blender_manifest.toml "
          f"({fetched} downloaded, {len(names) - fetched} already present)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FetchError as error:
        print(f"fetch_wheels: ERROR: {error}", file=sys.stderr)
        sys.exit(1)
