"""Headless core of Implicit Muscles: numpy only, never imports bpy or mathutils.

Modules are named after what they compute: ``profile`` (beta profiles, activation, cross-section, volume law),
``axis`` (axis polyline and normals), ``fusiform`` (numpy reference of the muscle field), ``muscle`` (the muscle
primitive), ``muscle_batch`` (packing many muscles for the numba kernels), ``surface`` (display/volume mesh).
"""
