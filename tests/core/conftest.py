"""Make the repository importable as ``implicit_muscles`` for the headless core tests (see tools/pkgpath.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from pkgpath import make_importable  # noqa: E402

try:
    import implicit_muscles  # noqa: F401
except ImportError:
    make_importable("core-tests")
