"""Composition operators (core/skin/blend_operators.py): boundary conditions, union and contact behaviour, continuity,
range, kernels vs numpy reference, and the contact surface of two spheres pushed together."""
import numpy as np
import pytest

from implicit_muscles.core.skin import blend_operators as ops
from implicit_muscles.core.skin.hrbf import compact

TABLE_TOL = 2e-3
"""Bilinear table read vs the exact (bisection) operator, value, away from the corner f1 = f2 = 0.5."""
KERNEL_TOL = 1e-12
"""Kernel vs numpy reference: the same bilinear arithmetic."""
PARTIAL_TOL = 0.1
"""Bilinearly read partials vs finite differences of the exact operator, 0.08 or more from the corner (one table
cell is 1/128; measured 0.068 where an arc's curvature is highest)."""
GRADIENT_JUMP_TOL = 0.05
"""Largest change of dG/df across a transition line over a step of 1e-4 (a kink would jump by O(1))."""

UNIONS = ("max", "clean", "blend")
ALPHAS = (0.0, 0.3, 0.7, 1.0)


def _grid(n=201, lo=0.0, hi=1.0):
    t = np.linspace(lo, hi, n)
    x, y = np.meshgrid(t, t, indexing="ij")
    return x.ravel(), y.ravel()


def _op(name, x, y):
    if name in UNIONS:
        return ops.lookup(ops.table(name), x, y)
    return ops.contact(x, y, float(name.split("=")[1]))


ALL = list(UNIONS) + [f"contact a={a}" for a in ALPHAS]


@pytest.mark.parametrize("name", ALL)
def test_boundary_conditions_and_range(name):
    t = np.linspace(0, 1, 257)
    z = np.zeros_like(t)
    assert np.abs(_op(name, t, z)[0] - t).max() < 1e-12  # G(f, 0) = f
    assert np.abs(_op(name, z, t)[0] - t).max() < 1e-12  # G(0, f) = f
    x, y = _grid()
    G, Gx, Gy = _op(name, x, y)
    assert G.min() >= 0.0 and G.max() <= 1.0
    assert np.all(np.isfinite(Gx)) and np.all(np.isfinite(Gy))


@pytest.mark.parametrize("name", UNIONS)
def test_unions_are_monotone(name):
    """No inward gradient: dG/df1, dG/df2 >= 0 everywhere (the table and its partials)."""
    tab = ops.table(name)
    assert tab[..., 1].min() >= 0.0 and tab[..., 2].min() >= 0.0
    assert np.all(np.diff(tab[..., 0], axis=0) >= -1e-12) and np.all(np.diff(tab[..., 0], axis=1) >= -1e-12)


@pytest.mark.parametrize("name", ["max", "clean"] + [f"contact a={a}" for a in ALPHAS])
def test_half_iso_is_the_union_away_from_contact(name):
    """Outside both volumes (f1, f2 <= 0.5) the 0.5-iso is exactly the union of the two surfaces."""
    t = np.linspace(0, 0.5, 101)
    half = np.full_like(t, 0.5)
    assert np.abs(_op(name, half, t)[0] - 0.5).max() < 1e-12
    assert np.abs(_op(name, t, half)[0] - 0.5).max() < 1e-12
    x, y = _grid(101, 0.0, 0.49)
    assert _op(name, x, y)[0].max() < 0.5  # outside both: outside the result
    x, y = _grid(101, 0.0, 1.0)
    inside = np.maximum(x, y) > 0.5 + 1e-9
    if name in ("max", "clean"):
        assert np.all(_op(name, x, y)[0][inside] > 0.5)  # inside either: inside the union


def test_blend_rounds_the_half_iso():
    """The detail operator's union adds a fillet: G(0.45, 0.45) > 0.5 (outside both, inside the blend)."""
    assert ops.lookup(ops.table("blend"), np.array([0.45]), np.array([0.45]))[0][0] > 0.5


@pytest.mark.parametrize("name", ["clean", "blend"])
def test_table_matches_exact_operator(name):
    x, y = _grid(97)
    far = np.hypot(x - 0.5, y - 0.5) > 0.05
    exact = ops.arc_union(name, x, y)
    assert np.abs(ops.lookup(ops.table(name), x, y)[0] - exact)[far].max() < TABLE_TOL


def test_table_generator_is_deterministic():
    a = ops.generate_table("clean")
    b = ops.generate_table("clean")
    assert np.array_equal(a, b) and a.shape == (ops.TABLE_SIZE, ops.TABLE_SIZE, 3)


@pytest.mark.parametrize("name", ["clean", "blend"])
def test_partials_match_finite_differences_of_the_exact_operator(name):
    x, y = _grid(41, 0.02, 0.98)
    away = np.hypot(x - 0.5, y - 0.5) > 0.08
    _, Gx, Gy = ops.lookup(ops.table(name), x, y)
    h = 1e-5
    fx = (ops.arc_union(name, x + h, y) - ops.arc_union(name, x - h, y)) / (2 * h)
    fy = (ops.arc_union(name, x, y + h) - ops.arc_union(name, x, y - h)) / (2 * h)
    assert np.abs(Gx - fx)[away].max() < PARTIAL_TOL and np.abs(Gy - fy)[away].max() < PARTIAL_TOL


@pytest.mark.parametrize("name", ["clean", "blend", "contact a=0.7"])
def test_gradient_is_continuous_across_transitions(name):
    """dG/df1 and dG/df2 change little across the lines where the operator switches regime (straight part to
    arc, and m = 0.5 for contact): finite differences on both sides of each line."""
    rng = np.random.default_rng(0)
    M = rng.uniform(0.55, 0.95, 200)
    lines = []
    if name == "contact a=0.7":
        lines.append(np.full_like(M, 0.5))
    else:
        r = ops.arc_radius(name, M)
        lines.append(M - r)  # m = c(M): where the iso-curve of level M leaves the straight line
    for m in lines:
        step = 1e-4
        exact = (lambda a, b: ops.arc_union(name, a, b)) if name != "contact a=0.7" else \
            (lambda a, b: ops.contact(a, b, 0.7)[0])
        def dm(mm):
            return (exact(M, mm + 1e-6) - exact(M, mm - 1e-6)) / 2e-6
        jump = np.abs(dm(m + step) - dm(m - step))
        assert jump.max() < GRADIENT_JUMP_TOL


def test_contact_operator_kernels_match_reference():
    from numba import njit

    from implicit_muscles.kernels.blend import contact, controller, table_union

    @njit(cache=False)
    def run(tab, x, y, a, out):
        for i in range(x.shape[0]):
            out[i, 0], out[i, 1], out[i, 2] = contact(tab, x[i], y[i], a[i])
            out[i, 3], out[i, 4], out[i, 5] = table_union(tab, x[i], y[i])
            out[i, 6] = controller(x[i] * 2 - 1, 0.17, -0.34)

    rng = np.random.default_rng(0)
    x, y, a = rng.random(5000), rng.random(5000), rng.random(5000)
    a[:500] = 0.0
    out = np.empty((5000, 7))
    run(ops.table("clean"), x, y, a, out)
    G, Gx, Gy = ops.contact(x, y, a)
    U, Ux, Uy = ops.lookup(ops.table("clean"), x, y)
    ref = np.stack([G, Gx, Gy, U, Ux, Uy, ops.controller(x * 2 - 1, np.arccos(0.17), np.arccos(-0.34))], 1)
    assert np.abs(out - ref).max() < KERNEL_TOL


def test_controller_switches_from_union_to_contact():
    angles = np.radians([0, 60, 80, 95, 110, 150, 180])
    a = ops.controller(np.cos(angles))
    assert a[0] == 0 and a[1] == 0 and a[2] == 0 and 0 < a[3] < 1 and a[4] == 1 and a[-1] == 1
    assert np.all(np.diff(a) >= 0)


def _spheres(points, gap):
    """Two compact sphere fields of radius 0.1 m (support 0.05 m), centres 2 (0.1 - gap/2) apart along x."""
    c = 0.1 - gap / 2
    out = []
    for centre in (np.array([-c, 0, 0]), np.array([c, 0, 0])):
        d = points - centre
        r = np.linalg.norm(d, axis=1)
        k, dk = compact(r - 0.1, 0.05)
        out.append((k, dk[:, None] * d / r[:, None]))
    return out


def test_contact_of_two_spheres_pushed_together_is_flat():
    """Spheres interpenetrating by 4 cm: with the contact operator the 0.5-iso inside the overlap is the plane
    x = 0 (a flat contact surface, not a bulge), and outside the overlap it is the two spheres."""
    y = np.linspace(-0.05, 0.05, 11)
    xs = np.linspace(-0.06, 0.06, 2401)
    for yy in y:
        line = np.stack([xs, np.full_like(xs, yy), np.zeros_like(xs)], 1)
        (f1, g1), (f2, g2) = _spheres(line, 0.04)
        with np.errstate(invalid="ignore"):  # 0/0 where a sphere's field is flat (outside its support): NaN, G too
            cos_t = np.einsum("ij,ij->i", g1, g2) / (np.linalg.norm(g1, axis=1) * np.linalg.norm(g2, axis=1))
        G, _, _ = ops.contact(f1, f2, ops.controller(cos_t))
        below = np.flatnonzero(G <= 0.5 + 1e-9)
        # the only points at or below 0.5 on this line inside the overlap are at the plane x = 0
        inside_overlap = (f1 > 0.5) | (f2 > 0.5)
        assert np.all(np.abs(xs[np.intersect1d(below, np.flatnonzero(inside_overlap))]) < 1e-3)
        centre = np.argmin(np.abs(xs))
        assert G[centre] == pytest.approx(0.5, abs=1e-9)
    # without contact (clean union) the middle of the overlap is inside
    line = np.array([[0.0, 0.0, 0.0]])
    (f1, _), (f2, _) = _spheres(line, 0.04)
    assert ops.lookup(ops.table("clean"), f1, f2)[0][0] > 0.5
