"""Run the add-on's farm command line (``blender/session/cli.py``) in a fresh process with the ``bpy`` module, as
``blender --command implicit_muscles_bake ARGS`` would: ``python run_cli.py ARGS``. The add-on is enabled from the
source tree (``blender_session``); ``BLENDER_USER_RESOURCES`` comes from the calling test, so the compiled kernels
are shared."""
import importlib
import sys

import blender_session

if __name__ == "__main__":
    blender_session.ensure_repository()
    blender_session.enable()
    cli = importlib.import_module(f"{blender_session.ADDON}.blender.session.cli")
    status = cli.main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    import os
    os._exit(status)  # skip interpreter teardown: the bpy module can crash at exit after add-on registration
