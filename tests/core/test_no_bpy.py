"""core/ and kernels/ import and run with no bpy in sys.modules (DESIGN.md §1)."""
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


def test_core_and_kernels_import_without_bpy():
    root = Path(implicit_muscles.__file__).resolve().parent
    pkg_dir = Path(implicit_muscles.__path__[0]).parent
    env = dict(os.environ, PYTHONPATH=str(pkg_dir))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, cwd=root.parent)
    assert out.returncode == 0, out.stdout + out.stderr
