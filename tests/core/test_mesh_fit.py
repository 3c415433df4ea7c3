"""A muscle fitted to a closed mesh (core/muscle/mesh_fit.py, core/muscle/sections.py): the add-on's own muscle
surfaces fitted back, a hand-made fan giving several fibres, a sculpt-like shape, the bones the ends attach to,
and bad input refused with a sentence."""
import numpy as np
import pytest

from fit_shapes import fan_mesh, sculpt_mesh
from implicit_muscles.core.muscle import FusiformMuscle, MuscleShape
from implicit_muscles.core.muscle import sections
from implicit_muscles.core.muscle.batch import pack_muscles
from implicit_muscles.core.muscle.mesh_fit import attach_to_bones, fit_mesh
from implicit_muscles.core.muscle.surface import batch_surfaces, mesh_volume, muscle_surface

ECCENTRICITY_TOLERANCE = 0.01
"""Flatness recovered from the add-on's own surfaces (polygon rings: their inertia ellipse is the ellipse's)."""
WIDTH_TOLERANCE = 0.005
"""Relative width recovered: the 48-sided rings hold 0.3 % less volume than the smooth muscle."""
END_TOLERANCE = 1e-4
"""Origin and insertion recovered [m] (the surface's apex vertices are the axis ends)."""

SHAPES = [(3, 3, 0.0), (4, 7, 0.3), (2, 3, 0.4), (3, 5, 0.3), (3, 9, 0.7), (1, 3, 0.96), (3, 3, 0.9),
          (6, 2, 0.6), (9, 9, 0.2)]
"""Rest pairs and flatness of the shipped presets (biceps, brachialis, brachioradialis, pectoral, dorsal,
abdominals) and a few more."""


def _muscle(alpha, beta, e, seed):
    rng = np.random.default_rng(seed)
    origin = rng.normal(size=3) * 0.2
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    normal = np.cross(direction, rng.normal(size=3))
    return FusiformMuscle(origin, origin + 0.3 * direction, width=0.025, particles=12,
                          shape=MuscleShape(alpha, beta, 4, 7, e, 0.5), origin_normal=normal,
                          insertion_normal=normal)


def _oriented(fibre, muscle):
    """``fibre`` ordered from ``muscle``'s origin."""
    return fibre if np.linalg.norm(fibre.origin - muscle.axis[0]) < np.linalg.norm(fibre.insertion -
                                                                                  muscle.axis[0]) else \
        fibre.reversed()


@pytest.mark.parametrize("k", range(len(SHAPES)))
def test_own_surface_fits_back(k):
    alpha, beta, e = SHAPES[k]
    muscle = _muscle(alpha, beta, e, seed=k)
    vertices, faces = muscle_surface(muscle, rings=96, sides=48)
    fit = fit_mesh(vertices, faces)
    assert len(fit.fibres) == 1
    fibre = _oriented(fit.fibres[0], muscle)
    assert (fibre.alpha, fibre.beta) == (alpha, beta)
    assert fibre.eccentricity == pytest.approx(e, abs=ECCENTRICITY_TOLERANCE)
    assert fibre.width == pytest.approx(muscle.width, rel=WIDTH_TOLERANCE)
    np.testing.assert_allclose(fibre.origin, muscle.axis[0], atol=END_TOLERANCE)
    np.testing.assert_allclose(fibre.insertion, muscle.axis[-1], atol=END_TOLERANCE)
    if e > 0.1:
        assert abs(fibre.long_axis @ muscle.geometry().normals[0]) == pytest.approx(1.0, abs=1e-3)
    assert fit.volume == pytest.approx(mesh_volume(vertices, faces), rel=1e-12)
    assert fit.relative_error < 0.02


@pytest.mark.parametrize("shape", [(3, 3, 0.0), (2, 5, 0.5), (3, 9, 0.7)])
def test_display_sampling_fits_back(shape):
    """The viewport's coarse rings (16 rings, 12 sides, ``batch_surfaces``) still give the pair and flatness."""
    muscle = _muscle(*shape, seed=11)
    vertices, _, faces = batch_surfaces(pack_muscles([muscle]))
    fit = fit_mesh(vertices.astype(np.float64), faces)
    fibre = _oriented(fit.fibres[0], muscle)
    assert len(fit.fibres) == 1
    assert (fibre.alpha, fibre.beta) == shape[:2]
    assert fibre.eccentricity == pytest.approx(shape[2], abs=0.03)
    assert fibre.width == pytest.approx(muscle.width, rel=0.05)  # 12-sided rings hold 4.5 % less area


def test_fan_gives_diverging_fibres_that_fit_better_than_one():
    vertices, faces = fan_mesh()
    fit = fit_mesh(vertices, faces)
    one = fit_mesh(vertices, faces, fibres=1)
    k = len(fit.fibres)
    assert 3 <= k <= 6
    assert fit.error_rms < 0.6 * one.error_rms
    origins = np.array([f.origin if f.origin[2] < f.insertion[2] else f.insertion for f in fit.fibres])
    insertions = np.array([f.insertion if f.origin[2] < f.insertion[2] else f.origin for f in fit.fibres])
    assert np.ptp(origins[:, 0]) > 3.0 * np.ptp(insertions[:, 0])  # they fan out from the narrow end
    np.testing.assert_allclose(origins[:, 2], 0.0, atol=1e-9)
    np.testing.assert_allclose(insertions[:, 2], 0.15, atol=1e-9)
    assert sum(f.volume for f in fit.fibres) == pytest.approx(fit.volume, rel=1e-9)
    assert np.all(np.diff(origins[:, 0]) != 0.0)  # no two fibres in one place
    # the fibres of a flat sheet are flat in the sheet (their long axis across it, not through it)
    for fibre in fit.fibres[:1] + fit.fibres[-1:]:
        assert abs(fibre.long_axis[1]) < 0.5


def test_fibre_count_can_be_given():
    vertices, faces = fan_mesh()
    assert len(fit_mesh(vertices, faces, fibres=4).fibres) == 4
    with pytest.raises(ValueError, match="number of fibres must be 0"):
        fit_mesh(vertices, faces, fibres=-1)


def test_sculpt_like_mesh():
    """A bent, lumpy egg-shaped belly thickest at 40 % of its length, flattened along Y."""
    vertices, faces = sculpt_mesh()
    fit = fit_mesh(vertices, faces)
    assert len(fit.fibres) == 1
    fibre = fit.fibres[0]
    if fibre.origin[2] > fibre.insertion[2]:
        fibre = fibre.reversed()
    np.testing.assert_allclose(fibre.origin[2], 0.0, atol=1e-3)
    np.testing.assert_allclose(fibre.insertion[2], 0.28, atol=1e-3)
    belly = (fibre.alpha - 1) / (fibre.alpha + fibre.beta - 2)
    assert belly == pytest.approx(0.4, abs=0.1)
    # the fitted muscle holds the mesh's volume and is flat where the mesh is (ellipse 1.25 : 0.8)
    assert np.pi * fibre.width ** 2 * fibre.length == pytest.approx(fit.volume, rel=1e-9)
    assert fibre.eccentricity == pytest.approx(np.sqrt(1.0 - (0.8 / 1.25) ** 2), abs=0.05)
    assert abs(fibre.long_axis[0]) > 0.99
    assert fit.relative_error < 0.2  # a beta profile is not this blunt egg: about 15 %


def test_split_vertices_are_welded():
    muscle = _muscle(3, 3, 0.3, seed=3)
    vertices, faces = muscle_surface(muscle, rings=32, sides=16)
    split = np.concatenate([vertices, vertices[:16]])  # the first ring twice, the caps on the copy
    faces = faces.copy()
    cap = (faces >= 0) & (faces < 16) & np.any(faces == len(vertices) - 2, axis=1, keepdims=True)
    faces[cap] += len(vertices)
    fit = fit_mesh(split, faces)
    assert (fit.fibres[0].alpha, fit.fibres[0].beta) == (3, 3)


def _bones():
    """A shoulder - elbow - wrist chain along +X and a side branch."""
    heads = np.array([[0.0, 0, 0], [0.3, 0, 0], [0.56, 0, 0], [0.0, 0, 0]])
    tails = np.array([[0.3, 0, 0], [0.56, 0, 0], [0.66, 0, 0], [0.0, 0.2, 0]])
    return heads, tails, [-1, 0, 1, -1]


def test_ends_attach_to_the_nearest_bones_origin_nearer_the_root():
    heads, tails, parents = _bones()
    muscle = FusiformMuscle((0.36, 0, 0.03), (0.05, 0, 0.03), width=0.02, particles=8,
                            shape=MuscleShape(2, 5, 3, 6, 0.2, 0.2))  # given from the elbow to the shoulder
    fit = fit_mesh(*muscle_surface(muscle, rings=48, sides=24))
    (att,) = attach_to_bones(fit, heads, tails, parents)
    assert (att.origin_bone, att.insertion_bone, att.skin_bone) == (0, 1, 0)
    np.testing.assert_allclose(att.fibre.origin, (0.05, 0, 0.03), atol=1e-4)
    assert (att.fibre.alpha, att.fibre.beta) == (5, 2)  # the same shape seen from the other end


def test_one_bone_origin_nearer_its_head():
    heads, tails, parents = _bones()
    muscle = FusiformMuscle((0.25, 0, 0.03), (0.05, 0, 0.03), width=0.02, particles=8)
    (att,) = attach_to_bones(fit_mesh(*muscle_surface(muscle, rings=48, sides=24)), heads, tails, parents)
    assert (att.origin_bone, att.insertion_bone) == (0, 0)
    assert att.fibre.origin[0] == pytest.approx(0.05, abs=1e-4)


def test_bad_input_is_refused_with_a_sentence():
    muscle = _muscle(3, 3, 0.2, seed=5)
    vertices, faces = muscle_surface(muscle, rings=24, sides=12)
    with pytest.raises(ValueError, match="Sculpt is not closed: 12 edges border a hole"):
        fit_mesh(vertices, faces[:-12], name="Sculpt")  # the insertion's cap removed
    with pytest.raises(ValueError, match="normals point the other way"):
        fit_mesh(vertices, np.concatenate([faces[:-1], faces[-1:, ::-1]]), name="Sculpt")
    flat = vertices.copy()
    flat[:, 2] = 0.0
    with pytest.raises(ValueError, match="Sculpt encloses no volume"):
        fit_mesh(flat, faces, name="Sculpt")
    two = np.concatenate([vertices, vertices + (0.0, 0.0, 1.0)])
    with pytest.raises(ValueError, match="Sculpt is made of 2 separate pieces: separate them"):
        fit_mesh(two, np.concatenate([faces, faces + len(vertices)]), name="Sculpt")
    with pytest.raises(ValueError, match="fewer than 4 triangles"):
        fit_mesh(vertices, faces[:2], name="Sculpt")
    heads, tails, parents = _bones()
    fit = fit_mesh(vertices + (0.0, 3.0, 0.0), faces)
    with pytest.raises(ValueError, match="lies too far from the bones of Rig: its ends are"):
        attach_to_bones(fit, heads, tails, parents, skeleton="Rig")
    with pytest.raises(ValueError, match="Rig has no bones"):
        attach_to_bones(fit, np.zeros((0, 3)), np.zeros((0, 3)), [], skeleton="Rig")


def test_inward_normals_give_the_same_fit():
    muscle = _muscle(2, 3, 0.4, seed=2)
    vertices, faces = muscle_surface(muscle, rings=48, sides=24)
    a, b = fit_mesh(vertices, faces), fit_mesh(vertices, faces[:, ::-1])
    assert b.volume == pytest.approx(a.volume)
    assert (b.fibres[0].alpha, b.fibres[0].beta) == (a.fibres[0].alpha, a.fibres[0].beta)


def test_strip_moments_add_up_and_match_a_square():
    """Green's theorem on a unit square cut into strips: the strips' moments add up to the whole."""
    start = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    end = np.roll(start, -1, axis=0)
    level = np.zeros(4, dtype=np.int64)
    whole = sections.strip_moments(start, end, level, 1)
    np.testing.assert_allclose(whole[0], [1.0, 0.5, 0.5, 1 / 3, 1 / 3, 0.25])
    parts = sum(sections.strip_moments(start, end, level, 1, [x0], [x0 + 0.25]) for x0 in (0.0, 0.25, 0.5, 0.75))
    np.testing.assert_allclose(parts, whole)
    left = sections.strip_moments(start, end, level, 1, None, [0.3])
    np.testing.assert_allclose(left[0, :3], [0.3, 0.045, 0.15])
