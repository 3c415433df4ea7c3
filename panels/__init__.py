"""Panels (see README.md). Each module ends with a ``classes`` tuple and its own register/unregister."""
from . import fats, joint, muscles, status

_modules = (muscles, fats, status, joint)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
