"""Blender-facing modules that are neither operators nor panels (see README.md)."""
