"""Make this repository importable as the package ``implicit_muscles`` outside Blender (tests, demo, benchmarks).

The repository root is the extension package itself, so a folder holding a symlink named ``implicit_muscles`` is
put on ``sys.path``. The folder is ``<system temp>/implicit_muscles-<hash of the repository path>``, fixed per
checkout. ``NUMBA_CACHE_DIR`` defaults to ``.numba_cache/<name>/<fingerprint>`` in the repository (git-ignored):
one folder per import name and per state of the kernel sources (``core/io/kernel_cache.py``). Why the path is fixed
and the cache split: docs/design-notes.md, *A fixed import path outside Blender*.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE_TESTS_CACHE = "core-tests"
"""Cache folder name shared by the core tests and the README tests (same import name and source path)."""


def cache_folder(cache_name: str) -> Path:
    """``.numba_cache/<name>/<fingerprint of the kernel sources>`` (see ``core/io/kernel_cache.py``)."""
    digest = hashlib.sha1()
    for path in sorted((REPO / "kernels").glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return REPO / ".numba_cache" / cache_name / digest.hexdigest()[:12]


def make_importable(cache_name: str) -> Path:
    """Put the ``implicit_muscles`` symlink folder on ``sys.path``; return the folder."""
    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_folder(cache_name)))
    root = Path(tempfile.gettempdir()) / f"implicit_muscles-{hashlib.sha1(str(REPO).encode()).hexdigest()[:12]}"
    root.mkdir(exist_ok=True)
    link = root / "implicit_muscles"
    if not (link.is_symlink() and link.resolve() == REPO):
        staging = root / f"implicit_muscles.{os.getpid()}"
        staging.symlink_to(REPO, target_is_directory=True)
        os.replace(staging, link)  # atomic: a concurrent run sees the old link or the new one
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root


def use_cache(cache_name: str) -> None:
    """Point numba's cache at ``.numba_cache/<name>`` even if numba is already imported (kernels imported later
    use it; numba reads ``NUMBA_CACHE_DIR`` only once, at import)."""
    folder = str(cache_folder(cache_name))
    os.environ["NUMBA_CACHE_DIR"] = folder
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = folder
