"""Property group of one fat primitive (thesis ch. 6) on the armature object: ``arm.implicit_muscles.fats[k]``.

A fat hangs on one bone: its centre is a point in that bone's rest frame (``bone.matrix_local`` coordinates, metres:
head at 0, Y along the bone), its semi-axes lie along the bone frame's X (across), Y (along) and Z (out), it joins
that bone's part of the skin, and its anchors move with the bone. Stiffness and damping are animatable; the rest is
set up once (changing it makes the bind stale, as for a muscle).
"""

from bpy.props import BoolProperty, FloatProperty, FloatVectorProperty, StringProperty
from bpy.types import PropertyGroup

from .options import ANIMATED, SETUP


class ImplicitFat(PropertyGroup):
    """One fat primitive: an ellipsoid of soft tissue on one particle tied to its bone."""

    bone: StringProperty(name="Bone", **SETUP, description="Bone the fat hangs on and whose part of the skin shows it")
    center: FloatVectorProperty(name="Centre", subtype='TRANSLATION', unit='LENGTH', size=3, **SETUP,
                                description="Centre in the bone's rest frame (head at 0, bone along Y)")
    axes: FloatVectorProperty(name="Semi-Axes", subtype='XYZ_LENGTH', unit='LENGTH', size=3,
                              default=(0.05, 0.05, 0.03), min=0.001, soft_max=0.5, **SETUP,
                              description="Half-widths across the bone (X), along it (Y) and outwards (Z)")
    stiffness: FloatProperty(name="Stiffness", default=0.3, min=0.0, max=1.0, **ANIMATED,
                             description="How fast it follows its bone, as a frequency: 0 wobbles at 0.5 Hz, 0.5 at "
                                         "2 Hz, 1 at 8 Hz, whatever its size")
    damping: FloatProperty(name="Damping", default=0.1, min=0.0, max=1.0, **ANIMATED,
                           description="How soon a jiggle dies out: 0 keeps swinging, 1 settles without swinging")
    collide_bones: BoolProperty(name="Bones", default=True, **SETUP,
                                description="Keep off the bones' collision capsules instead of swinging through them")
