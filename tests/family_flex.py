"""How far an activated muscle moves the skin over it, on a family member (not shipped; ``tests/family.py``).

The measure of *flexing an artist can see*: four presets (``FLEX_MUSCLES``: biceps, deltoid, quadriceps,
gastrocnemius, left side) are placed on the member from the skin depth at their bones
(``core/muscle/placement.py``) and bound with the member's rig and weights (``core/character.py``); the muscles are
settled at the rest pose at activation 0, then at activation 1 (``MuscledCharacter.settle``), and the skin is
deformed at both. Per muscle (:func:`flex_measures`):

* ``belly`` [m]: the median outward move (along the rest vertex normal) of the skin vertices over the muscle's
  widest third (their nearest point on the muscle's rest axis in the third of its length around its widest point
  when active, within one widest radius of the muscle's side line);
* ``far`` [m]: the largest move of a vertex farther than 1.5 widest diameters from every flexed muscle's surface;
* ``crest`` [deg]: the largest dihedral angle between neighbouring faces over the muscle (its whole length)
  activated, less the largest there at rest.

    python tests/family_flex.py default/average [game_engine/heavy ...]   # prints the numbers per muscle
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from pkgpath import CORE_TESTS_CACHE, make_importable, use_cache  # noqa: E402

FLEX_MUSCLES = (
    ("biceps", "upper_arm", "forearm", "front"),
    ("deltoid", "clavicle", "upper_arm", "up"),
    ("quadriceps", "thigh", "shin", "front"),
    ("gastrocnemius", "shin", "foot", "back"),
)
"""(preset, origin segment, insertion segment, the side of the body it lies on) of the measured muscles."""
FAR_WIDTHS = 1.5
"""``far`` counts the vertices farther than this many widest diameters from every flexed muscle's surface."""


@dataclass(frozen=True)
class FlexMeasure:
    """One muscle's flex: ``belly`` [m], ``far`` [m] (the whole body's, the same for every muscle), ``crest`` [deg],
    ``count`` the vertices over its widest third, ``depth`` [m] the median distance from its rest surface to them."""


    name: str
    belly: float
    far: float
    crest: float
    count: int
    depth: float
    muscle: float
    """[m] the median move of the muscle's own surface (its field at bind less its field active) there"""
    uncapped: float
    """[m] ``belly`` with the limited correction off (``core/skin/trust.py``)"""
    support: float
    """[m] the muscle's support radius ``R`` at bind (its widest half-axis)"""


def flex_setup(character, bone_map: dict, muscles=FLEX_MUSCLES, particles=None, **setup):
    """``(CharacterSetup, names)``: the member's rig with ``muscles`` placed by ``core/muscle/placement.py``, each
    with ``particles`` inner axis particles (None: the primitive's default); ``setup``: more of its
    ``CharacterSetup`` (``collisions``, ...)."""
    from implicit_muscles.core.character import CharacterSetup
    from implicit_muscles.core.muscle.placement import place_preset
    from implicit_muscles.core.rig import Rig
    from family_muscles import bone

    rig = Rig(character.vertices, character.faces, character.weights, character.heads, character.tails,
              character.parents, character.names)
    placed, origin, insertion = [], [], []
    for preset, o, i, side in muscles:
        ob, ib = character.names.index(bone(bone_map, o)), character.names.index(bone(bone_map, i))
        placed.append(place_preset(rig, ob, ib, preset, side, name=preset, particles=particles))
        origin.append(ob)
        insertion.append(ib)
    setup = CharacterSetup(rig, tuple(placed), origin_bones=origin, insertion_bones=insertion, skin_bones=origin,
                           **setup)
    return setup, [m[0] for m in muscles]


def vertex_normals(x, faces) -> np.ndarray:
    """``(V, 3)`` unit area-weighted vertex normals of the mesh ``x (V, 3)``, ``faces (F, 3)``."""
    n = np.cross(x[faces[:, 1]] - x[faces[:, 0]], x[faces[:, 2]] - x[faces[:, 0]])
    out = np.zeros_like(x)
    for k in range(3):
        np.add.at(out, faces[:, k], n)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-30)


def _dihedral(x, faces, pairs) -> np.ndarray:
    """Angle [deg] between the normals of each pair of neighbouring faces."""
    from implicit_muscles.core.skin.quality import face_normals

    n = face_normals(x, faces)
    return np.degrees(np.arccos(np.clip(np.sum(n[pairs[:, 0]] * n[pairs[:, 1]], axis=1), -1.0, 1.0)))


def _regions(muscle, rest, side):
    """For one muscle at rest: ``(belly mask, over mask, distance from its surface)`` of the rest vertices."""
    from implicit_muscles.core.muscle.profile import ellipse_axes

    geo_axis = muscle.axis
    a, b = geo_axis[0], geo_axis[-1]
    e = b - a
    length = float(np.linalg.norm(e))
    t = np.clip((rest - a) @ e / length ** 2, 0.0, 1.0)
    radial = rest - (a + t[:, None] * e)
    s = np.linspace(0.0, 1.0, 201)
    profile = muscle.width * _phi(muscle, s)
    peak = float(profile.max()) * ellipse_axes(muscle.shape.eccentricity_rest)[1]
    s_peak = float(s[np.argmax(_phi(muscle, s, 1.0))])  # the active muscle's widest point
    along = np.abs(t - s_peak) <= 1.0 / 6.0
    lateral = radial - (radial @ side)[:, None] * side
    on_side = (radial @ side > 0.0) & (np.linalg.norm(lateral, axis=1) <= peak)
    radius = np.interp(t, s, profile)
    distance = np.linalg.norm(radial, axis=1) - radius
    over = on_side & (t > 0.05) & (t < 0.95)
    return along & on_side, over, distance, peak


def _phi(muscle, s, activation=0.0):
    from implicit_muscles.core.muscle.profile import activation_profile

    sh = muscle.shape
    return activation_profile(sh.alpha_rest, sh.beta_rest, sh.alpha_active, sh.beta_active, activation, s)


def flex_measures(setup, names, log=print) -> list:
    """Bind ``setup``, settle at activation 0 and at 1 at the rest pose, deform both: one :class:`FlexMeasure`
    per muscle (module docstring)."""
    from implicit_muscles.core.character import MuscledCharacter, build_character
    from implicit_muscles.core.pbd.control import MuscleInputs
    from implicit_muscles.core.skin.quality import edge_face_pairs

    t0 = time.perf_counter()
    character = MuscledCharacter(build_character(setup))
    model = character.model
    log(f"bind {time.perf_counter() - t0:.1f} s")
    rig = setup.rig
    B = np.tile(np.eye(4), (len(rig.heads), 1, 1))
    M = len(model.muscles)
    from implicit_muscles.core.muscle.batch import evaluate_muscles
    from implicit_muscles.kernels.constants import SCALAR_SUPPORT

    xs = []
    for a in (0.0, 1.0):
        inputs = MuscleInputs(activation=np.full(M, a))
        character.settle(B, inputs)
        xs.append(character.deform(character.current, B).copy())
    x0, x1 = xs
    # where the change is lost: the muscles' own surface move, and the skin without the limited correction
    f_rest = evaluate_muscles(model.skin.muscles, rig.vertices)[0]
    f_active = evaluate_muscles(character.current.muscles, rig.vertices)[0]
    deformer = character.deformer
    deformer.limit_correction = False
    x1_free = character.deform(character.current, B).copy()
    deformer.limit_correction = True
    log(f"frames {time.perf_counter() - t0:.1f} s; rest error {np.abs(x0 - rig.vertices).max() * 1e3:.3f} mm")
    normals = vertex_normals(rig.vertices, rig.faces)
    move = np.sum((x1 - x0) * normals, axis=1)
    move_free = np.sum((x1_free - x0) * normals, axis=1)
    pairs = edge_face_pairs(rig.faces)
    rest_angle, flex_angle = _dihedral(x0, rig.faces, pairs), _dihedral(x1, rig.faces, pairs)
    near = np.zeros(len(rig.vertices), dtype=bool)
    out = []
    regions = []
    for k, muscle in enumerate(model.muscles):
        side = _side_of(muscle, rig, setup.origin_bones[k], setup.insertion_bones[k])
        belly, over, distance, peak = _regions(muscle, rig.vertices, side)
        near |= distance <= FAR_WIDTHS * 2.0 * peak
        regions.append((belly, over, distance))
    far_move = np.where(near, 0.0, np.linalg.norm(x1 - x0, axis=1))
    far = float(far_move.max())
    worst = int(np.argmax(far_move))
    log(f"farthest move far from the muscles: vertex {worst} at {np.round(rig.vertices[worst], 3)} m (bone "
        f"{rig.names[int(np.argmax(rig.weights[worst]))]}), {far * 1e3:.2f} mm")
    for k, (name, (belly, over, distance)) in enumerate(zip(names, regions)):
        faces_over = np.all(over[rig.faces], axis=1)
        pair_over = faces_over[pairs[:, 0]] & faces_over[pairs[:, 1]]
        crest = float(flex_angle[pair_over].max() - rest_angle[pair_over].max()) if np.any(pair_over) else 0.0
        median = (lambda v: float(np.median(v[belly])) if np.any(belly) else 0.0)
        out.append(FlexMeasure(name, median(move), far, crest, int(belly.sum()), median(distance),
                               median(f_rest[:, k] - f_active[:, k]), median(move_free),
                               float(model.skin.muscles.muscle_scalar[k, SCALAR_SUPPORT])))
    return out


def _side_of(muscle, rig, origin_bone, insertion_bone) -> np.ndarray:
    """The unit direction from the muscle's bone line to its rest axis, across the axis."""
    from implicit_muscles.core.muscle.placement import muscle_line

    axis = muscle.axis
    e = axis[-1] - axis[0]
    e = e / np.linalg.norm(e)
    start, end = muscle_line(rig.heads, rig.tails, origin_bone, insertion_bone)
    d = 0.5 * (axis[0] + axis[-1] - start - end)
    side = d - (d @ e) * e
    return side / np.linalg.norm(side)


def main(argv) -> None:
    if "implicit_muscles" not in sys.modules:
        make_importable(CORE_TESTS_CACHE)
        use_cache(CORE_TESTS_CACHE)
    from family import load_character, member

    for name in argv or ["default/average"]:
        body = member(name)
        setup, names = flex_setup(load_character(body), body.bone_map)
        print(name)
        for m in flex_measures(setup, names, log=lambda s: print("  " + s)):
            print(f"  {m.name:14s} belly {m.belly * 1e3:6.2f} mm  far {m.far * 1e3:5.2f} mm  crest "
                  f"{m.crest:5.1f} deg  ({m.count} vertices, {m.depth * 1e3:.1f} mm over the muscle; the muscle "
                  f"{m.muscle * 1e3:.2f} mm, the skin uncapped {m.uncapped * 1e3:.2f} mm, R {m.support * 1e3:.1f} mm)")


if __name__ == "__main__":
    main(sys.argv[1:])
