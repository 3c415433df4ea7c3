"""Long runs: a looping animation simulated without a break on the arm and on the full body.

One continuous simulation (never reset), frame after frame, as a long shot or an endless game-like loop plays it.
Every loop it records: whether all vertex positions stayed finite, the muscles' largest kinetic energy in the loop,
each muscle's volume at the loop's first frame (its surface mesh, ``core/muscle/surface.py``, with its simulated axis,
activation and flatness) against the same muscle at rest, and the process's resident memory. Two volume numbers:
``volume_drift``, the largest change of a muscle's volume from the second loop to the last (what a long run adds),
and ``volume_vs_rest_max``, the largest difference from rest at any loop (what bending an axis costs, paper §8.2). The suite runs it
reduced (tests/core/test_long_run.py); ``make bench`` runs 10,000 frames of each scene (``bench_long_run.py``).
"""
from __future__ import annotations

import os

import numpy as np

LOOP = 48
"""Frames of one loop of either animation (2 s at 24 fps)."""
SURFACE = dict(rings=48, sides=24)
"""Resolution of the muscle surfaces whose volume is measured (the same at rest and in motion)."""


def arm_scene():
    """``(character, poses)``: the paper's arm and its biceps curl (0 -> 130 -> 0 degrees with activation)."""
    from implicit_muscles.core.pbd.control import MuscleInputs
    from implicit_muscles.scenes import paper as scenes

    def poses(f):
        B, activation = scenes.biceps_curl(f, LOOP)
        return B, MuscleInputs(activation=activation)

    return scenes.arm_character(), poses


def body_scene():
    """``(character, poses)``: the full body (50 muscles) swinging arms and legs three times per loop."""
    from implicit_muscles.scenes import paper as scenes
    from implicit_muscles.core.character import CharacterSetup, MuscledCharacter
    from implicit_muscles.core.pbd.control import MuscleInputs

    rig = scenes.body_rig()
    muscles, _, owner = scenes.body_muscles()
    character = MuscledCharacter.bind(CharacterSetup(rig, tuple(muscles), owner, owner, owner))

    def poses(f):
        return body_pose(rig.names, rig.heads, rig.parents, 3.0 * (f % LOOP) / LOOP), MuscleInputs()

    return character, poses


def body_pose(names, heads, parents, phase):
    """``B (bones, 4, 4)``: thighs and upper arms swing +-0.6 rad (left and right opposite), shins and forearms
    bent 0.8 rad; ``phase`` in cycles (periodic in 1)."""
    from implicit_muscles.scenes.paper import rotation_about

    B = np.broadcast_to(np.eye(4), (len(names), 4, 4)).copy()
    for i, n in enumerate(names):  # upper limbs first, then the lower limbs on their parents
        if n.startswith(("thigh", "upper_arm")):
            sign = 1.0 if n.endswith(".L") else -1.0
            B[i] = rotation_about((1, 0, 0), sign * 0.6 * np.sin(2 * np.pi * phase), heads[i])
    for i, n in enumerate(names):
        if n.startswith(("shin", "forearm")):
            B[i] = B[parents[i]] @ rotation_about((1, 0, 0), 0.8, heads[i])
    return B


def resident_mb() -> float:
    """This process's resident memory [MB] (Linux ``/proc/self/statm``; 0 where it does not exist)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except OSError:
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def muscle_volumes(character, activation=None) -> np.ndarray:
    """``(M,)`` volume [m^3] of each muscle's surface with its current simulated axis and activation."""
    return character.muscle_volumes(activation, measure="mesh", **SURFACE)


def run(character, poses, frames: int, dt: float = 1.0 / 24.0, progress=None) -> dict:
    """Simulate ``frames`` frames of ``poses(f) -> (B, MuscleInputs)`` from rest without a
    reset; per loop of ``LOOP`` frames: finite, largest kinetic energy [J], volume ratio to rest per muscle, memory.
    ``progress(frame)`` is called after each loop."""
    from implicit_muscles.core.pbd.solver import kinetic_energy

    character.reset()
    rest = muscle_volumes(character)
    B, inputs = poses(0)
    character.settle(B, inputs, dt=dt)  # the first pose is not the rest pose (as in Blender at the start frame)
    loops = {"energy_max_j": [], "volume_ratio_min": [], "volume_ratio_max": [], "resident_mb": []}
    ratios = []
    finite = True
    out = np.empty((character.vertex_count, 3))
    energy = 0.0
    for f in range(frames):
        B, inputs = poses(f)
        if f % LOOP == 0:
            ratio = muscle_volumes(character, inputs.activation) / rest
            ratios.append(ratio)
            loops["volume_ratio_min"].append(float(ratio.min()))
            loops["volume_ratio_max"].append(float(ratio.max()))
        character.frame(B, inputs, dt=dt, out=out)
        finite = finite and bool(np.isfinite(out).all())
        energy = max(energy, kinetic_energy(character.model.pbd, character.state()))
        if (f + 1) % LOOP == 0:
            loops["energy_max_j"].append(energy)
            loops["resident_mb"].append(resident_mb())
            energy = 0.0
            if progress is not None:
                progress(f + 1)
    e = np.array(loops["energy_max_j"])
    settled = e[1:4].max() if len(e) > 3 else e.max()
    return {
        "frames": frames,
        "loops": len(e),
        "finite": finite,
        "energy_growth": float(e[-1] / settled) if settled > 0 else 0.0,
        "volume_vs_rest_max": float(max(1.0 - min(loops["volume_ratio_min"]), max(loops["volume_ratio_max"]) - 1.0)),
        "volume_drift": float(np.abs(ratios[-1] - ratios[min(1, len(ratios) - 1)]).max()),
        "memory_growth_mb": float(loops["resident_mb"][-1] - loops["resident_mb"][min(1, len(e) - 1)]),
        "per_loop": loops,
    }
