"""Headless core of Implicit Muscles: numpy only, never imports bpy or mathutils.

Subjects: ``muscle/`` (the fusiform muscle primitive: profiles, axis, field, packed batches, surface mesh),
``pbd/`` (the muscle axes' Position Based Dynamics), ``skin/`` (Implicit Skinning: HRBF part fields, composition,
DQS, tracking, joint volume), ``io/`` (point-cache files, the compiled-kernel cache). On top: ``rig`` (a mesh and
its skeleton at rest) and ``character`` (the per-frame pipeline of a character with muscles).
"""
