"""Presets of fat primitives (thesis ch. 6): where a new fat lies on its bone and how large it is.

A preset places a new fat on its bone relative to the limb: its centre ``along`` the bone (0 head, 1 tail) and
``depth`` limb radii out along the bone's local Z (``-`` for the back), its semi-axes ``(across, along, out)`` in limb
radii (``rig.limb_radius``), so it lies clear of the bone's capsule (a quarter of a limb radius) and its outer side
0.92 limb radii out, just under the skin, which it then makes.
"""
from __future__ import annotations

from ..scene import rig as rig_utils, units

PRESETS = {
    # name: (along, depth, (across, along, out), stiffness, damping)
    "belly": (0.5, 0.6, (0.6, 0.5, 0.32), 0.25, 0.1),
    "chest": (0.6, 0.65, (0.55, 0.35, 0.27), 0.4, 0.15),
    "buttocks": (0.35, -0.6, (0.6, 0.45, 0.32), 0.3, 0.1),
    "thigh": (0.4, 0.62, (0.55, 0.9, 0.3), 0.35, 0.15),
}
"""The shipped fat presets (module docstring)."""
def preset_key(name: str) -> str:
    """A preset's key from a name as typed (case, spaces and underscores alike), or ``""`` if there is none."""
    key = name.strip().lower().replace("_", " ")
    return key if key in PRESETS else ""


def apply_preset(armature, fat, preset: str) -> None:
    """Place and size ``fat`` on its bone by ``preset`` (a key of ``PRESETS``), relative to the limb."""
    along, depth, axes, stiffness, damping = PRESETS[preset]
    bone = armature.data.bones[fat.bone]
    radius = rig_utils.limb_radius(armature, fat.bone)
    fat.center = (0.0, along * bone.length * units.world_scale(armature), depth * radius)  # world units
    fat.axes = tuple(a * radius for a in axes)
    fat.stiffness, fat.damping = stiffness, damping
