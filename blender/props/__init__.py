"""Property groups (docs/design.md#scripting-names) and their registration: one muscle, and the armature's muscles with
its fats and the simulation settings they share, on the armature object (``arm.implicit_muscles``); Implicit Skinning of
one mesh, on the mesh object (``body.implicit_skin``); the scene's evaluation quality outside renders and bakes
(``scene.implicit_muscles``). A fat's group is ``fat.py``; what the properties share, ``options.py``. All are
library-overridable.

Muscles live on the armature *object* (``arm.implicit_muscles.muscles``), so their keyframes share the rig's
action with the pose keys. Origin and insertion are points in their bone's rest frame (``bone.matrix_local``
coordinates, metres), so they follow the bones and survive bone edits that keep the bone's frame. Activation,
stiffness, width scale and both eccentricities are animatable; everything else is set up once. A skin setting that
needs no new bind shows the current frame again at once.

The ranges match the core's validation (``core/validation.py``): exponents 1..9, eccentricity 0..0.99.

The groups are defined in this module, the one that registers them: with the muscle and skin groups in modules of
their own, the ``bpy`` module of Blender 4.2 crashed when the Python process exited (its own exit never ran).
"""
import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, PointerProperty, StringProperty)
from bpy.types import PropertyGroup

from ..display import viewport
from ..scene import joint
from ..scene.live import live_meshes
from ..session import modifiers, playback
from .fat import ImplicitFat
from .options import ANIMATED, JOINT, OVERRIDE, SETUP, STATIC, joint_changed


def _shape(name, default, description):
    return IntProperty(name=name, default=default, min=1, max=9, **SETUP, description=description)


class ImplicitMuscle(PropertyGroup):
    """One muscle: where it is attached, its shape, its dynamics and its collisions."""

    origin_bone: StringProperty(name="Origin Bone", **SETUP,
                                description="Bone the muscle starts from; the origin follows it")
    origin_point: FloatVectorProperty(name="Origin", subtype='TRANSLATION', unit='LENGTH', size=3, **SETUP,
                                      description="Origin in the origin bone's rest frame (head at 0, bone along Y)")
    insertion_bone: StringProperty(name="Insertion Bone", **SETUP,
                                   description="Bone the muscle pulls on; the insertion follows it")
    insertion_point: FloatVectorProperty(name="Insertion", subtype='TRANSLATION', unit='LENGTH', size=3,
                                         **SETUP,
                                         description="Insertion in the insertion bone's rest frame")
    skin_bone: StringProperty(name="Skin Bone", **SETUP,
                              description="The bone whose part of the skin shows this muscle (usually the origin "
                                          "bone, where the belly lies)")
    twist: FloatProperty(name="Twist", subtype='ANGLE', default=0.0, min=-3.14159265, max=3.14159265,
                         **SETUP, description="Turns the flat side of the cross-section around the axis")
    width: FloatProperty(name="Width", subtype='DISTANCE', unit='LENGTH', default=0.03, min=0.001, soft_max=0.2,
                         **SETUP, description="Thickness at rest; the volume it gives stays constant")

    alpha_rest: _shape("Rest Alpha", 3, "Rest profile: larger values move the belly away from the origin")
    beta_rest: _shape("Rest Beta", 3, "Rest profile: larger values move the belly towards the origin")
    alpha_active: _shape("Active Alpha", 4, "Profile when fully active")
    beta_active: _shape("Active Beta", 7, "Profile when fully active")
    eccentricity_rest: FloatProperty(name="Rest Flatness", default=0.0, min=0.0, max=0.99, **ANIMATED,
                                     description="Cross-section flatness at rest: 0 round, 0.99 very flat")
    eccentricity_active: FloatProperty(name="Active Flatness", default=0.0, min=0.0, max=0.99, **ANIMATED,
                                       description="Cross-section flatness when fully active")

    activation: FloatProperty(name="Activation", default=0.0, min=0.0, max=1.0, **ANIMATED,
                              description="How hard the muscle works: 0 relaxed, 1 fully contracted shape "
                                          "(same volume). Keyframe it with the pose")
    stiffness: FloatProperty(name="Stiffness", default=0.5, min=0.0, max=1.0, **ANIMATED,
                             description="How fast the muscle swings back: 0.1 loose and jiggly (about 2 Hz), 0.5 "
                                         "10 Hz, 0.6-0.9 tense (follows its bones). The same for any particle "
                                         "count, substeps or frame rate")
    width_scale: FloatProperty(name="Width Scale", default=1.0, min=0.1, max=3.0, **ANIMATED,
                               description="Exaggerates or thins the muscle (1: true volume)")
    particles: IntProperty(name="Particles", default=30, min=3, max=60, **SETUP,
                           description="Simulation points along the axis: more follow bones more closely, cost more")
    solver: EnumProperty(name="Solver", default='AXIS', **SETUP,
                         items=(('AXIS', "Axis (paper)", "The paper's muscle: a chain of particles whose width "
                                 "follows its length, so the whole muscle thickens as it shortens"),
                                ('ROD', "Rod (VIPER)", "A volume-keeping rod: squeezed or contracted in one place, "
                                 "it bulges there, and it twists with its bones; costs more per frame")),
                         description="How the muscle moves: the paper's particle axis, or a VIPER rod that keeps "
                                     "its volume locally")

    collide_bones: BoolProperty(name="Bones", default=True, **SETUP,
                                description="Slide around the bones instead of going through them")
    collide_muscles: BoolProperty(name="Muscles", default=True, **SETUP,
                                  description="Push against the other muscles on the same skin bone (except those "
                                              "of the same Group)")
    collision_group: IntProperty(name="Group", default=0, min=0, max=64, **SETUP,
                                 description="Muscles with the same group (1 or more) overlap freely instead of "
                                             "pushing each other, as the fibres of one axis muscle always do "
                                             "(0: no group); the fibres of one Rod muscle still push each other")
    keep_inside: BoolProperty(name="Stay Under Skin", default=True, **SETUP,
                              description="Keep the muscle inside the skin when joints bend")
    bone_radius: FloatProperty(name="Bone Radius", subtype='DISTANCE', unit='LENGTH', default=0.0, min=0.0,
                               soft_max=0.1, **SETUP,
                               description="Radius of the bones' collision capsules this muscle slides on (0: "
                                           "automatic, a quarter of the limb's radius measured from the skin)")

    fibres: IntProperty(name="Fibres", default=1, min=1, max=16, **SETUP,
                        description="Fan-shaped muscles (pectoral, deltoid) are made of several fibres. With "
                                    "Solver Axis they overlap freely; with Solver Rod they are a bundle: rods that "
                                    "slide along each other without passing through (unless Muscles is off)")
    origin_spread: FloatProperty(name="Origin Spread", subtype='DISTANCE', unit='LENGTH', default=0.0, min=0.0,
                                 soft_max=0.3, **SETUP,
                                 description="How far apart the fibres start, across the muscle")
    insertion_spread: FloatProperty(name="Insertion Spread", subtype='DISTANCE', unit='LENGTH', default=0.0,
                                    min=0.0, soft_max=0.3, **SETUP,
                                    description="How far apart the fibres end, across the muscle")

    joint_bone: StringProperty(name="Joint Bone", options=set(), override=OVERRIDE, update=joint_changed,
                               description="The bone whose turn drives the activation (empty: keys alone): one "
                                           "that bends between the origin and the insertion bone, its angle "
                                           "measured relative to its parent and to rest, constraints included")
    joint_axis: EnumProperty(name="Axis", default='X', options=set(), override=OVERRIDE, update=joint_changed,
                             items=(('X', "X", "The joint bone's local X"), ('Y', "Y", "Its local Y (a twist)"),
                                    ('Z', "Z", "Its local Z")),
                             description="The joint bone's local axis whose turn is measured")
    joint_angle_rest: FloatProperty(name="Angle at Rest", subtype='ANGLE', default=0.0, **JOINT,
                                    description="The joint's angle at which it gives no activation")
    joint_angle_active: FloatProperty(name="Angle Active", subtype='ANGLE', default=2.0943951, **JOINT,
                                      description="The joint's angle at which it gives full activation")
    joint_curve: EnumProperty(name="Curve", default='LINEAR', options=set(), override=OVERRIDE,
                              update=joint_changed, items=joint.CURVE_ITEMS,
                              description="How the activation grows over the angle range")
    activation_mode: EnumProperty(name="Keys", default='ADD', **JOINT, items=joint.MODE_ITEMS,
                                  description="What the keyed Activation does with the joint's: adds to it, or "
                                              "replaces it")

    origin_handle: PointerProperty(name="Origin Handle", type=bpy.types.Object, options={'HIDDEN'},
                                   override=OVERRIDE,
                                   description="The empty that moves the origin (Edit Handles), if any")
    insertion_handle: PointerProperty(name="Insertion Handle", type=bpy.types.Object, options={'HIDDEN'},
                                      override=OVERRIDE,
                                      description="The empty that moves the insertion (Edit Handles), if any")


def _display_changed(self, context):
    """Draw the muscles again with the new display setting."""
    viewport.mark_dirty()
    screen = getattr(context, "screen", None)
    for area in (screen.areas if screen is not None else ()):
        if area.type == 'VIEW_3D':
            area.tag_redraw()


def _use_scene_start_changed(self, context):
    """Switched off before any start frame was set: start where the scene does, not at frame 1."""
    if not self.use_scene_start and not self.is_property_set("start_frame") and context.scene is not None:
        self.start_frame = context.scene.frame_start


def _start_frame_set(self, context):
    """A start frame set in the panel or by a script is the one the simulation uses."""
    if self.use_scene_start:
        self.use_scene_start = False


class ImplicitMuscleRig(PropertyGroup):
    """The muscles of one armature object, and the simulation settings they share."""

    muscles: CollectionProperty(type=ImplicitMuscle, override={'LIBRARY_OVERRIDABLE', 'USE_INSERTION'})
    active_index: IntProperty(name="Active Muscle", default=0, min=0, override=OVERRIDE)
    fats: CollectionProperty(type=ImplicitFat, override={'LIBRARY_OVERRIDABLE', 'USE_INSERTION'})
    active_fat_index: IntProperty(name="Active Fat", default=0, min=0, override=OVERRIDE)
    show_muscles: BoolProperty(name="Show Muscles", default=True, update=_display_changed,
                               description="Draw the muscles' shapes in the viewport (never in renders, never "
                                           "saved or exported)")
    show_in_front: BoolProperty(name="In Front", default=True, update=_display_changed,
                                description="Draw the muscles over the skin, half transparent (off: hidden where "
                                            "the skin covers them, seen through it in X-Ray or Wireframe shading)")
    display_color: EnumProperty(name="Colour", default='MUSCLE', update=_display_changed,
                                items=(('MUSCLE', "Per Muscle", "Each muscle in a colour of its own"),
                                       ('ACTIVATION', "Activation", "Blue when relaxed, red when fully active")),
                                description="How the viewport colours the muscles")
    substeps: IntProperty(name="Substeps", default=10, min=1, max=100, **SETUP,
                          description="Simulation steps per frame")
    friction: FloatProperty(name="Friction", default=0.0, min=0.0, max=1.0, **SETUP,
                            description="How much the muscles stick to the bones and muscles they rest on "
                                        "(Coulomb's coefficient): 0 lets them slide and jiggle freely, 0.3 carries "
                                        "a muscle resting on a bone along with it")
    use_scene_start: BoolProperty(name="Use Scene Start", default=True, update=_use_scene_start_changed, **STATIC,
                                  description="Start the muscle simulation from rest at the scene's first frame "
                                              "(off: at Start Frame)")
    start_frame: IntProperty(name="Start Frame", default=1, update=_start_frame_set, **STATIC,
                             description="Frame where the muscle simulation starts from rest when Use Scene Start "
                                         "is off; setting it turns Use Scene Start off")
    bone_names: StringProperty(name="Bone Names", default="", options={'HIDDEN'}, override=OVERRIDE,
                               description="The armature's bone names when last checked, one per line, so "
                                           "muscles follow renamed bones (blender/scene/rig.py, follow_renames)")

    @property
    def active_muscle(self):
        """The muscle selected in the list, or None."""
        if 0 <= self.active_index < len(self.muscles):
            return self.muscles[self.active_index]
        return None


def _show_current_frame(mesh_obj, context):
    """Deform ``mesh_obj`` for the current frame now; a failing frame is left to the frame handler, which reports
    it on the next frame like any other."""
    if context.scene is not None:
        try:
            playback.show_current_frame(mesh_obj, context.scene)
        except ValueError:
            pass


def _enabled_changed(self, context):
    mesh_obj = self.id_data
    if self.enabled and self.bound:
        modifiers.install(mesh_obj)
        _show_current_frame(mesh_obj, context)
    else:
        modifiers.set_active(mesh_obj, False)


def _live_setting_changed(self, context):
    """Show the current frame again with the new setting (it needs no new bind)."""
    if self.enabled and self.bound and not self.baked:
        _show_current_frame(self.id_data, context)


class ImplicitSkinSettings(PropertyGroup):
    """Implicit Skinning of one mesh."""

    enabled: BoolProperty(name="Implicit Skinning", default=False, update=_enabled_changed, **STATIC,
                          description="Deform this mesh with Implicit Skinning and its armature's muscles "
                                      "instead of the plain Armature modifier")
    armature: PointerProperty(name="Armature", type=bpy.types.Object, **STATIC,
                              poll=lambda self, obj: obj.type == 'ARMATURE',
                              description="The armature whose bones and muscles drive this mesh")
    samples_per_part: IntProperty(name="Samples", default=80, min=16, max=400, **STATIC,
                                  description="Points per bone used to fit its part of the skin")
    grid_resolution: IntProperty(name="Detail", default=48, min=16, max=128, **STATIC,
                                 description="Field grid resolution (cells along a part's longest side)")
    unweighted: EnumProperty(name="Unweighted Vertices", default='ERROR', **STATIC,
                             items=(('ERROR', "Refuse", "Binding stops and says which vertices have no weight on a "
                                                        "bone"),
                                    ('NEAREST', "Nearest Bone", "Vertices with no weight on a bone follow the bone "
                                                                "nearest to them (the Armature modifier leaves "
                                                                "them where they are)")),
                             description="What binding does with vertices that have no weight on a bone of the "
                                         "armature")
    iterations: IntProperty(name="Iterations", default=4, min=1, max=40, **STATIC,
                            description="Tracking steps per frame")
    contact_angle: FloatProperty(name="Contact Angle", subtype='ANGLE', default=0.959931, min=0.17, max=2.6,
                                 **STATIC,
                                 description="A vertex stops at a contact when the skin's direction turns this "
                                             "much")
    temporal: BoolProperty(name="Use Previous Frame", default=False, **STATIC,
                           description="Start each frame from the last one when playing forward (faster, but "
                                       "the shape then depends on how playback got there)")
    land_on_contact: BoolProperty(name="Land on Contact", default=True, update=_live_setting_changed, **STATIC,
                                  description="Move skin that passed through another part's skin back onto the "
                                              "contact surface between them, so a bent joint creases instead of "
                                              "crossing itself (off: the contact stop alone)")
    keep_volume: BoolProperty(name="Keep Joint Volume", default=True, update=_live_setting_changed, **STATIC,
                              description="Give back the volume the skin loses at bent joints, with a bulge around "
                                          "the joint that stays clear of the crease (off: the tracked skin as is)")
    limit_correction: BoolProperty(name="Limit Corrections", default=True, update=_live_setting_changed, **STATIC,
                                   description="Keep the skin near dual quaternions where the implicit field cannot "
                                               "follow the mesh's detail (faces, fingers, toes), and move the rest "
                                               "by at most about an edge length, smoothly, except at creases and "
                                               "over muscles (off: the tracked skin as is, which may crumple on "
                                               "dense meshes)")
    bound: BoolProperty(name="Bound", default=False, **STATIC,
                        description="The skin has been bound to its armature in the rest pose")
    bind_signature: StringProperty(name="Bind Signature", default="", **STATIC,
                                   description="Vertex count and rest-pose checksum at bind time")
    baked: BoolProperty(name="Baked", default=False, **STATIC,
                        description="The mesh plays its bake (a Mesh Cache modifier) instead of the live evaluation")
    bake_file: StringProperty(name="Bake File", default="", **STATIC,
                              description="The point cache (.pc2) of the bake, relative to the .blend file")
    bake_start: IntProperty(name="Bake Start", default=1, **STATIC, description="First baked frame")
    bake_end: IntProperty(name="Bake End", default=1, **STATIC, description="Last baked frame")


def _quality_changed(self, context):
    """Show the current frame again at the new viewport quality."""
    scene = self.id_data
    for obj in live_meshes(scene):
        if obj.implicit_skin.bound:
            _show_current_frame(obj, context)


class ImplicitMusclesScene(PropertyGroup):
    """The scene's evaluation quality outside renders and bakes (``blender/session/quality.py``)."""

    viewport_quality: EnumProperty(
        name="Viewport Quality", default='RENDER', update=_quality_changed,
        items=(('RENDER', "Render", "The viewport shows exactly what renders and bakes show"),
               ('PREVIEW', "Preview", "Fewer simulation substeps and tracking iterations while animating; renders "
                                      "and bakes stay at Render quality")),
        description="How hard the muscles and the skin work outside renders and bakes (the scene's Simplify, when "
                    "on, also gives Preview)")


classes = (ImplicitMuscle, ImplicitFat, ImplicitMuscleRig, ImplicitSkinSettings, ImplicitMusclesScene)
"""In the order they register: a group before the groups that point to it."""


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.implicit_muscles = PointerProperty(type=ImplicitMuscleRig, override=OVERRIDE)
    bpy.types.Object.implicit_skin = PointerProperty(type=ImplicitSkinSettings, override=OVERRIDE)
    bpy.types.Scene.implicit_muscles = PointerProperty(type=ImplicitMusclesScene)


def unregister():
    del bpy.types.Scene.implicit_muscles
    del bpy.types.Object.implicit_skin
    del bpy.types.Object.implicit_muscles
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
