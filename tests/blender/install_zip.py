"""Install a built extension zip into a fresh Blender and evaluate a muscle through the BUNDLED numba.

Run by test_extension_zip.py in a subprocess: ``python install_zip.py ZIP`` with ``BLENDER_USER_RESOURCES`` set to
an empty folder. The environment's own numba and llvmlite are hidden before anything is imported: a ``sys.meta_path``
finder lets the top-level ``numba`` and ``llvmlite`` be found only in the site-packages where Blender unpacks the
extension's wheels. Prints one ``RESULT=<json>`` line for the test to check.
"""
import importlib.machinery
import json
import os
import sys
from pathlib import Path

USER = Path(os.environ["BLENDER_USER_RESOURCES"])
WHEEL_SITE = USER / "extensions" / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
HIDDEN = ("numba", "llvmlite")


class BundledOnly:
    """Finds ``numba`` / ``llvmlite`` only under the extension's wheel site-packages, refuses them elsewhere."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname not in HIDDEN:
            return None  # submodules are found through their package's __path__, which is in WHEEL_SITE
        spec = importlib.machinery.PathFinder.find_spec(fullname, [str(WHEEL_SITE)])
        if spec is None:
            raise ModuleNotFoundError(f"{fullname} is hidden outside {WHEEL_SITE} by the test", name=fullname)
        return spec


def main(zip_path: str) -> dict:
    sys.meta_path.insert(0, BundledOnly)
    import bpy
    import numpy as np

    result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
    assert result == {'FINISHED'}, result
    addon = "bl_ext.user_default.implicit_muscles"
    assert addon in bpy.context.preferences.addons, "the extension was installed but not enabled"
    engine = sys.modules[addon + ".blender.engine.numba_setup"]

    import numba
    import llvmlite
    from bl_ext.user_default.implicit_muscles.core.muscle.primitive import FusiformMuscle

    muscle = FusiformMuscle(origin=(0, 0, 0), insertion=(0, 0, 0.3), volume=None, width=0.03)
    # Middle of a straight muscle (s = 0.5, z = 0.15): the surface lies w * Phi(0.5) from the axis.
    radius = muscle.width * float(muscle.profile_at(0.5))
    points = np.array([[0.0, 0.0, 0.15], [radius, 0.0, 0.15], [0.0, radius, 0.15], [0.2, 0.0, 0.15]])
    values, grads = muscle.field(points)
    ref_values, ref_grads = muscle.field_reference(points)

    compile_result = bpy.ops.implicit_muscles.compile_kernels()
    cache = Path(engine.status.cache_dir)
    return {
        "blender": bpy.app.version_string,
        "wheel_site": str(WHEEL_SITE),
        "numba_file": numba.__file__,
        "numba_version": numba.__version__,
        "llvmlite_file": llvmlite.__file__,
        "addon_file": sys.modules[addon].__file__,
        "extensions_dir": str(USER / "extensions"),
        "engine_error": engine.status.error,
        "engine_numba_version": engine.status.numba_version,
        "cache_dir": str(cache),
        "numba_config_cache_dir": numba.config.CACHE_DIR,
        "cache_files": len(list(cache.rglob("*.nbi"))),
        "radius": radius,
        "values": values.tolist(),
        "grads_shape": list(grads.shape),
        "max_diff_reference": float(max(np.abs(values - ref_values).max(), np.abs(grads - ref_grads).max())),
        "compile_result": sorted(compile_result),
        "kernels_message": engine.status.kernels_message,
    }


if __name__ == "__main__":
    print("RESULT=" + json.dumps(main(sys.argv[1])))
