"""The body at rest that the part fields are clipped to (``core/skin/rest_body.py``, ``kernels/mesh_distance.py``):
border loops closed, overlapping pieces each inside, the signed distance against the brute-force winding-number
kernel, and the clip's promise on the paper's arm: no part stands out of the rest skin."""
import numpy as np
import pytest

from implicit_muscles.core.skin.rest_body import RestBody, border_loops, closed_surface, face_components
from implicit_muscles.scenes import paper as scenes

from test_skin_inside import icosphere

DISTANCE_TOL = 1e-12
"""[m] The grid's nearest triangle against the brute force's."""


def _tube(rings=6, around=12, radius=0.05, length=0.3):
    """An open tube along z: ``rings`` rings of ``around`` vertices, no caps."""
    z = np.linspace(0.0, length, rings)
    a = 2 * np.pi * np.arange(around) / around
    v = np.array([[radius * np.cos(t), radius * np.sin(t), h] for h in z for t in a])
    f = []
    for r in range(rings - 1):
        for k in range(around):
            p, q = r * around + k, r * around + (k + 1) % around
            f += [(p, q, q + around), (p, q + around, p + around)]
    return v, np.array(f, dtype=np.int64)


def test_an_open_tube_is_closed_at_both_ends():
    v, f = _tube()
    assert [len(loop) for loop in border_loops(f)] == [12, 12]
    cv, cf, piece = closed_surface(v, f)
    assert len(cv) == len(v) + 2 and len(cf) == len(f) + 24 and border_loops(cf) == []
    assert np.all(piece == 0)


def test_coincident_vertices_are_welded_and_pieces_counted():
    a, fa = icosphere(1, 0.1)
    b, fb = icosphere(1, 0.1, (0.5, 0.0, 0.0))
    # the second sphere's vertices split in two copies, each in half its faces: welded back into one piece
    v = np.vstack([a, b, b])
    fb2 = fb + len(a)
    fb2[len(fb) // 2:] += len(b)
    f = np.vstack([fa, fb2])
    cv, cf, piece = closed_surface(v, f)
    assert len(cv) == len(a) + len(b) and piece.max() == 1
    assert np.array_equal(face_components(cf, len(cv)), piece)


def test_signed_distance_matches_the_winding_number_kernel():
    from implicit_muscles.kernels.distance import signed_distance

    v, f = icosphere(3, 0.1)
    body = RestBody.build(v, f)
    points = np.random.default_rng(2).uniform(-0.2, 0.2, (3000, 3))
    sd, grad = body.signed_distance(points, 1.0)
    ref = np.empty(len(points))
    signed_distance(points, v, f, ref)
    assert np.abs(sd - ref).max() < DISTANCE_TOL
    # the gradient points outwards (away from the centre) and is a unit vector
    assert np.allclose(np.linalg.norm(grad, axis=1), 1.0)
    assert np.all(np.einsum("ij,ij->i", grad, points) > 0.0)
    # beyond the reach: +-inf
    far, _ = body.signed_distance(np.array([[0.0, 0.0, 0.5], [0.0, 0.0, 0.0]]), 0.05)
    assert far[0] == np.inf and far[1] == -np.inf


def test_a_point_inside_two_overlapping_pieces_is_inside():
    a, fa = icosphere(2, 0.1)
    b, fb = icosphere(2, 0.1, (0.1003, 0.0007, 0.0))  # no vertex of one on the other's (they would weld)
    body = RestBody.build(np.vstack([a, b]), np.vstack([fa, fb + len(a)]))
    assert body.pieces == 2
    sd, _ = body.signed_distance(np.array([[0.05, 0.0, 0.0], [-0.05, 0.0, 0.0], [0.3, 0.0, 0.0]]), 1.0)
    assert sd[0] < 0.0 and sd[1] < 0.0 and sd[2] > 0.0


@pytest.mark.parametrize("mesh", ["overlapping spheres", "paper arm"])
def test_the_lattice_matches_each_nodes_own_ray_and_search(mesh):
    """One parity ray per lattice line gives every node the side of its own ray, and the distances, gradients and
    their infinities beyond the reaches are those of :meth:`RestBody.signed_distance`, bit for bit: on a lattice
    reaching out of the mesh's box on every side (nodes before its box, past it), every other node wanted."""
    if mesh == "paper arm":
        arm = scenes.arm_rig()
        v, f = arm.vertices, arm.faces
    else:
        a, fa = icosphere(3, 0.1)
        b, fb = icosphere(3, 0.08, (0.1003, 0.0207, 0.0111))
        v, f = np.vstack([a, b]), np.vstack([fa, fb + len(a)])
    body = RestBody.build(v, f)
    lo, hi = v.min(axis=0), v.max(axis=0)
    h = float(np.max(hi - lo)) / 37.3
    origin = lo - 3.3 * h
    dims = np.ceil((hi - lo) / h).astype(np.int64) + 7
    want = np.random.default_rng(4).random(dims) < 0.5
    ijk = np.argwhere(want)
    points = origin + h * ijk
    reach = np.random.default_rng(5).uniform(0.0, 4 * h, len(points))
    sd, grad = body.lattice_signed_distance(origin, h, want, 3 * h, reach)
    ref, ref_grad = body.signed_distance(points, 3 * h, reach)
    assert np.any(ref < 0.0) and np.any(ref == np.inf) and np.any(ref == -np.inf)
    assert np.array_equal(np.sign(sd), np.sign(ref))
    assert np.array_equal(sd, ref) and np.array_equal(grad, ref_grad)
    # a node outside stops at the first point within its enough: no nearer than the nearest, no further than enough
    enough = np.random.default_rng(6).uniform(-h, 3 * h, len(points))
    early, early_grad = body.lattice_signed_distance(origin, h, want, 3 * h, reach, enough)
    outside = ref > 0.0
    assert np.array_equal(early[~outside], ref[~outside]) and np.array_equal(early_grad[~outside], ref_grad[~outside])
    stopped = outside & (early != ref)
    assert np.any(stopped) and np.all(early[outside] >= ref[outside])
    assert np.all(early[stopped] <= enough[stopped])
    assert np.array_equal(early[outside & (enough <= 0.0)], ref[outside & (enough <= 0.0)])
    assert np.allclose(np.linalg.norm(early_grad[stopped], axis=1), 1.0)


@pytest.fixture(scope="module")
def arm_skin():
    from implicit_muscles.core.skin.field import bind_skin_field

    arm = scenes.arm_rig()
    return arm, bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents)


def test_no_part_stands_out_of_the_rest_skin(arm_skin):
    """Points 2 mm outside the rest arm along its normals lie outside every part; at rest each vertex's value is
    its own part's (no other part reaches above 0.5 there)."""
    from implicit_muscles.core.skin.parts import vertex_normals

    arm, skin = arm_skin
    n = vertex_normals(arm.vertices, arm.faces)
    placement = skin.place()
    values, _ = placement.leaf_reference(arm.vertices + 0.002 * n)
    assert max(float(v.max()) for v in values) < 0.5
    values, _ = placement.leaf_reference(arm.vertices)
    own = skin.part_of_bone[skin.labels]
    others = np.array(values)
    others[own, np.arange(len(own))] = 0.0
    assert others.max() < 0.52
