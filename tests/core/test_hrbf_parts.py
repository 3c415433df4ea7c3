"""Skin parts: partition, Poisson samples and caps, HRBF fit (thesis §3.1.1), part grids (kernel vs reference)."""
import numpy as np
import pytest

from implicit_muscles.scenes import paper as scenes
from implicit_muscles.core.skin.hrbf import compact, fit_hrbf
from implicit_muscles.core.skin.part_grid import bake_part_grid
from implicit_muscles.core.skin.parts import (cap_directions, partition_vertices, poisson_indices, sample_parts,
                                              vertex_normals)

FIT_VALUE_TOL = 1e-8
"""|f_H(p_i)| at the samples [m] (the regularisation is 1e-9 in unit-box units)."""
FIT_NORMAL_TOL = 1e-3
"""|grad f_H(p_i) - n_i| at the samples."""
KERNEL_TOL = 1e-10
"""HRBF kernel vs numpy reference, value [m] and gradient."""
GRID_P95_TOL = 0.02
"""95th percentile of |grid - direct| of the compact field at the default resolution, 48 nodes (measured 0.016)."""
ISO_MEAN_TOL = 0.005
ISO_P95_TOL = 0.015
"""Distance from a part's vertices to its 0.5-iso, mean and 95th percentile, as a fraction of the part's size."""


@pytest.fixture(scope="module")
def arm():
    return scenes.arm_rig()


def _sphere(n=80, radius=0.1, centre=(1.0, 2.0, 3.0), seed=0):
    d = np.random.default_rng(seed).normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    return np.asarray(centre) + radius * d, d


def test_hrbf_interpolates_points_and_normals():
    p, n = _sphere()
    h = fit_hrbf(p, n)
    f, g = h.evaluate(p)
    assert np.abs(f).max() < FIT_VALUE_TOL
    assert np.abs(g - n).max() < FIT_NORMAL_TOL


def test_hrbf_is_distance_like_on_a_sphere():
    """Inside negative, outside positive, and close to the signed distance near the surface."""
    p, n = _sphere(radius=0.1)
    h = fit_hrbf(p, n)
    r = np.array([0.05, 0.09, 0.11, 0.15])
    f, _ = h.evaluate(np.array([1.0, 2.0, 3.0]) + r[:, None] * np.array([0.6, 0.0, 0.8]))
    assert np.all(np.sign(f) == np.sign(r - 0.1))
    assert np.abs(f[1:3] - (r[1:3] - 0.1)).max() < 0.002


def test_hrbf_kernel_matches_reference():
    from implicit_muscles.kernels.hrbf import hrbf_field

    p, n = _sphere(seed=3)
    h = fit_hrbf(p, n)
    q = np.random.default_rng(1).uniform(0.8, 1.2, (500, 3)) + [0, 1, 2]
    f_ref, g_ref = h.evaluate(q)
    f, g = np.empty(len(q)), np.empty((len(q), 3))
    hrbf_field(q, *h.kernel_arrays(), f, g)
    assert np.abs(f - f_ref).max() < KERNEL_TOL
    assert np.abs(g - g_ref).max() < KERNEL_TOL


def test_hrbf_gradient_matches_finite_differences():
    p, n = _sphere(seed=4)
    h = fit_hrbf(p, n)
    q = np.random.default_rng(2).uniform(0.85, 1.15, (50, 3)) + [0, 1, 2]
    _, g = h.evaluate(q)
    step = 1e-6
    fd = np.stack([(h.evaluate(q + step * e)[0] - h.evaluate(q - step * e)[0]) / (2 * step) for e in np.eye(3)], 1)
    assert np.abs(fd - g).max() < 1e-6 * max(1.0, np.abs(g).max())


def test_hrbf_survives_duplicate_samples():
    """Coincident samples are merged instead of making the system singular."""
    p, n = _sphere(n=40)
    h = fit_hrbf(np.vstack([p, p[:5] + 1e-9]), np.vstack([n, n[:5]]))
    assert len(h.centres) == 40
    assert np.all(np.isfinite(h.alpha)) and h.residual < 1e-6


@pytest.mark.parametrize("bad, message", [
    (lambda p, n: (p[:3], n[:3]), "at least 4"),
    (lambda p, n: (p, np.zeros_like(n)), "zero-length normal"),
    (lambda p, n: (p, n[:-1]), "differ in count"),
    (lambda p, n: (np.where(np.arange(len(p))[:, None] == 0, np.nan, p), n), "NaN"),
])
def test_hrbf_bad_input(bad, message):
    p, n = _sphere()
    with pytest.raises(ValueError, match=message):
        fit_hrbf(*bad(p, n))


def test_compact_support_closed_form():
    """K(-R) = 1, K(0) = 1/2, K(R) = 0, K' = -15/16 (1 - x^2)^2 / R (thesis eq. 3.1), C1 at +-R."""
    R = 0.04
    k, dk = compact(np.array([-2 * R, -R, 0.0, R, 2 * R]), R)
    assert np.allclose(k, [1, 1, 0.5, 0, 0])
    assert np.allclose(dk, [0, 0, -15 / 16 / R, 0, 0])
    d = np.linspace(-0.9 * R, 0.9 * R, 7)
    fd = (compact(d + 1e-7, R)[0] - compact(d - 1e-7, R)[0]) / 2e-7
    assert np.allclose(fd, compact(d, R)[1], rtol=1e-6)


def test_partition_by_highest_weight_and_unweighted_vertices(arm):
    labels = partition_vertices(arm.weights)
    assert np.array_equal(labels, np.argmax(arm.weights, axis=1))
    w = arm.weights.copy()
    w[[5, 9]] = 0.0
    with pytest.raises(ValueError, match="2 vertices have no skinning weight.*vertex 5"):
        partition_vertices(w)
    fixed = partition_vertices(w, "nearest", arm.vertices, arm.heads, arm.tails)
    assert fixed[5] == 0 and fixed[9] == 0  # near the shoulder end
    with pytest.raises(ValueError, match="unweighted must be"):
        partition_vertices(w, "ignore")


def test_poisson_samples_are_deterministic_and_spread(arm):
    r = 0.02
    a = poisson_indices(arm.vertices, r, seed=7)
    b = poisson_indices(arm.vertices, r, seed=7)
    c = poisson_indices(arm.vertices, r, seed=8)
    assert np.array_equal(a, b) and not np.array_equal(np.sort(a), np.sort(c))
    p = arm.vertices[a]
    d = np.linalg.norm(p[:, None] - p[None], axis=2) + np.eye(len(p))
    assert d.min() >= r
    # maximal: every vertex is within r of a sample
    dv = np.linalg.norm(arm.vertices[:, None] - p[None], axis=2).min(axis=1)
    assert dv.max() < r


def test_end_caps_close_joint_ends_only(arm):
    parts = sample_parts(arm.vertices, arm.faces, partition_vertices(arm.weights), arm.heads, arm.tails,
                         arm.parents)
    per_end = len(cap_directions(np.array([1.0, 0, 0])))
    # shoulder: tail only; elbow: head and tail; wrist: head only (the mesh closes the root and the leaf)
    assert [p.caps for p in parts] == [per_end, 2 * per_end, per_end]
    elbow = parts[1]
    caps, normals = elbow.points[-elbow.caps:], elbow.normals[-elbow.caps:]
    assert np.allclose(normals[0], [-1, 0, 0]) and caps[0, 0] < arm.heads[1, 0]
    assert np.allclose(normals[per_end], [1, 0, 0]) and caps[per_end, 0] > arm.tails[1, 0]
    # the support radius covers every sample (thesis §3.1.1)
    from implicit_muscles.core.skin.parts import segment_distance
    for p in parts:
        assert segment_distance(p.points, arm.heads[p.bone], arm.tails[p.bone]).max() <= p.radius + 1e-12


def test_vertex_normals_point_outwards(arm):
    n = vertex_normals(arm.vertices, arm.faces)
    radial = arm.vertices.copy()
    radial[:, 0] = 0.0
    side = np.linalg.norm(radial, axis=1) > 0.01
    assert np.all(np.einsum("ij,ij->i", n[side], radial[side]) > 0)


def _part_grids(rig, resolution=48):
    labels = partition_vertices(rig.weights)
    parts = sample_parts(rig.vertices, rig.faces, labels, rig.heads, rig.tails, rig.parents)
    out = []
    for p in parts:
        h = fit_hrbf(p.points, p.normals)
        out.append((p, h, bake_part_grid(h, p.radius, p.points, rig.heads[p.bone], rig.tails[p.bone], p.bone,
                                         resolution)))
    return out


def iso_distances(rig, resolution=48):
    """Per part: distance [m] of its vertices to its grid's 0.5-iso (|K - 1/2| / |grad K|), and the part size."""
    out = []
    for p, _, g in _part_grids(rig, resolution):
        v, gr = g.sample(rig.vertices[p.vertex_indices])
        d = np.abs(v - 0.5) / np.maximum(np.linalg.norm(gr, axis=1), 1e-12)
        out.append((d, float(np.linalg.norm(np.ptp(rig.vertices[p.vertex_indices], axis=0)))))
    return out


def test_part_iso_surfaces_follow_the_arm(arm, record_property):
    for k, (d, size) in enumerate(iso_distances(arm)):
        record_property(f"part{k}_iso_mean_percent", 100 * d.mean() / size)
        record_property(f"part{k}_iso_p95_percent", 100 * np.percentile(d, 95) / size)
        assert d.mean() < ISO_MEAN_TOL * size
        assert np.percentile(d, 95) < ISO_P95_TOL * size


def test_grid_matches_direct_evaluation_better_with_resolution(arm):
    """Grid (trilinear value and gradient) vs the clipped, compact HRBF evaluated directly, near the skin."""
    from implicit_muscles.core.skin.part_grid import CLIP_RADIUS, CLIP_SLOPE
    from implicit_muscles.core.skin.parts import segment_distance

    errors = []
    rng = np.random.default_rng(0)
    for resolution in (24, 48, 96):
        p, h, g = _part_grids(arm, resolution)[1]
        q = arm.vertices[p.vertex_indices] + rng.normal(scale=0.005, size=(len(p.vertex_indices), 3))
        f, _ = h.evaluate(q)
        clip = CLIP_SLOPE * (segment_distance(q, arm.heads[1], arm.tails[1]) - CLIP_RADIUS * p.radius)
        k, _ = compact(np.maximum(f, clip), p.radius)
        v, _ = g.sample(q)
        errors.append(np.abs(v - k))
    medians = [np.median(e) for e in errors]
    # trilinear interpolation converges as h^2: about 4x per doubling of the resolution (measured 4.4x, 4.3x)
    assert medians[0] > 3 * medians[1] > 9 * medians[2]
    assert np.percentile(errors[1], 95) < GRID_P95_TOL and np.percentile(errors[2], 95) < GRID_P95_TOL / 3


def test_part_grid_kernel_matches_reference_and_moves_rigidly(arm):
    from implicit_muscles.kernels.part_grid import sample_part_many

    p, _, g = _part_grids(arm)[1]
    B = scenes.rotation_about((0.3, -1.0, 0.2), 0.7, (0.3, 0.0, 0.0))
    B[:3, 3] += [0.1, -0.2, 0.05]
    q = arm.vertices[p.vertex_indices] + np.random.default_rng(1).normal(scale=0.01, size=(len(p.vertex_indices), 3))
    moved = q @ B[:3, :3].T + B[:3, 3]
    v_ref, g_ref = g.sample(moved, B)
    v, gr = np.empty(len(q)), np.empty((len(q), 3))
    sample_part_many(g.values, g.origin, 1.0 / g.spacing, np.ascontiguousarray(np.linalg.inv(B)[:3]), moved, v, gr)
    assert np.abs(v - v_ref).max() < 1e-6 and np.abs(gr - g_ref).max() < 1e-4
    v0, g0 = g.sample(q)
    assert np.abs(v - v0).max() < 1e-6  # value at transformed points unchanged
    assert np.abs(gr - g0 @ B[:3, :3].T).max() < 1e-4  # gradient rotated
    # compact support: zero on the grid's faces and outside
    assert np.all(g.values[0] == 0) and np.all(g.values[-1] == 0)
    far = g.sample(np.array([[5.0, 5.0, 5.0]]))
    assert far[0][0] == 0.0 and np.all(far[1] == 0.0)
