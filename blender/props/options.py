"""What the property groups' properties share: library overrides, and what a change of each kind of property does
(an animated value reaches the evaluated object; a set-up value makes the binds check whether they still fit; a joint
setting forgets the cached states).
"""
from __future__ import annotations

from ..session import runtime

OVERRIDE = {'LIBRARY_OVERRIDABLE'}


def _tag_for_evaluation(self, context):
    """A value set by hand or script (not by animation) reaches the evaluated armature the frame handler reads:
    Blender does not re-evaluate an object when a property of an add-on's group changes."""
    self.id_data.update_tag()


ANIMATED = dict(options={'ANIMATABLE'}, override=OVERRIDE, update=_tag_for_evaluation)
STATIC = dict(options=set(), override=OVERRIDE)


def _setup_changed(self, context):
    """A muscle's set-up changed: the binds of the armature's meshes check whether they still fit."""
    runtime.on_setup_changed(self.id_data)


SETUP = dict(options=set(), override=OVERRIDE, update=_setup_changed)
"""Not animatable, and part of what bind reads (``binding.setup_digest``)."""


def joint_changed(self, context):
    """A joint setting set by hand or script: the cached muscle states were simulated with the old one."""
    runtime.invalidate_all()
    self.id_data.update_tag()


JOINT = dict(options={'ANIMATABLE'}, override=OVERRIDE, update=joint_changed)
"""Joint settings read per frame (``blender/scene/joint.py``): animatable, and a change by hand forgets cached
states."""
