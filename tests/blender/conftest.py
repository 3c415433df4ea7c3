"""The ``bpy`` fixture of the authoring and evaluation tests: an empty scene with the add-on enabled from the
source tree, disabled again afterwards (test_register.py defines its own, without enabling)."""
import pytest

import blender_session


@pytest.fixture
def bpy():
    bpy = blender_session.ensure_repository()
    blender_session.reset()
    blender_session.enable()
    yield bpy
    blender_session.disable()
