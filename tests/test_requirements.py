"""The three test environments pin the same Python packages but bpy: the headless core's tests (``tests/core``, no
bpy) run with Blender 5.0's environment alone and stand for Blender 4.2's and 4.5's (``make test``, the Makefile's
``B42_TESTS`` and ``B45_TESTS``)."""
import pathlib
import re

TOOLS = pathlib.Path(__file__).resolve().parents[1] / "tools"


def _pins(name):
    """``{package: version}`` of a requirements file's ``package==version`` lines."""
    text = (TOOLS / name).read_text()
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, flags=re.M))


def test_the_environments_pin_the_same_packages_but_bpy():
    b50, b42, b45 = _pins("requirements-b50.txt"), _pins("requirements-b42.txt"), _pins("requirements-b45.txt")
    assert b50.pop("bpy").startswith("5.") and b42.pop("bpy").startswith("4.2.") and b45.pop("bpy").startswith("4.5.")
    assert {"numpy", "numba", "llvmlite"} <= set(b50)
    assert b50 == b42 == b45
