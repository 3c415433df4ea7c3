"""Every code block in README.md marked ``<!-- runnable -->`` runs as it is (headless, no Blender)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- runnable -->\s*```python\n(.*?)```", re.S)
BLOCKS = BLOCK.findall((REPO / "README.md").read_text())

PRELUDE = f"""
import sys
sys.path.insert(0, {str(REPO / 'tools')!r})
from pkgpath import CORE_TESTS_CACHE, make_importable
make_importable(CORE_TESTS_CACHE)
"""


def test_readme_has_runnable_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index):
    # a fresh interpreter, as a reader would run it: nothing from the test session leaks in
    out = subprocess.run([sys.executable, "-c", PRELUDE + BLOCKS[index]], capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, f"README block {index} failed:\n{BLOCKS[index]}\n{out.stdout}\n{out.stderr}"
    assert "bpy" not in out.stderr
