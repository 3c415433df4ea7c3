"""The Blender side that is neither operators nor panels, in sub-packages by job (see README.md).

A module imports the modules of its own layer and of the layers below it, never those above; ``operators/`` and
``panels/`` stand above every layer. ``tests/test_package_layout.py`` holds the code to this order.
"""

LAYERS = ("engine", "scene", "authoring", "session", "display", "props")
"""blender/'s sub-packages from the bottom up: the numba engine and its background compile; reading the scene (rigs,
names, keys, joints, fats, live meshes); authoring muscles and fats; the session (binds, playback, renders, bakes,
handlers); the viewport's drawing; the property groups, whose update functions reach all of these."""
