# SPDX-License-Identifier: GPL-3.0-or-later
"""Implicit Muscles: skin deformation with implicit skinning and dynamic implicit muscles.

This file only registers and unregisters. The numerics live in ``core/`` (numpy) and ``kernels/`` (numba), which
never import ``bpy``; the Blender side lives in ``operators/``, ``panels/`` and ``blender/``. Those are imported
inside ``register()``, so importing this package (as the headless tests do, to reach ``core``) needs no Blender.

Order matters: ``blender.engine.setup()`` points numba's cache at the extension's user folder and imports numba
before any module can import ``kernels``; then the submodules register their classes, then properties are
attached to ``bpy.types``. ``unregister()`` does the reverse.
"""


def _submodules():
    from . import operators, panels
    return (operators, panels)


def register():
    from .blender import engine
    engine.setup(__package__)
    for module in _submodules():
        module.register()
    # Properties attached to bpy.types (e.g. Object.implicit_muscles, see DESIGN.md §4) go here, after the
    # classes they point to are registered, and are deleted first in unregister().
    engine.report_problems()


def unregister():
    from .blender import engine
    engine.cancel_report()
    for module in reversed(_submodules()):
        module.unregister()
