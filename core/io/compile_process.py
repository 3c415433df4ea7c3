"""A separate process that fills the compiled-kernel cache: ``python compile_process.py '<json>'``.

The JSON names ``package`` (the import name of the extension, e.g. ``bl_ext.user_default.implicit_muscles``),
``package_path`` (its folder, exactly as the host imports it: numba files its cache by the kernels' source paths),
``sys_path`` (the host's ``sys.path``: the same numpy and numba), ``cache_dir`` (numba's cache folder; ``""`` for
numba's default), ``stages`` (``kernel_cache.STAGES`` or some of them) and ``nice`` (POSIX niceness to add). The
package's parents are made empty packages, so its ``__init__.py`` (which imports ``bpy``) never runs; only ``core/``
and ``kernels/`` are imported.

A host runs two at once (:func:`commands`, ``kernel_cache.process_groups``), one per core, into one cache folder.
numba writes each index and machine-code file to a temporary name and renames it, so a reader never sees half a
file; the one step that is not safe between processes, adding an entry to a function's index (read, add, write), is
done here under an exclusive lock on ``LOCK`` in the cache folder (:func:`_lock_index_writes`).

Standard output is one JSON object per line: ``{"done": k, "total": n, "kernel": name}`` as entry kernels get
ready, then ``{"result": {...}}`` (``kernel_cache.warm_up``'s, with ``cpu_seconds``: this process's CPU time [s])
or ``{"error": sentence}``. Exit status 0 or 1.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import types


def command(package: str, package_path: str, cache_dir: str, stages, python: str | None = None,
            nice: int = 0) -> list:
    """The argument list that runs this file for ``package`` (see the module docstring) with ``python``
    (default: this interpreter); ``nice``: how much lower the process runs (POSIX niceness, 0 for unchanged)."""
    spec = {"package": package, "package_path": package_path, "sys_path": list(sys.path), "cache_dir": cache_dir,
            "stages": list(stages), "nice": nice}
    return [python or sys.executable, os.path.abspath(__file__), json.dumps(spec)]


def commands(package: str, package_path: str, cache_dir: str, stages, python: str | None = None,
             nice: int = 0) -> list:
    """One :func:`command` per group of ``kernel_cache.process_groups(stages)``: the compile processes to run at
    once (each a list of arguments)."""
    from . import kernel_cache

    return [command(package, package_path, cache_dir, group, python, nice)
            for group in kernel_cache.process_groups(stages)]


LOCK = "index.lock"
"""File in the cache folder that the compile processes lock while they add an entry to a numba index."""


def _lock_index_writes(cache_dir: str) -> None:
    """Make numba's cache-index update (``IndexDataCacheFile.save``: read the index, add an entry, write it) hold an
    exclusive lock on ``cache_dir/LOCK``: two processes adding different signatures of one function at once would
    otherwise both pick the same machine-code file name. Nothing happens where file locks or that method are not
    available (then the processes rely on compiling disjoint kernels)."""
    try:
        import fcntl
        from numba.core import caching
    except ImportError:
        return
    save = getattr(getattr(caching, "IndexDataCacheFile", None), "save", None)
    folder = cache_dir or getattr(__import__("numba").config, "CACHE_DIR", "")
    if save is None or not folder:
        return
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, LOCK)

    def locked_save(self, key, data):
        with open(path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                return save(self, key, data)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    caching.IndexDataCacheFile.save = locked_save


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
        _lock_index_writes(spec.get("cache_dir") or "")
        kernel_cache = importlib.import_module(spec["package"] + ".core.io.kernel_cache")
        result = kernel_cache.warm_up(tuple(spec["stages"]),
                                      progress=lambda done, total, name: _emit({"done": done, "total": total,
                                                                                "kernel": name}))
    except Exception as ex:  # noqa: BLE001 - the host shows the sentence; this process only reports it
        _emit({"error": f"{type(ex).__name__}: {ex}"})
        return 1
    _emit({"result": {**result, "cpu_seconds": _cpu_seconds()}})
    return 0


def _cpu_seconds() -> float:
    """CPU time of this process so far (user + system, all threads) [s]."""
    try:
        import resource
    except ImportError:  # Windows
        return time.process_time()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main(sys.argv))
