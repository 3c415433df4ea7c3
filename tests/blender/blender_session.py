"""Load the extension from this source tree into Blender's Python module
(docs/design.md#tests-with-the-bpy-module).

``BLENDER_USER_RESOURCES`` already points at a temporary folder (tests/conftest.py). :func:`bpy_module` imports
``bpy`` on first use, so test modules that need Blender import it through here and headless tests never load it.
The source tree is offered to Blender as a user extension repository: a folder inside the user resources holding a
symlink named ``implicit_muscles`` to the repository root, so the add-on is ``bl_ext.im_tests.implicit_muscles``.
Such a local repository gets no wheels installed: the add-on runs on the environment's numba (the bundled wheels are
tested by test_extension_zip.py).
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_MODULE = "im_tests"
"""Module name of the test extension repository."""
ADDON = f"bl_ext.{REPO_MODULE}.implicit_muscles"
"""The add-on's module name once the repository is added."""
SOURCE_FOLDER = "implicit-muscles-source"
"""The user extension repository's folder inside ``BLENDER_USER_RESOURCES``."""

_source_dir: Path | None = None


def bpy_module():
    """Import ``bpy`` (once) with the temporary user resources and return it."""
    if "BLENDER_USER_RESOURCES" not in os.environ:
        raise RuntimeError("BLENDER_USER_RESOURCES is not set: run the Blender tests through pytest (tests/conftest.py)"
                           " so Blender does not use your own preferences.")
    import bpy
    return bpy


def ensure_repository():
    """Add the user extension repository holding this source tree (once per session); return the bpy module."""
    global _source_dir
    bpy = bpy_module()
    repos = bpy.context.preferences.extensions.repos
    if any(repo.module == REPO_MODULE for repo in repos):
        return bpy
    if _source_dir is None:
        # one fixed folder per user resources: the processes a test starts with them (the farm command line) import
        # the add-on from the same path, and numba, which keys its cache by the source path, loads the kernels
        # the session compiled instead of compiling them again
        _source_dir = Path(os.environ["BLENDER_USER_RESOURCES"]) / SOURCE_FOLDER
        _source_dir.mkdir(exist_ok=True)
        link = _source_dir / "implicit_muscles"
        if not link.is_symlink():
            link.symlink_to(REPO_ROOT, target_is_directory=True)
    repos.new(name="Implicit Muscles tests", module=REPO_MODULE, custom_directory=str(_source_dir), source='USER')
    return bpy


def enable():
    """Enable the add-on from the source tree and return its module; raise if Blender could not enable it."""
    import addon_utils
    ensure_repository()
    errors = []
    module = addon_utils.enable(ADDON, default_set=True, handle_error=errors.append)
    if module is None or errors:
        raise RuntimeError(f"Blender could not enable {ADDON}: {errors!r}")
    return module


def disable():
    """Disable the add-on; raise if Blender reported an error while unregistering."""
    import addon_utils
    errors = []
    addon_utils.disable(ADDON, default_set=True, handle_error=errors.append)
    if errors:
        raise RuntimeError(f"Blender could not disable {ADDON} cleanly: {errors!r}")


def reset():
    """Start from an empty scene (keeps preferences, so the add-on stays enabled if it was)."""
    bpy = bpy_module()
    bpy.ops.wm.read_homefile(use_empty=True)


class RecordingLayout:
    """Stands in for ``UILayout`` so a panel's ``draw()`` can run headless: records labels and operators.

    Each entry is ``(kind, text_or_idname, icon, alert)``; ``alert`` is True where Blender would draw in red.
    """

    def __init__(self, log=None, alert=False):
        self.log = [] if log is None else log
        self.alert = alert

    def column(self, **_):
        return RecordingLayout(self.log, self.alert)

    row = column
    box = column

    def grid_flow(self, **_):
        return RecordingLayout(self.log, self.alert)

    def label(self, *, text="", icon='NONE'):
        self.log.append(("label", text, icon, self.alert))

    def prop(self, data, name, **_):
        self.log.append(("prop", name, 'NONE', self.alert))

    def operator(self, idname, *, text="", icon='NONE', **_):
        self.log.append(("operator", idname, icon, self.alert))
        import types
        return types.SimpleNamespace()


def draw_panel(panel_class):
    """Run ``panel_class.draw`` on a :class:`RecordingLayout`; return the recorded entries."""
    import types
    fake_panel = types.SimpleNamespace(layout=RecordingLayout())
    panel_class.draw(fake_panel, bpy_module().context)
    return fake_panel.layout.log


class ContextRecordingLayout(RecordingLayout):
    """A :class:`RecordingLayout` that also keeps what a button would run with: each operator button as
    ``(idname, text, properties, context pointers)`` in ``buttons`` (the properties a namespace the drawing code
    filled in, the pointers those set with ``context_pointer_set`` on the layout or its parents), and menus as
    ``("menu", text, idname, alert)`` entries of the log."""

    def __init__(self, log=None, alert=False, buttons=None, pointers=None):
        super().__init__(log, alert)
        self.buttons = [] if buttons is None else buttons
        self.pointers = dict(pointers or {})

    def column(self, **_):
        return ContextRecordingLayout(self.log, self.alert, self.buttons, self.pointers)

    row = column
    box = column
    grid_flow = column

    def context_pointer_set(self, name, data):
        self.pointers[name] = data

    def operator(self, idname, *, text="", icon='NONE', **_):
        super().operator(idname, text=text, icon=icon)
        import types
        props = types.SimpleNamespace()
        self.buttons.append((idname, text, props, dict(self.pointers)))
        return props

    def menu(self, idname, *, text="", **_):
        self.log.append(("menu", text, idname, self.alert))

    def prop_search(self, data, name, *_, **__):
        self.prop(data, name)

    def template_list(self, *_, **__):
        pass

    def separator(self, **_):
        pass
