"""The composed skin field of the arm (core/skin/field.py): kernel vs reference, gradient vs finite differences,
bounding-box pruning, rigid motion, muscles moving their parts by their change (kernels/muscle_change.py), bad
input."""
import numpy as np
import pytest

from implicit_muscles.scenes import paper as scenes
from implicit_muscles.core.muscle.batch import evaluate_muscles, pack_muscles
from implicit_muscles.core.skin.field import NODE_PART, SkinSettings, bind_skin_field

KERNEL_TOL = 1e-9
"""Kernel vs numpy reference (same grids and tables, float32 grid values read in float64)."""
FD_STEP = 1e-5
"""Central finite-difference step [m] (about a thousandth of a 7 mm grid cell)."""
FD_MEDIAN_TOL = 0.12
FD_P95_TOL = 0.25
"""|grad - FD| / |grad| near the skin, median and 95th percentile at the default 48-node grids (the p95 bound
halves at 96 nodes): the stored gradient is interpolated like the value, so it differs from the derivative of the
interpolated value by O(cell); measured at rest 8.6 % / 18 % at 48 nodes, 4.2 % / 9.1 % at 96."""


@pytest.fixture(scope="module")
def arm():
    return scenes.arm_rig()


@pytest.fixture(scope="module")
def skin(arm):
    return bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                           bone_names=arm.names)


@pytest.fixture(scope="module")
def muscled(arm):
    muscles, bones = scenes.arm_muscles()
    ends = [scenes.ARM_ATTACHMENTS[m.name] for m in muscles]
    return bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                           muscles=pack_muscles(muscles), muscle_bones=bones, bone_names=arm.names,
                           muscle_end_bones=ends), muscles


def _near_skin(arm, n=3000, scale=0.004, seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(arm.vertices), n)
    return arm.vertices[idx] + rng.normal(scale=scale, size=(n, 3))


def test_composition_tree_follows_the_skeleton(skin):
    # shoulder -> elbow -> wrist: contact(shoulder, contact(elbow, wrist)), in pre-order
    assert list(skin.node_kind) == [1, NODE_PART, 1, NODE_PART, NODE_PART]
    assert list(skin.node_part[[1, 3, 4]]) == [0, 1, 2]
    assert list(skin.node_end) == [5, 2, 5, 4, 5]


@pytest.mark.parametrize("pose", [0.0, 130.0])
@pytest.mark.parametrize("scale", [1.0, 0.8])
def test_kernel_matches_reference(arm, muscled, pose, scale):
    """The bind-time muscles, and a thinner biceps (at 130 degrees its change fades towards its ends)."""
    field, muscles = muscled
    muscles[0].width_scale = scale
    placed = field.place(scenes.arm_pose(pose), pack_muscles(muscles))
    muscles[0].width_scale = 1.0
    assert placed.arrays.carried_bend[0] == (0.0 if pose == 0.0 else pytest.approx((1 - np.cos(np.radians(pose))) / 2))
    q = _near_skin(arm, scale=0.01)
    F, G = placed.evaluate(q)
    Fr, Gr = placed.evaluate_reference(q)
    assert np.abs(F - Fr).max() < KERNEL_TOL and np.abs(G - Gr).max() < KERNEL_TOL


def test_rest_field_passes_through_the_skin(arm, skin):
    F, G = skin.place().evaluate(arm.vertices)
    d = np.abs(F - 0.5) / np.linalg.norm(G, axis=1)
    size = np.linalg.norm(np.ptp(arm.vertices, axis=0))
    assert np.median(d) < 0.002 * size and np.percentile(d, 95) < 0.005 * size
    assert np.all(np.linalg.norm(G, axis=1) > 1.0)  # no critical point on the skin [1/m]


def _posed(arm, pose):
    """Vertices moved by linear blend skinning (a cheap stand-in for the posed skin, for sampling queries)."""
    B = scenes.arm_pose(pose)
    moved = np.einsum("bij,vj->vbi", B[:, :3, :3], arm.vertices) + B[:, :3, 3]
    return np.einsum("vb,vbi->vi", arm.weights, moved)


@pytest.mark.parametrize("pose", [0.0, 130.0])
def test_gradient_matches_finite_differences(arm, pose):
    """The composed gradient (chain rule through operators and transforms) against central differences of the
    composed value. The part grids store their gradient and interpolate it like the value, so the two differ by
    O(cell): the error must be small and halve when the grid resolution doubles (a wrong chain rule would give an
    O(1) error that does not shrink)."""
    medians = []
    for resolution in (48, 96):
        field = bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                                settings=SkinSettings(grid_resolution=resolution))
        placed = field.place(scenes.arm_pose(pose))
        rng = np.random.default_rng(0)
        q = _posed(arm, pose)[rng.integers(0, len(arm.vertices), 3000)] + rng.normal(scale=0.003, size=(3000, 3))
        F, G = placed.evaluate(q)
        fd = np.stack([(placed.evaluate(q + FD_STEP * e)[0] - placed.evaluate(q - FD_STEP * e)[0]) / (2 * FD_STEP)
                       for e in np.eye(3)], 1)
        norm = np.linalg.norm(G, axis=1)
        ok = norm > 1.0
        assert ok.mean() > 0.95
        rel = np.linalg.norm(fd - G, axis=1)[ok] / norm[ok]
        medians.append(np.median(rel))
        assert np.percentile(rel, 95) < FD_P95_TOL * 48 / resolution
    assert medians[0] < FD_MEDIAN_TOL and medians[1] < 0.65 * medians[0]


def test_bounds_prune_queries_exactly(arm, skin):
    """Pruned evaluation equals evaluation of every node, and most points skip at least one part."""
    placed = skin.place(scenes.arm_pose(60.0))
    q = _near_skin(arm, scale=0.02)
    F, G = placed.evaluate(q)
    bounds = placed.node_bounds.copy()
    leaves = skin.node_kind == NODE_PART
    inside = np.all((q[:, None, :] >= bounds[None, leaves, :3]) & (q[:, None, :] <= bounds[None, leaves, 3:]), 2)
    visited = inside.sum(axis=1)
    assert visited.mean() < 0.75 * leaves.sum()
    placed.node_bounds[:] = [-1e9, -1e9, -1e9, 1e9, 1e9, 1e9]
    F_all, G_all = placed.evaluate(q)
    assert np.array_equal(F, F_all) and np.array_equal(G, G_all)


def test_rigid_motion_of_the_whole_rig_moves_the_field_rigidly(arm, muscled):
    field, muscles = muscled
    T = scenes.rotation_about((1.0, 2.0, -0.5), 1.1, (0.2, 0.1, 0.0))
    T[:3, 3] += [0.3, -0.1, 0.7]
    q = _near_skin(arm, scale=0.01)
    F0, G0 = field.place(scenes.arm_pose(45.0), pack_muscles(muscles)).evaluate(q)
    moved = [m for m in muscles]
    for m in moved:
        m.set_axis(m.axis @ T[:3, :3].T + T[:3, 3])
        m.set_normals(*(n @ T[:3, :3].T for n in m.endpoint_normals()))
    try:
        F1, G1 = field.place(T @ scenes.arm_pose(45.0), pack_muscles(moved)).evaluate(q @ T[:3, :3].T + T[:3, 3])
    finally:
        Ti = np.linalg.inv(T)
        for m in moved:
            m.set_axis(m.axis @ Ti[:3, :3].T + Ti[:3, 3])
            m.set_normals(*(n @ Ti[:3, :3].T for n in m.endpoint_normals()))
    assert np.abs(F1 - F0).max() < 1e-6
    assert np.abs(G1 - G0 @ T[:3, :3].T).max() < 1e-4 * max(1.0, np.abs(G0).max())


def test_bent_elbow_makes_a_contact_surface(arm, skin):
    """Elbow at 130 degrees: between the upper arm and the forearm, inside both, the field has a crease at 0.5
    (contact) instead of the union's 'inside' (the skin would otherwise intersect itself)."""
    placed = skin.place(scenes.arm_pose(130.0))
    from implicit_muscles.core.skin import blend_operators as ops
    # a point in the elbow's inner fold: inside the upper arm's part and inside the forearm's part
    B = scenes.arm_pose(130.0)
    p_upper = np.array([0.27, 0.0, 0.03])
    p_fore = (B[1] @ np.array([0.33, 0.0, 0.03, 1.0]))[:3]
    line = np.linspace(p_upper, p_fore, 201)
    F, _ = placed.evaluate(line)
    v_upper, _ = skin.grids[0].sample(line, B[0])
    v_fore, _ = skin.grids[1].sample(line, B[1])
    overlap = (v_upper > 0.5) & (v_fore > 0.5)
    assert overlap.any()
    assert F[overlap].min() < 0.5 + 1e-3  # the contact surface crosses the line inside the overlap
    assert ops.lookup(ops.table("clean"), v_upper[overlap], v_fore[overlap])[0].min() > 0.5  # the union would not


def test_muscles_join_their_part_and_show_activation(arm, muscled):
    field, muscles = muscled
    F0, G0 = field.place(None, pack_muscles(muscles)).evaluate(arm.vertices)
    for m in muscles:
        m.activation = 0.0
    muscles[0].activation = 1.0  # biceps
    try:
        F1, _ = field.place(None, pack_muscles(muscles)).evaluate(arm.vertices)
    finally:
        muscles[0].activation = 0.0
    shift = (F1 - F0) / np.linalg.norm(G0, axis=1)  # first-order skin displacement along the gradient [m]
    over = (arm.vertices[:, 2] > 0.03) & (np.abs(arm.vertices[:, 0] - 0.2) < 0.04)  # over the biceps belly
    far = arm.vertices[:, 0] > 0.5  # the hand
    assert np.abs(shift[over]).max() > 0.003
    assert np.abs(shift[far]).max() == 0.0


CHANGE_FD_TOL = 1e-6
"""Relative error of the muscles' change's gradient against central differences of its value (closed form, no grid:
only the difference's truncation, O(FD_STEP^2) over the muscle's curvature)."""


def test_a_muscle_moves_its_part_by_its_change_only(arm, muscled):
    """The skin sees a muscle's change, not the muscle: with the bind-time muscles the field is the muscle-free
    field exactly at rest, and within roundoff with the whole rig bent and each bind muscle laid between other ends
    (carried by its bone, then turned and stretched onto its rest chord: a muscle that keeps its bind shape between
    its ends, ``carried_muscles``); a biceps 1.5 times as
    wide (it reaches through the rest skin) changes nothing at rest either; the change of a thinner biceps lowers
    only the parts it moves, and nothing past its reach."""
    from implicit_muscles.core.skin.field import carried_muscles

    field, muscles = muscled
    plain = field.without_muscles()
    q = _near_skin(arm, scale=0.01)
    np.testing.assert_array_equal(field.place().evaluate(q)[0], plain.place().evaluate(q)[0])
    turn = np.eye(4)
    turn[:2, :2] = [[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]]
    turn[:3, 3] = [0.1, -0.05, 0.2]
    B = turn @ scenes.arm_pose(130.0)  # the whole arm moved, the elbow bent
    laid = carried_muscles(field, B, field.muscles)
    bone = B[field.part_bone[field.muscle_part[0]]]  # the biceps' skin bone: the upper arm
    rigid = field.muscles.axis_points[:laid.axis_start[1]] @ bone[:3, :3].T + bone[:3, 3]
    assert np.abs(laid.axis_points[:laid.axis_start[1]] - rigid).max() > 0.01  # not the bone's rigid carry
    np.testing.assert_allclose(field.place(B, laid).evaluate(q)[0], plain.place(B).evaluate(q)[0], atol=1e-9)
    wide, bones = scenes.arm_muscles()
    wide[0].width_scale = 1.5
    through = bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                              muscles=pack_muscles(wide), muscle_bones=bones)
    assert evaluate_muscles(through.muscles, arm.vertices)[0][:, 0].min() < -0.005  # through the rest skin
    np.testing.assert_array_equal(through.place().evaluate(arm.vertices)[0], plain.place().evaluate(arm.vertices)[0])
    wide[0].width_scale = 1.2
    F, _ = through.place(None, pack_muscles(wide)).evaluate(arm.vertices)
    F0, _ = plain.place().evaluate(arm.vertices)
    assert (F - F0).min() < -0.05 and (F - F0).max() <= 0.0
    assert np.all(F[arm.vertices[:, 0] > 0.5] == F0[arm.vertices[:, 0] > 0.5])  # the hand


@pytest.mark.parametrize("pose", [0.0, 130.0])
def test_muscle_change_gradient_matches_finite_differences(arm, muscled, pose):
    """The displacement's gradient (weight, travel and both muscle fields; ``leaf_reference``'s ``details``)
    against central differences of its value, with a thinner, swollen or bent muscle set (the carried muscles at
    bind moved by the pose, the current ones not)."""
    field, muscles = muscled
    batch = field.muscles
    for scale in (0.8, 1.3):
        for m, w in zip(muscles, (scale, 1.0, 1.0, 1.0)):
            m.width_scale = w
        placed = field.place(scenes.arm_pose(pose), pack_muscles(muscles))
        rng = np.random.default_rng(1)
        q = batch.axis_points[rng.integers(0, len(batch.axis_points), 3000)] + rng.normal(scale=0.02,
                                                                                          size=(3000, 3))
        _, _, _, ds = placed.leaf_reference(q, details=True)
        for p in range(field.part_count):
            d, g = ds[p]
            fd = np.stack([(placed.leaf_reference(q + FD_STEP * e, details=True)[3][p][0]
                            - placed.leaf_reference(q - FD_STEP * e, details=True)[3][p][0]) / (2 * FD_STEP)
                           for e in np.eye(3)], 1)
            moving = np.linalg.norm(g, axis=1) > 1.0
            if p == field.muscle_part[0]:
                assert moving.sum() > 100
            if not moving.any():
                continue
            err = np.linalg.norm(fd - g, axis=1)[moving] / np.linalg.norm(g, axis=1)[moving]
            assert np.median(err) < CHANGE_FD_TOL and np.percentile(err, 99) < 100 * CHANGE_FD_TOL
    for m in muscles:
        m.width_scale = 1.0


def test_muscle_travel_saturates_smoothly():
    """``kernels/muscle_change.travel`` against its numpy reference: C1, slope 1 at 0, monotone; a thinning
    saturates at ``-c``, a swelling goes on at ``SWELL_TAIL`` beyond the knee; at least 70 % of the change passes up
    to 1.42 c inwards and ``(1 - g) / (0.7 - g) c`` outwards."""
    from implicit_muscles.kernels.muscle_change import SWELL_TAIL, TRAVEL_KNEE, travel
    from implicit_muscles.core.skin.field import travel_reference

    c = 0.01
    D = np.linspace(-0.05, 0.05, 2001)
    T, dT = travel_reference(D, c)
    K = np.array([travel(x, c) for x in D])
    np.testing.assert_allclose(K, np.stack([T, dT], 1), atol=1e-15)
    assert travel(0.0, c)[1] == 1.0 and travel(-0.02, c) == (-c, 0.0)
    np.testing.assert_allclose(np.gradient(T, D)[1:-1], dT[1:-1], atol=1e-2)
    assert np.all(np.diff(T) >= 0.0) and np.all(dT >= 0.0)
    far = D > TRAVEL_KNEE * c
    np.testing.assert_allclose(dT[far], SWELL_TAIL)
    np.testing.assert_allclose(np.diff(T[far]), SWELL_TAIL * np.diff(D[far]), rtol=1e-9)
    kept = ((D >= -1.42 * c) & (D <= (1.0 - SWELL_TAIL) / (0.7 - SWELL_TAIL) * c)) & (D != 0.0)
    assert np.all(T[kept] / D[kept] >= 0.7)


def test_muscle_cells_hold_every_muscle_that_can_reach_them():
    """``kernels/muscle_change.muscle_cells``: a point's cell lists every muscle within its cut (``laid_cut``) of
    the point by box distance, each once; points outside the grid are beyond every muscle's cut."""
    from implicit_muscles.kernels.constants import SCALAR_COUNT, SCALAR_REACH, SCALAR_SUPPORT
    from implicit_muscles.kernels.muscle_change import cell_of, laid_cut, muscle_cells

    rng = np.random.default_rng(7)
    M = 12
    low = rng.uniform(-0.5, 0.5, (M, 3))
    bounds = np.concatenate([low, low + rng.uniform(0.0, 0.3, (M, 3))], axis=1)
    scalar = np.zeros((M, SCALAR_COUNT))
    scalar[:, SCALAR_SUPPORT] = rng.uniform(0.01, 0.05, M)
    scalar[:, SCALAR_REACH] = scalar[:, SCALAR_SUPPORT]
    origin, inv_h, dims, start, muscle = muscle_cells(scalar, bounds)
    cut = np.array([laid_cut(m, scalar)[0] for m in range(M)])
    points = rng.uniform(-0.7, 0.9, (4000, 3))
    gap = np.maximum(np.maximum(bounds[None, :, :3] - points[:, None], points[:, None] - bounds[None, :, 3:]), 0.0)
    near = np.linalg.norm(gap, axis=2) <= cut[None]
    inside = 0
    for q, reach in zip(points, near):
        c = cell_of(q[0], q[1], q[2], origin, inv_h, dims)
        if c < 0:
            assert not reach.any()
            continue
        inside += 1
        listed = muscle[start[c]:start[c + 1]]
        assert len(set(listed)) == len(listed)
        assert set(np.flatnonzero(reach)) <= set(listed)
    assert inside > 500 and dims.max() == 32
    empty = muscle_cells(np.zeros((0, SCALAR_COUNT)), np.zeros((0, 6)))
    assert len(empty[4]) == 0 and cell_of(0.0, 0.0, 0.0, empty[0], empty[1], empty[2]) == 0


def test_skin_field_memory_is_small(skin, muscled):
    assert skin.nbytes < 10e6


@pytest.mark.parametrize("change, message", [
    (dict(weights=lambda w: w[:, :2]), "describe the 2 bones"),
    (dict(weights=lambda w: np.where(np.arange(len(w))[:, None] == 3, 0.0, w)), "no skinning weight"),
    (dict(faces=lambda f: f + 10_000), "does not exist"),
    (dict(vertices=lambda v: np.where(np.arange(len(v))[:, None] == 0, np.nan, v)), "NaN"),
    (dict(parents=lambda p: np.array([-1, 5, 1])), "parent index"),
])
def test_bad_input_gives_plain_errors(arm, change, message):
    args = dict(vertices=arm.vertices, faces=arm.faces, weights=arm.weights, heads=arm.heads, tails=arm.tails,
                parents=arm.parents)
    for key, fn in change.items():
        args[key] = fn(args[key])
    with pytest.raises(ValueError, match=message):
        bind_skin_field(**args)


def test_bad_frame_input(skin):
    with pytest.raises(ValueError, match="shape"):
        skin.place(np.eye(4)[None])
    bad = scenes.arm_pose(30.0)
    bad[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        skin.place(bad)
