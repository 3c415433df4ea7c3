"""Make the repository importable as ``implicit_muscles`` for the headless core tests (see tools/pkgpath.py).

The Blender tests, when they run first in the same session, point numba's cache at the add-on's user folder;
the headless package (another import name) gets its own folder back here, ``.numba_cache/core-tests``, which the
README tests share (same import name, same source path).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from pkgpath import CORE_TESTS_CACHE, make_importable, use_cache  # noqa: E402

try:
    import implicit_muscles  # noqa: F401
except ImportError:
    make_importable(CORE_TESTS_CACHE)
use_cache(CORE_TESTS_CACHE)
