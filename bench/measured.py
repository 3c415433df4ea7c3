"""Write the README's *Measured* table from the last benchmark run.

Reads ``out/bench/<name>.json`` (written by ``run_bench.py``) and ``out/demo/timings.json`` (written by ``make demo``)
when present, and replaces the lines between ``<!-- measured:start -->`` and ``<!-- measured:end -->`` in README.md
with one table: per benchmark, ours | baseline in the same run | target. A benchmark without a JSON file has no row.
Nothing is run or timed here.

    python bench/measured.py                       # rewrite README.md from out/bench and out/demo
    python bench/measured.py --print               # print the table only
    python bench/measured.py --bench DIR --demo FILE --readme FILE
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START = "<!-- measured:start -->"
END = "<!-- measured:end -->"
HEADER = ["benchmark", "ours", "baseline in the same run", "target"]
ORDER = ["muscle_field", "pbd", "solvers", "skin", "quality", "deform", "scaling", "blender", "cold_start", "display",
         "long_run"]
"""Benchmarks in the table's order (``bench/bench_<name>.py``); the demo's row comes last."""
LONG_RUN_ENERGY_GROWTH = 1.5
"""Long runs: largest ratio of the last loop's peak kinetic energy to that of loops 2-4 (as
``tests/core/test_long_run.py``)."""
LONG_RUN_VOLUME_DRIFT = 0.03
"""Long runs: largest muscle volume drift from the second loop to the last, fraction of rest."""
LONG_RUN_MEMORY_GROWTH_MB = 20.0
"""Long runs: largest resident memory growth from the second loop to the last [MB]."""


def num(x: float) -> str:
    """A measured ``x`` with two or three significant digits and no exponent: 558, 62, 6.4, 0.31, 0.09, 0.008."""
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 20:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}".removesuffix(".0")
    if a >= 1:
        return f"{x:.1f}"
    if a >= 0.1:
        return f"{x:.2f}"
    return f"{x:.2g}"


def const(x: float) -> str:
    """A target or a paper's number as written: 3, 5, 0.1, 150."""
    return f"{x:g}"


def met(ok: bool) -> str:
    return "met" if ok else "not met"


def rate(per_s: float) -> str:
    return f"{num(per_s / 1e6)} M/s"


def _threads(data: dict) -> int:
    return int(data.get("machine", {}).get("numba_threads", 2))


def _version(version: str) -> str:
    """``"5.0.1"`` -> ``" 5.0"`` (for "in Blender 5.0"); empty when unknown."""
    return " " + ".".join(version.split(".")[:2]) if version else ""


def rows_muscle_field(d: dict) -> list:
    r, t = d["results"], _threads(d)
    best = r["numba, all cores"]["evals_per_s"]
    return [["muscle field value + gradient, 30-particle bent biceps",
             f"{rate(best)} ({t} threads), {rate(r['numba, 1 thread']['evals_per_s'])} (1)",
             f"numpy reference {rate(r['numpy reference']['evals_per_s'])}",
             f">= {const(d['target_evals_per_s'] / 1e6)} M/s: {met(best >= d['target_evals_per_s'])}"]]


def rows_pbd(d: dict) -> list:
    r, t = d["results"], _threads(d)
    full = lambda kind, n: r[f"full body, {kind}, {n} thread(s)"]["median_ms"]  # noqa: E731
    target = d["target_ms_full_body_all_collisions"]
    paper = d.get("paper_table3_ms", {"with collisions": 96.0, "without collisions": 50.0})
    rows = [["PBD, full body 50 muscles x 30 particles, all collisions, 10 substeps",
             f"{num(full('all collisions', t))} ms ({t} threads), {num(full('all collisions', 1))} ms (1); "
             f"no collisions {num(full('no collisions', t))} ms",
             f"paper Table 3: {const(paper['with collisions'])} ms and {const(paper['without collisions'])} ms "
             f"(6-core Xeon, C++)",
             f"<= {const(target)} ms: {met(full('all collisions', t) <= target)}"]]
    ours = {name: v["median_ms"] for name, v in r["chains"].items()}
    all_cores = ours.get(f"ours (PBD), {t} thread(s)")
    one = ours.get("ours (PBD), 1 thread(s)")
    theirs = {name: v for name, v in r["pypbd"].items()}
    best = min((v["median_ms"] for v in theirs.values() if "median_ms" in v), default=None)
    baseline = "; ".join(f"{name}: {num(v['median_ms'])} ms" if "median_ms" in v else v.get("error", name)
                         for name, v in theirs.items())
    if best:
        target = (f"ratio <= 1: {all_cores / best:.2f} with our {t} threads, {met(all_cores <= best)}; "
                  f"{one / best:.2f} thread for thread")
    else:
        target = "ratio <= 1: no baseline in this run"
    rows.append(["PBD, 50 chains x 30 particles, distance only, 10 substeps, 1 sweep",
                 f"{num(all_cores)} ms ({t} threads), {num(one)} ms (1)", baseline, target])
    return rows


def rows_solvers(d: dict) -> list:
    r = d["results"]
    cell = lambda shot: ", ".join(  # noqa: E731
        f"{config} {num(r[f'{shot}, {config}']['pbd least'])} ms" for config in ("all axis", "biceps rod",
                                                                              "all rods"))
    frame = ", ".join(f"{num(r[f'biceps curl, {config}']['total least'])}" for config in ("all axis", "biceps rod",
                                                                                         "all rods"))
    return [["Muscle solvers, the paper's arm (4 muscles), 1 thread: the muscles' stage, the least frame (these "
             "small frames' medians measure a shared machine's other work)",
             f"biceps curl: {cell('biceps curl')}; arm shake: {cell('arm shake')}; whole curl frame {frame} ms",
             "the paper's axis solver: all axis", "none (the cost of each)"]]


def rows_skin(d: dict) -> list:
    r, t, targets = d["results"], _threads(d), d["targets"]
    binds = {k[len("bind: "):]: v for k, v in r.items() if k.startswith("bind: ")}
    full = next((v for k, v in binds.items() if k.startswith("full body")), None)
    rows = [["skin bind (partition, samples, HRBF fits, grids): " + " / ".join(binds),
             " / ".join(f"{num(v['median_s'])} s" for v in binds.values()) + "; field data "
             + " / ".join(f"{num(v['field_bytes'] / 1e6)} MB" for v in binds.values()),
             "",
             f"full body < {const(targets['bind_s'])} s and < {const(targets['field_bytes'] / 1e6)} MB: "
             + (met(full["median_s"] < targets["bind_s"] and full["field_bytes"] < targets["field_bytes"])
                if full else "no full-body bind in this run")]]
    grid = r[f"grid part, {t} thread(s)"]["evals_per_s"]
    rows.append(["one part grid read, value + gradient",
                 f"{rate(grid)} ({t} threads), {rate(r['grid part, 1 thread(s)']['evals_per_s'])} (1)", "",
                 f"> {const(targets['grid_evals_per_s'] / 1e6)} M/s: {met(grid > targets['grid_evals_per_s'])}"])
    kinds = ("no muscles", "50 muscles")
    composed = [r[f"composed F, full body, {k}, {t} thread(s)"]["evals_per_s"] for k in kinds]
    reference = [r[f"composed F, full body, {k}, numpy reference"]["evals_per_s"] for k in kinds]
    rows.append(["composed skin field `F`, full body near the skin, no muscles / 50 muscles",
                 " / ".join(rate(x) for x in composed) + f" ({t} threads)",
                 "numpy reference " + " / ".join(rate(x) for x in reference), ""])
    return rows


def rows_quality(d: dict) -> list:
    """One row per character and motion: faces turned by more than 45 degrees against DQS, every frame."""
    target = d["targets"]["turned_outside_creases_worst"]
    rows = []
    for label, v in d["results"].items():
        rows.append([f"skin quality, {label} ({v['vertices']} vertices, {v['frames']} frames): faces turned > 45 deg "
                     f"against DQS outside creases, median / worst frame; all faces, worst",
                     f"{num(100 * v['turned_outside_median'])} % / {num(100 * v['turned_outside_worst'])} %; "
                     f"{num(100 * v['turned_all_worst'])} %; {num(1e3 * v['deform_median_s'])} ms per frame",
                     f"DQS alone {num(1e3 * v['dqs_median_s'])} ms per frame",
                     f"< {const(100 * target)} % on every frame: {met(v['turned_outside_worst'] < target)}"])
    return rows


def rows_deform(d: dict) -> list:
    r = d["results"]
    scenes = ("biceps curl", "arm shake", "full body")
    paper = d["paper_table2_s"]
    dqs = d["plain_dqs_ms"]
    targets, goals = d["targets_ms"], d["goals_ms"]
    kind = lambda s: "full body" if s == "full body" else "arm"  # noqa: E731
    meets = all(r[s]["total"] <= targets[kind(s)] for s in scenes)
    reaches = all(r[s]["total"] <= goals[kind(s)] for s in scenes)
    target = (f"arm <= {const(targets['arm'])} ms, full body <= {const(targets['full body'])} ms: {met(meets)}; "
              f"goals {const(goals['arm'])} ms and {const(goals['full body'])} ms: {'met' if reaches else 'not yet'}")
    fast = d.get("speed_targets_ms")
    if fast:
        arm = met(all(r[s]["total"] <= fast["arm"] for s in scenes if kind(s) == "arm"))
        target += (f"; real time: arm <= {const(fast['arm'])} ms: {arm}, full body <= "
                   f"{const(fast['full body'])} ms: {met(r['full body']['total'] <= fast['full body'])}")
    rows = [["Implicit Skinning with muscles per frame (PBD + pose + field + tracking): arm biceps curl / arm shake "
             "/ full body run",
             " / ".join(num(r[s]["total"]) for s in scenes) + " ms (tracking "
             + " / ".join(num(r[s]["tracking"]) for s in scenes) + ")",
             "paper Table 2 (6-core Xeon): " + " / ".join(const(round(1e3 * paper[s][3], 6)) for s in scenes)
             + " ms; plain DQS here " + " / ".join(num(dqs[kind(s)]) for s in scenes) + " ms", target]]
    if all("per_active" in r[s] for s in scenes):
        rows.append(["where the tracking's time goes: arm biceps curl / full body run",
                     " / ".join(f"{r[s]['active']:,.0f} of {r[s]['vertices']:,} vertices tracked, "
                                f"{r[s]['per_active']:.1f} field evaluations each after the start pass"
                                for s in ("biceps curl", "full body"))
                     + "; the kernel / joint volume / correction " + " / ".join(
                         " + ".join(num(r[s][f"tracking {k}"]) for k in ("track", "volume", "correction"))
                         for s in ("biceps curl", "full body")) + " ms", "", ""])
    return rows


def rows_scaling(d: dict) -> list:
    v, m, b = d["by_vertices"], d["by_muscles"], d.get("by_bones", [])
    text = (" / ".join(f"{num(r['total_ms'])}" for r in v) + " ms at " + " / ".join(f"{r['vertices']:,}" for r in v)
            + f" vertices (~ vertices^{d['exponent_vertices']:.2f}); " + " / ".join(num(r["total_ms"]) for r in m)
            + " ms with " + " / ".join(str(r["muscles"]) for r in m) + f" muscles ({num(d['ms_per_muscle'])} ms "
            "per muscle)")
    if b:
        text += ("; " + " / ".join(num(r["total_ms"]) for r in b) + " ms with " + " / ".join(str(r["bones"]) for r in b)
                 + f" bones, no muscles (~ bones^{d['exponent_bones']:.2f})")
    return [["how the full body's frame grows (core, run swing; `out/bench/scaling.png`)", text,
             "plain DQS " + " / ".join(num(r["dqs_ms"]) for r in v) + " ms", ""]]


def rows_blender(d: dict) -> list:
    names = ("arm", "full body")
    scenes, first, targets = d["scenes"], d["first_frame"], d["targets"]
    h = {n: scenes[n]["handler"] for n in names}
    pose_write = {n: h[n]["pose_read"] + h[n]["write"] for n in names}
    share = {n: pose_write[n] / h[n]["frame"] for n in names}
    ok = (all(share[n] < targets["pose_read_write_share"] for n in names)
          and pose_write["full body"] < targets["body_pose_read_write_ms"])
    both = lambda f: " / ".join(f(n) for n in names)  # noqa: E731
    blender = _version(d.get("blender_version", ""))
    rows = [[f"in Blender{blender}, one played frame (`frame_set` + evaluated mesh): arm / full body",
             both(lambda n: num(h[n]["frame"])) + " ms, of which the core " + both(lambda n: num(h[n]["core"]))
             + " ms and the add-on's handler " + both(lambda n: num(h[n]["overhead"])) + " ms (pose read + write "
             + both(lambda n: num(pose_write[n])) + " ms)",
             "the Armature modifier alone: " + both(lambda n: num(scenes[n]["armature"]["frame"])) + " ms",
             f"pose read + write < {targets['pose_read_write_share']:.0%} of the frame and "
             f"< {const(targets['body_pose_read_write_ms'])} ms for the full body: {met(ok)} ("
             + both(lambda n: f"{100 * share[n]:.2g} %") + ")"]]
    shown = {n: first[n]["open_s"] + first[n]["first_frame_s"] for n in names}
    bind = {n: first[n]["rebind_during_open_s"] + first[n]["rebind_s"] for n in names}
    rows.append([f"in Blender{blender}, opening a saved file until its first frame shows (kernels cached, the "
                 "settled muscle rest kept in the file): arm / full body",
                 both(lambda n: num(shown[n])) + " s, of which the bind " + both(lambda n: num(bind[n]))
                 + " s (binding in the session, settling the rest: " + both(lambda n: num(scenes[n]["bind_s"]))
                 + " s)", "",
                 f"< {const(targets['first_frame_s'])} s: {met(max(shown.values()) < targets['first_frame_s'])}"])
    crowd, limit = d.get("crowd"), targets.get("crowd_ratio")
    if crowd:
        rows.append([f"in Blender{blender}, three full bodies on their own armatures in one scene, played (the "
                     "handler evaluates the meshes one after the other, each on every core)",
                     f"{num(crowd['three_live_ms'])} ms per frame, one live and two on the Armature modifier "
                     f"{num(crowd['one_live_ms'])} ms: {crowd['ratio']:.2f}x", "",
                     f"<= {const(limit)}x one: {met(crowd['ratio'] <= limit)}" if limit else ""])
    long = d.get("long_run")
    if long:
        flat = long["resident_mb"][-1] - long["resident_mb"][0]
        rows.append([f"in Blender{blender}, a {long['frames']:,}-frame shot of the arm (its animation looping), "
                     "one process",
                     f"{'all finite' if long['finite'] else 'NOT all finite'}, {long['fallbacks']} frames fell back; "
                     f"resident memory {num(long['resident_mb'][0])} MB at frame {long['resident_at'][0]}, "
                     f"{num(long['resident_mb'][-1])} MB at {long['resident_at'][-1]:,}; {long['cache_states']} "
                     f"cached muscle states ({num(long['cache_mb'])} MB); {num(long['frame_ms'])} ms per frame", "",
                     f"memory flat: {num(flat)} MB growth"])
    return rows


def rows_cold_start(d: dict) -> list:
    cold, warm, targets = d["cold"], d["warm"], d["targets"]
    slowest = sorted(cold["compile_seconds"].items(), key=lambda kv: -kv[1])[:3]
    blender = _version(cold.get("blender", ""))
    compile_ok = cold["compile_s"] <= targets["compile_s"]
    first_ok = d["first_frame_cold_s"] <= targets["first_frame_s"]
    procs = cold.get("compile_processes", 0)
    how = f"{procs} compile processes at once" if procs > 1 else "one process"
    return [[f"in Blender{blender}, a fresh install (empty kernel cache), {how}: every kernel compiled "
             f"({cold['kernels']} entry kernels and their helpers), then BCN_Epileptic bound ({cold['meshes']} "
             f"meshes, {cold['vertices']:,} vertices"
             + (f", {cold['muscles']} muscles" if "muscles" in cold else "") + ") until its first frame shows",
             f"{num(cold['compile_s'])} s + {num(cold['bind_first_frame_s'])} s = {num(d['first_frame_cold_s'])} s"
             + (f" (CPU time {num(cold['compile_cpu_s'])} s + {num(cold['bind_cpu_s'])} s)"
                if "compile_cpu_s" in cold else "")
             + (f", of which the compile processes {' and '.join(num(c) for c in cold['compile_process_cpu_s'])} s"
                if cold.get("compile_process_cpu_s") else "")
             + "; slowest kernels " + ", ".join(f"`{n}` {num(t)} s" for n, t in slowest)
             + f"; machine load average {d['load_before'].rsplit('load average:', 1)[-1].strip()} at the start",
             f"warm start (cache filled): kernels loaded in {num(warm['compile_s'])} s, bind + first frame "
             f"{num(warm['bind_first_frame_s'])} s",
             f"compile < {const(targets['compile_s'])} s: {met(compile_ok)}; first frame < "
             f"{const(targets['first_frame_s'])} s: {met(first_ok)}"]]


def rows_display(d: dict) -> list:
    r = d["results"]
    names = [n for n in ("character", "human") if n in r]
    both = lambda f: " / ".join(f(r[n]) for n in names)  # noqa: E731
    titles = " / ".join(r[n]["title"] for n in names)
    share = max(r[n]["display_share"] for n in names)
    return [[f"in Blender 5.0, showing the muscles per played frame (the triangles the viewport draws, sampled from "
             f"the frame's simulated muscles; the GPU upload and draw, which need a GPU, not included): {titles}",
             both(lambda x: num(x["display_ms"])) + " ms per frame, "
             + both(lambda x: f"{100 * x['display_share']:.2g} %") + " of a played frame ("
             + both(lambda x: num(x["frame_render_ms"])) + " ms)",
             "", f"< {100 * d['target_share']:g} % of a played frame: {met(share < d['target_share'])}"],
            [f"in Blender 5.0, one played frame (`frame_set` + evaluated meshes) at Render / Preview quality: "
             f"{titles}",
             " and ".join(f"{num(r[n]['frame_render_ms'])} / {num(r[n]['frame_preview_ms'])} ms" for n in names)
             + " (the core " + " and ".join(f"{num(r[n]['core_render_ms'])} / {num(r[n]['core_preview_ms'])}"
                                             for n in names) + " ms)", "", ""]]


def rows_long_run(d: dict) -> list:
    r = d["results"]
    names = [n for n in ("arm", "body") if n in r]
    both = lambda f: " / ".join(f(r[n]) for n in names)  # noqa: E731
    frames = r[names[0]]["frames"]
    ok = all(x["finite"] and x["energy_growth"] <= LONG_RUN_ENERGY_GROWTH
             and x["volume_drift"] < LONG_RUN_VOLUME_DRIFT and x["memory_growth_mb"] < LONG_RUN_MEMORY_GROWTH_MB
             for x in r.values())
    return [[f"long runs, {frames:,} frames of a looping animation, one continuous simulation "
             "(`bench_long_run.py`): arm curl / full body swing",
             ("finite" if all(x["finite"] for x in r.values()) else "NOT finite")
             + "; peak kinetic energy of the last loop " + both(lambda x: f"{x['energy_growth']:.3f}")
             + " times that of loops 2-4; muscle volume drift from the second loop to the last "
             + both(lambda x: f"{100 * x['volume_drift']:.2f} %") + "; largest difference from rest "
             + both(lambda x: f"{100 * x['volume_vs_rest_max']:.1f} %") + "; resident memory growth "
             + both(lambda x: f"{x['memory_growth_mb']:.1f}") + " MB", "",
             f"no NaN, no energy growth, volume drift < 3 %, memory flat: {met(ok)}"]]


def rows_demo(d: dict) -> list:
    shots = [s for s in ("human", "arm_curl", "arm_shake", "character") if s in d.get("shots", {})]
    if not shots:
        return []
    s = {n: d["shots"][n] for n in shots}
    each = lambda f: " / ".join(f(s[n]) for n in shots)  # noqa: E731
    ms = lambda key: each(lambda x: num(x["median_ms"][key]))  # noqa: E731
    paper = [x["paper_table2_ms"] for x in s.values() if x.get("paper_table2_ms")]
    volumes_ok = all(abs(v - 100.0) <= 3.0 for x in s.values() for v in x["volume_percent_range"])
    names = {"human": "the dense human", "arm_curl": "the paper's curl", "arm_shake": "shake",
             "character": "BCN_Epileptic"}
    label = " / ".join(names[n] for n in shots)
    sizes = [f"{names[n]}: {s[n]['vertices']} vertices, {s[n]['bones']} bones, {s[n]['muscles']} muscles"
             for n in ("human", "character") if n in s]
    if sizes:
        label += " (" + "; ".join(sizes) + ")"
    return [[f"`make demo` in Blender{_version(d.get('blender', ''))}, the muscles copy per frame (medians, the "
             f"first frame excluded), {label}",
             ms("with_muscles") + " ms, of which tracking " + ms("tracking") + " ms; the Implicit Skinning copy "
             "without muscles " + ms("implicit_alone") + " ms; `frame_set` of all three copies (Armature modifier "
             "included) " + ms("blender_frame_three_copies") + " ms; muscle volume "
             + each(lambda x: f"{x['volume_percent_range'][0]:.1f}-{x['volume_percent_range'][1]:.1f} %")
             + " of rest on every frame; skin over the biceps at most "
             + each(lambda x: num(x["probe_muscles_vs_dqs_max_mm"])) + " mm from the DQS copy, "
             + each(lambda x: num(x["probe_muscles_vs_implicit_max_mm"]))
             + " mm from the Implicit Skinning copy (the muscles' own effect; medians over its vertices); the whole "
             f"demo {num(d.get('total_seconds', 0.0))} s",
             ("paper Table 2 (6-core Xeon): " + " / ".join(const(round(p["total"], 6)) for p in paper)
              + " ms, its \"IS only\" " + " / ".join(const(round(p["is_only"], 6)) for p in paper) + " ms")
             if paper else "",
             f"volume within 3 %: {met(volumes_ok)}" + _demo_speed(s)]]


DEMO_SPEED_TARGETS_MS = {"human": 30.0, "character": 8.0}
"""Most ms per frame of a shot's muscles copy: the dense human (in Blender; the handler adds about 0.5 ms
to the core) and BCN_Epileptic."""


def _demo_speed(s: dict) -> str:
    names = {"human": "the dense human", "character": "BCN_Epileptic"}
    parts = [f"{names[n]} <= {const(t)} ms: {met(s[n]['median_ms']['with_muscles'] <= t)}"
             for n, t in DEMO_SPEED_TARGETS_MS.items() if n in s]
    return ("; the muscles copy per frame, " + ", ".join(parts)) if parts else ""


ROWS = {"muscle_field": rows_muscle_field, "pbd": rows_pbd, "solvers": rows_solvers, "skin": rows_skin, "quality": rows_quality,
        "deform": rows_deform, "scaling": rows_scaling,
        "blender": rows_blender, "cold_start": rows_cold_start, "display": rows_display,
        "long_run": rows_long_run}


def markdown(rows: list) -> str:
    cells = [HEADER, ["---"] * len(HEADER), *rows]
    return "\n".join("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in cells)


def measured_rows(bench_dir: Path, demo_file: Path | None) -> tuple[list, list]:
    """``(rows, names of the JSON files read)`` from the benchmark folder and the demo's timings."""
    rows, read = [], []
    for name in ORDER:
        path = bench_dir / f"{name}.json"
        if path.is_file():
            rows += ROWS[name](json.loads(path.read_text()))
            read.append(str(path))
    if demo_file is not None and demo_file.is_file():
        rows += rows_demo(json.loads(demo_file.read_text()))
        read.append(str(demo_file))
    return rows, read


def replace_between_markers(text: str, table: str) -> str:
    """``text`` with everything between the two markers replaced by ``table``; ValueError if a marker is missing."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README has no '{START}' ... '{END}' pair")
    return text[:start + len(START)] + "\n\n" + table + "\n\n" + text[end:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=REPO / "out" / "bench", help="folder of the benchmark JSON")
    parser.add_argument("--demo", type=Path, default=REPO / "out" / "demo" / "timings.json",
                        help="the demo's timings.json (skipped when missing)")
    parser.add_argument("--readme", type=Path, default=REPO / "README.md", help="the file to rewrite")
    parser.add_argument("--print", action="store_true", help="print the table, write nothing")
    args = parser.parse_args(argv)
    rows, read = measured_rows(args.bench, args.demo)
    if not rows:
        print(f"no benchmark JSON in {args.bench}: run `make bench` first", file=sys.stderr)
        return 1
    table = markdown(rows)
    if args.print:
        print(table)
        return 0
    args.readme.write_text(replace_between_markers(args.readme.read_text(), table))
    print(f"{args.readme}: {len(rows)} rows from {', '.join(read)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
