"""Shared benchmark plumbing: import the package, time with medians, describe the machine, write JSON."""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "out" / "bench"


def import_package():
    """Make the repository importable as ``implicit_muscles`` (the repo root is the package; tools/pkgpath.py)."""
    sys.path.insert(0, str(REPO / "tools"))
    from pkgpath import make_importable
    make_importable("bench")
    import implicit_muscles
    return implicit_muscles


def median_time(fn, repeats: int = 7, warmup: int = 1) -> dict:
    """Run ``fn`` ``warmup`` times, then ``repeats`` times; return median/min/max seconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(samples), "min_s": min(samples), "max_s": max(samples),
            "repeats": repeats}


def _proc_field(path: str, key: str) -> str | None:
    """The value after ``key:`` in a Linux ``/proc`` file (e.g. ``/proc/cpuinfo``), or None where there is none."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict:
    """What ran the benchmark: CPU model, cores, memory, Python and library versions."""
    import numba
    import numpy
    cpu = _proc_field("/proc/cpuinfo", "model name") or platform.processor() or ""
    memory_kb = _proc_field("/proc/meminfo", "MemTotal")  # "24641176 kB"
    memory_gb = round(int(memory_kb.split()[0]) / 2 ** 20, 1) if memory_kb else 0.0
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": memory_gb, "python": platform.python_version(),
            "numpy": numpy.__version__, "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
            "platform": platform.platform()}


def write_json(name: str, data: dict) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def table(rows: list[list], header: list[str]) -> str:
    """A GitHub-flavoured markdown table."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([fmt(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [fmt(r) for r in cells[1:]])
