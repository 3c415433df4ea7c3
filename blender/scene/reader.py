"""Read a rigged mesh and its armature's muscles into the headless core's arrays: in the armature's core frame
``S`` (``blender/scene/units.py``: armature space at world scale and turn; the identity for a rig whose object is
neither scaled nor turned), world units.

``read_rig`` gives a ``core.rig.Rig`` (rest vertices, triangles, weights per bone, bone heads/tails/parents);
``read_muscles`` gives ``core.muscle.primitive.FusiformMuscle`` objects at rest with their origin, insertion and skin bone
indices (a muscle with several fibres becomes that many muscles, spread across). Problems raise ``ValueError``
with a sentence that names the object and the fix; nothing in the scene is changed.
"""
from __future__ import annotations

import math

import numpy as np
from mathutils import Matrix, Vector

from ...core.rig import Rig
from . import animation, joint, rig as rig_utils, units


def armature_modifier(mesh_obj):
    """The mesh's first Armature modifier with an armature, or None."""
    for mod in mesh_obj.modifiers:
        if mod.type == 'ARMATURE' and mod.object is not None:
            return mod
    return None


def read_rig(mesh_obj, armature, unweighted: str = 'ERROR', S=None) -> Rig:
    """The mesh at rest in the armature's space taken into the core frame ``S`` (default: the identity), with one
    weight column per bone (bone order of the armature). ``unweighted``: ``'ERROR'`` refuses vertices with no
    weight on a bone (``ValueError`` naming the first and a group it is in); ``'NEAREST'`` lets the core give them
    to the nearest bone."""
    S = np.eye(4) if S is None else np.asarray(S, dtype=np.float64)
    mesh = mesh_obj.data
    V = len(mesh.vertices)
    if V < 4:
        raise ValueError(f"{mesh_obj.name} has {V} vertices; Implicit Skinning needs a real mesh.")
    co = np.empty(V * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    to_arm = np.array(armature.matrix_world.inverted() @ mesh_obj.matrix_world)
    to_arm = S @ to_arm
    verts = co.reshape(V, 3).astype(np.float64) @ to_arm[:3, :3].T + to_arm[:3, 3]
    mesh.calc_loop_triangles()
    T = len(mesh.loop_triangles)
    if T == 0:
        raise ValueError(f"{mesh_obj.name} has no faces; Implicit Skinning needs a surface.")
    tri = np.empty(T * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tri)
    bones = armature.data.bones
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    group_to_bone = {g.index: index[g.name] for g in mesh_obj.vertex_groups if g.name in index}
    if not group_to_bone:
        raise ValueError(f"{mesh_obj.name} has no vertex group named after a bone of {armature.name}: weight it "
                         f"to the armature first (Parent with Automatic Weights).")
    weights = _bone_weights(mesh_obj, group_to_bone, len(names))
    if unweighted == 'ERROR':
        none = np.flatnonzero(weights.max(axis=1) <= 0.0)
        if len(none):
            first = mesh.vertices[int(none[0])]
            groups = [mesh_obj.vertex_groups[g.group].name for g in first.groups if g.weight > 0.0]
            where = f" (it is only in {', '.join(groups)}, not a bone)" if groups else ""
            raise ValueError(f"{mesh_obj.name}: {len(none)} vertices have no weight on a bone of {armature.name}, "
                             f"the first is vertex {first.index}{where}: weight them in Weight Paint, or set "
                             f"Unweighted Vertices to Nearest Bone in its Implicit Skinning panel.")
    heads = units.points_to_core(S, np.array([b.head_local[:] for b in bones], dtype=np.float64).reshape(-1, 3))
    tails = units.points_to_core(S, np.array([b.tail_local[:] for b in bones], dtype=np.float64).reshape(-1, 3))
    parents = np.array([index[b.parent.name] if b.parent else -1 for b in bones], dtype=np.int64)
    return Rig(verts, tri.reshape(T, 3).astype(np.int64), weights, heads, tails, parents, tuple(names))


def _bone_weights(mesh_obj, group_to_bone: dict, bone_count: int) -> np.ndarray:
    """``(V, B)`` vertex weights per bone, from the vertex groups named after bones."""
    weights = np.zeros((len(mesh_obj.data.vertices), bone_count))
    for v in mesh_obj.data.vertices:
        for g in v.groups:
            b = group_to_bone.get(g.group)
            if b is not None:
                weights[v.index, b] += g.weight
    return weights


def _owners(weights) -> np.ndarray:
    """``(B,)`` bool from ``weights (V, B)``: the bones that own vertices (highest weight, as the core partitions
    the skin)."""
    owns = np.zeros(weights.shape[1], dtype=bool)
    owns[np.argmax(weights[weights.max(axis=1) > 0], axis=1)] = True
    return owns


def bones_owning(mesh_obj, armature) -> np.ndarray:
    """``(B,)`` bool: the bones of ``armature`` that own vertices of ``mesh_obj`` (highest weight)."""
    index = {b.name: i for i, b in enumerate(armature.data.bones)}
    group_to_bone = {g.index: index[g.name] for g in mesh_obj.vertex_groups if g.name in index}
    return _owners(_bone_weights(mesh_obj, group_to_bone, len(index)))


def _normal(frame: Matrix, axis: Vector, twist: float) -> Vector:
    """Cross-section direction: the bone frame's X made orthogonal to the muscle axis, turned by ``twist``."""
    x = frame.to_3x3() @ Vector((1.0, 0.0, 0.0))
    a = axis.normalized()
    n = x - a * x.dot(a)
    if n.length < 1e-6:
        n = (frame.to_3x3() @ Vector((0.0, 0.0, 1.0)))
        n -= a * n.dot(a)
    n.normalize()
    return (Matrix.Rotation(twist, 3, a) @ n).normalized()


ANIMATED = ("activation", "width_scale", "eccentricity_rest", "eccentricity_active")
"""Animatable muscle values the bind takes (stiffness is read per frame only)."""


def values_at(armature, frame) -> list:
    """Each muscle's animatable values at ``frame`` (``[{name: value}]``), from its F-curves where it has keys:
    the bind takes them at the simulation start frame, so it does not depend on the frame it happens on. Drivers
    are not evaluated (their current value is taken)."""
    curves = {fc.data_path: fc for fc in animation.fcurves(armature) if not fc.data_path.startswith("[")}
    out = []
    for k, m in enumerate(armature.implicit_muscles.muscles):
        values = {}
        for name in ANIMATED:
            fc = curves.get(f"implicit_muscles.muscles[{k}].{name}")
            prop = m.bl_rna.properties[name]
            value = fc.evaluate(frame) if fc is not None and not fc.mute else getattr(m, name)
            values[name] = min(max(value, prop.hard_min), prop.hard_max)
        out.append(values)
    return out


def read_muscles(armature, names: tuple, frame=None, S=None):
    """``(muscles, origin_bones, insertion_bones, skin_bones, source)``: core muscles at rest in the core frame ``S``
    (default: the identity) and their bone indices; ``source[k]`` is the index of the Blender muscle fibre ``k``
    comes from. Animated values are taken at ``frame`` (default: the simulation's start frame,
    ``rig.simulation_start``; ``values_at``). Widths and spreads are world units, as stored."""
    from ...core.muscle.primitive import FusiformMuscle, MuscleShape

    S = np.eye(4) if S is None else np.asarray(S, dtype=np.float64)
    turn = Matrix(units.rotation(S).tolist())

    index = {n: i for i, n in enumerate(names)}
    out, o_b, i_b, s_b, source = [], [], [], [], []
    start = rig_utils.simulation_start(armature) if frame is None else frame
    animated = values_at(armature, start)
    for k, m in enumerate(armature.implicit_muscles.muscles):
        problem = rig_utils.muscle_problem(armature, m)
        if problem:
            raise ValueError(problem)
        o, i = rig_utils.muscle_endpoints(armature, m, posed=False)
        frame = armature.data.bones[m.origin_bone].matrix_local
        n = turn @ _normal(frame, i - o, m.twist)
        o, i = (Vector(units.points_to_core(S, np.array([p[:]]))[0]) for p in (o, i))
        axis = i - o
        across = axis.normalized().cross(n).normalized()
        fibres = max(1, m.fibres)
        a = animated[k]
        try:
            shape = MuscleShape(m.alpha_rest, m.beta_rest, m.alpha_active, m.beta_active, a["eccentricity_rest"],
                                a["eccentricity_active"])
        except ValueError as ex:  # a value set past the property's range (an ID property written by a script)
            raise ValueError(f"{m.name}: {ex}") from None
        activation = joint.rest_activation(armature, k, a["activation"])  # a joint adds its activation at rest
        for f in range(fibres):
            t = (f / (fibres - 1) - 0.5) if fibres > 1 else 0.0
            of = o + across * (t * m.origin_spread)
            inf = i + across * (t * m.insertion_spread)
            width = m.width / math.sqrt(fibres)
            name = m.name if fibres == 1 else f"{m.name}.{f + 1}"
            try:
                out.append(FusiformMuscle(of[:], inf[:], width=width, shape=shape, particles=m.particles,
                                          origin_normal=n[:], insertion_normal=n[:], activation=activation,
                                          width_scale=a["width_scale"], name=name))
            except ValueError as ex:
                raise ValueError(f"{name}: {ex}") from None
            o_b.append(index[m.origin_bone])
            i_b.append(index[m.insertion_bone])
            s_b.append(index[m.skin_bone])
            source.append(k)
    return out, *(np.array(v, dtype=np.int64) for v in (o_b, i_b, s_b, source))


OWN_GROUP = 100
"""Overlap-group labels from here on are the muscles' own (``OWN_GROUP + index``): above every *Group* (0-64)."""


def read_collisions(armature, source):
    """``core.pbd.collisions.MuscleCollisions`` of the fibres whose Blender muscles are ``source (fibres,)``: each
    fibre takes its muscle's *Bones*, *Muscles*, *Stay Under Skin* and *Bone Radius* (0: automatic, NaN for the
    core); the fibres of a muscle share its *Group* (1-64), or else an overlap group of their own, so they never
    push each other, except the fibres of a muscle whose *Solver* is Rod: they are a bundle (its index), rods that
    push each other and slide along each other without passing through."""
    from ...core.pbd.collisions import MuscleCollisions

    items = armature.implicit_muscles.muscles
    fibres = [items[int(k)] for k in source]
    return MuscleCollisions(
        bones=[m.collide_bones for m in fibres], muscles=[m.collide_muscles for m in fibres],
        keep_inside=[m.keep_inside for m in fibres],
        overlap_groups=[m.collision_group if m.collision_group > 0 else OWN_GROUP + int(k)
                        for m, k in zip(fibres, source)],
        bone_radius=[m.bone_radius if m.bone_radius > 0.0 else math.nan for m in fibres],
        bundles=[int(k) if m.solver == 'ROD' and m.fibres > 1 else -1 for m, k in zip(fibres, source)])


def read_solvers(armature, source) -> tuple:
    """The solver name (``'AXIS'`` or ``'ROD'``, ``core.character.CharacterSetup``'s ``solvers``) of each fibre,
    its Blender muscle's *Solver*; ``source (fibres,)`` as for :func:`read_collisions`."""
    items = armature.implicit_muscles.muscles
    return tuple(items[int(k)].solver for k in source)


def muscles_on_skin(rig, skin_bones, elsewhere=None) -> np.ndarray:
    """``(M,)`` bool: the muscles this mesh shows. An armature that deforms several meshes (a torso, legs and a
    head; two arms; a body and its clothes) has muscles on the other meshes' bones too; a mesh binds with its own:
    those whose skin bone owns vertices of this mesh (highest weight, as the core partitions the skin), or, for a
    skin bone that owns none anywhere (a small bone), whose nearest bone above that owns vertices owns some here.
    ``elsewhere (B,)`` bool: bones owning vertices of the armature's other meshes (``bones_owning``)."""
    owns = _owners(rig.weights)
    elsewhere = np.zeros_like(owns) if elsewhere is None else np.asarray(elsewhere, dtype=bool)
    keep = np.zeros(len(skin_bones), dtype=bool)
    for k, j in enumerate(skin_bones):
        while j >= 0 and not owns[j] and not elsewhere[j]:
            j = rig.parents[j]
        keep[k] = j >= 0 and owns[j]
    return keep
