"""Every code block of the documentation (README.md, docs/*.md) marked ``<!-- runnable -->`` runs as it is
(headless, no Blender)."""
import subprocess
import sys

import pytest

from readme_blocks import HEADLESS, REPO, blocks, markers

BLOCKS = blocks(HEADLESS)

PRELUDE = f"""
import sys
sys.path.insert(0, {str(REPO / 'tools')!r})
from pkgpath import CORE_TESTS_CACHE, make_importable
make_importable(CORE_TESTS_CACHE)
"""


def test_readme_has_runnable_blocks():
    per_page = {page: sum(1 for p, _, _ in BLOCKS if p == page) for page, _ in markers(HEADLESS).items()}
    assert per_page["docs/scripting.md"] >= 2, "the scripting guide shows the core without Blender in runnable blocks"
    assert per_page == markers(HEADLESS), "a runnable marker is not followed by a ```python block"


@pytest.mark.parametrize("page,index,code", BLOCKS, ids=[f"{page}-{index}" for page, index, _ in BLOCKS])
def test_readme_block_runs(page, index, code):
    # a fresh interpreter, as a reader would run it: nothing from the test session leaks in
    out = subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{page} block {index} failed:\n{code}\n{out.stdout}\n{out.stderr}"
    assert "bpy" not in out.stderr
