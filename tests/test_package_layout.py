"""The layout rules of DESIGN.md §1 and §3, checked on the source: who may import bpy, relative imports only."""
import ast
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
HEADLESS_DIRS = ("core", "kernels")
"""Folders that must run without Blender: no bpy, no mathutils, no other Blender module."""
BLENDER_MODULES = {"bpy", "bpy_extras", "mathutils", "bmesh", "gpu", "gpu_extras", "addon_utils", "bl_ui", "blf"}
SHIPPED_DIRS = ("core", "kernels", "operators", "panels", "blender")
OWN_NAMES = {"implicit_muscles", "bl_ext", *SHIPPED_DIRS}
"""Absolute imports of these would break once Blender loads the package as bl_ext.<repo>.implicit_muscles."""


def _imports(path: Path):
    """(line, top-level module name) of every absolute import in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.partition(".")[0]


def _python_files(*folders):
    for folder in folders:
        yield from sorted((REPO_ROOT / folder).rglob("*.py"))


def test_core_and_kernels_never_import_blender():
    found = [f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
             for path in _python_files(*HEADLESS_DIRS) for line, name in _imports(path) if name in BLENDER_MODULES]
    assert not found, "core/ and kernels/ must run without Blender:\n" + "\n".join(found)


def test_shipped_code_uses_relative_imports_only():
    files = [REPO_ROOT / "__init__.py", *_python_files(*SHIPPED_DIRS)]
    found = [f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
             for path in files for line, name in _imports(path) if name in OWN_NAMES]
    assert not found, "use relative imports inside the extension:\n" + "\n".join(found)


def _source_folders():
    """Every folder of the repository that holds a tracked file, hidden folders (``.ci``) aside."""
    listed = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    folders = {Path(name).parent for name in listed.splitlines()}
    return sorted(folder for folder in folders
                  if folder != Path(".") and not any(part.startswith(".") for part in folder.parts))


def test_every_folder_says_what_lives_there():
    missing = [folder.as_posix() for folder in _source_folders() if not (REPO_ROOT / folder / "README.md").is_file()]
    assert not missing, f"folders without a README.md: {missing}"


def _relative_targets(path: Path):
    """(line, resolved top-level folder) of every relative import in a shipped or scenes file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = path.relative_to(REPO_ROOT).parent.parts
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
            parts = [*base, *(node.module.split(".") if node.module else [])]
            if not parts:  # the package root: its names
                parts = [alias.name for alias in node.names]
                for name in parts:
                    yield node.lineno, name
            else:
                yield node.lineno, parts[0]


def test_kernels_never_import_core():
    found = [f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
             for path in _python_files("kernels") for line, name in _relative_targets(path) if name != "kernels"]
    assert not found, "kernels/ depend on nothing of the package but each other:\n" + "\n".join(found)


def test_shipped_code_never_imports_the_scenes():
    files = [REPO_ROOT / "__init__.py", *_python_files(*SHIPPED_DIRS)]
    found = [f"{path.relative_to(REPO_ROOT)}:{line} imports scenes"
             for path in files for line, name in _relative_targets(path) if name == "scenes"]
    assert not found, "scenes/ is not shipped in the extension:\n" + "\n".join(found)
