"""The family of rigged bodies with artist-made weights, for tests and benchmarks (not shipped).

``make character`` builds it (``tools/fetch_family.py``, then ``tools/build_family.py`` with Blender 4.2's bpy,
whose docstring says what each member holds and how its bones, weights and actions were made): one ``.blend`` and
one JSON manifest per member in ``.cache/family/``.

    sys.path.insert(0, "tests")                     # tests/ is not a package
    from family import FAMILY, REDUCED, member, manifest, load_character, load_animation, bend_angles
    [m.name for m in FAMILY]        # default/average .. game_engine/slim, cmu_mb/average, mixamo/average, human, ...
    [m.name for m in REDUCED]       # ['default/average', 'game_engine/heavy', 'human']: what the tests use
    body = member("game_engine/heavy")
    body.path, body.kind, body.rig, body.shape      # .cache/family/game_engine_heavy.blend, 'mpfb2', ...
    body.bone_map["upper_arm.L"]                    # 'upperarm_l' (``spine``: a list, bottom to top)
    character = load_character(body)                # tests/characters.py's Character: armature space, metres, rest
    bend = load_animation(body, "bend")             # 109 frames at 24 fps; "jump": 688 frames at 30 fps
    bend_angles(character, bend, 25, body.bone_map)  # {'elbow.L': 140.0, 'knee.L': 140.0, 'hip.L': 100.0, ...}

Members (``Member``, defined in ``tools/build_family.py``): ``name``, ``path`` (.blend), ``manifest`` (JSON),
``kind`` (``mpfb2`` or ``gltf``), ``rig``, ``shape`` (``average``/``heavy``/``slim``, None for the glTF members),
``bone_map``, ``reduced``, ``held_out`` (``cmu_mb`` and ``mixamo``: for the benchmark only, never for tuning),
``source`` (the .glb a glTF member came from) and ``actions`` (those the build keyed: ``bend`` and ``jump``; the
human keeps the ``jump`` of its .glb, BCN_Epileptic its ``Epileptisch``, Testwuson ``Wuson_Bind``, ``Wuson_Walk``
and ``Wuson_Run``). ``load_character`` and ``load_animation`` are ``tests/characters.py``'s, which take a member
in place of a path (the glTF files load as before).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

_TOOLS = Path(__file__).resolve().parents[1] / "tools"
if str(_TOOLS) not in sys.path:
    sys.path.insert(0, str(_TOOLS))
from build_family import (BEND_KEYS, MEMBERS, POSE_TARGETS, Member, expected_bend, measure_bend,  # noqa: E402,F401
                          shape_measures, slots_of)
from characters import FAMILY_COMMAND, load_animation, load_character  # noqa: E402,F401

FAMILY = MEMBERS
"""Every member, the MakeHuman bodies first."""
REDUCED = tuple(m for m in FAMILY if m.reduced)
"""The members the tests use: ``default/average``, ``game_engine/heavy`` and the human."""


def member(name: str) -> Member:
    """The member called ``name`` (KeyError if none is)."""
    for m in FAMILY:
        if m.name == name:
            return m
    raise KeyError(f"no family member {name!r}; there are {[m.name for m in FAMILY]}")


def manifest(m: Member) -> dict:
    """The member's JSON manifest (counts, sizes, bone map, measured pose angles, the stamp)."""
    return json.loads(Path(m.manifest).read_text())


def posed_ends(character, animation, i: int) -> tuple:
    """Posed (heads, tails) in armature space at the animation's i-th sampled frame."""
    t = animation.transforms[i]
    ends = [np.einsum("bij,bj->bi", t, np.c_[x, np.ones(len(x))])[:, :3] for x in (character.heads, character.tails)]
    return ends[0], ends[1]


def bend_angles(character, animation, frame: int, bone_map: dict) -> dict:
    """The pose set's angles (degrees; see ``tools/build_family.py``) at ``frame`` of a loaded animation, measured
    on the posed bones through the member's bone map."""
    i = int(np.flatnonzero(animation.frames == frame)[0])
    heads, tails = posed_ends(character, animation, i)
    return measure_bend(character, bone_map, heads, tails)
