"""The contact sheets' fourth column: the muscles copy's skin coloured by its distance from the dual-quaternion copy,
with a colour bar in millimetres, rendered by Blender in the same image as the three copies.

Per sheet frame the column is a plain mesh (no modifier) whose vertices are the muscles copy's evaluated skin, one
copy's gap to the right of it, with a point colour attribute ``distance`` from :func:`colours`. Distances are taken
in each copy's armature space (the copies differ only by where their armatures stand). The colour scale is the same
for every frame of a shot: :func:`nice_scale` of the largest distance over the sheet frames (its ``PERCENTILE``-th percentile
per frame, so that a deep crease does not wash out the muscles' few millimetres; farther is drawn as the scale's
end, and the bar's top reads "or more").
"""
from __future__ import annotations

import numpy as np

STOPS = np.array([  # (value in [0, 1], sRGB): blue-grey at zero, through yellow and orange to dark red
    (0.00, 0.70, 0.74, 0.82),
    (0.15, 0.99, 0.93, 0.55),
    (0.40, 0.99, 0.60, 0.20),
    (0.70, 0.85, 0.15, 0.10),
    (1.00, 0.45, 0.00, 0.10),
])
"""Colour map stops: value, then sRGB components in [0, 1]."""
NICE_STEPS = (1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 20.0, 30.0, 50.0, 100.0)
"""Scale maxima [mm] the colour bar can take."""
PERCENTILE = 95.0
"""Percentile of a frame's distances that sets the colour scale."""
ATTRIBUTE = "distance"
"""Name of the column's point colour attribute."""


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """sRGB components in [0, 1] to scene-linear (the IEC 61966-2-1 curve)."""
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def colours(distance_mm: np.ndarray, scale_mm: float) -> np.ndarray:
    """``(n, 4)`` scene-linear RGBA for distances ``(n,)`` [mm] on a bar from 0 to ``scale_mm`` (clamped)."""
    t = np.clip(np.asarray(distance_mm, dtype=np.float64) / scale_mm, 0.0, 1.0)
    rgb = np.stack([np.interp(t, STOPS[:, 0], STOPS[:, k]) for k in (1, 2, 3)], axis=1)
    return np.concatenate([srgb_to_linear(rgb), np.ones((len(t), 1))], axis=1)


def nice_scale(largest_mm: float) -> float:
    """The smallest of ``NICE_STEPS`` at or above ``largest_mm`` (the largest step beyond them)."""
    return next((s for s in NICE_STEPS if s >= largest_mm), NICE_STEPS[-1])


def distances_mm(shown: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``(V,)`` distance [mm] between two ``(V, 3)`` positions [m] of the same mesh."""
    return 1e3 * np.linalg.norm(shown - reference, axis=1)


def _material(bpy, name):
    """The column's material: the attribute's colour, lit (so the shape reads) and glowing by as much (so the
    colours stay close to the bar's)."""
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = nodes["Principled BSDF"]
    attribute = nodes.new("ShaderNodeAttribute")
    attribute.attribute_name = ATTRIBUTE
    links.new(attribute.outputs["Color"], bsdf.inputs["Base Color"])
    links.new(attribute.outputs["Color"], bsdf.inputs["Emission Color"])
    bsdf.inputs["Emission Strength"].default_value = 0.35
    bsdf.inputs["Roughness"].default_value = 0.6
    return mat


def _colour_attribute(mesh):
    attr = mesh.color_attributes.get(ATTRIBUTE)
    if attr is None:
        attr = mesh.color_attributes.new(ATTRIBUTE, 'FLOAT_COLOR', 'POINT')
    return attr


class DistanceColumn:
    """The fourth column of one shot: one plain mesh per muscles-copy mesh, moved and coloured per frame.

    ``pairs``: ``[(muscles mesh object, DQS mesh object)]`` of the same meshes; ``armatures``: ``(muscles armature,
    DQS armature)``; ``offset (3,)`` [m, world]: where the column stands from the muscles copy.
    """

    def __init__(self, bpy, pairs, armatures, offset, evaluated, to_armature):
        self.bpy = bpy
        self.pairs = pairs
        self.armatures = armatures
        self.offset = np.asarray(offset, dtype=np.float64)
        self._evaluated = evaluated
        self._to_armature = to_armature
        self.material = _material(bpy, "Distance from dual quaternions")
        depsgraph = bpy.context.evaluated_depsgraph_get()
        self.objects = []
        for shown, _ in pairs:
            mesh = bpy.data.meshes.new_from_object(shown.evaluated_get(depsgraph))
            mesh.name = f"{shown.name} distance"
            mesh.materials.clear()
            mesh.materials.append(self.material)
            obj = bpy.data.objects.new(mesh.name, mesh)
            bpy.context.scene.collection.objects.link(obj)
            _colour_attribute(mesh)
            self.objects.append(obj)
        self.scale_mm = 1.0

    def measure(self) -> tuple[list, list]:
        """At the current frame: per pair the muscles copy's world positions ``(V, 3)`` and its distances [mm]."""
        depsgraph = self.bpy.context.evaluated_depsgraph_get()
        worlds, dists = [], []
        for shown, dqs in self.pairs:
            w = self._evaluated(shown, depsgraph)
            a = self._to_armature(w, self.armatures[0])
            b = self._to_armature(self._evaluated(dqs, depsgraph), self.armatures[1])
            worlds.append(w)
            dists.append(distances_mm(a, b))
        return worlds, dists

    def largest_mm(self) -> float:
        """The ``PERCENTILE``-th percentile of the distances at the current frame, over all pairs [mm]."""
        return float(np.percentile(np.concatenate(self.measure()[1]), PERCENTILE))

    def show(self):
        """Move and colour the column to the current frame."""
        worlds, dists = self.measure()
        for obj, w, d in zip(self.objects, worlds, dists):
            mesh = obj.data
            mesh.vertices.foreach_set("co", (w + self.offset).astype(np.float32).ravel())
            _colour_attribute(mesh).data.foreach_set("color", colours(d, self.scale_mm).astype(np.float32).ravel())
            mesh.update()

    def colour_bar(self, studio, lo, hi, label_size, label_material):
        """A vertical bar right of the box ``lo, hi`` [m, world] of the column, labelled 0 .. scale in mm; returns
        the bar's world box ``(lo, hi)`` with its labels."""
        height = 0.6 * (hi[2] - lo[2])
        width = 0.045 * height
        x0 = hi[0] + 2.0 * label_size
        z0 = lo[2] + 0.2 * (hi[2] - lo[2])
        y = lo[1]
        n = 32
        t = np.linspace(0.0, 1.0, n + 1)
        vertices = np.array([[x, y, z0 + s * height] for s in t for x in (x0, x0 + width)])
        faces = np.array([[2 * k, 2 * k + 1, 2 * k + 3, 2 * k + 2] for k in range(n)])
        mesh = self.bpy.data.meshes.new("Distance colour bar")
        mesh.from_pydata(vertices.tolist(), [], faces.tolist())
        mesh.materials.append(self.material)
        _colour_attribute(mesh).data.foreach_set(
            "color", colours(np.repeat(t * self.scale_mm, 2), self.scale_mm).astype(np.float32).ravel())
        mesh.update()
        obj = self.bpy.data.objects.new(mesh.name, mesh)
        self.bpy.context.scene.collection.objects.link(obj)
        ticks = (0.0, 0.5 * self.scale_mm, self.scale_mm)
        right = x0 + width + 0.4 * label_size
        for value in ticks:
            z = z0 + value / self.scale_mm * height
            text = f"{value:g} mm" + (" or more" if value == self.scale_mm else "")
            studio.label(text, (right, y, z), label_size, label_material, align_y='CENTER').data.align_x = 'LEFT'
        return (np.array([x0, y, z0 - label_size]),
                np.array([right + 7.0 * label_size, y, z0 + height + label_size]))
