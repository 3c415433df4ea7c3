"""Sides in names of bones and muscles: the other side's name (``flip_side``) and a new muscle's name that carries
its bones' side the way the rig writes it (``default_muscle_name``, ``name_with_side``, ``mirrored_name``).

A side is an ``L``/``R`` (either case) or a ``left``/``right`` word in the name. Blender's own rules
(``bpy.utils.flip_name``) come first: a side after a separator at the end (``arm.L``, ``arm.L.001``, ``arm-L``,
``arm L``, ``arm_l``), before one at the start (``l_arm``, ``L.arm``), and ``left``/``right`` at the start or the
end in any case (``Left_arm``, ``B_UpperArm_Left``). What they miss is then looked for inside the name: a
``Left``/``Right`` word (``mixamorig:LeftArm``, ``thigh_left_01``; a word, not part of one as in ``cleft``) and a
lone letter between separators (``arm.L.twist``, ``arm_L_01``).
"""
from __future__ import annotations

import re

SEPARATORS = "._- :"
"""Characters that separate a side from the rest of a name."""

_WORD = re.compile(r"(?:(?<![A-Za-z])|(?<=[a-z0-9])(?=[A-Z]))(left|right|Left|Right|LEFT|RIGHT)(?![a-z])")
_LETTER = re.compile(r"(?<=[._\- :])[LlRr](?=[._\- :])")
_TOKEN = re.compile(r"left|right|l|r", re.IGNORECASE)
_NUMBER = re.compile(r"(\.\d+)?")
_OTHER = {"l": "r", "r": "l", "left": "right", "right": "left"}


def flip_side(name: str) -> str | None:
    """The other side's name (``arm.L`` -> ``arm.R``, ``mixamorig:LeftArm`` -> ``mixamorig:RightArm``), or None
    when the name has no side."""
    import bpy
    flipped = bpy.utils.flip_name(name)
    if flipped != name:
        return flipped
    found = _WORD.search(name) or _LETTER.search(name)
    if found is None:
        return None
    return name[:found.start()] + _swap(found.group()) + name[found.end():]


def _swap(token: str) -> str:
    """``L`` -> ``R``, ``left`` -> ``right``, ``Left`` -> ``Right``, ``LEFT`` -> ``RIGHT`` (and back)."""
    other = _OTHER[token.lower()]
    if token.isupper():
        return other.upper()
    return other.capitalize() if token[0].isupper() else other


def side_span(name: str) -> tuple[int, int] | None:
    """``(start, end)`` of the side in ``name`` (``arm.L.001``: the ``L``, ``(4, 5)``), or None."""
    other = flip_side(name)
    if other is None:
        return None
    start = 0
    while start < min(len(name), len(other)) and name[start] == other[start]:
        start += 1
    token = _TOKEN.match(name, start)
    return (start, token.end()) if token else None


def _ends_name(name: str, end: int) -> bool:
    """Whether only a number (``.001``) follows position ``end`` of ``name``."""
    return _NUMBER.fullmatch(name, end) is not None


def _separator_before(name: str, start: int) -> str:
    return name[start - 1] if start > 0 and name[start - 1] in SEPARATORS else ""


def with_side(base: str, bone: str) -> str:
    """``base`` with the side of ``bone`` written as the bone writes it: after it with the bone's separator when the
    side ends the bone's name (``biceps.L``, ``biceps-L``, ``biceps_Left``), in front of it when the side starts it
    (``l_biceps``, ``Left_biceps``), otherwise after an underscore (``biceps_Left`` for ``mixamorig:LeftArm``).
    ``base`` itself when the bone has no side."""
    span = side_span(bone)
    if span is None:
        return base
    start, end = span
    side = bone[start:end]
    if _ends_name(bone, end):
        return f"{base}{_separator_before(bone, start) or '_'}{side}"
    if start == 0:
        after = bone[end:end + 1]
        return f"{side}{after if after in SEPARATORS and after else '_'}{base}"
    return f"{base}_{side}"


def name_with_side(base: str, bones) -> str:
    """``base`` if it has a side, else ``base`` with the side of the first of ``bones`` that has one
    (``with_side``), else ``base``."""
    if flip_side(base) is not None:
        return base
    for bone in bones:
        if side_span(bone) is not None:
            return with_side(base, bone)
    return base


def default_muscle_name(origin: str, others) -> str:
    """The name of a new muscle without a preset or a name: ``<origin>_muscle`` with the origin's side kept at the
    end (``upper_arm.L`` -> ``upper_arm_muscle.L``, ``arm.L.001`` -> ``arm_muscle.L.001``, ``l_arm`` ->
    ``l_arm_muscle``); an origin with no side takes the side of the first of the ``others`` bones
    (``chest`` to ``shoulder.L``: ``chest_muscle.L``)."""
    span = side_span(origin)
    if span is not None and _ends_name(origin, span[1]):
        separator = _separator_before(origin, span[0])
        cut = span[0] - len(separator)
        return f"{origin[:cut]}_muscle{separator or '_'}{origin[span[0]:]}"
    return name_with_side(f"{origin}_muscle", others)


def mirrored_name(name: str, mirrored_bones) -> str | None:
    """The name of the mirrored copy of muscle ``name``: its other side (``flip_side``), or, for a name with no
    side, the name with the side of its mirrored bones (``name_with_side``); None when neither has a side."""
    flipped = flip_side(name)
    if flipped is not None:
        return flipped
    named = name_with_side(name, mirrored_bones)
    return named if named != name else None
