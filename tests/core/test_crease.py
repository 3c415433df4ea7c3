"""The crease stage (``core/skin/crease.py``, ``kernels/crease.py``): skin left inside the body pushed back onto the
skin it passed. The kernel against its numpy reference, a sphere pushed into a slab against the closed form, and the
cases it must leave alone (skin inside its own neighbourhood, skin inside the body at rest, skin under a layer
modelled over it at rest)."""
import numpy as np
import pytest

from implicit_muscles.core.skin import quality as Q
from implicit_muscles.core.skin.crease import crease_mesh, resolve_creases_reference
from implicit_muscles.core.skin.mesh_rings import cotangent_rings
from implicit_muscles.core.skin.tracking import TrackingSettings

from test_skin_inside import _pushed

KERNEL_TOL = 1e-12
"""[m] Kernel against reference."""


def _scene(push=0.01, rest_push=None):
    """The sphere pushed ``push`` into the slab; the slab part 0, the sphere part 1; the rest: pushed ``rest_push``
    (None: apart, nothing inside)."""
    v, f, slab = _pushed(push)
    part = np.r_[np.zeros(slab, dtype=np.int64), np.ones(len(v) - slab, dtype=np.int64)]
    if rest_push is None:
        rest = v.copy()
        rest[slab:, 2] += 0.1 + push  # the sphere above the slab
    else:
        rest, _, _ = _pushed(rest_push)
    rings = cotangent_rings(rest, f)
    settings = TrackingSettings()
    from implicit_muscles.core.skin.crease import crease_params

    size = float(np.linalg.norm(np.ptp(rest, axis=0)))
    edges = float(np.linalg.norm(rest[f[:, [1, 2, 0]]] - rest[f], axis=2).mean())
    # the rays must cross the whole sphere (0.1 m), more than the default's share of this small scene's size
    params = crease_params(settings, size, edges)._replace(max_ray=0.2)
    return v, f, slab, crease_mesh(rest, f, rings, np.zeros(len(v), dtype=bool), part, params), params


def _resolve(v, mesh, params, seeds=None):
    from implicit_muscles.kernels.crease import resolve_creases

    x = v.copy()
    pushed = np.zeros(len(v), dtype=bool)
    rot = np.tile(np.eye(3), (len(v), 1, 1))
    seeds = np.ones(len(v), dtype=bool) if seeds is None else seeds
    found = resolve_creases(x, rot, seeds, mesh, params, pushed)
    return x, pushed, found, rot, seeds


def test_kernel_matches_reference():
    v, f, slab, mesh, params = _scene()
    v = v + np.random.default_rng(5).normal(scale=1e-4, size=v.shape)
    params = params._replace(rounds=3)
    x, pushed, found, rot, seeds = _resolve(v, mesh, params)
    ref_x, ref_pushed, ref_found = resolve_creases_reference(v, rot, seeds, mesh, params)
    assert pushed.sum() > 50 and np.array_equal(pushed, ref_pushed) and found == ref_found
    assert np.abs(x - ref_x).max() < KERNEL_TOL


def test_a_sphere_pushed_into_a_slab_comes_out_onto_its_surface():
    """Each side's skin inside the other goes back to the other's surface: nothing is left inside the body, the
    slab's top under the sphere sinks at most by the push, and what lies apart does not move."""
    push = 0.01
    v, f, slab, mesh, params = _scene(push)
    before = Q.measure_inside(Q.InsideMesh.build(v, f), v)
    assert before.count > 50
    x, pushed, found, _, _ = _resolve(v, mesh, params)
    after = Q.measure_inside(Q.InsideMesh.build(v, f), x)
    assert after.count == 0 and found == 0
    top = np.flatnonzero(v[:slab, 2] == 0.0)
    assert np.all(x[top, 2] >= -push - 1e-3) and x[top, 2].min() < -0.5 * push
    far = np.linalg.norm(v[:, :2], axis=1) > 0.09
    assert np.array_equal(x[far], v[far])


def test_skin_inside_its_own_neighbourhood_or_at_rest_is_left_alone():
    v, f, slab, mesh, params = _scene()
    # one part, all of it near: the slab and the sphere as one part at rest touching: nothing is skin apart
    mesh_one = mesh._replace(vertex_part=np.zeros_like(mesh.vertex_part), face_part=np.zeros_like(mesh.face_part),
                             rest=v.copy())
    x, pushed, found, _, _ = _resolve(v, mesh_one, params._replace(apart=1.0))
    assert not pushed.any() and np.array_equal(x, v)
    # the same overlap at rest: those vertices are not free
    v2, f2, slab2, mesh2, params2 = _scene(0.01, rest_push=0.01)
    assert not mesh2.free.all()
    x, pushed, found, _, _ = _resolve(v2, mesh2, params2)
    assert not pushed.any() and np.array_equal(x, v2)


def test_rest_crossings_count_the_shells_a_ray_leaves():
    """Kernel against reference; on the apart scene every ray leaves the shells it enters (0) but those starting
    on the sphere's underside, facing the slab 0.11 m below through the slab's two faces (enter, leave: 0 too)."""
    from implicit_muscles.core.skin.quality import crossings_reference

    v, f, slab, mesh, params = _scene()
    expected = crossings_reference(mesh.rest, f, mesh.rest_normal, params.max_ray)
    assert np.array_equal(mesh.rest_crossings, expected)
    assert np.all(np.isin(mesh.rest_crossings, (-1, 0)))
    # a point in the middle of the sphere, rays in six directions off the mesh's symmetry: it leaves one shell
    from implicit_muscles.kernels.crease import _grid
    from implicit_muscles.kernels.ray_cast import crossings

    rest = mesh.rest
    centre = rest[slab:].mean(axis=0)
    origin, inv_cell, dims, cell_start, cell_triangle = _grid(rest, f, params.cell, params.max_cells)
    directions = np.random.default_rng(3).normal(size=(6, 3))
    for d in directions / np.linalg.norm(directions, axis=1)[:, None]:
        assert crossings(-1, tuple(centre), tuple(d), rest, f, cell_start, cell_triangle, origin, inv_cell, dims,
                         0.2) == 1


def test_skin_under_a_layer_modelled_over_it_at_rest_is_left_alone():
    """The sphere pushed into the slab: its skin found inside is pushed; told that every vertex's rest ray left one
    more shell than the scene's rays do (skin modelled under another layer at rest, as a neck under a head's shell),
    the kernel pushes none of it."""
    v, f, slab, mesh, params = _scene()
    x, pushed, _, _, _ = _resolve(v, mesh, params)
    assert pushed.sum() > 50
    # every vertex nested in one more shell at rest than in the scene: nothing is pushed
    layered = mesh._replace(rest_crossings=mesh.rest_crossings + 1)
    x, pushed, found, _, _ = _resolve(v, layered, params)
    assert not pushed.any() and found == 0


@pytest.mark.parametrize("name, value, message", [("crease_rounds", -1, "crease rounds"),
                                                  ("crease_share", 0.0, "crease share"),
                                                  ("crease_apart", 2.0, "crease apart")])
def test_crease_settings_are_checked(name, value, message):
    from dataclasses import replace

    with pytest.raises(ValueError, match=message):
        replace(TrackingSettings(), **{name: value}).validated()
