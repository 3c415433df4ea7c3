"""Fetch real character data from Debian's packages and convert it to glTF 2 for the tests and benchmarks.

From Assimp's test models (package ``assimp-testmodels``) it takes:

* ``BCN_Epileptic.X``: a skinned human, three meshes (torso, head, legs) on one 54-bone skeleton, in metres.
  Blender has no DirectX .x importer, so the ``assimp`` command-line tool (package ``assimp-utils``) converts it
  to a binary glTF 2 file, which Blender's bundled glTF importer reads (``tests/characters.py``);
* ``Collada/human.zae``: a MakeHuman body (13,380 positions, closed, 1.66 m, A-pose) and its eyes, no skeleton.
  Blender 5.0 has no Collada importer, so assimp converts it too, to ``human.glb`` (unrigged);
* three motion captures, copied as they are into ``captures/``: ``01_01.bvh`` and ``01_03.bvh`` (CMU, 120 fps)
  and ``Boxing_Toes.bvh`` (100 fps);
* ``X/Testwuson.X``: "Wuson", a skinned quadruped (a buffalo-like animal with a tail: 3205 positions, one mesh,
  37 bones, at most 4 weights per vertex, three actions ``Wuson_Bind``, ``Wuson_Walk``, ``Wuson_Run``), 3.24 m
  long and 1.52 m high, in metres. assimp converts it like BCN_Epileptic, to ``.cache/family/testwuson.glb`` (a
  member of the family of ``tools/build_family.py``, which bakes its armature object's turn into the bones).

``tools/rig_human.py`` then rigs, weights and animates the body with those captures (``make character`` runs
both).

Every package is pinned by Debian version and SHA-256 (``PACKAGES`` below). The script:

1. downloads each missing .deb into ``.cache/character/debs/`` with ``apt-get download NAME=VERSION`` (no root
   needed, nothing is installed on the machine; if the package lists lack a pinned version and we run as root,
   ``apt-get update`` runs once and the download is retried),
2. checks every .deb against its pinned SHA-256 (a mismatch deletes nothing and stops with exit code 2),
3. unpacks them with ``dpkg-deb -x`` into ``.cache/character/root/``,
4. runs the unpacked ``assimp export`` of ``BCN_Epileptic.X``, ``human.zae`` and ``Testwuson.X`` (no other
   flags) with ``LD_LIBRARY_PATH`` pointing at the unpacked libraries (libassimp5 and its dependencies libdraco7
   and libminizip1, none of which the machine image has),
5. writes ``.cache/character/bcn_epileptic.glb``, ``.cache/character/human.glb`` and
   ``.cache/family/testwuson.glb``, copies the captures into ``.cache/character/captures/`` (each file atomically)
   and prints the paths.

It is idempotent: a later run finds the outputs and the stamps of the pins that made them
(``bcn_epileptic.stamp.json``, ``human.stamp.json``, ``testwuson.stamp.json``), and only prints the paths; only a
stale output is made again (the .debs are unpacked again for BCN_Epileptic or the human; Testwuson alone reuses
an unpacked tree that holds its files), and the network is needed only while a .deb is missing. ``--force``
makes everything again from the cached .debs. The pins are Debian 12 (bookworm) amd64 packages; ``assimp``'s .glb
output differs by a few bytes from run to run, so the outputs are not pinned (``tests/core/test_character_data.py``
checks what they hold).

Usage: python3 tools/fetch_character.py [--force]     (standard library only; exit code 2 on a problem to fix)
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "character"
DEB_DIR = CACHE / "debs"
UNPACKED = CACHE / "root"
OUTPUT = CACHE / "bcn_epileptic.glb"
STAMP = CACHE / "bcn_epileptic.stamp.json"

SOURCE_MODEL = "usr/share/assimp/models/X/BCN_Epileptic.X"
HUMAN_MODEL = "usr/share/assimp/models/Collada/human.zae"
HUMAN_OUTPUT = CACHE / "human.glb"
HUMAN_STAMP = CACHE / "human.stamp.json"
CAPTURE_SOURCE = "usr/share/assimp/models/BVH"
CAPTURES = ("01_01.bvh", "01_03.bvh", "Boxing_Toes.bvh")
"""Motion captures copied into CAPTURE_DIR: CMU subject 1 (jumps; climbing), 120 fps; boxing, 100 fps."""
CAPTURE_DIR = CACHE / "captures"
TESTWUSON_MODEL = "usr/share/assimp/models/X/Testwuson.X"
FAMILY_CACHE = ROOT / ".cache" / "family"
TESTWUSON_OUTPUT = FAMILY_CACHE / "testwuson.glb"
TESTWUSON_STAMP = FAMILY_CACHE / "testwuson.stamp.json"
ASSIMP = "usr/bin/assimp"
LIB_DIR = "usr/lib/x86_64-linux-gnu"

PACKAGES = (
    # (package, Debian version, architecture, SHA-256 of the .deb)
    ("assimp-testmodels", "5.2.5~ds0-1", "all", "526f326186000cd6f631ea806128548a7d3d391abd8149fddc5c4c8513e80b8a"),
    ("assimp-utils", "5.2.5~ds0-1+b1", "amd64", "2f85ebbe0f6e167f3999a1711d0039717540321fcaae328ed4b6a91d109c7677"),
    ("libassimp5", "5.2.5~ds0-1+b1", "amd64", "d3e0e8c02014cb0a3e94ec8f3dd9b55adcb6fc25f0dafad92e2c683a840ee64e"),
    ("libdraco7", "1.5.5+dfsg-2", "amd64", "d4750e92f07f5e6d355077f0caa1fb4f25b36beb78fab1be0cef250ef28dfa17"),
    ("libminizip1", "1.1-8+deb12u1", "amd64", "b2999b980cbb9e6dcaa2d5154c9d1f1b9d55f5a0ca8166699de7ab47afaf4a36"),
)
"""Debian 12 (bookworm) packages. assimp-utils needs libassimp5, which needs libdraco7 and libminizip1; its other
dependencies (libc6, libstdc++6, libgcc-s1, zlib1g) are part of every Debian system."""

CONVERT_COMMAND = ("assimp", "export", "BCN_Epileptic.X", "bcn_epileptic.glb")
"""What the stamp records as the conversion (the output name's extension picks assimp's glb2 exporter)."""
HUMAN_CONVERT_COMMAND = ("assimp", "export", "human.zae", "human.glb")
"""The human's conversion; no flags (``-jiv -tri`` would leave the body unindexed, 80k vertices)."""
TESTWUSON_CONVERT_COMMAND = ("assimp", "export", "Testwuson.X", "testwuson.glb")
"""Testwuson's conversion, the same as BCN_Epileptic's."""

NETWORK_HINTS = ("Temporary failure resolving", "Could not resolve", "Failed to fetch", "Could not connect",
                 "Connection failed", "Connection timed out", "Network is unreachable", "No route to host")
MISSING_HINTS = ("Unable to locate package", "was not found", "has no installation candidate",
                 "Can't select candidate version", "Can't find a source to download")


class FetchError(Exception):
    """A problem the user has to act on; the message (one line) says what to do."""


def deb_name(package: str, version: str, arch: str) -> str:
    """The file name ``apt-get download`` gives: ``NAME_VERSION_ARCH.deb`` with an epoch's colon as ``%3a``."""
    return f"{package}_{version.replace(':', '%3a')}_{arch}.deb"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pins() -> dict:
    """What the stamp file records: the pinned packages and the conversion command."""
    return {"packages": [list(p) for p in PACKAGES], "convert": list(CONVERT_COMMAND)}


def human_pins() -> dict:
    """What the human's stamp file records: the pinned packages, its conversion command and the captures."""
    return {"packages": [list(p) for p in PACKAGES], "convert": list(HUMAN_CONVERT_COMMAND),
            "captures": list(CAPTURES)}


def testwuson_pins() -> dict:
    """What Testwuson's stamp file records: the pinned packages and its conversion command."""
    return {"packages": [list(p) for p in PACKAGES], "convert": list(TESTWUSON_CONVERT_COMMAND)}


def require_tool(name: str) -> None:
    if shutil.which(name) is None:
        raise FetchError(f"`{name}` is not on this machine: fetching the test character needs Debian's package "
                         f"tools (apt-get, dpkg-deb) on Debian 12 amd64.")


def check_platform() -> None:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise FetchError(f"the pinned converter is a Debian amd64 build; this is {platform.system()} "
                         f"{platform.machine()}: run the fetch on a Debian 12 amd64 machine and copy "
                         f"{CACHE.relative_to(ROOT)}/ here.")


def apt_download(specs: list[str]) -> subprocess.CompletedProcess:
    # -o APT::Sandbox::User=root: when run as root, apt otherwise warns that its _apt user cannot write here.
    sandbox = ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []
    return subprocess.run(["apt-get", "download", "-q", *sandbox, *specs], cwd=DEB_DIR,
                          capture_output=True, text=True)


def first_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("E:", "Err:"))]
    return (errors or lines or ["(no output)"])[0]


def download_missing() -> None:
    """apt-get download every pinned .deb not yet in DEB_DIR."""
    missing = [(p, v, a) for p, v, a, _ in PACKAGES if not (DEB_DIR / deb_name(p, v, a)).is_file()]
    if not missing:
        return
    require_tool("apt-get")
    DEB_DIR.mkdir(parents=True, exist_ok=True)
    specs = [f"{p}={v}" for p, v, _ in missing]
    print(f"downloading {', '.join(specs)} into {DEB_DIR.relative_to(ROOT)}/", file=sys.stderr)
    result = apt_download(specs)
    output = result.stdout + result.stderr
    if result.returncode != 0 and any(hint in output for hint in MISSING_HINTS) and os.geteuid() == 0:
        print("the package lists lack a pinned version: running apt-get update once", file=sys.stderr)
        update = subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True)
        if update.returncode != 0:
            raise FetchError(f"apt-get update failed ({first_error_line(update.stdout + update.stderr)}); check "
                             f"the network access to Debian's package archive.")
        result = apt_download(specs)
        output = result.stdout + result.stderr
    if result.returncode != 0:
        line = first_error_line(output)
        if any(hint in output for hint in NETWORK_HINTS):
            # the cause ("Temporary failure resolving ...") says more than apt's "Err:1 <address>" line
            causes = [text.strip() for text in output.splitlines()
                      if any(hint in text for hint in NETWORK_HINTS if hint != "Failed to fetch")]
            line = (causes or [line])[0]
            raise FetchError(f"cannot reach Debian's package archive ({line}); the first run needs the network, "
                             f"later runs use {DEB_DIR.relative_to(ROOT)}/.")
        if any(hint in output for hint in MISSING_HINTS):
            raise FetchError(f"apt-get cannot find a pinned package ({line}); run `apt-get update` as root, and "
                             f"note the pins are Debian 12 (bookworm) versions.")
        raise FetchError(f"apt-get download failed: {line}")
    for package, version, arch in missing:
        if not (DEB_DIR / deb_name(package, version, arch)).is_file():
            raise FetchError(f"apt-get download reported success but {deb_name(package, version, arch)} is not "
                             f"in {DEB_DIR.relative_to(ROOT)}/.")


def verify_checksums() -> None:
    for package, version, arch, expected in PACKAGES:
        path = DEB_DIR / deb_name(package, version, arch)
        actual = sha256(path)
        if actual != expected:
            raise FetchError(f"checksum mismatch for {path.relative_to(ROOT)}: SHA-256 {actual}, pinned {expected}; "
                             f"delete the file to download it again, or check where it came from.")


def unpack() -> None:
    """dpkg-deb -x every .deb into a fresh UNPACKED folder."""
    require_tool("dpkg-deb")
    shutil.rmtree(UNPACKED, ignore_errors=True)
    UNPACKED.mkdir(parents=True)
    for package, version, arch, _ in PACKAGES:
        result = subprocess.run(["dpkg-deb", "-x", str(DEB_DIR / deb_name(package, version, arch)), str(UNPACKED)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise FetchError(f"dpkg-deb -x {deb_name(package, version, arch)} failed: "
                             f"{first_error_line(result.stderr + result.stdout)}")


def convert(model: str, output: Path) -> None:
    """assimp export MODEL (a path under UNPACKED) -> output, through a temporary file in the same folder."""
    source = UNPACKED / model
    assimp = UNPACKED / ASSIMP
    for path in (source, assimp):
        if not path.is_file():
            raise FetchError(f"{path.relative_to(ROOT)} is missing after unpacking; the pinned packages changed?")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(UNPACKED / LIB_DIR), env.get("LD_LIBRARY_PATH")]))
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=output.stem + ".", suffix=".glb", dir=output.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        result = subprocess.run([str(assimp), "export", source.name, str(tmp)], cwd=source.parent, env=env,
                                capture_output=True, text=True)
        output_text = result.stdout + result.stderr
        if result.returncode != 0 or tmp.stat().st_size == 0:
            if "error while loading shared libraries" in output_text:
                raise FetchError(f"the unpacked assimp cannot start: {first_error_line(output_text)}")
            raise FetchError(f"assimp export {source.name} failed (exit code {result.returncode}): "
                             f"{first_error_line(output_text.replace('assimp export:', 'E:'))}")
        tmp.chmod(0o644)  # mkstemp makes it private
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)


def copy_captures() -> None:
    """Copy the CAPTURES from the unpacked package into CAPTURE_DIR, each through a temporary file."""
    CAPTURE_DIR.mkdir(parents=True, exist_ok=True)
    for name in CAPTURES:
        source = UNPACKED / CAPTURE_SOURCE / name
        if not source.is_file():
            raise FetchError(f"{source.relative_to(ROOT)} is missing after unpacking; the pinned packages changed?")
        tmp = CAPTURE_DIR / f".{name}.tmp"
        shutil.copyfile(source, tmp)
        os.replace(tmp, CAPTURE_DIR / name)


def up_to_date() -> bool:
    """bcn_epileptic.glb exists and its stamp names the current pins."""
    try:
        return OUTPUT.stat().st_size > 0 and json.loads(STAMP.read_text()) == pins()
    except (OSError, ValueError):
        return False


def human_up_to_date() -> bool:
    """human.glb and every capture exist, and the human's stamp names the current pins."""
    try:
        return (HUMAN_OUTPUT.stat().st_size > 0 and all((CAPTURE_DIR / name).stat().st_size > 0 for name in CAPTURES)
                and json.loads(HUMAN_STAMP.read_text()) == human_pins())
    except (OSError, ValueError):
        return False


def testwuson_up_to_date() -> bool:
    """testwuson.glb exists and its stamp names the current pins."""
    try:
        return TESTWUSON_OUTPUT.stat().st_size > 0 and json.loads(TESTWUSON_STAMP.read_text()) == testwuson_pins()
    except (OSError, ValueError):
        return False


def fetch(force: bool = False) -> list[Path]:
    """Make sure every output exists and was made from the pinned packages; return their paths."""
    outputs = [OUTPUT, HUMAN_OUTPUT, CAPTURE_DIR, TESTWUSON_OUTPUT]
    bcn_stale = force or not up_to_date()
    human_stale = force or not human_up_to_date()
    testwuson_stale = force or not testwuson_up_to_date()
    if not (bcn_stale or human_stale or testwuson_stale):
        return outputs
    check_platform()
    CACHE.mkdir(parents=True, exist_ok=True)
    download_missing()
    verify_checksums()
    if bcn_stale or human_stale or not all((UNPACKED / name).is_file() for name in (TESTWUSON_MODEL, ASSIMP)):
        unpack()
    if bcn_stale:
        convert(SOURCE_MODEL, OUTPUT)
        STAMP.write_text(json.dumps(pins(), indent=1) + "\n")
    if human_stale:
        convert(HUMAN_MODEL, HUMAN_OUTPUT)
        copy_captures()
        HUMAN_STAMP.write_text(json.dumps(human_pins(), indent=1) + "\n")
    if testwuson_stale:
        convert(TESTWUSON_MODEL, TESTWUSON_OUTPUT)
        TESTWUSON_STAMP.write_text(json.dumps(testwuson_pins(), indent=1) + "\n")
    return outputs


def main(argv: list[str]) -> int:
    unknown = [arg for arg in argv if arg != "--force"]
    if unknown:
        print(f"fetch_character.py: unknown argument {unknown[0]!r}; usage: fetch_character.py [--force]",
              file=sys.stderr)
        return 2
    try:
        paths = fetch(force="--force" in argv)
    except FetchError as error:
        print(f"fetch_character.py: {error}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
