"""Per-frame evaluation with the rest of Blender around it: an animation render in the background sees the same
mesh as interactive playback, a Subdivision modifier after the Armature modifier keeps working (the Implicit
Skinning modifier lands between them), and several bound characters in one scene (on one armature or on one each)
deform independently, mirrored arms into mirror images."""
import math

import numpy as np
import pytest

from blender_scenes import animate_arm, animated_arm, bind, evaluated, make_arm, positions, start_scene


SAME_TOL = 1e-6
"""Same frame evaluated two ways: largest vertex difference [m] (positions go through float32 attributes)."""
MIRROR_TOL = 1e-4
"""Right arm against the mirror image of the left one [m]: the same computation on mirrored input, so only rounding
may differ; a result that depends on something other than the arm itself (where its bones sit in the armature's
bone list, another arm's muscles) is off by millimetres to centimetres."""
ELBOW_X = 0.4
"""x of the elbow joint at rest [m] (make_arm's offset 0.1 plus the upper arm's 0.3)."""
HAND_X = 0.72
"""Vertices beyond this x at rest [m] belong to the hand alone: rigid, Implicit Skinning and Armature agree there
(within 1e-4 m), so they show which frame's pose a result is in."""


def _checks_pose_and_effect(result, plain, rest_x):
    """``result`` is in the pose of ``plain`` (the plain Armature result of the same frame): the hand agrees; and
    it is Implicit Skinning: the elbow moved by more than 2 mm (2.7 mm at frame 10, the smallest bend, with the
    correction limited to an edge length away from the contact)."""
    moved = np.linalg.norm(result - plain, axis=1)
    assert moved[rest_x > HAND_X].max() < 1e-4
    assert moved[np.abs(rest_x - ELBOW_X) < 0.06].max() > 0.002


def _two_animated_arms(bpy, one_rig):
    """Arm.L at +X and its mirror image Arm.R at -X, on one armature or on an armature each."""
    if one_rig:
        rig, meshes = make_arm(bpy, sides=(".L", ".R"))
        animate_arm(bpy, rig, (".L", ".R"))
    else:
        meshes = []
        for side in (".L", ".R"):
            for obj in bpy.context.selected_objects:
                obj.select_set(False)  # make_arm enters edit mode on the selected armatures
            rig, (mesh,) = make_arm(bpy, sides=(side,))
            animate_arm(bpy, rig, (side,))
            meshes.append(mesh)
    start_scene(bpy)
    return meshes


def _unbind(bpy, mesh):
    bpy.context.view_layer.objects.active = mesh
    assert bpy.ops.implicit_muscles.unbind_skin() == {'FINISHED'}


def _play(bpy, frames, objects):
    """Set each frame in turn; returns ``{frame: [evaluated positions per object]}``."""
    scene = bpy.context.scene
    out = {}
    for f in frames:
        scene.frame_set(f)
        out[f] = [evaluated(bpy, obj) for obj in objects]
    return out


# --- 1. Animation render ---------------------------------------------------------------------------------------

RENDER_FRAMES = (10, 20, 30)


def _render_setup(bpy, scene, tmp_path):
    """Cycles on the CPU, 32 x 32 pixels, 1 sample, transparent film (the alpha channel is the arm's silhouette);
    an orthographic camera looking at the arm's bending plane (XZ) from -Y."""
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location = (0.4, -3.0, 0.15)
    cam.rotation_euler = (math.radians(90.0), 0.0, 0.0)
    cam.data.type = 'ORTHO'
    cam.data.ortho_scale = 0.9
    scene.camera = cam
    scene.render.engine = 'CYCLES'
    scene.cycles.device = 'CPU'
    scene.cycles.samples = 1
    scene.cycles.use_denoising = False
    scene.render.film_transparent = True
    scene.render.resolution_x = scene.render.resolution_y = 32
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = 'PNG'
    scene.render.image_settings.color_mode = 'RGBA'
    scene.render.filepath = str(tmp_path / "frame_")
    scene.frame_start, scene.frame_end, scene.frame_step = RENDER_FRAMES[0], RENDER_FRAMES[-1], \
        RENDER_FRAMES[1] - RENDER_FRAMES[0]


def _render_animation(bpy, monkeypatch, mesh):
    """Render the scene's frames as an animation (``render.render(animation=True)``, as ``blender -b -a`` does);
    returns ``{frame: positions}`` of ``mesh`` read from the depsgraph Cycles renders, inside Cycles' own
    ``render(depsgraph)`` call, i.e. after the frame change handlers and the re-evaluation they trigger."""
    import cycles
    seen = {}
    original = cycles.CyclesRender.render

    def render(engine, depsgraph):
        seen[depsgraph.scene_eval.frame_current] = evaluated(bpy, mesh, depsgraph)
        original(engine, depsgraph)

    with monkeypatch.context() as patch:
        patch.setattr(cycles.CyclesRender, "render", render)
        assert bpy.ops.render.render(animation=True) == {'FINISHED'}
    return seen


def _silhouette(bpy, path):
    """Where a rendered RGBA image is covered by the arm (alpha > 0.5), as a boolean ``(height, width)`` array."""
    img = bpy.data.images.load(str(path))
    alpha = np.array(img.pixels[:], dtype=np.float64).reshape(img.size[1], img.size[0], img.channels)[..., 3]
    bpy.data.images.remove(img)
    return alpha > 0.5


def test_animation_render_sees_the_interactive_result(bpy, tmp_path, monkeypatch):
    """A background animation render (frames 10, 20, 30) renders the mesh interactive playback shows, both right
    after bind (the render simulates the muscles through the frames between) and after playback (from the cache).
    The mesh is read from the depsgraph Cycles renders: a frame_change_post handler would read it before the
    re-evaluation that the write triggers (the previous result, off by centimetres)."""
    rig, mesh = animated_arm(bpy)
    scene = bpy.context.scene
    rest = positions(mesh.data)
    plain = {f: p for f, (p,) in _play(bpy, RENDER_FRAMES, [mesh]).items()}
    scene.frame_set(1)
    _render_setup(bpy, scene, tmp_path)
    bind(bpy, mesh)  # the cache holds frame 1 only: the render must simulate the frames between
    rendered = _render_animation(bpy, monkeypatch, mesh)
    assert sorted(rendered) == list(RENDER_FRAMES)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"frame_{f:04d}.png" for f in RENDER_FRAMES]
    assert np.array_equal(positions(mesh.data), rest)  # the rest mesh is never written

    scene.frame_set(1)
    assert bpy.ops.implicit_muscles.reset_simulation() == {'FINISHED'}
    played = {f: p for f, (p,) in _play(bpy, range(1, 31), [mesh]).items() if f in RENDER_FRAMES}
    for f in RENDER_FRAMES:
        _checks_pose_and_effect(rendered[f], plain[f], rest[:, 0])
        assert np.abs(rendered[f] - played[f]).max() < SAME_TOL, f"frame {f}"

    # again after playback: the render now starts from the cached muscle states
    rendered_again = _render_animation(bpy, monkeypatch, mesh)
    for f in RENDER_FRAMES:
        assert np.abs(rendered_again[f] - played[f]).max() < SAME_TOL, f"frame {f} (cached)"
    assert np.array_equal(positions(mesh.data), rest)

    # the images show the arm, bent differently at frames 10 and 30
    first, last = (_silhouette(bpy, tmp_path / f"frame_{f:04d}.png") for f in (10, 30))
    assert first.sum() > 20 and last.sum() > 20
    assert (first != last).sum() > 10


# --- 2. Subdivision after the Armature modifier -------------------------------------------------------------------

def _stack(obj):
    return [(m.type, m.name) for m in obj.modifiers]


def test_subdivision_after_the_armature_modifier_subdivides_the_implicit_skinning_result(bpy):
    """Stack [Armature, Subdivision]: bind puts Implicit Skinning between them; the Subdivision subdivides the
    Implicit Skinning result (as on a plain mesh holding those positions), whose cage is what a copy of the arm
    without Subdivision gives; unbind gives back Armature + Subdivision exactly."""
    rig, mesh = animated_arm(bpy)
    scene = bpy.context.scene
    bare = mesh.copy()  # the same arm without the Subdivision, bound beside it
    bare.data = mesh.data.copy()
    scene.collection.objects.link(bare)
    sub = mesh.modifiers.new("Subdivision", 'SUBSURF')
    sub.levels = sub.render_levels = 1
    rest = positions(mesh.data)
    scene.frame_set(30)
    plain = evaluated(bpy, mesh)  # Armature + Subdivision
    plain_cage = evaluated(bpy, bare)
    assert len(plain) > 3 * len(rest)
    scene.frame_set(1)

    bind(bpy, mesh)
    bind(bpy, bare)
    assert _stack(mesh) == [('ARMATURE', "Armature"), ('NODES', "Implicit Skinning"), ('SUBSURF', "Subdivision")]
    assert sub.show_viewport and sub.show_render
    ours, reference = _play(bpy, range(1, 31), [mesh, bare])[30]
    assert ours.shape == plain.shape  # the subdivided vertex count
    _checks_pose_and_effect(reference, plain_cage, rest[:, 0])
    sub.show_viewport = False
    cage = evaluated(bpy, mesh)
    sub.show_viewport = True
    assert np.abs(cage - reference).max() < SAME_TOL

    # the same Subdivision on a plain mesh whose vertices are the Implicit Skinning cage
    copy = bpy.data.objects.new("Cage", mesh.data.copy())
    scene.collection.objects.link(copy)
    copy.data.vertices.foreach_set("co", np.ascontiguousarray(cage, dtype=np.float32).ravel())
    copy.data.update()
    copy_sub = copy.modifiers.new("Subdivision", 'SUBSURF')
    copy_sub.levels = copy_sub.render_levels = 1
    assert np.abs(evaluated(bpy, copy) - ours).max() < SAME_TOL
    assert np.abs(ours - plain).max() > 0.003

    _unbind(bpy, mesh)
    assert _stack(mesh)[0] == ('ARMATURE', "Armature") and _stack(mesh)[-1] == ('SUBSURF', "Subdivision")
    arm_mod, ours_mod = mesh.modifiers["Armature"], mesh.modifiers["Implicit Skinning"]
    assert arm_mod.show_viewport and arm_mod.show_render and not (ours_mod.show_viewport or ours_mod.show_render)
    assert np.abs(evaluated(bpy, mesh) - plain).max() < SAME_TOL  # Armature + Subdivision exactly
    assert np.array_equal(positions(mesh.data), rest)


# --- 3. Several characters ----------------------------------------------------------------------------------------

def _mirrored(p):
    return p * np.array([-1.0, 1.0, 1.0])


@pytest.mark.parametrize("one_rig", [True, False], ids=["one armature", "two armatures"])
def test_two_bound_arms_deform_as_each_does_alone(bpy, one_rig):
    """Arm.L and its mirror image Arm.R, both bound: playing 1..30 deforms each as it deforms when it is the only
    one evaluated (the other switched off with ``implicit_skin.enabled``, showing its plain Armature result), the
    two results are mirror images, and a jump to frame 30 (each arm simulating the frames between) gives the same.
    Both arms on one armature (a rig deforming several meshes) and on an armature each. Each mesh is bound once:
    binding the same mesh again is test_evaluation.py's reopened file."""
    left, right = _two_animated_arms(bpy, one_rig)
    arms = (left, right)
    scene = bpy.context.scene
    rest = positions(left.data)
    rest_right = positions(right.data)
    assert np.abs(rest_right - _mirrored(rest)).max() < 1e-6
    plain = _play(bpy, [30], arms)[30]
    assert np.abs(plain[1] - _mirrored(plain[0])).max() < 1e-5  # the rig bends both sides mirrored
    scene.frame_set(1)
    bind(bpy, left)
    bind(bpy, right)

    def play_from_start():
        scene.frame_set(1)
        assert bpy.ops.implicit_muscles.reset_simulation() == {'FINISHED'}
        return _play(bpy, range(1, 31), arms)[30]

    alone = []
    for k in (0, 1):
        arms[1 - k].implicit_skin.enabled = False
        played = play_from_start()
        assert np.abs(played[1 - k] - plain[1 - k]).max() < SAME_TOL  # the other arm: plain Armature
        alone.append(played[k])
        arms[1 - k].implicit_skin.enabled = True

    both = play_from_start()
    for k in (0, 1):
        _checks_pose_and_effect(both[k], plain[k], rest[:, 0])
        assert np.abs(both[k] - alone[k]).max() < SAME_TOL
    assert np.abs(both[1] - _mirrored(both[0])).max() < MIRROR_TOL

    scene.frame_set(1)
    bpy.ops.implicit_muscles.reset_simulation()
    jumped = _play(bpy, [30], arms)[30]  # each arm simulates the frames between
    for k in (0, 1):
        assert np.abs(jumped[k] - both[k]).max() < SAME_TOL

    for k in (0, 1):
        _unbind(bpy, arms[k])
        assert np.abs(evaluated(bpy, arms[k]) - plain[k]).max() < SAME_TOL
    assert np.array_equal(positions(left.data), rest) and np.array_equal(positions(right.data), rest_right)
