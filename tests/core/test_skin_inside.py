"""The *inside* measure of the skin quality (``core/skin/quality.py``, ``kernels/ray_cast.py``): skin that lies
inside the body, against closed forms (a sphere pushed into a slab), and the ray kernel against its reference."""
import numpy as np
import pytest

from implicit_muscles.core.skin import quality as Q

RADIUS = 0.05
"""[m] The sphere's radius."""
SAGITTA_TOL = 0.25e-3
"""[m] How far the triangulated sphere (4 subdivisions of an icosahedron, edges of 3.1 mm) lies inside the round one
at most: the depths measured against the closed form's within this."""


CENTRE = (1.3e-3, 0.7e-3)
"""[m] The sphere's centre over the slab, off its grid lines (no ray grazes the sphere's side exactly)."""


def icosphere(subdivisions: int, radius: float = 1.0, centre=(0.0, 0.0, 0.0)):
    """A closed triangulated sphere, faces outward."""
    t = (1.0 + 5 ** 0.5) / 2.0
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6),
         (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
         (8, 6, 7), (9, 8, 1)]
    v = [np.array(p, dtype=float) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        mid, out = {}, []
        for a, b, c in f:
            m = []
            for i, j in ((a, b), (b, c), (c, a)):
                key = (min(i, j), max(i, j))
                if key not in mid:
                    p = v[i] + v[j]
                    v.append(p / np.linalg.norm(p))
                    mid[key] = len(v) - 1
                m.append(mid[key])
            out += [(a, m[0], m[2]), (b, m[1], m[0]), (c, m[2], m[1]), (m[0], m[1], m[2])]
        f = out
    return np.array(v) * radius + np.asarray(centre), np.array(f, dtype=np.int64)


def slab(size: float, thickness: float, n: int):
    """A closed box ``[-size, size]^2 x [-thickness, 0]``, its top an ``n x n`` grid of quads (two triangles each),
    faces outward."""
    s = np.linspace(-size, size, n)
    xs, ys = np.meshgrid(s, s, indexing="ij")
    top = np.stack([xs.ravel(), ys.ravel(), np.zeros(n * n)], axis=1)
    bottom = top - [0.0, 0.0, thickness]
    v = np.vstack([top, bottom])
    f = []
    idx = lambda i, j, layer: layer * n * n + i * n + j  # noqa: E731
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = idx(i, j, 0), idx(i + 1, j, 0), idx(i + 1, j + 1, 0), idx(i, j + 1, 0)
            f += [(a, b, c), (a, c, d)]
            a, b, c, d = idx(i, j, 1), idx(i + 1, j, 1), idx(i + 1, j + 1, 1), idx(i, j + 1, 1)
            f += [(a, c, b), (a, d, c)]
    for k in range(n - 1):  # the four sides
        for i0, j0, i1, j1 in ((k, 0, k + 1, 0), (n - 1, k, n - 1, k + 1), (k + 1, n - 1, k, n - 1),
                               (0, k + 1, 0, k)):
            a, b = idx(i0, j0, 0), idx(i1, j1, 0)
            c, d = idx(i1, j1, 1), idx(i0, j0, 1)
            f += [(a, d, c), (a, c, b)]
    return v, np.array(f, dtype=np.int64)


def _pushed(push: float):
    """A sphere of RADIUS pushed ``push`` [m] into a slab's top (z = 0): vertices, faces, how many are the slab's."""
    sv, sf = icosphere(4, RADIUS, (*CENTRE, RADIUS - push))
    bv, bf = slab(0.1, 0.05, 41)
    return np.vstack([bv, sv]), np.vstack([bf, sf + len(bv)]), len(bv)


def test_a_closed_mesh_alone_has_nothing_inside():
    v, f = icosphere(3, RADIUS)
    q = Q.measure_inside(Q.InsideMesh.build(v, f), v)
    assert q.count == 0 and q.deepest == 0.0 and np.all(np.isnan(q.depth))


@pytest.mark.parametrize("push", [0.004, 0.012])
def test_a_sphere_pushed_into_a_slab_is_inside_by_its_push(push):
    """The sphere's lowest vertex lies ``push`` deep in the slab; a slab vertex at distance r from the axis lies
    ``sqrt(R^2 - r^2) - (R - push)`` deep in the sphere; nothing else is inside."""
    v, f, slab_count = _pushed(push)
    q = Q.measure_inside(Q.InsideMesh.build(v, f), v)
    lowest = slab_count + np.argmin(v[slab_count:, 2])
    assert q.depth[lowest] == pytest.approx(push, abs=1e-9)
    top = np.flatnonzero(np.abs(v[:slab_count, 2]) < 1e-12)
    r = np.linalg.norm(v[top, :2] - CENTRE, axis=1)
    expected = np.sqrt(np.maximum(RADIUS ** 2 - r ** 2, 0.0)) - (RADIUS - push)
    inside = expected > SAGITTA_TOL
    assert inside.sum() > 10
    assert np.abs(q.depth[top[inside]] - expected[inside]).max() < SAGITTA_TOL
    outside = expected < -SAGITTA_TOL
    assert np.all(np.isnan(q.depth[top[outside]]))
    # the sphere's vertices below the slab's top are inside: their inward ray, to the sphere's centre, meets the
    # slab's top after their height below it over the cosine of its angle to the vertical
    below = slab_count + np.flatnonzero(v[slab_count:, 2] < -SAGITTA_TOL)
    centre_z = RADIUS - push
    # (the triangulated sphere's area-weighted normals are off the radius by up to 0.2 degrees: 0.02 mm here)
    assert np.all(q.depth[below] == pytest.approx(-v[below, 2] * RADIUS / (centre_z - v[below, 2]), abs=5e-5))
    above = slab_count + np.flatnonzero(v[slab_count:, 2] > SAGITTA_TOL)
    assert np.all(np.isnan(q.depth[above]))
    assert q.deepest == pytest.approx(push, abs=SAGITTA_TOL)
    assert q.count == np.count_nonzero(np.nan_to_num(q.depth, nan=0.0) > Q.INSIDE_DEPTH)


def test_regions_count_their_own_vertices():
    v, f, slab_count = _pushed(0.008)
    region = np.r_[np.zeros(slab_count, dtype=int), np.ones(len(v) - slab_count, dtype=int)]
    q = Q.measure_inside(Q.InsideMesh.build(v, f, region, ("slab", "sphere")), v)
    assert q.by_region["slab"][0] + q.by_region["sphere"][0] == q.count
    assert q.by_region["sphere"][1] == pytest.approx(0.008, abs=1e-9)
    assert q.in_regions() == (q.count, pytest.approx(q.deepest))


def test_ray_kernel_matches_reference():
    v, f, _ = _pushed(0.01)
    v = v + np.random.default_rng(3).normal(scale=2e-4, size=v.shape)  # off the grid's planes
    mesh = Q.InsideMesh.build(v, f)
    from implicit_muscles.core.skin.parts import vertex_normals

    n = vertex_normals(v, f)
    rng = np.random.default_rng(4)
    for d in (n, -n, rng.normal(size=v.shape)):
        d = d / np.linalg.norm(d, axis=1)[:, None]
        pick = rng.choice(len(v), 300, replace=False)
        distance, back = Q.first_hits(mesh, v, d)
        ref_distance, ref_back, _ = Q.first_hits_reference(v, f, np.where(np.isin(np.arange(len(v)), pick)[:, None],
                                                                        d, 0.0))
        assert np.allclose(distance[pick], ref_distance[pick], rtol=0, atol=1e-12, equal_nan=False)
        assert np.array_equal(back[pick], ref_back[pick])


def test_joint_regions_take_the_nearest_joint_of_the_vertex_bone():
    rest = np.array([[0.0, 0, 0], [0.1, 0, 0], [0.5, 0, 0], [0.9, 0, 0]])
    weights = np.array([[1.0, 0, 0], [0.2, 0.8, 0], [0, 1.0, 0], [0, 0.4, 0.6]])
    heads = np.zeros((3, 3))
    joints = [((0, 1), (0.05, 0, 0), 0.2), ((1, 2), (1.0, 0, 0), 0.2)]
    assert Q.joint_regions(rest, weights, heads, joints).tolist() == [0, 0, -1, 1]
