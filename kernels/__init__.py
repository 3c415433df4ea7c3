"""Numba kernels. Never imports bpy, and never imports ``core/``.

Kernels are compiled with ``cache=True``: the first start compiles them (tens of seconds), later starts load the
machine code from numba's cache directory (the host sets ``NUMBA_CACHE_DIR`` before importing this package; the
Blender extension points it at its user folder; ``core/io/kernel_cache.py`` names the folder and warms it up).
Shared constants live in ``constants.py``.
"""
