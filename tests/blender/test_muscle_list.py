"""The muscle list: Mirror and Duplicate after a reopened file, names that carry the rig's side, plain refusals that
add nothing, and keys and drivers that stay with their muscle in every action when muscles move or go."""
import pytest

from blender_scenes import make_arm

FRAME = 11
"""The frame at which curves and evaluated values are compared."""


def _ops(bpy):
    return bpy.ops.implicit_muscles


def _world(rig, bone, point):
    from mathutils import Vector
    return rig.data.bones[bone].matrix_local @ Vector(point)


def _reopen(bpy, path):
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    rig = bpy.data.objects["Rig"]
    bpy.context.view_layer.objects.active = rig
    return rig


def _settings(k):
    """Settings that tell muscle ``k`` from the others."""
    return dict(stiffness=0.1 + 0.04 * k, width=0.01 + 0.001 * k, alpha_rest=1 + k % 9, beta_active=9 - k % 9,
                eccentricity_rest=0.02 * k, particles=10 + k, collision_group=k, twist=0.05 * k)


@pytest.fixture
def busy_updates(monkeypatch):
    """Every muscle setting written also allocates memory of many sizes, as the checks of a bound character do
    (``runtime.on_setup_changed``): memory freed by ``muscles.add()`` is then reused at once, so a muscle read
    through a reference kept across ``add()`` shows another object's data instead of its own."""
    import itertools
    import sys

    import blender_session
    runtime = sys.modules[f"{blender_session.ADDON}.blender.session.runtime"]
    check = runtime.on_setup_changed
    calls = itertools.count()

    def allocating_check(armature):
        import bpy
        scratch = bpy.data.texts.get("scratch") or bpy.data.texts.new("scratch")
        call = next(calls)
        scratch[f"scratch_{call}"] = [[0.0] * (1 + 37 * (40 * call + k) % 400) for k in range(40)]
        return check(armature)

    monkeypatch.setattr(runtime, "on_setup_changed", allocating_check)


def test_mirror_and_duplicate_twenty_times_after_reopening(bpy, tmp_path, busy_updates):
    """20 muscles on the left arm, the file saved and opened again (its list is then exactly full, so an add moves
    it): Mirror on each muscle gives each its whole right copy, Duplicate its whole copy, and Add with Mirror both
    sides; no error, nothing half-made."""
    rig, _ = make_arm(bpy, sides=(".L", ".R"))
    for k in range(20):
        assert _ops(bpy).add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L", name=f"m{k:02d}.L") \
            == {'FINISHED'}
        for key, value in _settings(k).items():
            setattr(rig.implicit_muscles.muscles[k], key, value)
    rig = _reopen(bpy, tmp_path / "twenty.blend")
    muscles = rig.implicit_muscles.muscles
    for k in range(20):
        rig.implicit_muscles.active_index = k
        assert _ops(bpy).mirror_muscle() == {'FINISHED'}
    assert len(muscles) == 40
    for k in range(20):
        left, right = muscles[k], muscles[20 + k]
        assert (right.name, right.origin_bone, right.insertion_bone, right.skin_bone) == \
            (f"m{k:02d}.R", "shoulder.R", "elbow.R", "shoulder.R")
        for key, value in _settings(k).items():
            assert getattr(right, key) == pytest.approx(-value if key == "twist" else value), (k, key)
        for bone_l, bone_r, pl, pr in ((left.origin_bone, right.origin_bone, left.origin_point, right.origin_point),
                                       (left.insertion_bone, right.insertion_bone, left.insertion_point,
                                        right.insertion_point)):
            a, b = _world(rig, bone_l, pl), _world(rig, bone_r, pr)
            assert (a.x, a.y, a.z) == pytest.approx((-b.x, b.y, b.z), abs=1e-6)

    rig = _reopen(bpy, tmp_path / "forty.blend")
    muscles = rig.implicit_muscles.muscles
    for k in range(20):
        rig.implicit_muscles.active_index = k
        assert _ops(bpy).duplicate_muscle() == {'FINISHED'}
        copy = muscles[rig.implicit_muscles.active_index]
        assert (copy.name, copy.origin_bone) == (f"m{k:02d}.L.001", "shoulder.L")
        for key, value in _settings(k).items():
            assert getattr(copy, key) == pytest.approx(value), (k, key)
        assert tuple(copy.insertion_point) == pytest.approx(tuple(muscles[k].insertion_point))
    rig = _reopen(bpy, tmp_path / "sixty.blend")
    assert _ops(bpy).add_muscle(origin_bone="elbow.L", insertion_bone="wrist.L", preset="biceps",
                                mirror=True) == {'FINISHED'}
    muscles = rig.implicit_muscles.muscles
    assert len(muscles) == 62
    assert [(m.name, m.origin_bone, m.insertion_bone) for m in muscles[60:]] == \
        [("biceps.L", "elbow.L", "wrist.L"), ("biceps.R", "elbow.R", "wrist.R")]
    assert all(m.origin_bone in rig.data.bones and m.insertion_bone in rig.data.bones for m in muscles)


SIDES = (("upper_arm.L", "upper_arm.R", "upper_arm_muscle.L", "upper_arm_muscle.R", "biceps.L"),
         ("arm.L.001", "arm.R.001", "arm_muscle.L.001", "arm_muscle.R.001", "biceps.L"),
         ("shoulder.L.002", "shoulder.R.002", "shoulder_muscle.L.002", "shoulder_muscle.R.002", "biceps.L"),
         ("arm-L", "arm-R", "arm_muscle-L", "arm_muscle-R", "biceps-L"),
         ("arm L", "arm R", "arm_muscle L", "arm_muscle R", "biceps L"),
         ("l_arm", "r_arm", "l_arm_muscle", "r_arm_muscle", "l_biceps"),
         ("mixamorig:LeftArm", "mixamorig:RightArm", "mixamorig:LeftArm_muscle", "mixamorig:RightArm_muscle",
          "biceps_Left"),
         ("thigh_left_01", "thigh_right_01", "thigh_left_01_muscle", "thigh_right_01_muscle", "biceps_left"),
         ("B_UpperArm_Left", "B_UpperArm_Right", "B_UpperArm_muscle_Left", "B_UpperArm_muscle_Right",
          "biceps_Left"))
"""Left bone, its right bone, the default muscle name, its mirror, and a biceps' name on that bone."""


def _bone_pairs(bpy, pairs):
    """An armature ``Rig`` with each ``(left, right)`` bone pair: left at +X, right mirrored at -X."""
    rig = bpy.data.objects.new("Rig", bpy.data.armatures.new("Rig"))
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='EDIT')
    for k, (left, right) in enumerate(pairs):
        for name, sign in ((left, 1.0), (right, -1.0)):
            bone = rig.data.edit_bones.new(name)
            bone.head, bone.tail = (sign * 0.2, 0.0, 0.1 * k), (sign * 0.5, 0.05, 0.1 * k)
    bpy.ops.object.mode_set(mode='OBJECT')
    return rig


def test_names_carry_the_side_as_the_rig_writes_it(bpy):
    """Blender's side conventions (``bpy.utils.flip_name``) and what it misses (a side inside the name): a new
    muscle is named with its bone's side where the bone has it, and its mirror lands on the other side's bone
    with the other side's name."""
    rig = _bone_pairs(bpy, [(s[0], s[1]) for s in SIDES])
    muscles = rig.implicit_muscles.muscles
    for left, right, name, mirrored, biceps in SIDES:
        assert _ops(bpy).add_muscle(origin_bone=left, insertion_bone=left, mirror=True) == {'FINISHED'}
        assert [(m.name, m.origin_bone) for m in muscles[-2:]] == [(name, left), (mirrored, right)]
        assert _ops(bpy).add_muscle(origin_bone=left, insertion_bone=left, preset="biceps") == {'FINISHED'}
        assert muscles[-1].name == biceps
        assert _ops(bpy).mirror_muscle() == {'FINISHED'}
        assert muscles[-1].origin_bone == right
        muscles.clear()


def _count(rig):
    return len(rig.implicit_muscles.muscles)


def test_mirror_refuses_plainly_and_adds_nothing(bpy):
    """A bone without a mirror, Add with Mirror where the mirrored name is taken, a muscle with no side anywhere: a
    sentence, and the list as it was (Add with Mirror adds neither side)."""
    rig, _ = make_arm(bpy, sides=(".L",))
    with pytest.raises(RuntimeError, match=r"no mirrored bone for 'shoulder\.L': Rig has no bone 'shoulder\.R'"):
        _ops(bpy).add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L", mirror=True)
    assert _count(rig) == 0
    assert _ops(bpy).add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L") == {'FINISHED'}
    with pytest.raises(RuntimeError, match=r"no mirrored bone for 'shoulder\.L'"):
        _ops(bpy).mirror_muscle()
    assert _count(rig) == 1

    bpy.ops.wm.read_homefile(use_empty=True)
    rig, _ = make_arm(bpy, sides=(".L", ".R"))
    assert _ops(bpy).add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L", name="biceps.L",
                                mirror=True) == {'FINISHED'}
    rig.implicit_muscles.muscles.remove(0)  # Add with Mirror adds both sides or neither
    with pytest.raises(RuntimeError, match=r"biceps\.L: its mirror 'biceps\.R' exists already"):
        _ops(bpy).add_muscle(origin_bone="shoulder.L", insertion_bone="elbow.L", name="biceps.L", mirror=True)
    assert [m.name for m in rig.implicit_muscles.muscles] == ["biceps.R"]

    bpy.ops.object.mode_set(mode='EDIT')
    for name, z in (("pelvis", 0.0), ("spine", 0.2)):
        bone = rig.data.edit_bones.new(name)
        bone.head, bone.tail = (0.0, 0.5, z), (0.0, 0.5, z + 0.2)
    bpy.ops.object.mode_set(mode='OBJECT')
    assert _ops(bpy).add_muscle(origin_bone="pelvis", insertion_bone="spine", name="abs") == {'FINISHED'}
    with pytest.raises(RuntimeError, match="abs: neither its name nor its bones have a side"):
        _ops(bpy).mirror_muscle()
    assert [m.name for m in rig.implicit_muscles.muscles] == ["biceps.R", "abs"]


def _key(rig, index, prop, frames_values):
    m = rig.implicit_muscles.muscles[index]
    for frame, value in frames_values:
        setattr(m, prop, value)
        assert rig.keyframe_insert(f"implicit_muscles.muscles[{index}].{prop}", frame=frame)


def _action_curves(action):
    """The F-curves of ``action`` for the rig: its slot ``OBRig`` (Blender 4.4+), or all of them (4.2)."""
    if not hasattr(action, "layers"):
        return list(action.fcurves)
    return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
            if bag.slot.identifier == "OBRig" for fc in bag.fcurves]


def _muscle_of(rig, path):
    """The name of the muscle a path of ``rig`` names, or None if the path names none."""
    try:
        return rig.path_resolve(path.rsplit(".", 1)[0]).name
    except ValueError:
        return None


def _what_curves_drive(bpy, rig, actions, readers):
    """``{curve: (muscle it drives, value at FRAME)}`` for every F-curve of ``actions`` and every driver of ``rig``,
    and ``{variable: muscle it reads}`` for the driver variables of ``readers`` (other objects)."""
    out = {}
    for action in actions:
        for fc in _action_curves(action):
            if fc.data_path.startswith("implicit_muscles"):
                out[(action.name, fc.as_pointer())] = (_muscle_of(rig, fc.data_path), fc.evaluate(FRAME))
    for fc in rig.animation_data.drivers:
        out[("driver", fc.as_pointer())] = (_muscle_of(rig, fc.data_path), fc.driver.expression)
    for obj in readers:
        for fc in obj.animation_data.drivers:
            for var in fc.driver.variables:
                out[(obj.name, var.name)] = _muscle_of(rig, var.targets[0].data_path)
    return out


def _evaluated(bpy, rig, gauge):
    """``{muscle name: (activation, width scale, stiffness, rest flatness)}`` of the evaluated rig at FRAME, and the
    height of the gauge (whose driver reads a muscle)."""
    bpy.context.scene.frame_set(FRAME)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    muscles = rig.evaluated_get(depsgraph).implicit_muscles.muscles
    values = {m.name: (m.activation, m.width_scale, m.stiffness, m.eccentricity_rest) for m in muscles}
    return values, gauge.evaluated_get(depsgraph).location.z


def _empty(bpy, name, x=0.0):
    obj = bpy.data.objects.new(name, None)
    obj.location.x = x
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _driver(obj, path, index, target, target_path, expression):
    fc = obj.driver_add(path, index) if index >= 0 else obj.driver_add(path)
    driver = fc.driver
    driver.type = 'SCRIPTED'
    var = driver.variables.new()
    var.name = "var"
    if target_path:
        var.type = 'SINGLE_PROP'
        var.targets[0].id = target
        var.targets[0].data_path = target_path
    else:
        var.type = 'TRANSFORMS'
        var.targets[0].id = target
        var.targets[0].transform_type = 'LOC_X'
    driver.expression = expression
    return fc


def _two_takes(bpy):
    """Muscles m0..m3 keyed in two actions and driven: ``TakeB`` on an NLA strip keys m1's width scale and m3's
    stiffness, ``TakeA`` (active) keys m0, m1 and m2's activation; a driver of the rig gives m3's rest flatness
    from a dial, a driver of the gauge reads m1's width scale. Returns ``(rig, actions, gauge)``."""
    rig, _ = make_arm(bpy)
    for k in range(4):
        assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", name=f"m{k}") == {'FINISHED'}
    _key(rig, 1, "width_scale", [(1, 1.0), (21, 2.0)])
    _key(rig, 3, "stiffness", [(1, 0.2), (21, 0.8)])
    ad = rig.animation_data
    take_b = ad.action
    take_b.name = "TakeB"
    track = ad.nla_tracks.new()
    strip = track.strips.new("TakeB", 1, take_b)
    ad.action = None
    assert getattr(strip, "action_slot", True) is not None  # 4.4+: the strip animates through the rig's slot
    _key(rig, 0, "activation", [(1, 0.0), (21, 1.0)])
    _key(rig, 1, "activation", [(1, 0.5), (21, 0.1)])
    _key(rig, 2, "activation", [(1, 1.0), (21, 0.2)])
    take_a = ad.action
    take_a.name = "TakeA"
    _driver(rig, "implicit_muscles.muscles[3].eccentricity_rest", -1, _empty(bpy, "Dial", x=0.8), "", "var * 0.5")
    gauge = _empty(bpy, "Gauge")
    _driver(gauge, "location", 2, rig, "implicit_muscles.muscles[1].width_scale", "var")
    return rig, [take_a, take_b], gauge


def _other_rig_in_take(bpy, rig, take):
    """On Blender 4.4+: a second rig animated by its own slot of ``take``, with keys on its muscles 0 and 2; returns
    it and its slot's curve paths (None before 4.4, which has no slots)."""
    if not hasattr(take, "slots"):
        return None, None
    other = rig.copy()
    other.name = "Rig2"
    ad = other.animation_data
    for track in list(ad.nla_tracks):
        ad.nla_tracks.remove(track)
    for fc in list(ad.drivers):
        ad.drivers.remove(fc)
    other.animation_data.action = take
    other.animation_data.action_slot = take.slots.new(id_type='OBJECT', name="Rig2")
    _key(other, 0, "width_scale", [(1, 1.5), (21, 0.5)])
    _key(other, 2, "stiffness", [(1, 0.3), (21, 0.9)])
    return other, _slot_paths(other)


def _slot_paths(other):
    from bpy_extras import anim_utils
    bag = anim_utils.action_get_channelbag_for_slot(other.animation_data.action, other.animation_data.action_slot)
    return sorted(fc.data_path for fc in bag.fcurves)


def _assert_same(after, before, names):
    for name in names:
        assert after[name] == pytest.approx(before[name]), name


def test_keys_and_drivers_stay_with_their_muscle_in_every_action(bpy):
    """Two actions (one on an NLA strip), a driver of a muscle and a driver that reads one: after moving,
    duplicating and removing muscles every curve drives the muscle it drove before, with the same value, and the
    evaluated rig agrees; a removed muscle's keys are gone from both actions and the driver that read it reads
    nothing. Another rig's slot in the same action is left as it was."""
    rig, actions, gauge = _two_takes(bpy)
    other, other_paths = _other_rig_in_take(bpy, rig, actions[0])
    drives = _what_curves_drive(bpy, rig, actions, [gauge])
    values, height = _evaluated(bpy, rig, gauge)
    assert height == pytest.approx(1.5) and values["m3"][3] == pytest.approx(0.4)
    assert len(drives) == 7

    props = rig.implicit_muscles
    for index, direction in ((2, 'UP'), (3, 'UP'), (2, 'UP'), (1, 'UP'), (0, 'DOWN')):
        props.active_index = index
        assert _ops(bpy).move_muscle(direction=direction) == {'FINISHED'}
    assert [m.name for m in props.muscles] == ["m0", "m3", "m2", "m1"]
    props.active_index = 3
    assert _ops(bpy).duplicate_muscle() == {'FINISHED'}
    assert [m.name for m in props.muscles] == ["m0", "m3", "m2", "m1", "m1.001"]
    assert _what_curves_drive(bpy, rig, actions, [gauge]) == drives
    after, after_height = _evaluated(bpy, rig, gauge)
    _assert_same(after, values, values)
    assert after_height == pytest.approx(height)

    for name in ("m1", "m2"):
        props.active_index = [m.name for m in props.muscles].index(name)
        assert _ops(bpy).remove_muscle() == {'FINISHED'}
    assert [m.name for m in props.muscles] == ["m0", "m3", "m1.001"]
    kept = {key: value for key, value in drives.items() if key != ("Gauge", "var") and value[0] not in ("m1", "m2")}
    assert _what_curves_drive(bpy, rig, actions, [gauge]) == {**kept, ("Gauge", "var"): None}
    _assert_same(_evaluated(bpy, rig, gauge)[0], values, ("m3", "m0"))
    if other is not None:
        assert _slot_paths(other) == other_paths


def test_keys_in_a_linked_action_are_refused_and_kept(bpy, tmp_path):
    """An action linked from another file (an animation library) on an NLA strip keys the muscles: moving or
    removing one would need its curves rewritten, which a linked action cannot keep, so both are refused with a
    sentence and nothing changes."""
    rig, _ = make_arm(bpy)
    for k in range(2):
        assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", name=f"m{k}") == {'FINISHED'}
        _key(rig, k, "activation", [(1, 0.2 * k), (21, 0.9)])
    rig.animation_data.action.name = "Take"
    library = str(tmp_path / "takes.blend")
    bpy.ops.wm.save_as_mainfile(filepath=library)

    bpy.ops.wm.read_homefile(use_empty=True)
    rig, _ = make_arm(bpy)
    for k in range(2):
        assert _ops(bpy).add_muscle(origin_bone="shoulder", insertion_bone="elbow", name=f"m{k}") == {'FINISHED'}
    with bpy.data.libraries.load(library, link=True) as (source, linked):
        linked.actions = ["Take"]
    take = bpy.data.actions["Take"]
    assert take.library is not None
    rig.animation_data_create().nla_tracks.new().strips.new("Take", 1, take)
    paths = sorted(fc.data_path for fc in _action_curves(take))
    rig.implicit_muscles.active_index = 1
    with pytest.raises(RuntimeError, match="'Take' come from a library and cannot be changed here: make it local"):
        _ops(bpy).move_muscle(direction='UP')
    with pytest.raises(RuntimeError, match="'Take' come from a library"):
        _ops(bpy).remove_muscle()
    assert [m.name for m in rig.implicit_muscles.muscles] == ["m0", "m1"]
    assert sorted(fc.data_path for fc in _action_curves(take)) == paths
