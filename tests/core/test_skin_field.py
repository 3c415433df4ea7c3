"""The composed skin field of the arm (core/skin/field.py): kernel vs reference, gradient vs finite differences,
bounding-box pruning, rigid motion, muscles joined by the detail operator, the HRBF pull-in, bad input."""
import numpy as np
import pytest

from implicit_muscles.scenes import paper as scenes
from implicit_muscles.core.muscle.batch import evaluate_muscles, pack_muscles
from implicit_muscles.core.skin.field import NODE_PART, SkinSettings, bind_skin_field

NO_CANCEL_RATIO = 0.15
"""Smallest |grad F| / (|dG/dh grad h| + |dG/dmu grad mu|) allowed where both terms matter (1: aligned, 0: a
critical point); measured 0.23 at the worst of about 900 shell points on the arm, on a muscle's bone side near the
arm's axis (core/skin/blend_operators.py, detail operator)."""
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
    return bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                           muscles=pack_muscles(muscles), muscle_bones=bones, bone_names=arm.names), muscles


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
def test_kernel_matches_reference(arm, muscled, pose):
    field, _ = muscled
    placed = field.place(scenes.arm_pose(pose))
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


def test_detail_operator_leaves_no_critical_point_near_muscles(arm, muscled):
    """On shells around each muscle's surface (f_M in [-2, 4] mm), where the muscle's part field (HRBF + muscles by
    the detail operator) is between 0.2 and 0.8 and both inputs contribute, the two gradient terms
    ``dG/dh grad h`` and ``dG/dmu grad mu`` never cancel: ``|grad F|`` keeps most of their summed length. A
    critical point would need exactly opposed terms of equal length (ratio 0)."""
    from implicit_muscles.core.skin import blend_operators as ops

    field, muscles = muscled
    rng = np.random.default_rng(3)
    for k, m in enumerate(muscles):
        p = m.axis[rng.integers(1, len(m.axis) - 1, 4000)] + rng.normal(scale=0.02, size=(4000, 3))
        f, _ = evaluate_muscles(pack_muscles([m]), p)
        shell = p[(f[:, 0] > -0.002) & (f[:, 0] < 0.004)]
        values, grads, hs, mus = field.place().leaf_reference(shell, details=True)
        part = int(field.muscle_part[k])
        (h, gh), (mu, gmu) = hs[part], mus[part]
        _, G1, G2 = ops.lookup(ops.table("blend"), h, mu)
        a = np.linalg.norm(G1[:, None] * gh, axis=1)
        b = np.linalg.norm(G2[:, None] * gmu, axis=1)
        F, G = values[part], grads[part]
        mixed = (F > 0.2) & (F < 0.8) & (a > 0.05 * (a + b)) & (b > 0.05 * (a + b))
        assert mixed.sum() > 20, m.name
        ratio = np.linalg.norm(G[mixed], axis=1) / (a + b)[mixed]
        assert ratio.min() > NO_CANCEL_RATIO, m.name


def test_pull_in_lets_a_shrinking_muscle_show(arm):
    """A biceps shrunk to 70 % of its width moves the skin over it inwards more with the HRBF pull-in than without
    (without it the HRBF's own surface holds the skin up)."""
    muscles, bones = scenes.arm_muscles()
    shifts = []
    over = (arm.vertices[:, 2] > 0.035) & (np.abs(arm.vertices[:, 0] - 0.2) < 0.05)
    for pull in (False, True):
        muscles[0].width_scale = 1.0
        field = bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents,
                                muscles=pack_muscles(muscles), muscle_bones=bones,
                                settings=SkinSettings(pull_under_muscles=pull))
        F0, G0 = field.place().evaluate(arm.vertices)
        muscles[0].width_scale = 0.7
        F1, _ = field.place(None, pack_muscles(muscles)).evaluate(arm.vertices)
        shifts.append(-((F1 - F0) / np.linalg.norm(G0, axis=1))[over].min())  # inward move along -grad [m]
    muscles[0].width_scale = 1.0
    assert shifts[1] > 1.2 * shifts[0] and shifts[1] > 0.0015  # [m] the pull-in's share and the least inward move


def test_a_muscle_through_the_rest_skin_is_seen_under_it(arm):
    """A biceps 1.5 times as wide reaches through the rest skin (as an artist's muscle may; the arm character's
    settled biceps does by 8 mm): the skin sees it moved in just enough that its compact field is at most
    ``SKIN_MUSCLE_MAX`` on every rest vertex, so the pull-in can put the skin at 0.5 and the skin vertices keep
    iso-values near the contact surface's 0.5. Muscles under the skin are not moved."""
    from implicit_muscles.core.skin.hrbf import compact
    from implicit_muscles.core.skin.field import _SKIN_MUSCLE_DEPTH, SKIN_MUSCLE_MAX, _compact_muscles

    assert compact(_SKIN_MUSCLE_DEPTH, 1.0)[0] == pytest.approx(SKIN_MUSCLE_MAX, abs=1e-6)
    muscles, bones = scenes.arm_muscles()
    muscles[0].width_scale = 1.5
    batch = pack_muscles(muscles)
    field = bind_skin_field(arm.vertices, arm.faces, arm.weights, arm.heads, arm.tails, arm.parents, muscles=batch,
                            muscle_bones=bones)
    raw, _ = evaluate_muscles(batch, arm.vertices, compact=True)
    seen, _ = _compact_muscles(batch, arm.vertices, field.muscle_offset)
    through = raw.max(axis=0) > SKIN_MUSCLE_MAX
    assert through[0] and raw[:, 0].max() > 0.6
    np.testing.assert_array_equal(field.muscle_offset > 0, through)
    np.testing.assert_allclose(seen.max(axis=0)[through], SKIN_MUSCLE_MAX, atol=1e-4)
    np.testing.assert_allclose(seen[:, ~through], raw[:, ~through], atol=1e-12)  # numpy K vs the kernel's
    F, _ = field.place().evaluate(arm.vertices)
    assert F.max() < 0.6  # the detail blend is at least mu: seen as placed, the skin would read over 0.6 there


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
