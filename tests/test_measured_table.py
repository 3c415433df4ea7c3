"""``bench/measured.py`` writes the README's *Measured* table from benchmark JSON (fake JSON here; nothing is run)."""
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import measured  # noqa: E402

MACHINE = {"numba_threads": 2}


def _fake_bench() -> dict:
    """One result per benchmark, with the fields each ``bench_*.py`` ``run()`` returns that the table reads."""
    full = lambda ms: {"median_ms": ms}  # noqa: E731
    return {
        "muscle_field": {"results": {"numba, all cores": {"evals_per_s": 7.9e6},
                                     "numba, 1 thread": {"evals_per_s": 4e6},
                                     "numpy reference": {"evals_per_s": 8e3}},
                         "target_evals_per_s": 5e6},
        "pbd": {"results": {"full body, no collisions, 2 thread(s)": full(0.56),
                            "full body, no collisions, 1 thread(s)": full(0.9),
                            "full body, all collisions, 2 thread(s)": full(2.4),
                            "full body, all collisions, 1 thread(s)": full(4.2),
                            "chains": {"ours (PBD), 2 thread(s)": full(0.33), "ours (PBD), 1 thread(s)": full(0.55)},
                            "pypbd": {"pypbd 2.2.2, 1 OpenMP thread(s)": full(0.46)}},
                "target_ms_full_body_all_collisions": 3.0,
                "paper_table3_ms": {"without collisions": 50.0, "with collisions": 96.0}},
        "solvers": {"results": {f"{shot}, {config}": {"pbd least": ms, "total least": 2.0 * ms}
                                for shot in ("biceps curl", "arm shake")
                                for config, ms in (("all axis", 1.1), ("biceps rod", 2.0), ("all rods", 2.9))}},
        "skin": {"results": {"bind: arm (2172 vertices, 3 bones, 4 muscles)": {"median_s": 0.1, "field_bytes": 2.6e6},
                             "bind: full body (19,498 vertices, 14 bones, 50 muscles)": {"median_s": 1.1,
                                                                                        "field_bytes": 13e6},
                             "grid part, 2 thread(s)": {"evals_per_s": 64e6},
                             "grid part, 1 thread(s)": {"evals_per_s": 32e6},
                             "composed F, full body, no muscles, 2 thread(s)": {"evals_per_s": 2.2e6},
                             "composed F, full body, no muscles, 1 thread(s)": {"evals_per_s": 1.2e6},
                             "composed F, full body, no muscles, numpy reference": {"evals_per_s": 9e4},
                             "composed F, full body, 50 muscles, 2 thread(s)": {"evals_per_s": 1.6e6},
                             "composed F, full body, 50 muscles, 1 thread(s)": {"evals_per_s": 0.9e6},
                             "composed F, full body, 50 muscles, numpy reference": {"evals_per_s": 5e4}},
                 "targets": {"bind_s": 3.0, "grid_evals_per_s": 20e6, "field_bytes": 150e6}},
        "deform": {"results": {"biceps curl": {"total": 6.4, "tracking": 5.3},
                               "arm shake": {"total": 6.5, "tracking": 5.4},
                               "full body": {"total": 62.0, "tracking": 57.0}},
                   "plain_dqs_ms": {"arm": 0.09, "full body": 0.4},
                   "paper_table2_s": {"biceps curl": [0.005, 0.04, 0.01, 0.057],
                                      "arm shake": [0.008, 0.05, 0.01, 0.068],
                                      "full body": [0.1, 0.4, 0.05, 0.558]},
                   "targets_ms": {"arm": 13.0, "full body": 110.0}, "goals_ms": {"arm": 5.0, "full body": 40.0}},
        "blender": {
            "scenes": {n: {"handler": {"frame": f, "core": f - 0.9, "overhead": 0.3, "pose_read": 0.05, "write": 0.08},
                           "armature": {"frame": a}, "bind_s": b}
                       for n, f, a, b in (("arm", 8.4, 0.15, 1.0), ("full body", 65.0, 1.2, 6.7))},
            "first_frame": {n: {"open_s": o, "first_frame_s": 0.1, "rebind_during_open_s": o - 0.1, "rebind_s": 0.0}
                            for n, o in (("arm", 0.8), ("full body", 2.0))},
            "long_run": {"frames": 10000, "finite": True, "fallbacks": 0, "resident_mb": [409.0, 418.0],
                         "resident_at": [1000, 10000], "cache_states": 1292, "cache_mb": 8.0, "frame_ms": 5.9},
            "blender_version": "5.0.1",
            "targets": {"pose_read_write_share": 0.1, "body_pose_read_write_ms": 2.0, "first_frame_s": 3.0}},
        "cold_start": {"cold": {"compile_s": 41.0, "bind_first_frame_s": 6.5, "kernels": 20, "meshes": 3, "muscles": 4,
                                "vertices": 3014, "blender": "5.0.1",
                                "compile_seconds": {"tracking.track": 12.0, "pbd.pbd_substeps": 8.0,
                                                    "skin_field.skin_field": 5.0, "axis.axis_geometry": 1.0}},
                       "warm": {"compile_s": 0.8, "bind_first_frame_s": 1.9}, "first_frame_cold_s": 47.5,
                       "load_before": "12:00:00 up 1 day, load average: 0.50, 0.40, 0.30",
                       "targets": {"compile_s": 60.0, "first_frame_s": 90.0}},
        "display": {"results": {n: {"title": t, "display_ms": d, "display_share": d / f, "frame_render_ms": f,
                                    "frame_preview_ms": p, "core_render_ms": f - 2, "core_preview_ms": p - 2}
                                for n, t, d, f, p in (("character", "BCN_Epileptic", 0.31, 9.0, 6.0),
                                                      ("human", "the dense human", 0.42, 24.0, 15.0))},
                    "target_share": 0.05},
        "long_run": {"results": {n: {"frames": 10000, "finite": True, "energy_growth": e, "volume_drift": v,
                                     "volume_vs_rest_max": 0.03, "memory_growth_mb": 0.0}
                                 for n, e, v in (("arm", 1.0, 0.0), ("body", 1.005, 0.0016))}},
    }


def _fake_demo() -> dict:
    shot = lambda paper: {"vertices": 2172, "bones": 3, "muscles": 4,  # noqa: E731
                          "median_ms": {"pbd": 0.4, "pose": 0.3, "field": 0.6, "tracking": 5.8, "implicit_alone": 3.8,
                                        "with_muscles": 7.4, "blender_frame_three_copies": 12.6},
                          "volume_percent_range": [99.8, 100.8], "probe_muscles_vs_dqs_max_mm": 2.7,
                          "probe_muscles_vs_implicit_max_mm": 1.9,
                          "paper_table2_ms": paper}
    return {"blender": "5.0.0", "total_seconds": 564.0,
            "shots": {"arm_curl": shot({"is_only": 5.0, "tracking": 40.0, "pbd": 10.0, "total": 57.0}),
                      "arm_shake": shot({"is_only": 8.0, "tracking": 50.0, "pbd": 10.0, "total": 68.0}),
                      "character": shot(None)}}


@pytest.fixture
def folders(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    for name, data in _fake_bench().items():
        (bench / f"{name}.json").write_text(json.dumps({"name": name, "machine": MACHINE, **data}))
    demo = tmp_path / "timings.json"
    demo.write_text(json.dumps(_fake_demo()))
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n## Measured\n\nprose\n\n{measured.START}\n\n| old | table |\n\n"
                      f"{measured.END}\n\nafter\n")
    return bench, demo, readme


def test_rewrites_only_between_the_markers(folders):
    bench, demo, readme = folders
    assert measured.main(["--bench", str(bench), "--demo", str(demo), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("# Title\n\n## Measured\n\nprose\n\n" + measured.START)
    assert text.endswith(measured.END + "\n\nafter\n")
    assert "| old | table |" not in text
    table = text[text.index(measured.START) + len(measured.START):text.index(measured.END)].strip().splitlines()
    assert table[0] == "| benchmark | ours | baseline in the same run | target |"
    assert len(table) == 2 + 16  # header, rule, one row per measured case
    assert all(line.count(" | ") == 3 for line in table)  # four cells, no stray pipes inside a cell
    # running again gives the same file: the generator is idempotent
    measured.main(["--bench", str(bench), "--demo", str(demo), "--readme", str(readme)])
    assert readme.read_text() == text


def test_current_numbers_and_targets(folders):
    bench, demo, _ = folders
    rows, read = measured.measured_rows(bench, demo)
    assert len(read) == 10
    text = measured.markdown(rows)
    assert "7.9 M/s (2 threads), 4.0 M/s (1)" in text
    assert "numpy reference 0.008 M/s" in text
    assert "2.4 ms (2 threads), 4.2 ms (1); no collisions 0.56 ms" in text
    assert "paper Table 3: 96 ms and 50 ms" in text
    assert "ratio <= 1: 0.72 with our 2 threads, met; 1.20 thread for thread" in text
    assert "6.4 / 6.5 / 62 ms (tracking 5.3 / 5.4 / 57)" in text
    assert "paper Table 2 (6-core Xeon): 57 / 68 / 558 ms" in text
    assert "goals 5 ms and 40 ms: not yet" in text
    assert text.count(": not met") == 0
    assert "12.6 / 12.6 / 12.6 ms" in text  # the demo's frame_set of three copies
    assert "in Blender 5.0, one played frame" in text
    assert "the paper's curl / shake / BCN_Epileptic (BCN_Epileptic: 2172 vertices, 3 bones, 4 muscles)" in text
    assert "from the Implicit Skinning copy (the muscles' own effect" in text
    assert ("41 s + 6.5 s = 48 s; slowest kernels `tracking.track` 12 s, `pbd.pbd_substeps` 8.0 s, "
            "`skin_field.skin_field` 5.0 s; machine load average 0.50, 0.40, 0.30 at the start") in text
    assert "kernels loaded in 0.80 s, bind + first frame 1.9 s" in text
    assert "BCN_Epileptic bound (3 meshes, 3,014 vertices, 4 muscles)" in text
    assert "0.31 / 0.42 ms per frame, 3.4 % / 1.7 % of a played frame (9.0 / 24 ms)" in text
    assert "9.0 / 6.0 ms and 24 / 15 ms (the core 7.0 / 4.0 and 22 / 13 ms)" in text
    assert ("biceps curl: all axis 1.1 ms, biceps rod 2.0 ms, all rods 2.9 ms; arm shake: all axis 1.1 ms, "
            "biceps rod 2.0 ms, all rods 2.9 ms; whole curl frame 2.2, 4.0, 5.8 ms") in text
    assert "before" not in text  # current numbers only


def test_missing_files_leave_out_their_rows(folders, tmp_path):
    bench, _, _ = folders
    (bench / "blender.json").unlink()
    (bench / "cold_start.json").unlink()
    (bench / "display.json").unlink()
    rows, read = measured.measured_rows(bench, tmp_path / "no-demo.json")
    assert len(rows) == 16 - 3 - 1 - 1 - 2
    assert not any("Blender" in row[0] for row in rows)


def test_missing_markers_is_an_error(folders):
    bench, demo, readme = folders
    readme.write_text("# no markers\n")
    with pytest.raises(ValueError, match="measured:start"):
        measured.main(["--bench", str(bench), "--demo", str(demo), "--readme", str(readme)])


def test_readme_has_the_markers():
    text = (REPO / "README.md").read_text()
    assert text.count(measured.START) == 1 and text.count(measured.END) == 1
    assert text.index(measured.START) < text.index(measured.END)
