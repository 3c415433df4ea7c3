"""Blender (the ``bpy`` module) with the add-on enabled from this source tree, in a child process: the demo's
Blender shots (``demo/shots.py``) and the in-Blender benchmark (``bench/bench_blender.py``) run this way.

Why a child process: ``bpy`` must be imported with ``BLENDER_USER_RESOURCES`` already set (Blender reads it once),
and the parent has usually imported the package under another name (``implicit_muscles``, for the core), while
inside Blender the add-on is ``bl_ext.<repository>.implicit_muscles``.

The Blender user folder is fixed per checkout and per purpose (a folder in the system's temp folder), so the
add-on's numba cache (kept in its extension user folder, ``blender/engine/numba_setup.py``) survives between runs: the
first run compiles the kernels (minutes on 2 cores), later runs load them. Its ``source/implicit_muscles`` is a symlink
to the repository: Blender sees it as a user extension repository. When ``wheels/`` holds the bundled wheels
(``make wheels``), Blender installs them into that user folder and the add-on runs on them, as in a user's
install; otherwise on the environment's numba.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def home(purpose: str) -> Path:
    """The fixed Blender folder of ``purpose`` for this checkout and this Python environment (the Blender 5.0 and
    4.2 environments may run at once): ``config`` (BLENDER_USER_RESOURCES) and ``source/implicit_muscles`` (a
    symlink to the repository)."""
    digest = hashlib.sha1(f"{REPO}\n{sys.prefix}".encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"implicit_muscles-{purpose}-{digest}"
    (folder / "config").mkdir(parents=True, exist_ok=True)
    (folder / "source").mkdir(exist_ok=True)
    link = folder / "source" / "implicit_muscles"
    if not (link.is_symlink() and link.resolve() == REPO):
        staging = folder / "source" / f".implicit_muscles.{os.getpid()}"
        staging.symlink_to(REPO, target_is_directory=True)
        os.replace(staging, link)
    return folder


def run_child(script: Path, args: list, folder: Path, timeout: float, stream: bool = False) -> dict:
    """Run ``python script --child ARGS... --result FILE`` with ``folder``'s Blender user resources; return the
    JSON the child wrote to FILE. ``stream``: the child's output goes to this process's output as it comes (the
    demo), else it is captured and shown only if the child fails (the benchmarks)."""
    env = dict(os.environ)
    env["BLENDER_USER_RESOURCES"] = str(folder / "config")
    env.pop("NUMBA_CACHE_DIR", None)  # the add-on puts its cache in its user folder (blender/engine/numba_setup.py)
    with tempfile.NamedTemporaryFile(suffix=".json", dir=folder, delete=False) as f:
        result = Path(f.name)
    try:
        command = [sys.executable, str(script), "--child", *args, "--result", str(result)]
        if stream:
            proc = subprocess.run(command, env=env, timeout=timeout)
            output = ""
        else:
            proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
            output = f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        if proc.returncode != 0 or result.stat().st_size == 0:
            raise RuntimeError(f"{script.name} child {args[0]} failed (exit code {proc.returncode}):\n{output}")
        return json.loads(result.read_text())
    finally:
        result.unlink(missing_ok=True)


def enable(repo_module: str, name: str):
    """In the child: ``bpy`` with the add-on enabled from the user extension repository ``repo_module`` (made on
    first use, pointing at ``source/`` of the folder BLENDER_USER_RESOURCES belongs to); returns ``bpy``."""
    import bpy  # first: it puts Blender's script modules (addon_utils) on the path
    import addon_utils

    folder = Path(os.environ["BLENDER_USER_RESOURCES"]).parent
    repos = bpy.context.preferences.extensions.repos
    if not any(r.module == repo_module for r in repos):
        repos.new(name=name, module=repo_module, custom_directory=str(folder / "source"), source='USER')
    addon = addon_name(repo_module)
    errors = []
    module = addon_utils.enable(addon, default_set=True, handle_error=errors.append)
    if module is None or errors:
        raise RuntimeError(f"Blender could not enable {addon}: {errors!r}")
    return bpy


def addon_name(repo_module: str) -> str:
    """The add-on's module name in the extension repository ``repo_module``."""
    return f"bl_ext.{repo_module}.implicit_muscles"


def addon_module(repo_module: str, sub: str):
    """A module of the enabled add-on, e.g. ``addon_module("im_demo", "blender.session.runtime")``."""
    return importlib.import_module(f"{addon_name(repo_module)}.{sub}")


def finish_child(result_path, out: dict) -> None:
    """Write the child's JSON result and leave at once, skipping Blender's exit handlers (and any save of user
    preferences)."""
    Path(result_path).write_text(json.dumps(out, indent=2))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
