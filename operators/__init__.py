"""Operators (see README.md). Each module ends with a ``classes`` tuple and its own register/unregister."""
from . import bake, engine, fats, fit, joint, muscles, patch, skin

_modules = (engine, muscles, fats, fit, skin, bake, joint, patch)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
