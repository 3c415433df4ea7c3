"""The skinning tests' own measurements (tests/core/mesh_checks.py): the point-to-skin distance against dense
sampling, and skins crossing each other told from skins touching on a shared surface."""
import numpy as np

from mesh_checks import deep_crossings, surface_distance


def _sheet(nx, ny, h, z=0.0, shift=(0.0, 0.0)):
    """A flat grid of ``nx * ny`` vertices ``h`` [m] apart at height ``z``: ``(vertices, faces)``."""
    x, y = np.meshgrid(np.arange(nx) * h + shift[0], np.arange(ny) * h + shift[1], indexing="ij")
    v = np.stack([x.ravel(), y.ravel(), np.full(x.size, z)], axis=1)
    f = []
    for i in range(nx - 1):
        for j in range(ny - 1):
            a, b, c, d = i * ny + j, (i + 1) * ny + j, (i + 1) * ny + j + 1, i * ny + j + 1
            f += [[a, b, c], [a, c, d]]
    return v, np.array(f)


def test_surface_distance_matches_dense_sampling():
    rng = np.random.default_rng(3)
    tri = rng.normal(size=(6, 3, 3)) * 0.05
    pts = rng.normal(size=(40, 3)) * 0.08
    u, v = np.meshgrid(np.linspace(0, 1, 301), np.linspace(0, 1, 301))
    keep = u + v <= 1.0
    u, v = u[keep], v[keep]
    samples = (tri[:, None, 0] + u[None, :, None] * (tri[:, None, 1] - tri[:, None, 0])
               + v[None, :, None] * (tri[:, None, 2] - tri[:, None, 0])).reshape(-1, 3)
    dense = np.linalg.norm(pts[:, None] - samples[None], axis=2).min(axis=1)
    exact = surface_distance(pts, tri)
    assert np.all(exact <= dense + 1e-12)
    assert np.abs(exact - dense).max() < 1e-3 * 0.05  # the sampling's own spacing bounds the difference


def _two_sheets(lift_b, z_a):
    """Sheet B (10 x 10, 1 cm) with its middle vertex raised by ``lift_b``, sheet A (edges offset by half a
    cell) at height ``z_a(x)``: ``(vertices, faces, faces of A, faces of B)``."""
    vb, fb = _sheet(10, 10, 0.01)
    vb[5 * 10 + 5, 2] += lift_b
    va, fa = _sheet(9, 9, 0.01, shift=(0.005, 0.0045))
    va[:, 2] = z_a(va[:, 0])
    v = np.concatenate([va, vb])
    f = np.concatenate([fa, fb + len(va)])
    return v, f, np.arange(len(fa)), np.arange(len(fa), len(f))


def test_skins_touching_on_a_surface_do_not_count_skins_passing_through_do():
    # B leaves the shared plane at one vertex (tilted triangles around it): A, 0.2 mm under the plane, cuts
    # their corners with edges whose ends lie millimetres from those triangles' planes (the measure this one
    # replaced counted 12 triangles here), yet nowhere is A more than a millimetre from B's skin
    v, f, A, B = _two_sheets(-0.004, lambda x: np.full_like(x, -0.0002))
    ha, hb = deep_crossings(v, f, A, B, 1e-3)
    assert ha.sum() == 0 and hb.sum() == 0
    # A tilted through B, 5.6 mm below it at one row of vertices and 2.4 mm above it at the next
    v, f, A, B = _two_sheets(0.0, lambda x: 0.8 * (x - 0.042))
    ha, hb = deep_crossings(v, f, A, B, 1e-3)
    assert ha.sum() >= 2 and hb.sum() >= 2
    # the same, pushed through by less than the depth: touching, not crossing
    v, f, A, B = _two_sheets(0.0, lambda x: 0.0008 * np.sign(x - 0.042))
    assert sum(h.sum() for h in deep_crossings(v, f, A, B, 1e-3)) == 0
