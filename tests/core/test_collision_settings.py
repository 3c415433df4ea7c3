"""Per-muscle collision settings (paper §6.3, §5.3 Fig. 7): overlap groups, bone collisions, the bone radius each
muscle sees, keep-inside per muscle; the kernel against its numpy reference with all of them."""
import numpy as np
import pytest

from implicit_muscles.core.muscle.primitive import FusiformMuscle
from implicit_muscles.core.pbd import reference as pbd_reference
from implicit_muscles.core.pbd.collisions import MuscleCollisions
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.pbd.model import build_pbd_model
from implicit_muscles.core.pbd.settings import PBDSettings
from implicit_muscles.core.pbd.settle import initial_state, rest_state
from implicit_muscles.core.pbd.solver import PBDSolver

from pbd_scenes import LENGTH, WIDTH
from test_pbd import KERNEL_SOLVE_TOL, KERNEL_TOL, _kernel_substep

OVERLAP_TOL = 0.005
"""Closest belly particles of two muscles pushed onto each other that do not collide [m]."""
APART = 0.05
"""Closest belly particles of two such muscles that do collide [m] (each belly is about 4.7 cm thick)."""


def _pushed_together(**model_settings):
    """Two parallel muscles 5 cm apart whose ends are moved onto each other over a second; the closest distance
    between their bellies [m] after 1.5 s."""
    m1 = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=20, name="a")
    m2 = FusiformMuscle((0.05, 0, 0), (0.05, 0, LENGTH), width=WIDTH, particles=20, name="b")
    model, state = rest_state(build_pbd_model([m1, m2], PBDSettings(), **model_settings))
    solver = PBDSolver(model)
    nxt = state.copy()
    for f in range(36):
        t = min(f / 24, 1.0)
        ends = np.array([[[0.025 * t, 0, 0], [0.025 * t, 0, LENGTH]],
                         [[0.05 - 0.025 * t, 0, 0], [0.05 - 0.025 * t, 0, LENGTH]]])
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=[0.3, 0.3]), 1 / 24)
        state, nxt = nxt, state
    belly = (model.particle_s > 0.3) & (model.particle_s < 0.7)
    a = state.x[:22][belly[:22]]
    b = state.x[22:][belly[22:]]
    return float(np.min(np.linalg.norm(a[:, None] - b[None], axis=2)))


def test_one_overlap_group_lets_muscles_of_one_contact_set_overlap():
    """Same contact set: different overlap groups push apart, one overlap group passes through like no collisions."""
    apart = _pushed_together(contact_sets=[0, 0], overlap_groups=[1, 2])
    alone = _pushed_together(contact_sets=[0, 0], overlap_groups=["a", None])
    overlap = _pushed_together(contact_sets=[0, 0], overlap_groups=[7, 7])
    print(f"closest bellies: different overlap groups {apart * 1000:.1f} mm, one {overlap * 1000:.1f} mm")
    assert apart > APART and alone > APART
    assert overlap < OVERLAP_TOL


def _near_capsule(radius, **settings):
    """One muscle 2 cm beside a capsule of the given radius, after a second of settling: the largest distance of
    an inner particle from the capsule's axis [m]."""
    m = FusiformMuscle((0.02, 0, 0), (0.02, 0, LENGTH), width=0.006, particles=12, name="m")
    caps = np.array([[[0.0, 0.0, 0.0], [0.0, 0.0, LENGTH]]])
    model = build_pbd_model([m], PBDSettings(), caps, radius, **settings)
    solver = PBDSolver(model)
    state = initial_state(model)
    nxt = state.copy()
    for _ in range(24):
        solver.step(state, nxt, PBDControl(capsules=caps), 1 / 24)
        state, nxt = nxt, state
    return float(np.max(np.linalg.norm(state.x[1:-1, :2], axis=1)))


def test_bone_radius_per_muscle_and_bone_collisions_off():
    """A capsule reaching into the muscle pushes it out; a smaller radius seen by this muscle, or its bone collisions
    off, leaves it where it was placed."""
    pushed = _near_capsule([0.015])
    smaller = _near_capsule([[0.005]])  # (M, B): this muscle sees the capsule at 5 mm
    ignored = _near_capsule([0.015], bone_collisions=[False])
    print(f"axis from the bone: radius 15 mm {pushed * 1000:.1f} mm, seen at 5 mm {smaller * 1000:.1f} mm, "
          f"bones off {ignored * 1000:.1f} mm")
    assert pushed > 0.023  # the capsule's 15 mm plus the muscle's half-thickness (9 mm) at its middle
    assert smaller == pytest.approx(0.02, abs=1e-6)
    assert ignored == pytest.approx(0.02, abs=1e-6)


def test_keep_inside_per_muscle():
    """Two muscles whose ends are moved 4.5 cm out, past a skin cylinder of 3 cm: the one kept inside bows back
    in under the skin, the other stays straight between its ends, outside."""
    radius = 0.03

    def skin(points):
        r = np.linalg.norm(points[:, :2], axis=1)
        values = np.clip(0.5 - 0.5 * (r - radius) / 0.02, 0.0, 1.0)
        grads = np.zeros_like(points)
        safe = r > 1e-12
        grads[safe, :2] = -0.5 / 0.02 * points[safe, :2] / r[safe, None]
        return values, grads

    muscles = [FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=20, name=n) for n in "ab"]
    model, state = rest_state(build_pbd_model(muscles, PBDSettings(), keep_inside=[True, False]))
    solver = PBDSolver(model)
    nxt = state.copy()
    for f in range(48):
        off = 0.045 * min(f / 24, 1.0)
        ends = np.array([[[off, 0, 0], [off, 0, LENGTH]]] * 2)
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=[0.3, 0.3], skin_field=skin), 1 / 24)
        state, nxt = nxt, state
    middle = [float(np.linalg.norm(state.x[(model.axis_start[m] + model.axis_start[m + 1]) // 2, :2]))
              for m in range(2)]
    print(f"middle of the axis from the skin's axis: kept inside {middle[0] * 1000:.1f} mm, not "
          f"{middle[1] * 1000:.1f} mm")
    assert middle[0] < radius + 0.003
    assert middle[1] > 0.044


def test_kernel_substep_matches_reference_with_per_muscle_settings():
    """One substep, three muscles in one contact set: two share an overlap group, each sees the capsule at its own
    radius, the third has no bone collisions."""
    for xpbd in (True, False):
        muscles = [FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=10, name="a"),
                   FusiformMuscle((0.02, 0.0, 0.02), (0.02, 0.01, LENGTH), width=WIDTH, particles=10, name="b"),
                   FusiformMuscle((0.01, 0.02, 0.01), (0.0, 0.02, LENGTH), width=WIDTH, particles=10, name="c")]
        caps = np.array([[[0.015, 0.0, 0.02], [0.015, 0.0, 0.28]], [[-0.02, 0.0, 0.02], [-0.02, 0.0, 0.28]]])
        model = build_pbd_model(muscles, PBDSettings(xpbd=xpbd, iterations=2, substeps=4),
                                caps, [[0.006, 0.004], [0.012, 0.002], [0.006, 0.004]], contact_sets=[0, 0, 0],
                                overlap_groups=[3, 3, None], bone_collisions=[True, True, False])
        assert model.cap_start[-1] - model.cap_start[-2] == 0  # the third sees no capsule
        solver = PBDSolver(model)
        state = initial_state(model)
        state.v[:] = np.random.default_rng(5).normal(scale=0.05, size=state.v.shape)
        ends = np.array([[[0.01, 0, 0], [0, 0.01, LENGTH]], [[0.02, 0, 0.02], [0.02, 0.01, LENGTH]],
                         [[0.0, 0.02, 0.01], [0.0, 0.015, LENGTH]]])
        control = PBDControl(endpoints=ends, activation=[0.3, 0.8, 0.5], stiffness=[0.2, 0.6, 0.4],
                             capsules=caps + 0.002, eccentricity=[0.0, 0.5, 0.2])
        arrays = solver.inputs(control)
        ref_x, ref_v = state.x.copy(), state.v.copy()
        pbd_reference.substep(model, ref_x, ref_v, 0, 4, (1 / 24) / 4, arrays, state)
        out = state.copy()
        _kernel_substep(solver, state, out, control, arrays)
        assert np.abs(out.x - state.x).max() > 1e-4  # the substep did move the particles
        tol = KERNEL_SOLVE_TOL if xpbd else KERNEL_TOL
        np.testing.assert_allclose(out.x, ref_x, atol=tol, rtol=0)
        np.testing.assert_allclose(out.v, ref_v, atol=tol * 1e3, rtol=0)


def test_bad_settings_are_plain_sentences():
    with pytest.raises(ValueError, match="needs one value per muscle"):
        MuscleCollisions(bones=[True, False]).resolved(3)
    with pytest.raises(ValueError, match="bone radius must be 0 or more"):
        MuscleCollisions(bone_radius=[-0.01]).resolved(1)
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=5)
    with pytest.raises(ValueError, match="overlap_groups needs one entry per muscle"):
        build_pbd_model([m], overlap_groups=[1, 2])
    with pytest.raises(ValueError, match=r"one per muscle and capsule \(1 x 1\)"):
        build_pbd_model([m], capsules=np.zeros((1, 2, 3)), capsule_radius=np.zeros((2, 1)))


def test_muscles_placed_through_each_other_share_an_overlap_group():
    """Three axes on one line (three presets on the same bones), a fourth beside them at two widths, a fifth on the
    line but in another contact set: the three on the line join one group (a given group is kept and shared), the
    others keep theirs."""
    from implicit_muscles.core.pbd.collisions import coincident_overlaps

    line = np.array([[0.0, 0.0, 0.0], [0.0, 0.1, 0.0], [0.0, 0.2, 0.0]])
    beside = line + [0.02, 0.0, 0.0]
    axes = [line, line + [0.0005, 0.0, 0.0], line, beside, line]
    widths = [0.005] * 5
    groups = coincident_overlaps(axes, widths, [0, 0, 0, 0, 1], [-1, 7, -1, -1, -1])
    assert groups.tolist() == [7, 7, 7, -1, -1]
    assert coincident_overlaps(axes, widths, [None] * 5, [-1] * 5).tolist() == [-1] * 5
    fresh = coincident_overlaps(axes[:2], widths[:2], [0, 0], [-1, 3])
    assert fresh.tolist() == [3, 3]
    assert coincident_overlaps(axes[:2], widths[:2], [0, 0], [-1, -1]).tolist() == [0, 0]


def test_a_settled_rest_is_a_rest_of_the_frames_with_three_muscles_on_one_line():
    """Three muscles on one line between the same two points, each colliding with the others: the character's rest
    is an equilibrium of its own frames, so a frame at rest moves no particle and gives back the rest mesh."""
    from implicit_muscles.core.character import CharacterSetup, MuscledCharacter, build_character
    from implicit_muscles.core.pbd.control import MuscleInputs
    from implicit_muscles.scenes import paper as scenes

    from implicit_muscles.core.muscle.primitive import MuscleShape

    rig = scenes.arm_rig()
    muscles, skin_bones = scenes.arm_muscles(particles=10)
    base = muscles[0]
    ends = base.axis[[0, -1]]
    shape = MuscleShape(2, 2, 3, 3, eccentricity_rest=0.4, eccentricity_active=0.6)
    line = [FusiformMuscle(ends[0], ends[1], width=base.width, particles=10, shape=shape, name=f"line_{k}")
            for k in range(3)]
    setup = CharacterSetup(rig, tuple(line), origin_bones=[0] * 3, insertion_bones=[1] * 3,
                           skin_bones=[skin_bones[0]] * 3)
    character = MuscledCharacter(build_character(setup))
    B = np.tile(np.eye(4), (len(rig.heads), 1, 1))
    before = character.state().x.copy()
    x = character.frame(B, MuscleInputs(), dt=1 / 24)
    assert np.abs(character.state().x - before).max() < 1e-9
    assert np.abs(x - rig.vertices).max() < 1e-9
