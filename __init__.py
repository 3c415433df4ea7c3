# SPDX-License-Identifier: GPL-3.0-or-later
"""Implicit Muscles: skin deformation with implicit skinning and dynamic implicit muscles.

This file only registers and unregisters. The numerics live in ``core/`` (numpy) and ``kernels/`` (numba), which
never import ``bpy``; the Blender side lives in ``operators/``, ``panels/`` and ``blender/``. Those are imported
inside ``register()``, so importing this package (as the headless tests do, to reach ``core``) needs no Blender.

Order matters: ``blender.engine.numba_setup.setup()`` points numba's cache at the extension's user folder and
imports numba before any module can import ``kernels``; then the submodules register their classes, then properties
are attached to ``bpy.types``. ``unregister()`` does the reverse.
"""


def _submodules():
    from . import operators, panels
    return (operators, panels)


def register():
    from .blender import props
    from .blender.authoring import handles
    from .blender.display import viewport
    from .blender.engine import compile_job, numba_setup
    from .blender.session import cli, handlers
    numba_setup.setup(__package__)
    props.register()  # Object.implicit_muscles, Object.implicit_skin (docs/design.md#scripting-names)
    for module in _submodules():
        module.register()
    viewport.register()  # the viewport's draw handler, not in background mode
    handles.register()
    handlers.register()
    cli.register()  # blender --command implicit_muscles_bake (farms)
    compile_job.register()  # compiles the kernels in the background once after an install or update
    numba_setup.report_problems()


def unregister():
    from .blender import props
    from .blender.authoring import handles
    from .blender.display import viewport
    from .blender.engine import compile_job, numba_setup
    from .blender.session import cli, handlers, runtime
    compile_job.unregister()
    numba_setup.cancel_report()
    cli.unregister()
    handlers.unregister()
    handles.unregister()
    viewport.unregister()
    for module in reversed(_submodules()):
        module.unregister()
    props.unregister()
    runtime.clear()
