"""A broad muscle as a bundle of rods in Blender: a fan-shaped biceps with three *Fibres* and
*Solver* Rod binds with its fibres as rods that push each other, plays, scrubs and bakes to the same frames, its
fibres never pass through each other, and the panel says what its fibres do."""
import importlib

import numpy as np

import blender_session
from blender_scenes import animated_arm, bind, evaluated
from test_rod_solver import FRAMES, scrubs_and_bakes_as_played
PASS_TOL = 0.005
"""[m] Largest overlap of two fibres' capsules through the curl (1-40): pressed between the humerus, whose touch
has the last word in a substep, and the skin, which keeps them inside after the frame, they overlap by up to
4.4 mm (two rods alone: 0.5 mm, tests/core/test_rod_contacts.py)."""


def _module(name):
    return importlib.import_module(f"{blender_session.ADDON}.{name}")


def _fan(bpy):
    """The animated arm with its biceps a fan of three fibres, as a pectoral is (4 cm apart at the origin, 2 cm at
    the insertion), its *Solver* Rod."""
    rig, mesh = animated_arm(bpy)
    biceps = rig.implicit_muscles.muscles[0]
    biceps.fibres = 3
    biceps.origin_spread = 0.04
    biceps.insertion_spread = 0.02
    biceps.solver = 'ROD'
    return rig, mesh


def _least_clearance(character):
    """[m] The least clearance between neighbouring fibres of the bundle (rods 0-1 and 1-2) in the character's
    current state."""
    from importlib import import_module
    contacts = import_module(f"{blender_session.ADDON}.core.rod.contacts")
    rods = character.model.rods
    model, state = rods.model, character.current.rod
    rows = []
    for i in range(3):
        a, b = model.axis_start[i], model.axis_start[i + 1]
        rows.append((state.x[a:b], model.rest_radius[a:b] * state.s[a:b]))
    return min(contacts.clearance(*rows[0], *rows[1]), contacts.clearance(*rows[1], *rows[2]))


def test_a_rod_muscle_with_fibres_is_a_bundle_that_plays_scrubs_and_bakes(bpy):
    rig, mesh = _fan(bpy)
    bind(bpy, mesh)
    runtime = _module("blender.session.runtime")
    character = runtime.bound(mesh).character
    assert character.model.rod_muscles.tolist() == [True, True, True, False]
    assert character.model.collisions.bundles.tolist() == [0, 0, 0, -1]
    model = character.model.rods.model
    assert model.touch_bundle.sum() == 6  # each fibre touches the other two
    scene = bpy.context.scene
    played, clearances = {}, []
    for f in range(1, max(FRAMES) + 1):
        scene.frame_set(f)
        clearances.append(_least_clearance(character))
        if f in FRAMES:
            played[f] = evaluated(bpy, mesh)
    assert min(clearances) > -PASS_TOL
    assert all(np.isfinite(x).all() for x in played.values())
    scrubs_and_bakes_as_played(bpy, mesh, played)


def test_fibres_of_an_axis_muscle_overlap_and_the_panel_says_which(bpy):
    import types

    rig, mesh = _fan(bpy)
    rig.implicit_muscles.active_index = 0
    bpy.context.view_layer.objects.active = rig
    layout = blender_session.ContextRecordingLayout()
    bpy.types.IMPLICIT_MUSCLES_PT_muscles_data.draw(types.SimpleNamespace(layout=layout), bpy.context)
    labels = [entry[1] for entry in layout.log if entry[0] == "label"]
    assert "A bundle: the rods slide along each other" in labels
    reader = _module("blender.scene.reader")
    assert reader.read_collisions(rig, np.array([0, 0, 0, 1])).bundles == [0, 0, 0, -1]
    rig.implicit_muscles.muscles[0].solver = 'AXIS'
    layout = blender_session.ContextRecordingLayout()
    bpy.types.IMPLICIT_MUSCLES_PT_muscles_data.draw(types.SimpleNamespace(layout=layout), bpy.context)
    labels = [entry[1] for entry in layout.log if entry[0] == "label"]
    assert "Axis fibres overlap freely" in labels
    assert reader.read_collisions(rig, np.array([0, 0, 0, 1])).bundles == [-1, -1, -1, -1]
    bind(bpy, mesh)
    character = _module("blender.session.runtime").bound(mesh).character
    assert character.model.rods is None and character.model.collisions.bundles.tolist() == [-1, -1, -1, -1]
