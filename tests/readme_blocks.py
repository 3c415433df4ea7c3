"""The code blocks of the documentation pages (README.md and every ``docs/*.md``) that the tests run.

A block is a fenced ```python block right after a line that holds only its marker: ``<!-- runnable -->`` (run
headless, no Blender) or ``<!-- runnable in Blender -->`` (run in Blender with the add-on enabled). A marker named
inside a sentence is not a marker line."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADLESS = "<!-- runnable -->"
IN_BLENDER = "<!-- runnable in Blender -->"


def pages() -> list:
    """The pages, as paths relative to the repository: README.md first, then docs/*.md by name."""
    return ["README.md"] + sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))


def blocks(marker: str) -> list:
    """``(page, index, code)`` for every block of that marker, ``index`` counting that marker's blocks in the page."""
    found = []
    for page in pages():
        code = re.findall(rf"^{re.escape(marker)}[ \t]*\n\s*```python\n(.*?)^```", (REPO / page).read_text(),
                          re.S | re.M)
        found += [(page, index, text) for index, text in enumerate(code)]
    return found


def markers(marker: str) -> dict:
    """How many marker lines each page holds, whether a python block follows them or not."""
    line = re.compile(rf"^{re.escape(marker)}[ \t]*$", re.M)
    return {page: len(line.findall((REPO / page).read_text())) for page in pages()}
