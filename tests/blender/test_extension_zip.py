"""The built zip for this machine's platform installs into a fresh Blender and runs a muscle on the BUNDLED numba."""
import json
import os
import platform
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SURFACE_TOL = 1e-9
"""|f| at the analytic surface point of a straight muscle [m]."""
REFERENCE_TOL = 1e-12
"""Bundled-numba kernel vs the plain-numpy reference, values and gradients [m]."""


def _host_platform() -> str:
    system = {"linux": "linux", "windows": "windows", "darwin": "macos"}[platform.system().lower()]
    machine = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}[platform.machine().lower()]
    return f"{system}-{machine}"


def _zip_for_this_platform() -> Path:
    with open(REPO_ROOT / "blender_manifest.toml", "rb") as fh:
        manifest = tomllib.load(fh)
    host = _host_platform()
    assert host in manifest["platforms"], f"the manifest does not target this machine's platform {host}"
    path = REPO_ROOT / "dist" / f"{manifest['id']}-{manifest['version']}-{host.replace('-', '_')}.zip"
    if not path.is_file():
        pytest.fail(f"{path.relative_to(REPO_ROOT)} is missing: run `make extension` first.", pytrace=False)
    return path


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    zip_path = _zip_for_this_platform()
    user = tmp_path_factory.mktemp("fresh-blender-user")
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user))
    env.pop("NUMBA_CACHE_DIR", None)
    result = subprocess.run([sys.executable, str(Path(__file__).with_name("install_zip.py")), str(zip_path)],
                            capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT=")]
    assert result.returncode == 0 and lines, f"installing {zip_path.name} failed:\n{result.stdout}\n{result.stderr}"
    return json.loads(lines[-1][len("RESULT="):])


def test_numba_and_llvmlite_come_from_the_bundled_wheels(installed):
    site = Path(installed["wheel_site"])
    assert Path(installed["numba_file"]).is_relative_to(site), installed["numba_file"]
    assert Path(installed["llvmlite_file"]).is_relative_to(site), installed["llvmlite_file"]
    assert installed["numba_version"].startswith("0.62.")
    assert installed["engine_numba_version"] == installed["numba_version"]
    assert installed["engine_error"] == ""


def test_extension_is_installed_and_enabled_from_the_zip(installed):
    extensions = Path(installed["extensions_dir"])
    assert Path(installed["addon_file"]) == extensions / "user_default" / "implicit_muscles" / "__init__.py"


def test_numba_caches_in_the_extension_user_folder(installed):
    cache = Path(installed["cache_dir"])
    assert cache.parent == (Path(installed["extensions_dir"]) / ".user" / "user_default" / "implicit_muscles"
                            / "numba_cache")
    assert len(cache.name) == 12  # the fingerprint of the kernel sources (core/io/kernel_cache.py)
    assert Path(installed["numba_config_cache_dir"]) == cache
    assert installed["cache_files"] > 0, "numba wrote no cache index into the extension's user folder"
    assert installed["compile_result"] == ["FINISHED"]


def test_muscle_field_through_bundled_numba(installed):
    center, surface_x, surface_y, outside = installed["values"]
    assert center < 0.0, "the axis of the muscle must be inside (negative)"
    assert abs(surface_x) < SURFACE_TOL and abs(surface_y) < SURFACE_TOL, installed["values"]
    assert outside > 0.0
    assert installed["grads_shape"] == [4, 3]
    assert installed["max_diff_reference"] < REFERENCE_TOL
