"""The fusiform field f_M (paper eq. 1-2, Algorithm 1): kernel vs reference, gradient, continuity, surface."""
import numpy as np
import pytest

from implicit_muscles.core.muscle import field as fusiform
from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape
from implicit_muscles.core.muscle.batch import evaluate_muscles

from core_scenes import LENGTH, WIDTH, bent_muscle, twisted_muscle

KERNEL_TOL = 1e-12
"""Kernel vs numpy reference, value and gradient, absolute [m] (same operations, different order)."""
FD_STEP = 1e-6
"""Central finite-difference step [m]."""
FD_TOL = 2e-6
"""Gradient vs finite differences, relative to max(1, |grad|), at points 2 mm or more from the axis."""
SURFACE_TOL = 1e-12
"""|f_M| on the analytic surface of a straight muscle [m]."""


def _queries(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform([-0.08, -0.08, -0.04], [0.2, 0.08, LENGTH + 0.04], (n, 3))


MUSCLES = {
    "straight": lambda: FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, shape=MuscleShape(3, 3, 4, 7, 0.5, 0.9),
                                       activation=0.5),
    "bent60": lambda: bent_muscle(60.0, activation=0.3, shape=MuscleShape(3, 3, 4, 7, 0.2, 0.7)),
    "bent120-few": lambda: bent_muscle(120.0, particles=4, shape=MuscleShape(1, 3, 9, 2, 0.0, 0.95), activation=0.8),
    "twisted": twisted_muscle,
}


@pytest.mark.parametrize("name", MUSCLES)
@pytest.mark.parametrize("compact", [False, True])
def test_kernel_matches_reference(name, compact):
    m = MUSCLES[name]()
    q = _queries(3000)
    v, g = m.field(q, compact=compact)
    vr, gr = m.field_reference(q, compact=compact)
    np.testing.assert_allclose(v, vr, rtol=0, atol=KERNEL_TOL)
    np.testing.assert_allclose(g, gr, rtol=0, atol=KERNEL_TOL * 100)


@pytest.mark.parametrize("name", MUSCLES)
def test_kernel_matches_reference_orthogonal_projection(name):
    m = MUSCLES[name]()
    q = _queries(1000, seed=3)
    v, g = m.field(q, reparameterise=False)
    vr, gr = m.field_reference(q, reparameterise=False)
    np.testing.assert_allclose(v, vr, rtol=0, atol=KERNEL_TOL)
    np.testing.assert_allclose(g, gr, rtol=0, atol=KERNEL_TOL * 100)


@pytest.mark.parametrize("name", MUSCLES)
def test_gradient_matches_finite_differences(name):
    """Analytic gradient vs central differences wherever the 6-point stencil stays in one smooth branch.

    The field is C0 everywhere and smooth inside each branch of the projection (segment, reparameterised pair,
    side of a vertex); its gradient kinks where branches meet, as the polyline itself does.
    """
    m = MUSCLES[name]()
    geo, prof = m.geometry(), m.profile()
    q = _queries(1500, seed=1)
    dist_axis = np.min(np.linalg.norm(q[:, None, :] - _dense_axis(geo)[None], axis=2), axis=1)
    q = q[dist_axis > 2e-3]
    checked = 0
    for qi in q:
        f, g, branch = fusiform.field(geo, prof, qi)
        fd = np.empty(3)
        same = True
        for k in range(3):
            e = np.zeros(3)
            e[k] = FD_STEP
            fp, _, bp = fusiform.field(geo, prof, qi + e)
            fm, _, bm = fusiform.field(geo, prof, qi - e)
            same &= bp == branch and bm == branch
            fd[k] = (fp - fm) / (2 * FD_STEP)
        if same:
            checked += 1
            assert np.abs(fd - g).max() <= FD_TOL * max(1.0, np.linalg.norm(g)), (qi, fd, g)
    assert checked > 0.9 * len(q)


@pytest.mark.parametrize("compact", [True])
def test_compact_gradient_matches_finite_differences(compact):
    m = MUSCLES["bent60"]()
    q = _queries(400, seed=5)
    v, g = m.field(q, compact=True)
    fd = np.empty_like(g)
    for k in range(3):
        e = np.zeros(3)
        e[k] = FD_STEP
        fd[:, k] = (m.field(q + e, compact=True)[0] - m.field(q - e, compact=True)[0]) / (2 * FD_STEP)
    near_kink = np.abs(fd - g).max(axis=1) > 1e-4
    assert near_kink.mean() < 0.05
    assert np.abs(fd - g)[~near_kink].max() < 1e-5 * max(1.0, np.abs(g).max())


def _dense_axis(geo, per_segment=20):
    p = geo.points
    t = np.linspace(0, 1, per_segment, endpoint=False)[:, None]
    return np.concatenate([p[k] + t * (p[k + 1] - p[k]) for k in range(len(p) - 1)] + [p[-1:]])


def test_field_is_zero_on_the_analytic_surface_of_a_straight_muscle():
    for shape, a in [(MuscleShape(3, 3, 4, 7, 0.0, 0.9), 0.0), (MuscleShape(3, 3, 4, 7, 0.0, 0.9), 0.6),
                     (MuscleShape(1, 3, 9, 2, 0.95, 0.3), 1.0)]:
        m = FusiformMuscle((0.1, -0.2, 0.05), (0.3, 0.1, 0.2), width=WIDTH, shape=shape, activation=a,
                           origin_normal=(0, 0, 1))
        geo, prof = m.geometry(), m.profile()
        s = np.linspace(0.02, 0.98, 49)
        theta = np.linspace(0, 2 * np.pi, 37)
        for sj in s:
            _, h, _, n, b, _, _ = fusiform.frame_at(geo, sj)
            phi = m.profile_at(sj)
            r = prof.u * prof.v / np.sqrt(prof.u ** 2 * np.cos(theta) ** 2 + prof.v ** 2 * np.sin(theta) ** 2)
            pts = h + (prof.width * phi * r)[:, None] * (np.cos(theta)[:, None] * n + np.sin(theta)[:, None] * b)
            assert np.abs(m.field(pts)[0]).max() < SURFACE_TOL
            # compact support: 0.5 on the surface
            np.testing.assert_allclose(m.field(pts, compact=True)[0], 0.5, atol=1e-10)


def test_field_sign_and_compact_range():
    m = MUSCLES["bent60"]()
    q = _queries(5000, seed=7)
    v, _ = m.field(q)
    vc, _ = m.field(q, compact=True)
    assert np.all((vc >= 0) & (vc <= 1))
    assert np.all((vc > 0.5) == (v < 0))
    axis_mid = m.axis[len(m.axis) // 2]
    assert m.field(axis_mid[None])[0][0] < 0  # inside on the axis
    assert m.field(np.array([[1.0, 1.0, 1.0]]))[0][0] > 0  # far outside


def _segment_scan(m, reparameterise, n=20001):
    """``s(q)`` along a line through a point 5 mm inside the concave side of the middle bend."""
    geo = m.geometry()
    p = geo.points
    # a line parallel to the chord through a point 5 mm from the middle vertex towards the centre of curvature
    chord = (p[-1] - p[0]) / np.linalg.norm(p[-1] - p[0])
    bulge = p.mean(axis=0) - 0.5 * (p[0] + p[-1])  # from the chord towards the arc: the convex side
    inward = -bulge / np.linalg.norm(bulge)
    mid = p[len(p) // 2] + 0.005 * inward
    line = mid[None] + np.linspace(-0.6, 0.6, n)[:, None] * LENGTH * chord[None]
    s = np.array([fusiform.project(geo, q, reparameterise)[0] for q in line])
    return s, np.linalg.norm(line[1] - line[0])


def test_projection_is_continuous_where_orthogonal_projection_jumps():
    """Paper Fig. 4: plain orthogonal projection jumps inside the dihedral angles; Algorithm 1 does not."""
    m = bent_muscle(90.0, particles=4)
    s_rep, step = _segment_scan(m, True)
    s_orth, _ = _segment_scan(m, False)
    jump_rep = np.abs(np.diff(s_rep)).max()
    jump_orth = np.abs(np.diff(s_orth)).max()
    # a continuous s changes by at most |grad s| * step; |grad s| here is of order 1 / (l * 0.005 / l) per metre
    assert jump_rep < 2e-3
    assert jump_orth > 20 * jump_rep
    # the field value is continuous too along a dense circle around a bend
    geo = m.geometry()
    v = geo.points[2]
    ang = np.linspace(0, 2 * np.pi, 40001)
    for radius in (0.01, 0.02):
        ring = v + radius * (np.cos(ang)[:, None] * np.array([1, 0, 0]) + np.sin(ang)[:, None] * np.array([0, 0, 1]))
        values, _ = m.field(ring)
        values_o, _ = m.field(ring, reparameterise=False)
        assert np.abs(np.diff(values)).max() < 1e-4
        assert np.abs(np.diff(values_o)).max() > 10 * np.abs(np.diff(values)).max()


def test_batch_of_many_muscles_matches_single_evaluations():
    muscles = [MUSCLES[name]() for name in MUSCLES]
    q = _queries(500, seed=11)
    values, grads = evaluate_muscles(muscles, q, compact=True)
    for k, m in enumerate(muscles):
        v, g = m.field(q, compact=True)
        np.testing.assert_array_equal(values[:, k], v)
        np.testing.assert_array_equal(grads[:, k], g)


def test_compact_pruning_gives_exact_zero_far_away():
    m = MUSCLES["bent60"]()
    far = np.array([[2.0, 0, 0], [0, -3.0, 0.1]])
    v, g = m.field(far, compact=True)
    assert np.all(v == 0) and np.all(g == 0)


def test_rigid_motion_moves_the_field_rigidly():
    m = twisted_muscle()
    q = _queries(300, seed=4)
    v0, g0 = m.field(q)
    angle = 0.7
    R = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
    R = R @ np.array([[1, 0, 0], [0, np.cos(1.1), -np.sin(1.1)], [0, np.sin(1.1), np.cos(1.1)]])
    T = np.array([0.3, -1.2, 0.5])
    moved = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=12, shape=m.shape,
                           activation=m.activation, origin_normal=R @ [1, 0, 0], insertion_normal=R @ [0, 1, 0])
    moved.set_axis(m.axis @ R.T + T)
    v1, g1 = moved.field(q @ R.T + T)
    np.testing.assert_allclose(v1, v0, atol=1e-12)
    np.testing.assert_allclose(g1, g0 @ R.T, atol=1e-9)


def _polylines():
    """Axes for the nearest-segment search: a muscle-like arc, a hairpin whose chord is short and whose points run
    back along it, a zig-zag with zero-length segments, and a straight line (ties at every shared vertex)."""
    s = np.linspace(0.0, 1.0, 31)
    arc = np.stack([0.03 * np.sin(np.pi * s), 0.01 * s, 0.3 * s], axis=1)
    u = np.linspace(0.0, np.pi, 25)
    hairpin = np.stack([0.05 * np.cos(u), 0.0 * u, 0.1 * np.sin(u)], axis=1)
    zig = np.array([[0, 0, 0], [0.01, 0, 0.02], [0.01, 0, 0.02], [0, 0, 0.04], [0.01, 0, 0.06], [0.01, 0, 0.06],
                    [0.01, 0, 0.06], [0, 0, 0.08]], dtype=float)
    line = np.stack([0.0 * s, 0.0 * s, 0.3 * s], axis=1)
    return {"arc": arc, "hairpin": hairpin, "zig-zag": zig, "line": line}


@pytest.mark.parametrize("name", ["arc", "hairpin", "zig-zag", "line"])
def test_chord_bounded_search_finds_the_segment_of_the_full_search(name):
    """``_closest_segment`` with the chord ranges gives the full search's segment, distance and coordinate,
    bit for bit, including the first of equally near segments; with a cut, wherever the nearest is within it."""
    from implicit_muscles.kernels.fusiform import NO_ALONG, _closest_segment, axis_along

    P = np.ascontiguousarray(_polylines()[name])
    d = np.diff(P, axis=0)
    L = np.append(np.linalg.norm(d, axis=1), 0.0)
    t = np.zeros_like(P)
    t[:-1] = np.where(L[:-1, None] > 1e-12, d / np.maximum(L[:-1, None], 1e-300), 0.0)
    along = np.empty((len(P), 4))
    axis_along(P, 0, len(P), along)
    rng = np.random.default_rng(11)
    lo, hi = P.min(axis=0) - 0.05, P.max(axis=0) + 0.05
    queries = np.concatenate([rng.uniform(lo, hi, (400, 3)), P, 0.5 * (P[1:] + P[:-1]),
                              P + rng.normal(scale=1e-3, size=P.shape)])
    if name == "line":  # on the line's perpendicular through a vertex: two segments equally near
        queries = np.concatenate([queries, P + [0.02, 0.0, 0.0]])
    for q in queries:
        full = _closest_segment(q[0], q[1], q[2], P, L, t, 0, len(P), NO_ALONG, np.inf)
        assert _closest_segment(q[0], q[1], q[2], P, L, t, 0, len(P), along, np.inf) == full
        for cut in (0.005, 0.02):
            got = _closest_segment(q[0], q[1], q[2], P, L, t, 0, len(P), along, cut * cut)
            assert got == full if full[0] <= cut * cut else got[0] > cut * cut


def test_profile_bound_leaves_out_only_points_past_the_cut():
    """The kernel's bound ``f >= |q - axis| - w max(Phi(s), 0) v``: where it returns no value (``inf``) for a
    cut ``fcut``, the exact field is at least ``fcut``; elsewhere it returns the exact field."""
    from implicit_muscles.core.muscle.batch import pack_muscles
    from implicit_muscles.kernels.fusiform import NO_ALONG, _field_arrays

    for name in MUSCLES:
        a = pack_muscles([MUSCLES[name]()]).kernel_arrays()
        q = _queries(800, seed=7)
        for fcut in (0.0, 0.004, 0.01):
            skipped = 0
            for x in q:
                args = (x[0], x[1], x[2], 0, a.axis_start, a.axis_points, a.axis_cumulative, a.axis_tangent,
                        a.axis_normal, a.seg_tangent, a.seg_length, a.seg_angle, a.axis_scale, a.muscle_scalar,
                        a.muscle_exponent, True, np.inf)
                exact = _field_arrays(*args, np.inf, NO_ALONG)
                got = _field_arrays(*args, fcut, NO_ALONG)
                if got[0] == np.inf:
                    skipped += 1
                    assert exact[0] >= fcut
                else:
                    assert got == exact
            assert skipped > 100  # the bound does leave points out
