"""A small headless Cycles studio for the demo: neutral backdrop, soft lights, an orthographic camera, labels.

Everything here talks to ``bpy`` (Blender's Python module, no Blender binary needed) and knows nothing about
muscles: it takes triangle meshes as numpy arrays. Units are metres, as in the core.

Cycles on the CPU is used because it renders headless: Workbench and EEVEE need an OpenGL/EGL context.
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

import bpy
from mathutils import Vector

MUSCLE_RED = (0.30, 0.03, 0.025)
"""Base colour of the muscle material (linear RGB): a soft, slightly desaturated muscle red."""
PARTICLE_BLUE = (0.03, 0.12, 0.40)
"""Base colour of the axis-particle spheres (linear RGB)."""
ENDPOINT_GOLD = (0.55, 0.36, 0.05)
"""Base colour of the axis endpoints (linear RGB): they follow the bones, the particles in between are simulated."""
BACKGROUND_GREY = 0.30
"""Backdrop colour seen by the camera (linear); with AgX it reads as a light neutral grey."""
AMBIENT_GREY = 0.06
"""World light reaching the objects (linear): a dim fill, so the shading has contrast."""
LABEL_GREY = 0.012
"""Emission colour of label text (linear): near-black, unaffected by the lights."""
CAMERA_ELEVATION = math.radians(8.0)
"""The camera looks slightly down on the muscles, so their roundness shows."""


@dataclass(frozen=True)
class RenderSettings:
    """Image size and Cycles sampling for one render."""
    width: int = 960
    height: int = 540
    samples: int = 32
    denoise: bool = True


def new_scene():
    """An empty scene (factory settings) set up for Cycles on the CPU with a neutral grey world."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.engine = 'CYCLES'
    scene.cycles.device = 'CPU'
    scene.view_settings.view_transform = 'AgX'
    scene.view_settings.look = 'AgX - Medium High Contrast'
    scene.world = _backdrop_world()
    return scene


def _backdrop_world():
    """A flat grey backdrop for the camera that lights the scene only dimly (the lamps do the shaping)."""
    world = bpy.data.worlds.new("Backdrop")
    world.use_nodes = True
    nodes, links = world.node_tree.nodes, world.node_tree.links
    seen = nodes["Background"]
    seen.inputs["Color"].default_value = (BACKGROUND_GREY, BACKGROUND_GREY, BACKGROUND_GREY, 1.0)
    ambient = nodes.new("ShaderNodeBackground")
    ambient.inputs["Color"].default_value = (AMBIENT_GREY, AMBIENT_GREY, AMBIENT_GREY, 1.0)
    path = nodes.new("ShaderNodeLightPath")
    mix = nodes.new("ShaderNodeMixShader")
    links.new(path.outputs["Is Camera Ray"], mix.inputs["Fac"])
    links.new(ambient.outputs["Background"], mix.inputs[1])
    links.new(seen.outputs["Background"], mix.inputs[2])
    links.new(mix.outputs["Shader"], nodes["World Output"].inputs["Surface"])
    return world


def muscle_material(name="Muscle", color=MUSCLE_RED, alpha=1.0, subsurface=0.25):
    """A soft, slightly glossy, slightly translucent material; ``alpha < 1`` makes a see-through ghost."""
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.38
    bsdf.inputs["Subsurface Weight"].default_value = subsurface
    bsdf.inputs["Subsurface Radius"].default_value = (1.0, 0.25, 0.15)
    bsdf.inputs["Subsurface Scale"].default_value = 0.004  # [m]: light bleeds a few millimetres into the muscle
    bsdf.inputs["Alpha"].default_value = alpha
    return mat


def label_material():
    """Flat near-black text: an emission shader, so the labels do not depend on the lights."""
    mat = bpy.data.materials.new("Label")
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    nodes.remove(nodes["Principled BSDF"])
    emission = nodes.new("ShaderNodeEmission")
    emission.inputs["Color"].default_value = (LABEL_GREY, LABEL_GREY, LABEL_GREY, 1.0)
    links.new(emission.outputs["Emission"], nodes["Material Output"].inputs["Surface"])
    return mat


def mesh_object(name, vertices, faces, material, location=(0.0, 0.0, 0.0), flat_faces=None):
    """A smooth-shaded object from ``vertices (V, 3) [m]`` and triangles ``faces (F, 3)`` (foreach_set fast path).

    ``flat_faces``: optional ``(F,) bool``, faces shaded flat (e.g. the flat end caps of an open profile), which
    keeps a crisp edge around them.
    """
    v = np.ascontiguousarray(vertices, dtype=np.float32).reshape(-1)
    f = np.ascontiguousarray(faces, dtype=np.int32)
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(v) // 3)
    mesh.vertices.foreach_set("co", v)
    mesh.loops.add(f.size)
    mesh.loops.foreach_set("vertex_index", f.reshape(-1))
    mesh.polygons.add(len(f))
    mesh.polygons.foreach_set("loop_start", np.arange(0, f.size, 3, dtype=np.int32))
    smooth = np.ones(len(f), dtype=bool) if flat_faces is None else ~np.asarray(flat_faces, dtype=bool)
    mesh.polygons.foreach_set("use_smooth", smooth)
    mesh.update()
    if mesh.validate():
        raise RuntimeError(f"the mesh of {name!r} was invalid and had to be corrected.")
    mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    bpy.context.scene.collection.objects.link(obj)
    return obj


def spheres(name, centres, radius, material, location=(0.0, 0.0, 0.0)):
    """One object holding a small UV sphere at each of ``centres (n, 3) [m]``."""
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 16, endpoint=False), np.linspace(0, np.pi, 10)[1:-1])
    ring = np.stack([np.sin(v) * np.cos(u), np.sin(v) * np.sin(u), np.cos(v)], -1).reshape(-1, 3)
    unit = np.concatenate([ring, [[0, 0, 1], [0, 0, -1]]])
    rows, cols = v.shape
    idx = np.arange(rows * cols).reshape(rows, cols)
    nxt = np.roll(idx, -1, axis=1)
    tris = [np.stack([idx[:-1], idx[1:], nxt[1:]], -1).reshape(-1, 3),
            np.stack([idx[:-1], nxt[1:], nxt[:-1]], -1).reshape(-1, 3),
            np.stack([np.full(cols, rows * cols), idx[0], nxt[0]], -1),
            np.stack([np.full(cols, rows * cols + 1), nxt[-1], idx[-1]], -1)]
    unit_faces = np.concatenate(tris)
    centres = np.asarray(centres, dtype=np.float64)
    verts = (centres[:, None, :] + radius * unit[None]).reshape(-1, 3)
    faces = (unit_faces[None] + len(unit) * np.arange(len(centres))[:, None, None]).reshape(-1, 3)
    return mesh_object(name, verts, faces, material, location)


def load_font(path):
    """The font at ``path`` for labels (e.g. matplotlib's DejaVu Sans, which has Greek letters), or ``None`` for
    Blender's built-in font when there is no such file."""
    if path is None or not os.path.isfile(path):
        return None
    return bpy.data.fonts.load(str(path), check_existing=True)


def label(text, location, size, material, align_y='TOP', font=None):
    """A text object facing the camera (in the world xz plane), centred horizontally on ``location``.

    ``text`` may hold several lines (``"\n"``); ``size`` is the font size [m].
    """
    curve = bpy.data.curves.new(f"Label {text.splitlines()[0]}", 'FONT')
    curve.body = text
    curve.size = size
    curve.space_line = 1.15
    curve.align_x = 'CENTER'
    curve.align_y = align_y
    if font is not None:
        curve.font = font
    curve.materials.append(material)
    obj = bpy.data.objects.new(curve.name, curve)
    obj.location = location
    obj.rotation_euler = (math.pi / 2, 0.0, 0.0)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _aim(obj, target):
    direction = Vector(target) - obj.location
    obj.rotation_euler = direction.to_track_quat('-Z', 'Y').to_euler()


def add_lights(centre, size):
    """Three soft area lights (key upper left, fill right, rim behind), scaled to a subject of extent ``size`` [m]."""
    c = Vector(centre)
    rigs = (  # (direction from the subject, power per m^2 of subject, light size relative to the subject)
        ("Key", (-1.0, -1.4, 1.2), 220.0, 0.9),
        ("Fill", (1.6, -1.0, 0.2), 60.0, 1.2),
        ("Rim", (0.6, 1.5, 1.0), 160.0, 0.6),
    )
    for name, direction, power, extent in rigs:
        light = bpy.data.lights.new(name, 'AREA')
        light.shape = 'DISK'
        light.size = extent * size
        light.energy = power * size * size
        obj = bpy.data.objects.new(name, light)
        obj.location = c + Vector(direction).normalized() * (2.0 * size)
        _aim(obj, c)
        bpy.context.scene.collection.objects.link(obj)


def bounds(objects):
    """Centre ``(3,)`` and largest extent [m] of the objects' world bounding boxes."""
    bpy.context.view_layer.update()
    corners = np.array([tuple(o.matrix_world @ Vector(c)) for o in objects for c in o.bound_box])
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    return 0.5 * (lo + hi), float((hi - lo).max())


def frame_camera(scene, objects, settings: RenderSettings, margin=0.06):
    """An orthographic camera looking along +y, tilted down by ``CAMERA_ELEVATION``, fitting ``objects`` (their
    world bounding boxes); see :func:`frame_points`."""
    bpy.context.view_layer.update()
    corners = np.array([tuple(o.matrix_world @ Vector(c)) for o in objects for c in o.bound_box])
    return frame_points(scene, corners, settings, margin)


def frame_points(scene, points, settings: RenderSettings, margin=0.06, elevation=CAMERA_ELEVATION):
    """An orthographic camera looking along +y, tilted down by ``elevation`` [rad], fitting ``points (n, 3)``
    [m, world] projected on the camera plane, plus ``margin`` (a fraction of the larger extent) on every side."""
    view_layer = bpy.context.view_layer
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.type = 'ORTHO'
    cam_data.sensor_fit = 'HORIZONTAL'
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.rotation_euler = (math.pi / 2 - elevation, 0.0, 0.0)
    view_layer.update()
    rot = cam.rotation_euler.to_matrix()
    right, up, back = rot.col[0], rot.col[1], rot.col[2]
    corners = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    x, y, d = corners @ np.array(right), corners @ np.array(up), corners @ np.array(back)
    pad = margin * max(np.ptp(x), np.ptp(y))
    width, height = np.ptp(x) + 2 * pad, np.ptp(y) + 2 * pad
    aspect = settings.width / settings.height
    cam_data.ortho_scale = float(max(width, height * aspect))
    centre = (0.5 * (x.min() + x.max()), 0.5 * (y.min() + y.max()))
    distance = float(d.max()) + 1.0
    cam.location = Vector(right) * centre[0] + Vector(up) * centre[1] + Vector(back) * distance
    cam_data.clip_start = 0.01
    cam_data.clip_end = distance - float(d.min()) + 1.0
    scene.camera = cam
    return cam


def denoiser_available() -> bool:
    """True when this Cycles build has OpenImageDenoise (the only denoiser that runs on any CPU, headless)."""
    try:
        import _cycles
    except ImportError:
        return False
    return bool(getattr(_cycles, "with_openimagedenoise", False))


HARMLESS_MESSAGES = ("initialization failed",)
"""Cycles probes GPU libraries (CUDA, HIP, ...) on its first render and warns when they are absent: not shown."""


@contextlib.contextmanager
def _quiet_output():
    """Send Blender's C-level output (Cycles progress lines, GPU probes) to a log while rendering.

    Afterwards, lines that mention an error or warning are passed on to stderr, except the harmless GPU probes;
    the whole end of the log goes to stderr if rendering fails.
    """
    log = tempfile.TemporaryFile(mode="w+b")
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    failed = False
    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        yield
    except BaseException:
        failed = True
        raise
    finally:
        _flush_c_stdout()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
        log.close()
        if failed:
            sys.stderr.write(text[-4000:])
        else:
            for line in text.splitlines():
                low = line.lower()
                if ("error" in low or "warning" in low) and not any(h in low for h in HARMLESS_MESSAGES):
                    sys.stderr.write(line + "\n")


def _flush_c_stdout():
    """Flush the C library's stdout buffer (Cycles prints through it) before fd 1 is given back."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library handle on this platform: nothing to flush
        pass


def render(scene, path, settings: RenderSettings) -> float:
    """Render the scene's camera view to ``path`` (8-bit RGB PNG); returns the render time in seconds."""
    r = scene.render
    r.resolution_x, r.resolution_y, r.resolution_percentage = settings.width, settings.height, 100
    r.film_transparent = False
    r.image_settings.file_format = 'PNG'
    r.image_settings.color_mode = 'RGB'
    r.image_settings.color_depth = '8'
    r.filepath = str(path)
    c = scene.cycles
    c.samples = settings.samples
    c.use_adaptive_sampling = True
    c.max_bounces = 6
    c.transparent_max_bounces = 12
    t0 = time.perf_counter()
    with _quiet_output():  # choosing the denoiser makes Cycles probe the GPU libraries: keep it quiet too
        c.use_denoising = settings.denoise and denoiser_available()
        if c.use_denoising:
            c.denoiser = 'OPENIMAGEDENOISE'
        bpy.ops.render.render(write_still=True)
    return time.perf_counter() - t0
