"""Registering the extension from the source tree: what it adds while enabled, and that disabling removes it all."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import blender_session

PANEL = "IMPLICIT_MUSCLES_PT_status"
OPERATORS = ("IMPLICIT_MUSCLES_OT_compile_kernels", "IMPLICIT_MUSCLES_OT_report_status")
KERNEL_MESSAGE = re.compile(r"Compiled kernels in [0-9.]+ s \(cached for next start\)"
                            r"|Loaded compiled kernels from the cache in [0-9.]+ s"
                            r"|The kernels were already loaded \([0-9.]+ s\)")


def _footprint(bpy):
    """Everything an add-on can leave behind that the Python API can list: types, handlers, RNA properties."""
    types = set(dir(bpy.types))
    handlers = {name: [f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', repr(f))}" for f in handler]
                for name in dir(bpy.app.handlers) if isinstance(handler := getattr(bpy.app.handlers, name), list)}
    properties = {}
    for name in sorted(types):
        rna = getattr(getattr(bpy.types, name), "bl_rna", None)
        if rna is not None:
            properties[name] = tuple(rna.properties.keys())
    return types, handlers, properties


@pytest.fixture
def bpy():
    bpy = blender_session.ensure_repository()
    blender_session.reset()
    yield bpy
    if blender_session.ADDON in bpy.context.preferences.addons:
        blender_session.disable()


def test_enable_disable_twice_leaves_nothing_behind(bpy):
    before = _footprint(bpy)
    for _ in range(2):
        module = blender_session.enable()
        engine = sys.modules[f"{blender_session.ADDON}.blender.engine.numba_setup"]
        # The one-shot UI report only runs with a window; register it by hand so unregister() must remove it.
        bpy.app.timers.register(engine._report_once, first_interval=3600.0)
        assert module.__name__ == blender_session.ADDON
        blender_session.disable()
        assert not bpy.app.timers.is_registered(engine._report_once)
        assert blender_session.ADDON not in bpy.context.preferences.addons
    after = _footprint(bpy)
    assert after[0] == before[0], f"classes left behind: {sorted(after[0] - before[0])}"
    assert after[1] == before[1], "app handlers left behind"
    changed = {name: set(after[2][name]) ^ set(before[2].get(name, ())) for name in after[2]
               if after[2][name] != before[2].get(name)}
    assert not changed, f"properties left behind: {changed}"


def test_panel_and_operators_exist_while_enabled(bpy):
    blender_session.enable()
    panel = getattr(bpy.types, PANEL)
    assert (panel.bl_space_type, panel.bl_region_type, panel.bl_category) == ('VIEW_3D', 'UI', "Muscles")
    for name in OPERATORS:
        assert hasattr(bpy.types, name), f"operator {name} is not registered"
    assert bpy.ops.implicit_muscles.compile_kernels.poll()
    blender_session.disable()
    assert not hasattr(bpy.types, PANEL)
    for name in OPERATORS:
        assert not hasattr(bpy.types, name)


def test_panel_shows_numba_and_the_compile_button(bpy):
    blender_session.enable()
    log = blender_session.draw_panel(getattr(bpy.types, PANEL))
    labels = [text for kind, text, _, _ in log if kind == "label"]
    assert any(text.startswith("numba 0.62.") for text in labels), log
    assert "Kernels not compiled yet" in labels or any(KERNEL_MESSAGE.search(text) for text in labels), log
    assert ("operator", "implicit_muscles.compile_kernels") in [entry[:2] for entry in log]
    assert not any(alert for *_, alert in log), f"nothing should be red when the engine is fine: {log}"


def test_engine_uses_numba_062_and_the_extension_cache(bpy):
    blender_session.enable()
    engine = sys.modules[f"{blender_session.ADDON}.blender.engine.numba_setup"]
    import numba
    assert engine.status.error == ""
    assert engine.status.numba_version == numba.__version__
    assert numba.__version__.startswith("0.62.")
    cache = Path(engine.status.cache_dir)
    user_folder = Path(bpy.utils.extension_path_user(blender_session.ADDON))
    fingerprint = sys.modules[f"{blender_session.ADDON}.core.io.kernel_cache"].kernel_fingerprint()
    assert cache == user_folder / "numba_cache" / fingerprint and cache.is_dir()


def test_cache_location_is_left_to_numba_when_not_loaded_as_an_extension(bpy):
    blender_session.enable()
    engine = sys.modules[f"{blender_session.ADDON}.blender.engine.numba_setup"]
    import numba
    before = (numba.config.CACHE_DIR, os.environ.get("NUMBA_CACHE_DIR"))
    assert engine._set_cache_dir("implicit_muscles") == ""  # a legacy add-on's package name
    assert (numba.config.CACHE_DIR, os.environ.get("NUMBA_CACHE_DIR")) == before


def test_compile_kernels_reports_and_fills_the_cache(bpy):
    blender_session.enable()
    engine = sys.modules[f"{blender_session.ADDON}.blender.engine.numba_setup"]
    assert bpy.ops.implicit_muscles.compile_kernels() == {'FINISHED'}
    assert engine.status.kernels_compiled
    assert KERNEL_MESSAGE.fullmatch(engine.status.kernels_message), engine.status.kernels_message
    assert list(Path(engine.status.cache_dir).rglob("*.nbi")), "numba wrote no cache index into the extension folder"
    assert bpy.ops.implicit_muscles.report_status() == {'FINISHED'}


# Registration without a usable numba: run in a fresh process, where numba can still be hidden or faked.
_NUMBA_PROBLEM_SCRIPT = textwrap.dedent("""
    import importlib.machinery, sys, types
    mode = sys.argv[1]
    if mode == "missing":
        class NoNumba:
            @classmethod
            def find_spec(cls, fullname, path=None, target=None):
                if fullname.partition(".")[0] in ("numba", "llvmlite"):
                    raise ModuleNotFoundError("No module named 'numba' (hidden by the test)", name=fullname)
                return None
        sys.meta_path.insert(0, NoNumba)
    else:  # another add-on imported another numba first
        fake = types.ModuleType("numba")
        fake.__version__ = "0.58.1"
        fake.__file__ = "elsewhere/numba/__init__.py"
        sys.modules["numba"] = fake
    sys.path.insert(0, sys.argv[2])
    import blender_session
    bpy = blender_session.bpy_module()
    blender_session.enable()
    engine = sys.modules[blender_session.ADDON + ".blender.engine.numba_setup"]
    print("STATUS_ERROR=" + engine.status.error)
    print("STATUS_WARNING=" + engine.status.warning)
    print("POLL=" + str(bpy.ops.implicit_muscles.compile_kernels.poll()))
    log = blender_session.draw_panel(bpy.types.IMPLICIT_MUSCLES_PT_status)
    print("PANEL_RED=" + " ".join(text for kind, text, icon, alert in log if kind == "label" and alert))
    try:
        print("REPORT=" + str(bpy.ops.implicit_muscles.report_status()))
    except RuntimeError as ex:  # an ERROR report is raised back to a Python caller
        print("REPORT=" + str(ex).replace("\\n", " "))
    print("TIMER_RETURNS=" + repr(engine._report_once()))  # the UI's one-shot report, run by hand
    blender_session.disable()
    print("DISABLED_CLEANLY")
""")


def _run_numba_problem(mode, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", _NUMBA_PROBLEM_SCRIPT, mode, str(Path(__file__).parent)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "DISABLED_CLEANLY" in result.stdout
    lines = dict(line.split("=", 1) for line in result.stdout.splitlines()
                 if line.startswith(("STATUS_", "POLL=", "REPORT=", "PANEL_RED=", "TIMER_RETURNS=")))
    return lines, result.stderr


def test_register_succeeds_without_numba_and_says_why(tmp_path):
    status, stderr = _run_numba_problem("missing", tmp_path)
    assert status["STATUS_ERROR"].startswith("The muscle engine is unavailable: numba could not be imported")
    assert "hidden by the test" in status["STATUS_ERROR"]
    assert status["POLL"] == "False"
    assert status["REPORT"].startswith("Error: Implicit Muscles: The muscle engine is unavailable")
    assert status["PANEL_RED"].startswith("The muscle engine is unavailable"), "the panel must show the error in red"
    assert status["TIMER_RETURNS"] == "None", "the one-shot report timer must not repeat or raise"
    assert "Implicit Muscles: The muscle engine is unavailable" in stderr


def test_register_warns_when_another_numba_won(tmp_path):
    status, stderr = _run_numba_problem("other-version", tmp_path)
    assert status["STATUS_ERROR"] == ""
    assert "numba 0.58.1 is in use" in status["STATUS_WARNING"]
    assert "another add-on loaded it first" in status["STATUS_WARNING"]
    assert status["POLL"] == "True"
    assert status["REPORT"] == "{'FINISHED'}"
    assert "numba 0.58.1 is in use" in status["PANEL_RED"], "the panel must show the warning in red"
    assert "Implicit Muscles: The muscle kernels are built for numba 0.62.x" in stderr
