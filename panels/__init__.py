"""Panels (see README.md). Each module ends with a ``classes`` tuple and its own register/unregister."""
from . import joint, muscles, status

_modules = (muscles, status, joint)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
