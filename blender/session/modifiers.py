"""The Geometry Nodes modifier that shows Implicit Skinning's positions, and its place in a mesh's stack.

``install`` adds the modifier "Implicit Skinning" right after the Armature modifier; its generated node group
(``node_group``) sets the positions from the float-vector point attribute ``implicit_skin_position`` where it
exists, plus what came into the modifier on top of the rest mesh (shape keys, corrective keys driven by bones,
modifiers before it), turned into this frame's place: ``position = P + T (P_in - P_rest)``, ``T`` the vertex's
offset turn (``core.character.MuscledCharacter.offset_turns``) as three column attributes, ``P_rest`` the rest
positions at bind. Meshes without shape keys or modifiers before the skinning get neither (``T`` reads 0).
The rest positions are never written. A linked mesh (a library override in a shot) cannot take an attribute:
its positions (and turns) go to a local helper object (a loose point mesh in no scene) read by a local modifier at
the end of its stack (``linked_node_group``). A mesh whose data another object shares (the same body bound in
two scenes) takes the same helper, its modifier right after the Armature modifier, so each object shows its own
positions. ``set_active`` switches between Implicit Skinning (the live modifier, or the Mesh Cache modifier of a
bake) and the plain Armature result; ``write_positions`` writes one frame's positions.
"""
from __future__ import annotations

import bpy
import numpy as np

ATTRIBUTE = "implicit_skin_position"
MODIFIER = "Implicit Skinning"
CACHE_MODIFIER = "Implicit Skinning Cache"
"""The Mesh Cache modifier that plays a bake (``blender/session/bake.py``)."""
NODE_GROUP = "Implicit Skinning"
LINKED_MODIFIER = "Implicit Skinning (Linked Mesh)"
LINKED_NODE_GROUP = "Implicit Skinning (Linked Mesh)"
HELPER_PREFIX = "Implicit Skinning Positions: "
"""Linked meshes (``install``): the local modifier, its node group, and the name prefix of the helper object."""

_IDENTITY = np.eye(4)


def _new_group(name, *inputs):
    """A new Geometry Nodes group with a Geometry input, the given ``(name, socket type)`` inputs and a Geometry
    output: ``(group, input node, output node)``."""
    group = bpy.data.node_groups.new(name, 'GeometryNodeTree')
    group.interface.new_socket(name="Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    for socket, kind in inputs:
        group.interface.new_socket(name=socket, in_out='INPUT', socket_type=kind)
    group.interface.new_socket(name="Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    return group, group.nodes.new('NodeGroupInput'), group.nodes.new('NodeGroupOutput')


REST_ATTRIBUTE = "implicit_skin_rest"
TURN_ATTRIBUTES = ("implicit_skin_turn_x", "implicit_skin_turn_y", "implicit_skin_turn_z")
"""The rest positions at bind and the columns of each vertex's offset turn (module docstring)."""
NODE_GROUP_VERSION = 2
"""Stored on the node group (``implicit_skin_version``): a group made by an older version is built again."""


def _named_vector(nodes, name):
    attr = nodes.new('GeometryNodeInputNamedAttribute')
    attr.data_type = 'FLOAT_VECTOR'
    attr.inputs["Name"].default_value = name
    return attr


def _vector_math(nodes, links, operation, a, b=None, scale=None):
    node = nodes.new('ShaderNodeVectorMath')
    node.operation = operation
    links.new(a, node.inputs[0])
    if b is not None:
        links.new(b, node.inputs[1])
    if scale is not None:
        links.new(scale, node.inputs["Scale"])
    return node.outputs["Vector"]


def _turned(nodes, links, moved, read):
    """``moved + T (P_in - P_rest)`` (module docstring) as a socket; ``read(name)`` gives the socket of the
    float-vector point attribute ``name`` (``P_rest``, ``T``'s columns)."""
    offset = _vector_math(nodes, links, 'SUBTRACT', nodes.new('GeometryNodeInputPosition').outputs[0],
                          read(REST_ATTRIBUTE))
    parts = nodes.new('ShaderNodeSeparateXYZ')
    links.new(offset, parts.inputs[0])
    for column, axis in zip(TURN_ATTRIBUTES, parts.outputs):
        moved = _vector_math(nodes, links, 'ADD', moved,
                             _vector_math(nodes, links, 'SCALE', read(column), scale=axis))
    return moved


def _fresh_group(name, *inputs):
    """``(group, input node, output node)``: the node group ``name`` built by this version, or None for the group
    if it already is. A group left by an older version is emptied (the modifiers using it stay)."""
    group = bpy.data.node_groups.get(name)
    if group is not None and group.library is None and group.get("implicit_skin_version") == NODE_GROUP_VERSION:
        return None, None, None
    if group is None or group.library is not None:
        group, gin, gout = _new_group(name, *inputs)
    else:
        group.nodes.clear()
        gin, gout = group.nodes.new('NodeGroupInput'), group.nodes.new('NodeGroupOutput')
    group["implicit_skin_version"] = NODE_GROUP_VERSION
    return group, gin, gout


def node_group():
    """The shared Geometry Nodes group (module docstring): Set Position to ``P + T (P_in - P_rest)`` where ``P``
    exists."""
    group, gin, gout = _fresh_group(NODE_GROUP)
    if group is None:
        return bpy.data.node_groups[NODE_GROUP]
    nodes, links = group.nodes, group.links
    attr = _named_vector(nodes, ATTRIBUTE)
    moved = _turned(nodes, links, attr.outputs["Attribute"], lambda name: _named_vector(nodes, name).outputs[
        "Attribute"])
    setpos = nodes.new('GeometryNodeSetPosition')
    links.new(gin.outputs[0], setpos.inputs["Geometry"])
    links.new(moved, setpos.inputs["Position"])
    links.new(attr.outputs["Exists"], setpos.inputs["Selection"])
    links.new(setpos.outputs["Geometry"], gout.inputs[0])
    return group


def linked_node_group():
    """The node group of linked meshes: Set Position from the points of the object in its "Positions" input, by
    index, plus the turned offset (module docstring) from its attributes, where that object has as many points as
    the mesh."""
    group, gin, gout = _fresh_group(LINKED_NODE_GROUP, ("Positions", 'NodeSocketObject'))
    if group is None:
        return bpy.data.node_groups[LINKED_NODE_GROUP]
    nodes, links = group.nodes, group.links
    info = nodes.new('GeometryNodeObjectInfo')
    info.transform_space = 'ORIGINAL'  # the helper's own coordinates: the mesh's local space
    index = nodes.new('GeometryNodeInputIndex')
    links.new(gin.outputs["Positions"], info.inputs["Object"])

    def sampled(value):
        """``value``, a field on the helper's points, read at this mesh's point of the same index."""
        sample = nodes.new('GeometryNodeSampleIndex')
        sample.data_type, sample.domain = 'FLOAT_VECTOR', 'POINT'
        links.new(info.outputs["Geometry"], sample.inputs["Geometry"])
        links.new(value, sample.inputs[1])
        links.new(index.outputs[0], sample.inputs["Index"])
        return sample.outputs[0]

    moved = _turned(nodes, links, sampled(nodes.new('GeometryNodeInputPosition').outputs[0]),
                    lambda name: sampled(_named_vector(nodes, name).outputs["Attribute"]))
    count_in, count_ours = nodes.new('GeometryNodeAttributeDomainSize'), nodes.new('GeometryNodeAttributeDomainSize')
    same = nodes.new('FunctionNodeCompare')
    same.data_type, same.operation = 'INT', 'EQUAL'
    setpos = nodes.new('GeometryNodeSetPosition')
    links.new(gin.outputs["Geometry"], count_in.inputs[0])
    links.new(info.outputs["Geometry"], count_ours.inputs[0])
    links.new(count_in.outputs["Point Count"], same.inputs[2])
    links.new(count_ours.outputs["Point Count"], same.inputs[3])
    links.new(gin.outputs["Geometry"], setpos.inputs["Geometry"])
    links.new(moved, setpos.inputs["Position"])
    links.new(same.outputs[0], setpos.inputs["Selection"])
    links.new(setpos.outputs["Geometry"], gout.inputs[0])
    return group


def is_linked(mesh_obj) -> bool:
    """The mesh data comes from a library (linked, or a library override): its attributes cannot be written."""
    data = mesh_obj.data
    return data.library is not None or data.override_library is not None


def is_shared(mesh_obj) -> bool:
    """Another object uses the same mesh data (an Alt+D copy, the same body in another scene): an attribute written
    on that data would show on both, so its positions go to a helper object of its own, as for a linked mesh."""
    data = mesh_obj.data
    return data.users > 1 and any(o.data == data and o != mesh_obj for o in bpy.data.objects if o.type == 'MESH')


def uses_helper(mesh_obj) -> bool:
    """The positions go to a helper object (``install``): the mesh data is linked or shared with another object."""
    return is_linked(mesh_obj) or is_shared(mesh_obj)


def live_modifier_name(mesh_obj) -> str:
    return LINKED_MODIFIER if uses_helper(mesh_obj) else MODIFIER


def _helper_name(mesh_obj) -> str:
    return f"{HELPER_PREFIX}{mesh_obj.name}"


def install(mesh_obj) -> None:
    """Add (or find) the Geometry Nodes modifier after the Armature modifier and switch the effect on.

    A linked mesh (a character linked into a shot and made a library override) cannot take the attribute: it gets a
    local modifier at the end of its stack (an override cannot put local modifiers before linked ones) reading the
    positions from a local helper object, a loose point mesh in no scene (``HELPER_PREFIX`` + the object's name).
    A mesh whose data another object shares (``is_shared``) takes the same helper and modifier, right after its
    Armature modifier: each object then shows its own positions."""
    if uses_helper(mesh_obj):
        _install_linked(mesh_obj)
        helper = bpy.data.objects[_helper_name(mesh_obj)]
        _remove_attributes(helper.data, (REST_ATTRIBUTE,) + TURN_ATTRIBUTES)  # written again for this bind
    else:
        _remove_attributes(mesh_obj.data, (REST_ATTRIBUTE,) + TURN_ATTRIBUTES)
        group = node_group()
        mod = mesh_obj.modifiers.get(MODIFIER)
        if mod is not None and mod.node_group != group:
            mod.node_group = group
        if mod is None:
            mod = mesh_obj.modifiers.new(MODIFIER, 'NODES')
            mod.node_group = group
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
    if not is_linked(mesh_obj):  # a local object's own stack: right after the Armature modifier
        index = {m.name: k for k, m in enumerate(mesh_obj.modifiers)}
        arm_index = next((k for k, m in enumerate(mesh_obj.modifiers) if m.type == 'ARMATURE'), None)
        here = index[LINKED_MODIFIER]
        if arm_index is not None and here != arm_index + 1:
            with bpy.context.temp_override(object=mesh_obj):
                bpy.ops.object.modifier_move_to_index(modifier=LINKED_MODIFIER,
                                                      index=arm_index + 1 if here > arm_index else arm_index)


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


def has_offsets(mesh_obj) -> bool:
    """Whether something can move the modifier's input off the rest mesh: shape keys, or a modifier shown before
    the Armature modifier."""
    keys = mesh_obj.data.shape_keys
    if keys is not None and len(keys.key_blocks) > 1:
        return True
    for m in mesh_obj.modifiers:
        if m.type == 'ARMATURE':
            return False
        if m.show_viewport or m.show_render:
            return True
    return False


def _remove_attributes(mesh, names) -> None:
    for name in names:
        attr = mesh.attributes.get(name)
        if attr is not None:
            mesh.attributes.remove(attr)


def _vector_attribute(mesh, name):
    """The mesh's float-vector point attribute ``name``, made (or made again, if of another kind) if needed."""
    attr = mesh.attributes.get(name)
    if attr is None or attr.data_type != 'FLOAT_VECTOR' or attr.domain != 'POINT':
        if attr is not None:
            mesh.attributes.remove(attr)
        attr = mesh.attributes.new(name, 'FLOAT_VECTOR', 'POINT')
    return attr


def _write_turns(mesh, rest_mesh, turns, to_mesh) -> None:
    """Into ``mesh``: the rest positions of ``rest_mesh`` (once per bind) and the columns of ``turns (V, 3, 3)``
    (armature space, each vertex's offset turn) taken into the mesh's local space, ``A T A^-1`` with ``A`` the
    linear part of ``to_mesh``."""
    if mesh.attributes.get(REST_ATTRIBUTE) is None:
        co = np.empty(3 * len(rest_mesh.vertices), dtype=np.float32)
        rest_mesh.vertices.foreach_get("co", co)
        _vector_attribute(mesh, REST_ATTRIBUTE).data.foreach_set("vector", co)
    if not np.array_equal(to_mesh, _IDENTITY):
        A = to_mesh[:3, :3]
        turns = A @ turns @ np.linalg.inv(A)
    for k, name in enumerate(TURN_ATTRIBUTES):
        column = np.ascontiguousarray(turns[:, :, k], dtype=np.float32)
        _vector_attribute(mesh, name).data.foreach_set("vector", column.ravel())


def write_positions(mesh_obj, positions, bound, turns=None) -> bool:
    """Write ``positions (V, 3)`` [m, armature space] for the live modifier to show: into the ``ATTRIBUTE`` point
    attribute of the mesh, or the helper object's points for a linked or shared mesh (``uses_helper``; and the
    turns into the attributes of either); ``bound.last_local`` keeps them ``(V, 3)`` float32 in the mesh's local
    space. ``turns``: each vertex's offset turn ``(V, 3, 3)`` (module docstring), for a mesh whose modifier input
    can leave the rest mesh (:func:`has_offsets`; None: it cannot, and any turns written before are removed).
    Returns True if the mesh's own data was written (no helper)."""
    linked = uses_helper(mesh_obj)
    if linked:
        helper = bpy.data.objects.get(_helper_name(mesh_obj))
        if helper is None or len(helper.data.vertices) != len(positions) \
                or mesh_obj.modifiers.get(LINKED_MODIFIER) is None:
            _install_linked(mesh_obj)
            set_active(mesh_obj, True)  # data shared since bind: the helper's modifier shows, not the attribute's
            helper = bpy.data.objects[_helper_name(mesh_obj)]
        target = helper.data
    else:
        target = mesh_obj.data
    if turns is not None:
        _write_turns(target, mesh_obj.data, turns, bound.to_mesh)
    elif target.attributes.get(TURN_ATTRIBUTES[0]) is not None:
        _remove_attributes(target, (REST_ATTRIBUTE,) + TURN_ATTRIBUTES)
    if np.array_equal(bound.to_mesh, _IDENTITY):  # mesh and armature share their world transform (usual rig)
        np.copyto(bound.last_local, positions)
    else:
        local = positions @ bound.to_mesh[:3, :3].T
        local += bound.to_mesh[:3, 3]
        np.copyto(bound.last_local, local)
    if linked:
        target.vertices.foreach_set("co", bound.last_local.ravel())
    else:
        # looked up only now: adding or removing an attribute frees the references to the others
        _vector_attribute(target, ATTRIBUTE).data.foreach_set("vector", bound.last_local.ravel())
    target.update()
    return not linked
