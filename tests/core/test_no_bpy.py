"""core/ and kernels/ import and run with no bpy in sys.modules (docs/design.md#layers-and-import-order)."""
import os
import subprocess
import sys
from pathlib import Path

import implicit_muscles

SCRIPT = """
import sys
import implicit_muscles.core.muscle.primitive as muscle
import implicit_muscles.core.muscle.surface, implicit_muscles.core.muscle.batch, implicit_muscles.kernels
m = muscle.FusiformMuscle((0, 0, 0), (0, 0, 0.3), width=0.03, particles=3)
m.field([[0.0, 0.0, 0.15]])
bad = sorted(name for name in sys.modules if name == "bpy" or name.startswith(("bpy.", "mathutils", "_bpy")))
print("BLENDER_MODULES", bad)
sys.exit(1 if bad else 0)
"""


def _run(script, **env):
    root = Path(implicit_muscles.__file__).resolve().parent
    pkg_dir = Path(implicit_muscles.__path__[0]).parent
    env = dict(os.environ, PYTHONPATH=str(pkg_dir), **env)
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", script], env=env, capture_output=True,
                          text=True, cwd=root.parent)


def test_core_and_kernels_import_without_bpy():
    out = _run(SCRIPT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_kernels_compiled_by_one_process_run_in_the_next(tmp_path):
    """A muscle built and evaluated (the profile kernel, then the field kernel) in a fresh cache, then again in a
    second process that loads both from that cache, as Blender does on its second start: a cached kernel that
    links a helper another cached kernel also compiled must not crash (numba cache, one library per kernel)."""
    for run in ("compiles", "loads from the cache"):
        out = _run(SCRIPT, NUMBA_CACHE_DIR=str(tmp_path))
        assert out.returncode == 0, f"the process that {run} failed ({out.returncode}):\n{out.stdout}{out.stderr}"
