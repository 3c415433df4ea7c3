"""The Flamenco job type (``farm/flamenco/implicit_muscles_bake.js``), compiled by Node.js with stand-ins for the
Manager's authoring API: parallel bake chunks that re-simulate from the start frame, one merge after all of them,
render tasks after the merge, and the farm command line (``blender/session/cli.py``) on every bake task.

Flamenco itself is not installed here; the stand-ins follow its job-type API (``author.Task``, ``author.Command``
with the ``blender-render`` command, ``frameChunker``) as used by its bundled job types."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "farm" / "flamenco" / "implicit_muscles_bake.js"
HARNESS = Path(__file__).with_name("flamenco_harness.js")
SETTINGS = {"frames": "1-120", "bake_chunk_size": 50, "render_chunk_size": 40, "render": True,
            "render_output_root": "/render", "add_path_components": 0, "blendfile": "/jobs/shot.blend",
            "format": "PNG", "render_output_path": "/render/shot/{timestamp}/######"}

NODE = shutil.which("node") or shutil.which("nodejs")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed: it runs the Flamenco job script")


def _compile(**changes):
    done = subprocess.run([NODE, str(HARNESS), str(JOB), json.dumps({**SETTINGS, **changes})],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_chunks_then_merge_then_render():
    out = _compile()
    tasks = {t["name"]: t for t in out["tasks"]}
    bakes = [n for n in tasks if n.startswith("bake-")]
    assert bakes == ["bake-1-50", "bake-51-100", "bake-101-120"]
    for name in bakes:
        params = tasks[name]["commands"][0]["params"]
        assert params["argsBefore"] == ["-c", "implicit_muscles_bake"]
        assert params["blendfile"] == "/jobs/shot.blend"
        assert params["args"] == ["--frames", name[len("bake-"):], "--part"]
        assert tasks[name]["dependencies"] == []  # chunks run in parallel
    merge = tasks["merge-bake"]
    assert merge["dependencies"] == bakes
    assert merge["commands"][0]["params"]["args"] == ["--frames", "1-120", "--merge"]
    renders = [n for n in tasks if n.startswith("render-")]
    assert renders == ["render-1-40", "render-41-80", "render-81-120"]
    for name in renders:
        assert tasks[name]["dependencies"] == ["merge-bake"]
        args = tasks[name]["commands"][0]["params"]["args"]
        assert args[args.index("--render-frame") + 1] == name[len("render-"):].replace("-", "..")
        assert args[args.index("--render-output") + 1] == "/render/shot/2026-11-26_120000/######"


def test_bake_only_and_one_frame_chunks():
    out = _compile(frames="7-9", bake_chunk_size=1, render=False)
    names = [t["name"] for t in out["tasks"]]
    assert names == ["bake-7", "bake-8", "bake-9", "merge-bake"]
    assert out["tasks"][0]["commands"][0]["params"]["args"] == ["--frames", "7-7", "--part"]


def test_frame_lists_are_refused_with_a_sentence():
    assert "one frame range" in _compile(frames="1-10, 20-30")["error"]
    assert "comes before its first" in _compile(frames="30-10")["error"]
