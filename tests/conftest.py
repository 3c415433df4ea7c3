"""Session set-up shared by all tests.

Blender reads ``BLENDER_USER_RESOURCES`` once, when ``bpy`` is first imported, so it is pointed at a fresh temporary
folder here, before any test module can import ``bpy`` (docs/design.md#tests-with-the-bpy-module): the tests never touch
the user's Blender preferences, extensions or caches. Nothing here imports ``bpy``; the headless core tests run without
it. """
import importlib.metadata
import os
import shutil
import tempfile

_USER_RESOURCES = tempfile.mkdtemp(prefix="implicit-muscles-blender-user-")
os.environ["BLENDER_USER_RESOURCES"] = _USER_RESOURCES


def pytest_report_header(config):
    try:
        blender = f"Blender {importlib.metadata.version('bpy')} (bpy module)"
    except importlib.metadata.PackageNotFoundError:
        blender = "no bpy module installed: the Blender tests will fail (run `make venv`)"
    return [f"blender: {blender}", f"blender user resources: {_USER_RESOURCES}"]


def pytest_unconfigure(config):
    shutil.rmtree(_USER_RESOURCES, ignore_errors=True)
