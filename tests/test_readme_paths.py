"""The references the documentation and the code make lead somewhere: every repository path the README, the pages
of ``docs/`` and the docstrings and comments of the ``.py`` files name in backticks exists (``core/skin/field.py``,
``blender/``); every link to a heading (``docs/design.md#layers-and-import-order``) and every design note cited by
its title names a heading that exists; and nothing cites a document or a tracker the repository does not hold."""
import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))]
"""The README and every page of ``docs/``."""
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


def python_files() -> list:
    """Every tracked ``.py`` file of the repository: the shipped code, the tests, benchmarks, demo, tools, scenes."""
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout
    return sorted(name for name in listed.splitlines() if (REPO / name).is_file())


def prose(source: str) -> str:
    """The docstrings (every string that stands as a statement of its own, attribute docstrings included) and the
    comments of a Python source, one per line."""
    parts = [node.value.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str)]
    parts += [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
              if tok.type == tokenize.COMMENT]
    return "\n".join(parts)


@pytest.mark.parametrize("doc", DOCS)
def test_named_paths_exist(doc):
    missing = sorted(p for p in named_paths((REPO / doc).read_text()) if not exists(p))
    assert not missing, f"{doc} names paths that do not exist: {missing}"


def test_docstrings_and_comments_name_paths_that_exist():
    files = python_files()
    assert len(files) > 100, "git ls-files found too few .py files"
    missing = [f"{name}: {p}" for name in files for p in sorted(named_paths(prose((REPO / name).read_text())))
               if not exists(p)]
    assert not missing, "docstrings and comments name paths that do not exist:\n" + "\n".join(missing)


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading's text: lowercase, punctuation dropped (letters, digits, ``_``, ``-``
    and spaces kept), each space a ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set:
    """The anchors of every heading of a Markdown page (outside code blocks); a repeated one gets ``-1``, ``-2``."""
    found, seen, fenced = set(), {}, False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            anchor = github_anchor(line.lstrip("#"))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def test_github_anchor_rules():
    assert github_anchor("Axis dynamics (PBD)") == "axis-dynamics-pbd"
    assert github_anchor("Keep-inside iso 0.4 (core/character.py KEEP_INSIDE_ISO)") == \
        "keep-inside-iso-04-corecharacterpy-keep_inside_iso"
    assert github_anchor("A fat's travel: `s`") == "a-fats-travel-s"


REPO_LINK = re.compile(r"\b(docs/[\w-]+\.md)#([\w-]+)")
"""A link to a heading of a page of ``docs/``, as the code and the README write it:
``docs/design.md#data-flow-per-frame``."""
MD_LINK = re.compile(r"\]\(([\w./-]*\.md)?#([\w-]+)\)")
"""A Markdown link with an anchor, its page relative to the linking page (none: the same page)."""
NOTE_TITLE = re.compile(r"design[- ]notes(?:\.md)?(?:,|:)?\s+\(?\*([^*]+)\*")
"""A design note cited by its title in italics: ``design notes, *Compile time*``."""


def _links():
    """``(where, page, anchor)`` of every link to a heading, in the ``.py`` files and the docs."""
    for name in python_files():
        for page, anchor in REPO_LINK.findall((REPO / name).read_text()):
            yield name, REPO / page, anchor
    for doc in DOCS:
        text = (REPO / doc).read_text()
        for page, anchor in REPO_LINK.findall(text):
            yield doc, REPO / page, anchor
        for page, anchor in MD_LINK.findall(text):
            yield doc, ((REPO / doc).parent / page) if page else REPO / doc, anchor


def test_links_to_headings_resolve():
    links = list(_links())
    assert any(page.name == "design.md" for _, page, _ in links), "nothing links to a heading of docs/design.md"
    broken = [f"{where}: {page.relative_to(REPO).as_posix()}#{anchor}" for where, page, anchor in links
              if not page.is_file() or anchor not in anchors(page)]
    assert not broken, "links to headings that do not exist:\n" + "\n".join(sorted(set(broken)))


def test_design_notes_cited_by_title_exist():
    titles = {re.sub(r"\s+", " ", line.lstrip("#").strip()).lower()
              for line in (REPO / "docs" / "design-notes.md").read_text().splitlines() if line.startswith("#")}
    texts = [(name, (REPO / name).read_text()) for name in [*python_files(), *DOCS]]
    missing = [f"{name}: *{title}*" for name, text in texts for title in NOTE_TITLE.findall(text)
               if re.sub(r"\s+", " ", title).lower() not in titles]
    assert not missing, "design notes cited by titles that are no heading of docs/design-notes.md:\n" + \
        "\n".join(missing)


ELSEWHERE = re.compile(r"DESIGN\.md|SEED-NOTE[S]|\b[Ii]ssues? \d+|\b[Ss]eeds? 0\d\d\b|\bseeds[/]|\b\d{3}_[0-9a-f]{16}")
"""Citations of what a clone does not hold: a design document or formula notes kept outside the repository, a
tracker's issue numbers, source texts cited by their file number or name."""


def markdown_files() -> list:
    """Every tracked Markdown file but the README at the root: the pages of ``docs/`` and the folder READMEs."""
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout
    return sorted({*(n for n in listed.splitlines() if n != "README.md" and (REPO / n).is_file()),
                   *(doc for doc in DOCS if doc != "README.md")})


def test_nothing_cites_what_the_repository_does_not_hold():
    texts = [*python_files(), *markdown_files()]
    found = [f"{name}:{k}: {line.strip()[:100]}" for name in texts
             for k, line in enumerate((REPO / name).read_text().splitlines(), 1) if ELSEWHERE.search(line)]
    assert not found, ("cite docs/design.md, docs/formulas.md or docs/design-notes.md, or say it in plain words:\n"
                       + "\n".join(found))
