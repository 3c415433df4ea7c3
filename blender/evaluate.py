"""Per-frame evaluation of bound skins inside Blender (paper §7.2, DESIGN.md §3).

A persistent ``frame_change_post`` handler deforms every mesh whose Implicit Skinning is enabled and bound:

1. it reads the *evaluated* armature (pose matrices with ``foreach_get``, the muscles' animated values), so
   playback, scripts and animation renders see the same values;
2. it steps the muscles' PBD from the cached state of the previous frame. The state is cached per frame from the
   armature's simulation start frame, where the muscles first settle into that frame's pose (``settle``: a shot
   rarely starts in the rest pose, and a jump from rest would start it with a burst of jiggle). A frame reached
   again (scrubbing back, re-opening a file, a render after playback) reuses its cached state, and a jump forward
   past the cache simulates the frames in between (it sets each frame in turn to read its pose; the handler does
   not recurse), so a frame's shape does not depend on how playback got there. The cache keeps every frame near
   the last one stored and every ``runtime.CACHE_EVERY``-th frame before, so its memory stays flat over long
   shots; a frame whose previous state was dropped is simulated again from the checkpoint before it (bit for bit
   the same);
3. it runs Implicit Skinning (``core/character.py``) and writes the positions into the float-vector point attribute
   ``implicit_skin_position`` of the mesh; a generated Geometry Nodes modifier "Implicit Skinning" right after the
   Armature modifier sets the positions from it (only where the attribute exists). The rest positions are never
   written. A linked mesh (a library override in a shot) cannot take an attribute: its positions go to a local
   helper object read by a local modifier at the end of its stack (``install``). While the effect is on, the
   Armature modifier is turned off in the viewport and render; turning the effect off (``enabled = False``, or
   unbinding) turns it back on and hides the Geometry Nodes modifier, which gives back the plain Armature result.

If a frame fails (a scaled, NaN or far-flung pose, a non-finite result, a mesh whose vertex count, armature's bone
count or place relative to its armature changed since bind), that mesh shows the plain Armature result for that
frame, with one warning printed per problem, never a stream of tracebacks; the next frame that evaluates switches
Implicit Skinning back on.

A baked mesh (``blender/bake.py``) plays its Mesh Cache modifier instead and is skipped here. A saved file stores
its live meshes showing the plain Armature result (``on_save_pre``), so without the add-on it plays the Armature
modifier, never a frozen frame; with the add-on, opening it switches them back on (``on_load_post``).

Edits between frame changes (``on_depsgraph_update``): posing the armature re-evaluates the current frame for
display (its muscle state is not cached, so the cache keeps describing the animation) and forgets the cached states
from the current frame on; editing keyframes of the armature's action forgets them from the first frame whose
curves changed (the key before the earliest edited key). Each frame's times (reading the pose, the core's stages,
writing the result) are kept in ``Bound.timings`` for the panel.
"""
from __future__ import annotations

import sys
import time
import traceback

import bpy
import numpy as np
from bpy.app.handlers import persistent

from . import rig, runtime

ATTRIBUTE = "implicit_skin_position"
MODIFIER = "Implicit Skinning"
CACHE_MODIFIER = "Implicit Skinning Cache"
"""The Mesh Cache modifier that plays a bake (``blender/bake.py``)."""
NODE_GROUP = "Implicit Skinning"
LINKED_MODIFIER = "Implicit Skinning (Linked Mesh)"
LINKED_NODE_GROUP = "Implicit Skinning (Linked Mesh)"
HELPER_PREFIX = "Implicit Skinning Positions: "
"""Linked meshes (``install``): the local modifier, its node group, and the name prefix of the helper object."""

_IDENTITY = np.eye(4)
_busy = False
_warned: set = set()


def _new_group(name, *inputs):
    """A new Geometry Nodes group with a Geometry input, the given ``(name, socket type)`` inputs and a Geometry
    output: ``(group, input node, output node)``."""
    group = bpy.data.node_groups.new(name, 'GeometryNodeTree')
    group.interface.new_socket(name="Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    for socket, kind in inputs:
        group.interface.new_socket(name=socket, in_out='INPUT', socket_type=kind)
    group.interface.new_socket(name="Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    return group, group.nodes.new('NodeGroupInput'), group.nodes.new('NodeGroupOutput')


def node_group():
    """The shared Geometry Nodes group: Set Position from the named attribute, where it exists."""
    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None:
        return group
    group, gin, gout = _new_group(NODE_GROUP)
    nodes, links = group.nodes, group.links
    attr = nodes.new('GeometryNodeInputNamedAttribute')
    attr.data_type = 'FLOAT_VECTOR'
    attr.inputs["Name"].default_value = ATTRIBUTE
    setpos = nodes.new('GeometryNodeSetPosition')
    links.new(gin.outputs[0], setpos.inputs["Geometry"])
    links.new(attr.outputs["Attribute"], setpos.inputs["Position"])
    links.new(attr.outputs["Exists"], setpos.inputs["Selection"])
    links.new(setpos.outputs["Geometry"], gout.inputs[0])
    return group


def linked_node_group():
    """The node group of linked meshes: Set Position from the points of the object in its "Positions" input, by
    index, where that object has as many points as the mesh."""
    group = bpy.data.node_groups.get(LINKED_NODE_GROUP)
    if group is not None and group.library is None:
        return group
    group, gin, gout = _new_group(LINKED_NODE_GROUP, ("Positions", 'NodeSocketObject'))
    nodes, links = group.nodes, group.links
    info = nodes.new('GeometryNodeObjectInfo')
    info.transform_space = 'ORIGINAL'  # the helper's own coordinates: the mesh's local space
    sample = nodes.new('GeometryNodeSampleIndex')
    sample.data_type, sample.domain = 'FLOAT_VECTOR', 'POINT'
    position = nodes.new('GeometryNodeInputPosition')
    index = nodes.new('GeometryNodeInputIndex')
    count_in, count_ours = nodes.new('GeometryNodeAttributeDomainSize'), nodes.new('GeometryNodeAttributeDomainSize')
    same = nodes.new('FunctionNodeCompare')
    same.data_type, same.operation = 'INT', 'EQUAL'
    setpos = nodes.new('GeometryNodeSetPosition')
    links.new(gin.outputs["Positions"], info.inputs["Object"])
    links.new(info.outputs["Geometry"], sample.inputs["Geometry"])
    links.new(position.outputs[0], sample.inputs[1])
    links.new(index.outputs[0], sample.inputs["Index"])
    links.new(gin.outputs["Geometry"], count_in.inputs[0])
    links.new(info.outputs["Geometry"], count_ours.inputs[0])
    links.new(count_in.outputs["Point Count"], same.inputs[2])
    links.new(count_ours.outputs["Point Count"], same.inputs[3])
    links.new(gin.outputs["Geometry"], setpos.inputs["Geometry"])
    links.new(sample.outputs[0], setpos.inputs["Position"])
    links.new(same.outputs[0], setpos.inputs["Selection"])
    links.new(setpos.outputs["Geometry"], gout.inputs[0])
    return group


def is_linked(mesh_obj) -> bool:
    """The mesh data comes from a library (linked, or a library override): its attributes cannot be written."""
    data = mesh_obj.data
    return data.library is not None or data.override_library is not None


def live_modifier_name(mesh_obj) -> str:
    return LINKED_MODIFIER if is_linked(mesh_obj) else MODIFIER


def _helper_name(mesh_obj) -> str:
    return f"{HELPER_PREFIX}{mesh_obj.name}"


def install(mesh_obj) -> None:
    """Add (or find) the Geometry Nodes modifier after the Armature modifier and switch the effect on.

    A linked mesh (a character linked into a shot and made a library override) cannot take the attribute: it gets a
    local modifier at the end of its stack (an override cannot put local modifiers before linked ones) reading the
    positions from a local helper object, a loose point mesh in no scene (``HELPER_PREFIX`` + the object's name)."""
    if is_linked(mesh_obj):
        _install_linked(mesh_obj)
    else:
        mod = mesh_obj.modifiers.get(MODIFIER)
        if mod is None:
            mod = mesh_obj.modifiers.new(MODIFIER, 'NODES')
            mod.node_group = node_group()
            arm_index = next((k for k, m in enumerate(mesh_obj.modifiers) if m.type == 'ARMATURE'), None)
            if arm_index is not None:
                with bpy.context.temp_override(object=mesh_obj):
                    bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=arm_index + 1)
    set_active(mesh_obj, True)


def _install_linked(mesh_obj) -> None:
    name = _helper_name(mesh_obj)
    helper = bpy.data.objects.get(name)
    if helper is None or helper.type != 'MESH' or helper.library is not None:
        helper = bpy.data.objects.new(name, bpy.data.meshes.new(name))
    count = len(mesh_obj.data.vertices)
    if len(helper.data.vertices) != count:
        helper.data.clear_geometry()
        helper.data.vertices.add(count)
    mod = mesh_obj.modifiers.get(LINKED_MODIFIER)
    if mod is None:
        mod = mesh_obj.modifiers.new(LINKED_MODIFIER, 'NODES')
    group = linked_node_group()
    if mod.node_group != group:
        mod.node_group = group
    mod[group.interface.items_tree["Positions"].identifier] = helper


def check_linked_stack(mesh_obj) -> None:
    """``ValueError`` if a linked mesh's stack has a modifier of its own after the Armature modifier (a Subdivision,
    say): Implicit Skinning would come after it, on other vertices, and an override cannot move it before."""
    after = False
    for m in mesh_obj.modifiers:
        if m.type == 'ARMATURE':
            after = True
        elif after and m.name not in (MODIFIER, LINKED_MODIFIER, CACHE_MODIFIER) and (m.show_viewport
                                                                                      or m.show_render):
            raise ValueError(f"{mesh_obj.name} is linked and its library's stack has '{m.name}' after the Armature "
                             f"modifier: a library override cannot put Implicit Skinning before it. Turn '{m.name}' "
                             f"off in this shot, or make the mesh data local (Object > Relations > Make Local).")


def set_active(mesh_obj, on: bool) -> None:
    """Implicit Skinning on (the live modifier, or the Mesh Cache of a bake) and the Armature modifier off, or only
    the Armature modifier on. A linked mesh's attribute modifier (from its library) never shows: its attribute is
    the library's, frozen."""
    baked = on and mesh_obj.implicit_skin.baked and mesh_obj.modifiers.get(CACHE_MODIFIER) is not None
    live = live_modifier_name(mesh_obj)
    for m in mesh_obj.modifiers:
        if m.type == 'ARMATURE':
            show = not on
        elif m.name in (MODIFIER, LINKED_MODIFIER):
            show = on and not baked and m.name == live
        elif m.name == CACHE_MODIFIER:
            show = baked
        else:
            continue
        if m.show_viewport != show or m.show_render != show:
            m.show_viewport = m.show_render = show


def uninstall(mesh_obj) -> None:
    """Give back the plain Armature result: hide our modifier, turn the Armature modifier back on."""
    set_active(mesh_obj, False)


def bone_transforms(armature_eval, rest_inverse) -> np.ndarray:
    """``B_j = M_j M_ref_j^-1`` ``(B, 4, 4)`` from the evaluated pose (armature space)."""
    bones = armature_eval.pose.bones
    buf = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix", buf)
    M = buf.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)  # foreach_get gives column-major matrices
    return M @ rest_inverse


def muscle_values(armature_eval, source) -> tuple:
    """Activation, stiffness, width scale and eccentricity ``(fibres,)`` of the evaluated muscles, per core fibre;
    the eccentricity is the animated rest and active flatness mixed by the activation (paper §5.2)."""
    muscles = armature_eval.implicit_muscles.muscles
    n = len(muscles)
    out = []
    for name in ("activation", "stiffness", "width_scale", "eccentricity_rest", "eccentricity_active"):
        buf = np.empty(n, dtype=np.float32)
        muscles.foreach_get(name, buf)
        out.append(buf.astype(np.float64)[source])
    act, stiff, scale, e0, e1 = out
    return act, stiff, scale, (1.0 - act) * e0 + act * e1


def evaluate_mesh(mesh_obj, scene, depsgraph, preview: bool = False) -> bool:
    """Deform one bound mesh for the scene's current frame (module docstring); returns True if written.

    ``preview``: an edit between frame changes (posing): step from the cached previous frame if there is one,
    show the result, cache nothing and forget the cached states from this frame on.
    """
    bound = runtime.bound(mesh_obj)
    skin = mesh_obj.implicit_skin
    if bound is None or not skin.enabled or skin.baked:
        return False
    armature = skin.armature
    if armature is None or armature.type != 'ARMATURE':
        raise ValueError(f"{mesh_obj.name}'s armature is gone (deleted or unlinked): pick one in its Implicit "
                         f"Skinning panel and bind again, or turn Implicit Skinning off.")
    frame = scene.frame_current
    start = armature.implicit_muscles.start_frame
    ch = bound.character
    t0 = time.perf_counter()
    bound.check_scene(mesh_obj, armature, depsgraph)
    if is_linked(mesh_obj):
        check_linked_stack(mesh_obj)
    fresh = frame <= start
    if fresh:
        ch.reset()
    elif bound.state_for(frame - 1) is not None:
        ch.restore(bound.state_for(frame - 1))
    elif not preview:
        _simulate_to(bound, scene, armature, frame, start)
    t1 = time.perf_counter()
    arm_eval = armature.evaluated_get(depsgraph)
    B = bone_transforms(arm_eval, bound.rest_inverse)
    act, stiff, scale, ecc = muscle_values(arm_eval, bound.source)
    if fresh:  # the shot's first pose is rarely the rest pose: the muscles start at rest in it, not with a jump
        ch.settle(B, act, stiff, scale, ecc, dt=1.0 / _fps(scene))
    t2 = time.perf_counter()
    ch.deformer.keep_volume = skin.keep_volume  # switched live, no new bind
    ch.deformer.land_on_contact = skin.land_on_contact
    positions = ch.frame(B, activation=act, stiffness=stiff, width_scale=scale, dt=1.0 / _fps(scene), frame=frame,
                         eccentricity=ecc)
    t3 = time.perf_counter()
    if preview:
        bound.invalidate(frame)
    else:
        bound.store(frame, ch.state())
    _write(mesh_obj, positions, bound)
    bound.last_frame, bound.last_error = frame, ""
    set_active(mesh_obj, True)  # back from a frame that fell back to the Armature result (writes only changes)
    t4 = time.perf_counter()
    bound.timings = {"frame": frame, "simulate gap": t1 - t0, "read": t2 - t1, **ch.timings, "write": t4 - t3,
                     "total": t4 - t0}
    return True


def _fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def _simulate_to(bound, scene, armature, frame, start):
    """Simulate the muscles from the last cached frame before ``frame`` (or from rest at the start frame) through
    ``frame - 1``, reading each frame's pose; the scene is set back to ``frame`` afterwards."""
    global _busy
    ch = bound.character
    first = bound.last_cached_before(frame)
    if first is None or first < start:
        ch.reset()
        first = start - 1
    else:
        ch.restore(bound.state_for(first))
    _busy = True
    try:
        for f in range(first + 1, frame):
            scene.frame_set(f)
            arm_eval = armature.evaluated_get(bpy.context.evaluated_depsgraph_get())
            B = bone_transforms(arm_eval, bound.rest_inverse)
            act, stiff, scale, ecc = muscle_values(arm_eval, bound.source)
            if f == start:
                ch.settle(B, act, stiff, scale, ecc, dt=1.0 / _fps(scene))
            ch.step_muscles(B, act, stiff, scale, 1.0 / _fps(scene), eccentricity=ecc)
            bound.store(f, ch.state())
        scene.frame_set(frame)
    finally:
        _busy = False


def _write(mesh_obj, positions, bound):
    linked = is_linked(mesh_obj)
    if linked:
        helper = bpy.data.objects.get(_helper_name(mesh_obj))
        if helper is None or len(helper.data.vertices) != len(positions) \
                or mesh_obj.modifiers.get(LINKED_MODIFIER) is None:
            _install_linked(mesh_obj)
            helper = bpy.data.objects[_helper_name(mesh_obj)]
    else:
        mesh = mesh_obj.data
        attr = mesh.attributes.get(ATTRIBUTE)
        if attr is None or attr.data_type != 'FLOAT_VECTOR' or attr.domain != 'POINT':
            if attr is not None:
                mesh.attributes.remove(attr)
            attr = mesh.attributes.new(ATTRIBUTE, 'FLOAT_VECTOR', 'POINT')
    if np.array_equal(bound.to_mesh, _IDENTITY):  # mesh and armature share their world transform (usual rig)
        np.copyto(bound.last_local, positions)
    else:  # a float64 product then one cast (matmul into the float32 buffer takes numpy's slow mixed loop)
        local = positions @ bound.to_mesh[:3, :3].T
        local += bound.to_mesh[:3, 3]
        np.copyto(bound.last_local, local)
    if linked:
        helper.data.vertices.foreach_set("co", bound.last_local.ravel())
        helper.data.update()
    else:
        attr.data.foreach_set("vector", bound.last_local.ravel())
        mesh.update()


def _evaluate_safely(obj, scene, depsgraph, preview=False) -> None:
    """Evaluate one mesh; a failing frame shows the plain Armature result with one warning per problem."""
    try:
        if runtime.bound(obj) is None and obj.implicit_skin.bound:
            runtime.rebind(obj)  # a reopened file: bind is deterministic, the settings are in the file
        evaluate_mesh(obj, scene, depsgraph, preview=preview)
    except Exception as ex:  # noqa: BLE001 - a frame handler must never raise: one warning, then the fallback
        set_active(obj, False)  # this frame shows the plain Armature result
        bound = runtime.bound(obj)
        if bound is not None:
            bound.last_error = str(ex)
        key = (obj.name_full, str(ex))
        if key not in _warned:
            _warned.add(key)
            print(f"Implicit Muscles: {obj.name} shows its plain Armature result this frame: {ex}",
                  file=sys.stderr)
            if not isinstance(ex, (ValueError, RuntimeError)):  # a bug of ours: keep its traceback, once
                traceback.print_exc()


def _live_meshes(scene):
    return [obj for obj in scene.objects
            if obj.type == 'MESH' and obj.implicit_skin.enabled and not obj.implicit_skin.baked]


@persistent
def on_frame_change(scene, depsgraph=None):
    if _busy:
        return
    if depsgraph is None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
    for obj in _live_meshes(scene):
        _evaluate_safely(obj, scene, depsgraph)


@persistent
def on_depsgraph_update(scene, depsgraph):
    """Edits between frame changes: a posed armature re-evaluates its meshes for display; edited keys forget the
    cached muscle states from the first changed frame on (module docstring); renamed bones are followed by their
    muscles (``rig.follow_renames``)."""
    if _busy:
        return
    posed, actions, bones = set(), set(), False
    for update in depsgraph.updates:
        id_ = update.id.original if update.id is not None else None
        if isinstance(id_, bpy.types.Object) and id_.type == 'ARMATURE':
            posed.add(id_.name_full)
        elif isinstance(id_, bpy.types.Action):
            actions.add(id_.name_full)
        elif isinstance(id_, bpy.types.Armature):
            bones = True
    if bones:  # a bone may have been renamed: its muscles follow
        for obj in scene.objects:
            if obj.type == 'ARMATURE' and len(obj.implicit_muscles.muscles):
                rig.follow_renames(obj)
    if not posed and not actions:
        return
    for obj in _live_meshes(scene):
        bound = runtime.bound(obj)
        armature = obj.implicit_skin.armature
        if bound is None or armature is None:
            continue
        action = armature.animation_data.action if armature.animation_data else None
        if action is not None and action.name_full in actions:
            changed = bound.keys_changed_from(armature)
            if changed is not None:
                bound.invalidate(changed)
        if armature.name_full in posed or (action is not None and action.name_full in actions):
            _evaluate_safely(obj, scene, depsgraph, preview=True)


@persistent
def on_load_pre(*_):
    """Another file is being opened: its meshes bind again on first use (binds are keyed by object name)."""
    runtime.clear()
    _warned.clear()


@persistent
def on_load_post(*_):
    """A file saved with live Implicit Skinning is stored showing the plain Armature modifier (``on_save_pre``):
    switch its live meshes back on and evaluate the current frame (this binds them)."""
    scene = bpy.context.scene
    if scene is None:
        return
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for obj in _live_meshes(scene):
        if obj.implicit_skin.bound:
            _evaluate_safely(obj, scene, depsgraph)


@persistent
def on_save_pre(*_):
    """Store live meshes showing the plain Armature result: opened without this add-on (disabled, or on a machine
    without it) a file then plays its Armature modifier instead of a frozen copy of the last evaluated frame. The
    settings stay in the file for when the add-on is back. Baked meshes keep their Mesh Cache, which plays anywhere."""
    for scene in bpy.data.scenes:
        for obj in _live_meshes(scene):
            set_active(obj, False)


@persistent
def on_save_post(*_):
    for scene in bpy.data.scenes:
        for obj in _live_meshes(scene):
            if obj.implicit_skin.bound:
                set_active(obj, True)


_HANDLERS = (("frame_change_post", on_frame_change), ("depsgraph_update_post", on_depsgraph_update),
             ("load_pre", on_load_pre), ("load_post", on_load_post), ("save_pre", on_save_pre),
             ("save_post", on_save_post))


def register():
    for name, fn in _HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)


def unregister():
    for handlers, fn in ((getattr(bpy.app.handlers, name), fn) for name, fn in _HANDLERS):
        while fn in handlers:
            handlers.remove(fn)
    _warned.clear()
