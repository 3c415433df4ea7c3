"""Twenty-two preset muscles on a body of the family, added as an artist adds them (``tests/family_muscles.py``;
presets on the same bones start on one line): with every muscle at its rest activation the rest frame gives the
rest mesh back (the muscles settle inside the skin at bind, where the first frame finds them)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from blender_scenes import bind, evaluated

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from family import member  # noqa: E402
from family_muscles import add_limb_muscles, open_member  # noqa: E402

REST_TOL = 5e-4
"""[m] Largest distance of the rest frame's skin from the rest mesh with the muscles bound."""


@pytest.fixture
def muscled(bpy):
    body = member("game_engine/heavy")
    if not Path(body.path).is_file():
        pytest.skip(f"{body.path} is missing: the set-up step `make character` builds the family")
    armature, meshes = open_member(bpy, body)
    action = bpy.data.actions["bend"]
    armature.animation_data_create().action = action
    if getattr(action, "slots", None):  # Blender 4.4 and later: the action's slot for this armature
        armature.animation_data.action_slot = action.slots[0]
    bpy.context.scene.frame_set(1)  # the pose set's rest key
    names = add_limb_muscles(bpy, armature, body.bone_map)
    return body, armature, meshes, names


def test_the_rest_frame_gives_the_rest_mesh_with_22_muscles(bpy, muscled):
    if bpy.app.version < (5, 0, 0):
        pytest.skip("binds 22 muscles on a full body: run once per suite, with Blender 5.0")
    body, armature, meshes, names = muscled
    rest = {mesh.name: np.array([v.co[:] for v in mesh.data.vertices]) for mesh in meshes}
    for mesh in meshes:
        bind(bpy, mesh)
    bpy.context.scene.frame_set(2)
    bpy.context.scene.frame_set(1)
    for mesh in meshes:
        off = np.linalg.norm(evaluated(bpy, mesh) - rest[mesh.name], axis=1)
        assert off.max() < REST_TOL, (mesh.name, off.max())
    bpy.context.scene.frame_set(25)  # pose A: the muscles move the skin away from the Armature result
    moved = [np.linalg.norm(evaluated(bpy, mesh) - rest[mesh.name], axis=1).max() for mesh in meshes]
    assert max(moved) > 0.05  # the bent limbs moved
