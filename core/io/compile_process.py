"""A separate process that fills the compiled-kernel cache: ``python compile_process.py '<json>'``.

The JSON names ``package`` (the import name of the extension, e.g. ``bl_ext.user_default.implicit_muscles``),
``package_path`` (its folder, exactly as the host imports it: numba files its cache by the kernels' source paths),
``sys_path`` (the host's ``sys.path``: the same numpy and numba), ``cache_dir`` (numba's cache folder; ``""`` for
numba's default), ``stages`` (``kernel_cache.STAGES`` or some of them) and ``nice`` (POSIX niceness to add). The package's parents are made empty
packages, so its ``__init__.py`` (which imports ``bpy``) never runs; only ``core/`` and ``kernels/`` are imported.

Standard output is one JSON object per line: ``{"done": k, "total": n, "kernel": name}`` as entry kernels get
ready, then ``{"result": {...}}`` (``kernel_cache.warm_up``'s) or ``{"error": sentence}``. Exit status 0 or 1.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import types


def command(package: str, package_path: str, cache_dir: str, stages, python: str | None = None,
            nice: int = 0) -> list:
    """The argument list that runs this file for ``package`` (see the module docstring) with ``python``
    (default: this interpreter); ``nice``: how much lower the process runs (POSIX niceness, 0 for unchanged)."""
    spec = {"package": package, "package_path": package_path, "sys_path": list(sys.path), "cache_dir": cache_dir,
            "stages": list(stages), "nice": nice}
    return [python or sys.executable, os.path.abspath(__file__), json.dumps(spec)]


def _emit(obj) -> None:
    print(json.dumps(obj), flush=True)


def main(argv) -> int:
    spec = json.loads(argv[1])
    if spec.get("nice") and hasattr(os, "nice"):
        os.nice(spec["nice"])
    if spec.get("cache_dir"):
        os.environ["NUMBA_CACHE_DIR"] = spec["cache_dir"]  # before numba is imported
    sys.path[:] = [p for p in spec["sys_path"] if p != os.path.dirname(os.path.abspath(__file__))]
    parts = spec["package"].split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        module = types.ModuleType(name)
        module.__path__ = [spec["package_path"]] if i == len(parts) else []
        sys.modules[name] = module
        if i > 1:
            setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], module)
    try:
        kernel_cache = importlib.import_module(spec["package"] + ".core.io.kernel_cache")
        result = kernel_cache.warm_up(tuple(spec["stages"]),
                                      progress=lambda done, total, name: _emit({"done": done, "total": total,
                                                                                "kernel": name}))
    except Exception as ex:  # noqa: BLE001 - the host shows the sentence; this process only reports it
        _emit({"error": f"{type(ex).__name__}: {ex}"})
        return 1
    _emit({"result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
