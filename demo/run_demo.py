"""The main job (``make demo``): a dense human, the paper's arm and a real character animated with the add-on, rendered
side by side with plain dual-quaternion skinning, timed and plotted; and the fusiform muscle primitive (paper §5)
rendered with Cycles, its profiles plotted.

Run from the repository root with ``make demo`` (Blender 5.0's ``bpy`` module in ``.venv/b50``; no Blender binary)::

    python demo/run_demo.py [--quick] [--out DIR]

Writes into ``out/demo/`` (or ``DIR``), overwriting earlier runs. The animated shots (``demo/shots.py``, in a child
process with the add-on enabled): ``human`` (the MakeHuman body jumping, made by ``make character``), ``arm_curl``
(the paper's biceps curl), ``arm_shake`` (loose, then tense muscles) and ``character`` (BCN_Epileptic, fetched by
``make character``), each as

* ``<shot>.blend``            the scene, bound and baked (``implicit_muscles_cache/``): open it in Blender
* ``<shot>_sheet.png``        contact sheet: the same frames, same camera, DQS | Implicit Skinning | with muscles |
                              the muscles copy coloured by its distance from DQS (colour bar in mm); the arm shots
                              add the muscles copy with its biceps as a VIPER rod, and its distance column
* ``<shot>_curves.png``       each muscle's volume in % of rest (paper Fig. 13), the skin over the biceps against
                              DQS and against Implicit Skinning alone, and the time per frame by stage
* ``arm_curl_crease.png``     close-up of the elbow's contact crease at 130 degrees, one panel per copy
* ``frames/``                 the single renders the sheets are made of

and a table like the paper's Table 2 printed at the end (also in ``timings.json``). Then the primitive:

* ``muscle_activation.png``  the paper's biceps (rest alpha, beta = 3, 3; active 4, 7) at activation 0, 0.5 and 1
* ``muscle_shapes.png``      a grid of rest shapes (alpha, beta, eccentricity), e.g. fusiform, fan-like, flat
* ``muscle_bent.png``        the biceps on a 60 degree arc at activation 0 and 1, and its axis particles
* ``phi_family.png``         ``Phi_a(s)`` for a in 0..1 (paper Fig. 6) and ``phi(alpha, beta; s)`` for a few pairs
* ``family_closeup.png``     a body of the family at the bend set's pose A, the left elbow and knee from the side:
                             dual quaternions | Implicit Skinning, the skin inside the body in red and counted
                             (``demo/family_closeup.py``; when ``make character`` built the family)
* ``arm_elbow.png``          the paper's arm bent 110 degrees: dual quaternions | Implicit Skinning | with muscles
                             (``demo/arm_demo.py``)
* ``solvers.png``            the arm curl and shake from the core with the biceps on each muscle solver, axis and
                             rod: its field volume and the skin over it (``demo/solvers.py``)
* ``timings.json``           render times, measured mesh volumes against ``pi w^2 l`` (paper eq. 3), file list

``--quick`` renders tiny, noisy images and fewer sheet frames (for tests); the shots still play every frame. The
primitive's muscles come from the headless core (``core.muscle.primitive``, ``core.muscle.surface``), imported as the package
``implicit_muscles`` exactly as the core tests do.
"""
from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_DIR = Path(__file__).resolve().parent

LENGTH = 0.3
"""Rest length of the demo muscles [m] (a biceps)."""
WIDTH = 0.03
"""Rest width ``w0`` of the demo muscles [m]; the volume is ``pi w0^2 l0`` (paper eq. 3)."""
PARTICLES = 30
"""Inner axis particles per muscle, as in the paper's scenes."""
BEND_DEGREES = 60.0
"""Total bend of the arc axis in ``muscle_bent.png``."""
SIDE_VIEW_GAP = 0.03
"""Gap between the front and side views of a flat muscle [m]."""
CELL_GAP = 0.12
"""Least gap between the muscles of neighbouring cells [m] (the captions need it)."""


def _import_package():
    """Make the repository importable as ``implicit_muscles`` (tools/pkgpath.py: a fixed symlink folder, so
    numba's cache, keyed by the kernels' source path as imported, is reused between runs)."""
    sys.path.insert(0, str(REPO / "tools"))
    from pkgpath import make_importable
    make_importable("demo")


def _blender_user_folder():
    """Keep Blender away from the user's own preferences and add-ons: a throw-away user resources folder."""
    if "BLENDER_USER_RESOURCES" not in os.environ:
        folder = tempfile.mkdtemp(prefix="implicit_muscles_demo_blender_")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["BLENDER_USER_RESOURCES"] = folder


_import_package()
_blender_user_folder()
sys.path.insert(0, str(DEMO_DIR))

import numpy as np  # noqa: E402

from implicit_muscles.core.io import kernel_cache  # noqa: E402
from implicit_muscles.core.muscle import profile  # noqa: E402
from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape  # noqa: E402
from implicit_muscles.core.muscle.surface import mesh_volume, muscle_surface  # noqa: E402

BICEPS = MuscleShape(alpha_rest=3, beta_rest=3, alpha_active=4, beta_active=7,
                     eccentricity_rest=0.0, eccentricity_active=0.0)
"""The paper's biceps (§5.2, Fig. 6): symmetric at rest, its belly moves toward the origin when active."""

SHAPES = (  # (alpha, beta, eccentricity, name) shown at rest in muscle_shapes.png
    (3, 3, 0.0, "fusiform"),
    (4, 7, 0.0, "biceps, active"),
    (2, 5, 0.0, "belly near origin"),
    (1, 3, 0.9, "dorsal-like fan"),
    (9, 9, 0.0, "sharp spindle"),
    (3, 3, 0.8, "flat fusiform"),
)


@dataclass(frozen=True)
class Quality:
    """How finely muscles are meshed and images rendered."""
    rings: int
    sides: int
    scale: float
    """Image size relative to each figure's full size."""
    samples: int
    plot_dpi: int


@dataclass
class Cell:
    """One muscle in a figure, with its caption (one or more lines)."""
    label: str
    muscle: FusiformMuscle
    particles: bool = False
    """Show the axis points as spheres, inside a see-through muscle."""
    show_volume: bool = False
    """Add the measured mesh volume to the caption."""
    side_view: bool = False
    """Show the muscle a second time, turned 90 degrees about its axis (front and side of a flat muscle)."""


@dataclass
class Figure:
    """One rendered image: muscles on a grid of ``columns``, a title above."""
    file_name: str
    title: str
    cells: list
    columns: int
    size: tuple = (960, 540)
    """Full-quality image size in pixels."""
    label_size: float = 0.026
    """Caption font size [m] (the muscles are 0.3 m long)."""


def arc_axis(count: int, bend_degrees: float, length: float = LENGTH) -> np.ndarray:
    """``count`` points on a circular arc of total bend ``bend_degrees`` and arc length ``length`` [m] (xz plane)."""
    if bend_degrees == 0.0:
        return np.stack([np.zeros(count), np.zeros(count), np.linspace(0.0, length, count)], 1)
    angle = math.radians(bend_degrees)
    radius = length / angle
    t = np.linspace(0.0, angle, count)
    return np.stack([radius * (1.0 - np.cos(t)), np.zeros(count), radius * np.sin(t)], 1)


def make_muscle(shape=BICEPS, activation=0.0, bend_degrees=0.0, normal=None) -> FusiformMuscle:
    """A demo muscle from the origin up the z axis, optionally bent into an arc of the same length."""
    m = FusiformMuscle((0.0, 0.0, 0.0), (0.0, 0.0, LENGTH), width=WIDTH, shape=shape, activation=activation,
                       particles=PARTICLES, origin_normal=normal, insertion_normal=normal, width_scale=1.0)
    if bend_degrees:
        m.set_axis(arc_axis(PARTICLES + 2, bend_degrees))
    return m


def rest_shape(alpha, beta, e) -> MuscleShape:
    return MuscleShape(alpha_rest=alpha, beta_rest=beta, alpha_active=alpha, beta_active=beta,
                       eccentricity_rest=e, eccentricity_active=e)


def activation_label(a: float) -> str:
    return f"a = {a:g}"


def shape_label(alpha, beta, e) -> str:
    return f"\u03b1 = {alpha}, \u03b2 = {beta}, e = {e:g}"


# --- figures ---------------------------------------------------------------------------------------------------

def figure_activation() -> Figure:
    cells = [Cell(activation_label(a), make_muscle(BICEPS, a), show_volume=True) for a in (0.0, 0.5, 1.0)]
    return Figure("muscle_activation.png", "Biceps: rest (3, 3) \u2192 active (4, 7) at constant volume", cells, 3)


def figure_shapes() -> Figure:
    cells = []
    for alpha, beta, e, name in SHAPES:
        # the broad side of a flat muscle (the ellipse's long axis, x) faces the camera; a side view beside it
        muscle = make_muscle(rest_shape(alpha, beta, e), 0.0, normal=(1.0, 0.0, 0.0))
        flat = e > 0.0
        cells.append(Cell(f"{shape_label(alpha, beta, e)}\n{name}" + ("  (front, side)" if flat else ""), muscle,
                          side_view=flat))
    return Figure("muscle_shapes.png", "Rest shapes (\u03b1, \u03b2, eccentricity e), all of equal volume", cells, 3,
                  size=(960, 720), label_size=0.026)


def figure_bent() -> Figure:
    cells = [Cell(f"axis: 2 ends + {PARTICLES} particles", make_muscle(BICEPS, 0.0, BEND_DEGREES), particles=True),
             Cell(activation_label(0.0), make_muscle(BICEPS, 0.0, BEND_DEGREES), show_volume=True),
             Cell(activation_label(1.0), make_muscle(BICEPS, 1.0, BEND_DEGREES), show_volume=True)]
    return Figure("muscle_bent.png", f"Biceps on a {BEND_DEGREES:g}\u00b0 arc", cells, 3)


def _turned(vertices) -> np.ndarray:
    """``vertices`` turned 90 degrees about the z axis (the straight muscles' axis): the side view."""
    return np.stack([-vertices[:, 1], vertices[:, 0], vertices[:, 2]], 1)


def _flat_caps(muscle, vertices, faces) -> np.ndarray:
    """Faces of an open end's flat cap (profile not 0 at that end): shaded flat to keep a crisp rim."""
    ends = muscle.profile_at(np.array([0.0, 1.0]))
    origin_apex, insertion_apex = len(vertices) - 2, len(vertices) - 1
    flat = np.zeros(len(faces), dtype=bool)
    if ends[0] > 0.0:
        flat |= (faces == origin_apex).any(axis=1)
    if ends[1] > 0.0:
        flat |= (faces == insertion_apex).any(axis=1)
    return flat


def render_figure(studio, out_dir: Path, figure: Figure, quality: Quality, font_path) -> dict:
    """Mesh the figure's muscles with the core, lay them out in a grid, render; returns the figure's record."""
    scene = studio.new_scene()
    solid = studio.muscle_material()
    ghost = studio.muscle_material("Muscle ghost", alpha=0.22, subsurface=0.0)
    inner = studio.muscle_material("Axis particles", color=studio.PARTICLE_BLUE, subsurface=0.0)
    ends = studio.muscle_material("Axis ends", color=studio.ENDPOINT_GOLD, subsurface=0.0)
    text = studio.label_material()
    font = studio.load_font(font_path)

    t0 = time.perf_counter()
    surfaces, records = [], []
    for cell in figure.cells:
        verts, faces = muscle_surface(cell.muscle, rings=quality.rings, sides=quality.sides)
        surfaces.append((verts, faces))
        m = cell.muscle
        measured = mesh_volume(verts, faces)
        closed_form = math.pi * m.width ** 2 * m.length
        records.append({"label": cell.label.replace("\n", "  "), "activation": m.activation,
                        "shape": [m.shape.alpha_rest, m.shape.beta_rest, m.shape.alpha_active,
                                  m.shape.beta_active, m.shape.eccentricity_rest, m.shape.eccentricity_active],
                        "axis_length_m": m.length, "width_m": m.width, "vertices": len(verts),
                        "mesh_volume_m3": measured, "pi_w2_l_m3": closed_form,
                        "relative_difference": measured / closed_form - 1.0})
    mesh_seconds = time.perf_counter() - t0

    # grid: one cell per muscle (two views side by side for a flat one), bottoms on each row's baseline,
    # captions below
    size = figure.label_size
    captions = [cell.label + (f"\nvolume {rec['mesh_volume_m3'] * 1e6:.1f} cm\u00b3" if cell.show_volume else "")
                for cell, rec in zip(figure.cells, records)]
    lines = max(c.count("\n") + 1 for c in captions)
    views = [[verts] + ([_turned(verts)] if cell.side_view else []) for cell, (verts, _) in zip(figure.cells, surfaces)]
    widths = [sum(np.ptp(v[:, 0]) for v in vs) + SIDE_VIEW_GAP * (len(vs) - 1) for vs in views]
    columns = min(figure.columns, len(figure.cells))
    column_widths = np.array([max(widths[c::columns]) + CELL_GAP for c in range(columns)])
    column_centres = np.cumsum(column_widths) - 0.5 * column_widths - 0.5 * column_widths.sum()
    pitch_z = max(np.ptp(v[:, 2]) for v, _ in surfaces) + (1.3 * lines + 1.5) * size + 0.03
    muscles, objects = [], []
    for i, (cell, (_, faces), cell_views, width) in enumerate(zip(figure.cells, surfaces, views, widths)):
        row, col = divmod(i, columns)
        centre_x = column_centres[col]
        base_z = -row * pitch_z
        left = centre_x - 0.5 * width
        flat = _flat_caps(cell.muscle, cell_views[0], faces)
        for k, verts in enumerate(cell_views):
            lo, hi = verts.min(axis=0), verts.max(axis=0)
            offset = (left - lo[0], 0.0, base_z - lo[2])
            left += hi[0] - lo[0] + SIDE_VIEW_GAP
            material = ghost if cell.particles else solid
            muscles.append(studio.mesh_object(f"Muscle {i}.{k}", verts, faces, material, offset, flat_faces=flat))
            if cell.particles and k == 0:
                axis = cell.muscle.axis
                studio.spheres(f"Particles {i}", axis[1:-1], 0.0042, inner, offset)
                studio.spheres(f"Ends {i}", axis[[0, -1]], 0.0062, ends, offset)
        objects.append(studio.label(captions[i], (centre_x, 0.0, base_z - 1.0 * size), size, text, font=font))
    top = max(float(np.ptp(v[:, 2])) for v, _ in surfaces[:columns])
    objects.append(studio.label(figure.title, (0.0, 0.0, top + 1.6 * size), 1.25 * size, text,
                                align_y='BOTTOM', font=font))
    objects += muscles
    settings = studio.RenderSettings(round(figure.size[0] * quality.scale), round(figure.size[1] * quality.scale),
                                     samples=quality.samples)
    studio.frame_camera(scene, objects, settings)
    centre, extent = studio.bounds(objects)
    studio.add_lights(centre, extent)

    path = out_dir / figure.file_name
    seconds = studio.render(scene, path, settings)
    return {"file": path, "resolution": [settings.width, settings.height], "samples": settings.samples,
            "denoiser": scene.cycles.denoiser if scene.cycles.use_denoising else None,
            "render_seconds": seconds, "mesh_seconds": mesh_seconds, "muscles": records}


def plot_profiles(out_dir: Path, quality: Quality) -> dict:
    """``phi_family.png``: paper Fig. 6 (``Phi_a`` for the biceps) and the base profiles ``phi(alpha, beta)``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = time.perf_counter()
    s = np.linspace(0.0, 1.0, 801)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2), constrained_layout=True)
    colours = plt.get_cmap("plasma")(np.linspace(0.05, 0.8, 5))
    norms = {}
    for a, colour in zip((0.0, 0.25, 0.5, 0.75, 1.0), colours):
        values = profile.activation_profile(3, 3, 4, 7, a, s)
        norms[a] = float(_trapezoid(values ** 2, s))
        left.plot(s, values, color=colour, lw=2.0, label=f"a = {a:g}")
    left.set_title(r"$\Phi_a(s)$, rest $(\alpha_0,\beta_0)=(3,3)$, active $(\alpha_1,\beta_1)=(4,7)$")
    left.legend(title="activation", frameon=False)
    for alpha, beta, e, name in SHAPES:
        if e == 0.0 or alpha == 1:
            right.plot(s, profile.phi(alpha, beta, s), lw=1.8, label=rf"$\alpha={alpha},\ \beta={beta}$")
    right.set_title(r"$\varphi(\alpha,\beta;s)$, unit $L^2$ norm (equal volume)")
    right.legend(frameon=False)
    for ax in (left, right):
        ax.set_xlabel("s (origin 0 to insertion 1)")
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(bottom=0.0)
        ax.grid(alpha=0.3)
    left.set_ylabel(r"profile (radius $= w\,\Phi(s)\,r(\theta)$)")
    right.set_ylabel(r"$\varphi(\alpha,\beta;s)$")
    path = out_dir / "phi_family.png"
    fig.savefig(path, dpi=quality.plot_dpi)
    plt.close(fig)
    return {"file": path, "plot_seconds": time.perf_counter() - t0,
            "integral_phi_squared": {f"{a:g}": v for a, v in norms.items()}}


_trapezoid = getattr(np, "trapezoid", None) or np.trapz  # numpy 2 renamed trapz


def label_font():
    """matplotlib's DejaVu Sans (it has Greek letters and a clear "1"), or ``None`` for Blender's own font."""
    try:
        from matplotlib import font_manager
        return font_manager.findfont("DejaVu Sans", fallback_to_default=False)
    except (ImportError, ValueError):
        return None


# --- reporting -------------------------------------------------------------------------------------------------

def _shown(path: Path) -> str:
    """A path relative to the repository when it is inside it (never an absolute path in the JSON)."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return os.path.relpath(path, REPO)


def print_table(figures, plot, warm) -> None:
    print()
    print(f"{'image':<22} {'muscle':<54} {'mesh volume':>12} {'pi w^2 l':>12} {'diff':>8}")
    print(f"{'':<22} {'':<54} {'[cm^3]':>12} {'[cm^3]':>12} {'[%]':>8}")
    for fig in figures:
        name = Path(fig["file"]).name
        for rec in fig["muscles"]:
            print(f"{name:<22} {rec['label']:<54} {rec['mesh_volume_m3'] * 1e6:>12.3f} "
                  f"{rec['pi_w2_l_m3'] * 1e6:>12.3f} {100 * rec['relative_difference']:>+8.2f}")
            name = ""
    print()
    print(f"{'image':<22} {'mesh [s]':>9} {'render [s]':>11}  settings")
    print(f"{'(kernel warm-up)':<22} {warm['seconds']:>9.2f} {'':>11}  {warm['message']}")
    for fig in figures:
        width, height = fig["resolution"]
        print(f"{Path(fig['file']).name:<22} {fig['mesh_seconds']:>9.2f} {fig['render_seconds']:>11.2f}  "
              f"Cycles CPU {width}x{height}, {fig['samples']} samples, denoiser {fig['denoiser'] or 'off'}")
    print(f"{Path(plot['file']).name:<22} {'':>9} {plot['plot_seconds']:>11.2f}  matplotlib (Agg)")
    checks = ", ".join(f"a={a}: {v:.4f}" for a, v in plot["integral_phi_squared"].items())
    print(f"\nint Phi_a^2 ds (1 means constant volume): {checks}")


SHOTS = ("human", "arm_curl", "arm_shake", "character")
"""The animated shots (``demo/shots.py``), in this order."""
SHOT_TO_PAPER = {"arm_curl": "biceps curl", "arm_shake": "arm shake"}
"""The paper's Table 2 row of each shot (the character is not in the paper)."""


def run_shots(out_dir: Path, quick: bool, dpi: int) -> list:
    """Make the animated shots in a child process, then their figures; returns the shots' records."""
    import addon_session
    import plots

    args = [",".join(SHOTS), str(out_dir)] + (["--quick"] if quick else [])
    result = addon_session.run_child(DEMO_DIR / "shots.py", args, addon_session.home("demo"), timeout=5400,
                                     stream=True)
    for shot in result["shots"]:
        shot["figures"] = [plots.contact_sheet(shot, out_dir, dpi), plots.curves(shot, out_dir, dpi)]
        if "crease" in shot:
            shot["figures"].append(plots.crease(shot, out_dir, dpi))
    return result["shots"]


def _median_ms(values) -> float:
    """Median over the frames after the first (the first also settles the muscles into the first pose)."""
    return float(np.median(values[1:] if len(values) > 1 else values))


def shot_summary(shot: dict) -> dict:
    """The numbers a reader checks: finite, fallbacks, volume range, the skin over the probe muscle, medians."""
    from implicit_muscles.scenes.paper import PAPER_TABLE2
    import plots

    ratios = plots.volume_ratios(shot)
    worst = max(ratios, key=lambda n: float(np.abs(ratios[n] - 100.0).max()))
    if "rod" in shot:
        rod = shot["rod"]
        r = np.concatenate([100.0 * np.asarray(v) / rod["rest_volumes"][n] for n, v in rod["volumes"].items()])
    stages = {k: _median_ms(v) for k, v in shot["stages_ms"].items()}
    paper = PAPER_TABLE2.get(SHOT_TO_PAPER.get(shot["name"], ""))
    return {
        "vertices": sum(m["vertices"] for m in shot["meshes"]["muscles"]), "bones": shot["bones"],
        "muscles": shot["muscles"], "particles": shot["particles"], "frames": len(shot["frames"]),
        "fibres_per_mesh": shot["fibres_per_mesh"],
        "finite": shot["finite"], "fallbacks": len(shot["fallbacks"]),
        "volume_percent_range": [float(min(r.min() for r in ratios.values())),
                                 float(max(r.max() for r in ratios.values()))],
        "volume_worst_muscle": worst,
        "probe_muscles_vs_dqs_max_mm": float(max(shot["probe"]["muscles_vs_dqs_mm"])),
        "probe_implicit_vs_dqs_max_mm": float(max(shot["probe"]["implicit_vs_dqs_mm"])),
        "probe_muscles_vs_implicit_max_mm": float(max(shot["probe"]["muscles_vs_implicit_mm"])),
        "fat_skin_vs_implicit_max_mm": {name: float(max(f["skin_vs_implicit_mm"]))
                                        for name, f in shot.get("fats", {}).items() if f["vertices"]},
        "median_ms": {**stages, "implicit_alone": _median_ms(shot["implicit_total_ms"]),
                      "with_muscles": sum(stages[k] for k in ("pbd", "pose", "field", "tracking")),
                      "blender_frame_three_copies": _median_ms(shot["wall_ms"])},
        "paper_table2_ms": None if paper is None else dict(zip(("is_only", "tracking", "pbd", "total"),
                                                              (1e3 * t for t in paper))),
        "skin_quality": {kind: {"worst_turned_outside_creases_percent": 100 * max(q["turned_outside_creases"]),
                                "worst_turned_all_percent": 100 * max(q["turned"]),
                                "worst_dihedral_increase_deg": max(q["dihedral_increase"])}
                         for kind, q in shot.get("quality", {}).items()},
        "seconds": shot["seconds"],
        **({} if "rod" not in shot else {  # the arm shots' copy with the biceps as a rod
            "rod_volume_percent_range": [float(min(r)), float(max(r))],
            "probe_rod_vs_dqs_max_mm": float(max(shot["probe"]["rod_vs_dqs_mm"]))}),
    }


def print_table2(summaries: dict) -> str:
    """The paper's Table 2 for our shots: medians per frame [ms], and the paper's (6-core Xeon) where it has them."""
    head = (f"{'shot':<10} {'vertices':>8} {'bones':>5} {'muscles':>7} {'particles':>9} | {'IS alone':>8} "
            f"{'PBD':>6} {'DQS':>6} {'field':>6} {'tracking':>8} {'total':>7} | {'Blender':>8} | "
            f"{'paper: IS only':>14} {'tracking':>8} {'PBD':>6} {'total':>6}")
    lines = ["Per frame [ms], medians (ours: this machine; the paper: 6-core Xeon, multi-threaded C++). IS alone:",
             "the Implicit Skinning copy without muscles; PBD .. total: the muscles copy (DQS = the pose stage);",
             "Blender: frame_set of all three copies, Armature modifier included.", head, "-" * len(head)]
    for name, s in summaries.items():
        m, p = s["median_ms"], s["paper_table2_ms"]
        paper = (f"{p['is_only']:>14.0f} {p['tracking']:>8.0f} {p['pbd']:>6.0f} {p['total']:>6.0f}" if p
                 else f"{'(not in the paper)':>37}")
        lines.append(f"{name:<10} {s['vertices']:>8} {s['bones']:>5} {s['muscles']:>7} {s['particles']:>9} | "
                     f"{m['implicit_alone']:>8.2f} {m['pbd']:>6.2f} {m['pose']:>6.2f} {m['field']:>6.2f} "
                     f"{m['tracking']:>8.2f} {m['with_muscles']:>7.2f} | {m['blender_frame_three_copies']:>8.2f} | "
                     f"{paper}")
    text = "\n".join(lines)
    print()
    print(text)
    return text


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny images, few samples and coarse meshes (a smoke test in seconds)")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "demo", metavar="DIR",
                        help="output folder (default: out/demo in the repository)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    warm = kernel_cache.warm_up()
    print(warm["message"])

    import studio
    if args.quick:
        quality = Quality(rings=32, sides=16, scale=0.2, samples=4, plot_dpi=40)
    else:
        quality = Quality(rings=96, sides=48, scale=1.0, samples=32, plot_dpi=110)
    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    font_path = label_font()

    figures = []
    for make in (figure_activation, figure_shapes, figure_bent):
        figure = make()
        print(f"rendering {figure.file_name} ...", flush=True)
        figures.append(render_figure(studio, out_dir, figure, quality, font_path))
    plot = plot_profiles(out_dir, quality)
    import arm_demo
    print("rendering arm_elbow.png ...", flush=True)
    arm = arm_demo.render_arms(studio, out_dir, quality, font_path)
    import family_closeup
    closeup = None
    if (REPO / ".cache" / "family").is_dir():
        print("rendering family_closeup.png ...", flush=True)
        closeup = family_closeup.render(out_dir, args.quick)
    import solvers
    print("plotting solvers.png ...", flush=True)
    solvers.main([str(out_dir / "solvers.png")])
    shots = run_shots(out_dir, args.quick, quality.plot_dpi)
    summaries = {shot["name"]: shot_summary(shot) for shot in shots}

    files = [fig["file"] for fig in figures] + [arm["file"], plot["file"], out_dir / "solvers.png"]
    if closeup is not None:
        files.append(closeup["file"])
    for shot in shots:
        files += [Path(shot["blend"]), *shot["figures"]]
    files.append(out_dir / "timings.json")
    report = {
        "blender": __import__("bpy").app.version_string,
        "quick": args.quick,
        "mesh": {"rings": quality.rings, "sides": quality.sides},
        "kernel_warm_up": {"compiled": warm["compiled"], "seconds": warm["seconds"]},
        "images": [{**fig, "file": _shown(fig["file"])} for fig in figures],
        "plot": {**plot, "file": _shown(plot["file"])},
        "arm": {**arm, "file": _shown(arm["file"])},
        "family_closeup": None if closeup is None else {**closeup, "file": _shown(closeup["file"])},
        "shots": summaries,
        "total_seconds": time.perf_counter() - t_start,
        "files": [_shown(f) for f in files],
    }
    print_table(figures, plot, warm)
    report["table2"] = print_table2(summaries)
    (out_dir / "timings.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"\ntotal {report['total_seconds']:.1f} s; wrote:")
    for f in report["files"]:
        print(f"  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
