"""Run every benchmark (``bench_*.py``), write ``out/bench/<name>.json`` and ``out/bench/report.md``, print tables.
``bench/measured.py`` then writes the README's *Measured* table from the JSON.

Numbers are medians of repeated runs on a shared machine; compare ratios measured in the same run, not absolute
times across runs. Nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import OUT, machine, write_json  # noqa: E402

BENCHMARKS = ["bench_muscle_field", "bench_pbd", "bench_solvers", "bench_rod_contacts", "bench_skin", "bench_quality",
              "bench_family", "bench_deform", "bench_scaling", "bench_blender", "bench_display", "bench_long_run",
              "bench_cold_start"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    args = parser.parse_args(argv)
    names = args.names or BENCHMARKS
    info = machine()
    sections = [f"# Benchmark report\n\nMachine: {info['cpu']}, {info['cores']} cores, {info['memory_gb']} GB; "
                f"{info['platform']}; Python {info['python']}, numpy {info['numpy']}, numba {info['numba']} "
                f"({info['numba_threads']} threads). Baselines ran in the same process; the paper's numbers are from "
                f"its 6-core Xeon E5-1650 (3.6 GHz), multi-threaded C++.\n"]
    for name in names:
        module = importlib.import_module(name)
        result = module.run()
        result["machine"] = info
        path = write_json(result["name"], result)
        print(f"\n## {result['title']}\n\n{result['table']}\n")
        if "meets_target" in result:
            print(f"target: {'met' if result['meets_target'] else 'NOT met'}")
        print(f"-> {path.relative_to(OUT.parents[1])}")
        sections.append(f"## {result['title']}\n\n{result['table']}\n")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report.md").write_text("\n".join(sections))
    print(f"report: {(OUT / 'report.md').relative_to(OUT.parents[1])}; the README's table: python bench/measured.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
