"""Every repository path the README and the design notes name in backticks exists (``core/skin/field.py``,
``blender/``), so the layout they describe is the layout on disk."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "docs/design-notes.md", "docs/farm.md"]
TOP = ("core/", "kernels/", "blender/", "operators/", "panels/", "presets/", "scenes/", "tests/", "bench/", "demo/",
       "tools/", "docs/")
PATH = re.compile(r"`([\w./-]+)`")
PLACEHOLDER = re.compile(r"\.\.\.|/[A-Z]\.py$")
"""Placeholders such as ``core/.../Y.py`` or ``kernels/X.py`` name no file."""


def named_paths(text: str) -> set:
    """Backticked words that start with a top-level folder of the repository: ``core/skin/field.py``."""
    return {m for m in PATH.findall(text) if m.startswith(TOP) and "<" not in m and "*" not in m
            and not PLACEHOLDER.search(m)}


def exists(path: str) -> bool:
    """``path`` exists, or names a module attribute: ``core/frame_cache.FrameCache`` -> ``core/frame_cache.py``."""
    module, dot, _ = path.partition(".")
    return (REPO / path).exists() or bool(dot and not path.endswith((".py", ".md", ".toml", ".txt", ".json"))
                                      and (REPO / f"{module}.py").is_file())


@pytest.mark.parametrize("doc", DOCS)
def test_named_paths_exist(doc):
    missing = sorted(p for p in named_paths((REPO / doc).read_text()) if not exists(p))
    assert not missing, f"{doc} names paths that do not exist: {missing}"
