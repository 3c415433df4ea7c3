"""Demo: the paper's arm with the elbow bent, side by side: dual-quaternion skinning | Implicit Skinning |
Implicit Skinning with the four muscles (biceps activated), same frame, same camera (``make demo``).

The arm and its muscles come from ``scenes/paper.py``; Implicit Skinning runs through ``core/character.py`` (the
muscles are simulated from rest while the elbow bends over ``RAMP_FRAMES`` frames, then held). The figure is seen
from the side (the elbow's inner fold faces the camera's left), so the contact crease and the biceps' bulge show.
"""
from __future__ import annotations

import time

import numpy as np

ELBOW_DEGREES = 110.0
RAMP_FRAMES = 24
HOLD_FRAMES = 12
GAP = 0.12
"""Space between the three arms [m]."""


def arm_positions():
    """``(faces, {label: positions (V, 3)}, timings)`` for the three panels."""
    from implicit_muscles.core.pbd.control import MuscleInputs
    from implicit_muscles.scenes import paper as scenes
    from implicit_muscles.core.skin.deformer import ImplicitSkinDeformer
    from implicit_muscles.core.skin.field import bind_skin_field

    rig = scenes.arm_rig()
    plain_skin = bind_skin_field(rig.vertices, rig.faces, rig.weights, rig.heads, rig.tails, rig.parents)
    plain = ImplicitSkinDeformer(plain_skin, rig.vertices, rig.faces, rig.weights)
    B = scenes.arm_pose(ELBOW_DEGREES)
    t0 = time.perf_counter()
    is_plain = plain.deform(B).copy()
    dqs = plain.dqs_positions.copy()
    character = scenes.arm_character()
    for f in range(RAMP_FRAMES + HOLD_FRAMES):
        bend = min(1.0, (f + 1) / RAMP_FRAMES)
        inputs = MuscleInputs(activation=[bend, 0.0, 0.6 * bend, 0.0], stiffness=[0.6] * 4)
        muscled = character.frame(scenes.arm_pose(ELBOW_DEGREES * bend), inputs)
    seconds = time.perf_counter() - t0
    return rig.faces, {"dual quaternions": dqs, "Implicit Skinning": is_plain,
                       "Implicit Skinning + muscles\nbiceps active": muscled}, {"seconds": seconds,
                                                                               "frame": character.timings}


def render_arms(studio, out_dir, quality, font_path, file_name="arm_elbow.png"):
    """Render the three arms; returns the figure's record."""
    faces, panels, timing = arm_positions()
    scene = studio.new_scene()
    skin = studio.muscle_material("Skin", color=(0.80, 0.62, 0.52), subsurface=0.15)
    text = studio.label_material()
    font = studio.load_font(font_path)
    objects, left = [], 0.0
    size = 0.022
    for k, (label, pos) in enumerate(panels.items()):
        # view from -y: x to the right, z up; the forearm rises towards +z
        lo, hi = pos.min(axis=0), pos.max(axis=0)
        offset = (left - lo[0], 0.0, -lo[2])
        objects.append(studio.mesh_object(f"Arm {k}", pos, faces, skin, offset))
        centre = left + 0.5 * (hi[0] - lo[0])
        objects.append(studio.label(label, (centre, 0.0, -1.0 * size), size, text, font=font))
        left += hi[0] - lo[0] + GAP
    settings = studio.RenderSettings(round(1280 * quality.scale), round(560 * quality.scale),
                                     samples=quality.samples)
    studio.frame_camera(scene, objects, settings)
    centre, extent = studio.bounds(objects)
    studio.add_lights(centre, extent)
    path = out_dir / file_name
    seconds = studio.render(scene, path, settings)
    return {"file": path, "resolution": [settings.width, settings.height], "render_seconds": seconds,
            "deform_seconds": timing["seconds"], "last_frame_ms": {k: 1e3 * v for k, v in timing["frame"].items()}}
