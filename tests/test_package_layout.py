"""The layout rules of docs/design.md#layers-and-import-order, checked on the source: who may import bpy, relative
imports only, the Blender side's layers (``LAYERS`` of ``blender/__init__.py``): no import up the layers, no import
circle, and the size of the headless code's functions (``MAX_PARAMETERS``, ``MAX_LINES``, their exceptions in
``SIZE_EXCEPTIONS``)."""
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


BLENDER_SIDE = ("blender", "operators", "panels")
"""The Blender side of the extension: ``blender/`` in layers, then ``operators/`` and ``panels/`` above it all."""
LAZY = "# lazy:"
"""The comment that keeps an import of the Blender side inside a function, and says why (start-up cost)."""


def _layers() -> tuple:
    """``LAYERS`` of ``blender/__init__.py``: its sub-packages from the bottom up (empty if it writes none down)."""
    tree = ast.parse((REPO_ROOT / "blender" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "LAYERS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def _module_name(path: Path) -> str:
    """``blender/scene/rig.py`` -> ``blender.scene.rig``; ``blender/scene/__init__.py`` -> ``blender.scene``."""
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    path = REPO_ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _function_lines(tree) -> set:
    """The line numbers of every import made inside a function body."""
    lines = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.update(node.lineno for node in ast.walk(fn) if isinstance(node, ast.ImportFrom))
    return lines


def _own_imports(path: Path):
    """``(line, module, in a function)`` of every module of this repository that a relative import in ``path``
    loads, at module top or inside a function: the module named, or its package (``__init__.py``) when the name is
    not a submodule, and the packages on the way that are not ``path``'s own."""
    tree = ast.parse(path.read_text(), filename=str(path))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    own = {".".join(package.split(".")[:k]) for k in range(1, len(package.split(".")) + 1)}
    inside = _function_lines(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        parts = package.split(".")
        base = parts[:len(parts) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        found = {f"{target}.{alias.name}" if _is_module(f"{target}.{alias.name}") else target
                 for alias in node.names}
        for module in sorted(found):
            steps = module.split(".")
            for k in range(1, len(steps) + 1):
                step = ".".join(steps[:k])
                if step and step not in own and _is_module(step):
                    yield node.lineno, step, node.lineno in inside


def _blender_side_graph() -> dict:
    """``{module: {module it imports: (path, line, in a function)}}`` over the Blender side, from the source."""
    graph = {}
    for path in _python_files(*BLENDER_SIDE):
        edges = graph.setdefault(_module_name(path), {})
        for line, target, in_function in _own_imports(path):
            if target.partition(".")[0] in BLENDER_SIDE:
                edges.setdefault(target, (path.relative_to(REPO_ROOT).as_posix(), line, in_function))
    return graph


def _rank(module: str, layers: tuple):
    """The floor of a Blender-side module: its layer's place in ``layers``; ``operators/`` and ``panels/`` stand
    above every layer; None for ``blender/__init__.py`` and for a module of ``blender/`` in no layer."""
    parts = module.split(".")
    if parts[0] != "blender":
        return len(layers)
    return layers.index(parts[1]) if len(parts) > 1 and parts[1] in layers else None


def _floor_name(rank: int, layers: tuple) -> str:
    return layers[rank] if rank < len(layers) else "operators/panels"


def test_blender_writes_its_layer_order_down_once():
    layers = _layers()
    assert layers, "blender/__init__.py must write down LAYERS: its sub-packages from the bottom up"
    packages = sorted(p.parent.name for p in (REPO_ROOT / "blender").glob("*/__init__.py"))
    assert sorted(layers) == packages and len(set(layers)) == len(layers), \
        f"LAYERS {layers} must name each sub-package of blender/ once: {packages}"
    loose = sorted(p.name for p in (REPO_ROOT / "blender").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules of blender/ outside its layers: {loose}"


def test_no_lower_layer_imports_a_higher_one():
    layers = _layers()
    graph = _blender_side_graph()
    unplaced = sorted(m for m in graph if m != "blender" and _rank(m, layers) is None)
    assert not unplaced, f"modules of blender/ in no layer of LAYERS {layers}: {unplaced}"
    assert not graph["blender"], f"blender/__init__.py imports the Blender side: {sorted(graph['blender'])}"
    floor = {m: _rank(m, layers) for m in graph}
    upward = [f"{path}:{line} {a} ({_floor_name(floor[a], layers)}) imports {b} ({_floor_name(floor[b], layers)})"
              for a, edges in graph.items() for b, (path, line, _) in edges.items()
              if floor[a] is not None and floor.get(b) is not None and floor[b] > floor[a]]
    assert not upward, f"imports that run up the layers {layers} (operators/ and panels/ on top):\n" + "\n".join(upward)


def _circles(graph: dict) -> list:
    """The import circles of ``graph``: its strongly connected components of more than one module, or of one
    module that imports itself (Tarjan's algorithm)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_blender_side_has_no_import_circle():
    graph = _blender_side_graph()
    circles = _circles(graph)
    lines = [f"{' <-> '.join(circle)}: " + "; ".join(
        f"{graph[a][b][0]}:{graph[a][b][1]} imports {b}" for a in circle for b in circle if b in graph[a])
        for circle in circles]
    assert not circles, "import circles on the Blender side (function-level imports counted):\n" + "\n".join(lines)


def test_blender_side_imports_its_modules_at_the_top():
    found = []
    for path in _python_files(*BLENDER_SIDE):
        source = path.read_text().splitlines()
        for line, target, in_function in _own_imports(path):
            if in_function and target.partition(".")[0] in BLENDER_SIDE and LAZY not in source[line - 1]:
                found.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {target} inside a function")
    assert not found, (f"import the Blender side's modules at the top, or say why one is lazy ({LAZY} ...):\n"
                       + "\n".join(sorted(set(found))))


def test_core_and_kernels_never_import_the_blender_side():
    found = [f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
             for path in _python_files(*HEADLESS_DIRS) for line, name in _relative_targets(path)
             if name in BLENDER_SIDE]
    assert not found, "core/ and kernels/ stand below the Blender side:\n" + "\n".join(found)


MAX_PARAMETERS = 12
"""Parameters a function of ``core/`` or ``kernels/`` takes at most (``self`` and ``cls`` not counted)."""
MAX_LINES = 80
"""Lines a function of ``core/`` or ``kernels/`` runs to at most, its docstring not counted."""
PER_POINT = "design notes, Per-point functions count no references"
"""Why a point's leaf of the skin field takes its arrays one by one and is written out in one function."""
SIZE_EXCEPTIONS = {
    "kernels/fusiform.py::_field_arrays": PER_POINT,
    "kernels/muscle_change.py::muscle_change": PER_POINT,
    "kernels/skin_field.py::evaluate_point": PER_POINT,
}
"""The functions of ``core/`` and ``kernels/`` over ``MAX_PARAMETERS`` or ``MAX_LINES``, each with the design-note
section that says why (``design notes, <section title>``)."""


def _functions(tree, prefix=""):
    """``(qualified name, node, is a method)`` of every function in ``tree``, nested ones as ``outer.inner``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node, isinstance(tree, ast.ClassDef)
            yield from _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")


def _size(node, method: bool) -> tuple:
    """``(parameters, lines)`` of a function: every parameter but a method's ``self`` or ``cls``, and its lines from
    the first statement after its docstring to its end."""
    a = node.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
    count = len(params) - (1 if method and params and params[0].arg in ("self", "cls") else 0)
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return count, (node.end_lineno - body[0].lineno + 1) if body else 0


def _oversized() -> dict:
    """``{"path::function": "what is over"}`` of the functions of ``core/`` and ``kernels/`` over the limits."""
    out = {}
    for path in _python_files(*HEADLESS_DIRS):
        tree = ast.parse(path.read_text(), filename=str(path))
        for name, node, method in _functions(tree):
            params, lines = _size(node, method)
            over = [f"{params} parameters"] * (params > MAX_PARAMETERS) + [f"{lines} lines"] * (lines > MAX_LINES)
            if over:
                out[f"{path.relative_to(REPO_ROOT).as_posix()}::{name}"] = ", ".join(over)
    return out


def test_core_and_kernels_functions_stay_small():
    found = [f"{name}: {what}" for name, what in sorted(_oversized().items()) if name not in SIZE_EXCEPTIONS]
    assert not found, (f"functions of core/ and kernels/ over {MAX_PARAMETERS} parameters or {MAX_LINES} lines: "
                       f"split them, pass a struct, or name them in SIZE_EXCEPTIONS with the design-note section "
                       f"that says why:\n" + "\n".join(found))


def test_size_exceptions_are_current_and_justified():
    oversized = _oversized()
    stale = sorted(name for name in SIZE_EXCEPTIONS if name not in oversized)
    assert not stale, f"SIZE_EXCEPTIONS names functions within the limits now: {stale}"
    titles = {line[4:].strip() for line in (REPO_ROOT / "docs" / "design-notes.md").read_text().splitlines()
              if line.startswith("### ")}
    cited = [why.partition("design notes, ")[2] for why in SIZE_EXCEPTIONS.values() if "design notes, " in why]
    missing = sorted(title for title in cited if title not in titles)
    assert not missing, f"SIZE_EXCEPTIONS cites design-note sections that do not exist: {missing}"
    assert all("design notes, " in why for why in SIZE_EXCEPTIONS.values())
