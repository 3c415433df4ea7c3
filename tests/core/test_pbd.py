"""Muscle axis dynamics (paper §6, thesis ch. 5): rest, jiggle, XPBD, collisions, determinism, kernel vs reference."""
import numpy as np
import pytest

from implicit_muscles.core.pbd import reference as pbd_reference
from implicit_muscles.core.pbd.distance_grid import mesh_distance_grid
from implicit_muscles.core.muscle.primitive import FusiformMuscle
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.pbd.model import BoneGrid, build_pbd_model, capsule_radius_from_skin
from implicit_muscles.core.pbd.settings import PBDSettings
from implicit_muscles.core.pbd.settle import initial_state, rest_state
from implicit_muscles.core.pbd.solver import PBDSolver, kinetic_energy

from pbd_scenes import LENGTH, WIDTH, one_muscle, shake

DRIFT_TOL = 1e-9
"""Largest move of any particle over 1000 frames at rest [m]."""
KERNEL_TOL = 1e-12
"""Kernel vs numpy reference after one substep [m], PBD mode (the same sweeps in the same order)."""
KERNEL_SOLVE_TOL = 1e-10
"""Kernel vs numpy reference after one substep [m], XPBD mode: the spring step's Thomas algorithm against a dense
solve of the same stiff system (round-off grows with its condition number)."""


def test_masses_follow_volume_and_profile():
    model = one_muscle()
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH)
    assert model.mass.sum() == pytest.approx(m.volume * 1060.0, rel=1e-12)  # rho_M = 1.06 g/cm^3
    inner = model.mass[1:-1]
    phi = np.maximum(m.profile_at(model.particle_s[1:-1]), 0.5 * m.profile_at(model.particle_s[1:-1]).max())
    np.testing.assert_allclose(inner / inner.sum(), phi / phi.sum(), rtol=1e-12)
    paper = one_muscle(min_mass_fraction=0.0)  # the paper's plain proportion
    phi = m.profile_at(paper.particle_s[1:-1])
    np.testing.assert_allclose(paper.mass[1:-1] / paper.mass.sum(), phi / phi.sum(), rtol=1e-12)
    assert model.inv_mass[0] == 0 and model.inv_mass[-1] == 0  # kinematic endpoints
    # tendons: first and last 10 % of the rest length, at 100 % rest length; belly at 2 %
    seg = np.diff(model.rest_points[:, 2])
    tendon = model.tendon[:-1]
    assert tendon[:3].all() and tendon[-3:].all() and not tendon[3:-3].any()
    np.testing.assert_allclose(model.rest_length[:-1][tendon], seg[tendon])
    np.testing.assert_allclose(model.rest_length[:-1][~tendon], 0.02 * seg[~tendon])


@pytest.mark.parametrize("xpbd", [True, False])
def test_no_drift_at_rest(xpbd):
    model = one_muscle(xpbd=xpbd)
    model, state = rest_state(model)
    start = state.x.copy()
    solver = PBDSolver(model)
    nxt = state.copy()
    for _ in range(1000):
        solver.step(state, nxt, PBDControl(), 1 / 24)
        state, nxt = nxt, state
    assert np.abs(state.x - start).max() < DRIFT_TOL
    # the settled axis is straight
    np.testing.assert_allclose(state.x[:, :2], 0.0, atol=1e-12)


def test_loose_muscle_swings_more_and_longer_than_tense_one():
    """Paper §6.2: k = 0.1 follows the bones with lots of inertia, k = 0.7 is tense (1 Hz shake, then hold)."""
    loose, _ = shake(one_muscle(), 0.1, frames=96, hz=1.0)
    tense, _ = shake(one_muscle(), 0.7, frames=96, hz=1.0)
    print(f"mid deviation while shaking: loose {loose[:48].max():.4f} m, tense {tense[:48].max():.4f} m; "
          f"1 s after: loose {loose[72:].max():.6f} m, tense {tense[72:].max():.6f} m")
    assert loose[:48].max() > 1.2 * tense[:48].max()
    assert loose[72:].max() > 10.0 * tense[72:].max()  # still swinging a second after the shake stopped


def test_energy_decays_after_the_shake():
    model = one_muscle()
    _, states = shake(model, 0.1, frames=150)
    energy = np.array([kinetic_energy(model, s) for s in states])
    after = energy[48:]
    assert after[-1] < 1e-6 * energy[:48].max()
    # decays: every 10-frame window's peak is below the previous one's
    peaks = [after[i:i + 10].max() for i in range(0, 100, 10)]
    assert all(b <= a for a, b in zip(peaks, peaks[1:]))


@pytest.mark.parametrize("xpbd", [True, False])
def test_nothing_explodes(xpbd):
    for k in (0.0, 0.05, 0.5, 1.0):
        for substeps in (1, 3, 10, 50):
            for fps in (12.0, 24.0, 120.0):
                model = one_muscle(particles=12, substeps=substeps, xpbd=xpbd)
                dev, states = shake(model, k, frames=int(2 * fps), shake_frames=int(fps), fps=fps,
                                    state=initial_state(model))
                x = states[-1].x
                assert np.all(np.isfinite(x))
                assert dev.max() < LENGTH, (k, substeps, fps, dev.max())
                assert np.abs(x).max() < 2 * LENGTH


def test_xpbd_is_substep_independent_pbd_is_not():
    results = {}
    for xpbd in (True, False):
        for substeps in (5, 40):
            model = one_muscle(substeps=substeps, xpbd=xpbd)
            dev, states = shake(model, 0.3, frames=60, shake_frames=60, hz=1.0)
            results[xpbd, substeps] = np.array([s.x for s in states])
    diff_xpbd = np.abs(results[True, 5] - results[True, 40]).max()
    diff_pbd = np.abs(results[False, 5] - results[False, 40]).max()
    print(f"5 vs 40 substeps, largest particle difference: XPBD {diff_xpbd * 1000:.2f} mm, "
          f"PBD {diff_pbd * 1000:.2f} mm")
    assert diff_xpbd < 0.35 * diff_pbd
    assert diff_xpbd < 0.01  # 1 cm on a 5 cm shake of a 30 cm muscle


def _capsule_scene(muscle_collisions=False, bone=True):
    m1 = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=20, name="a")
    m2 = FusiformMuscle((0.05, 0, 0), (0.05, 0, LENGTH), width=WIDTH, particles=20, name="b")
    caps = np.array([[[0.025, 0.0, 0.05], [0.025, 0.0, 0.25]]]) if bone else None
    radius = np.array([0.004]) if bone else None
    groups = [0, 0] if muscle_collisions else None
    return build_pbd_model([m1, m2], PBDSettings(), caps, radius, contact_sets=groups), caps


def test_particles_do_not_penetrate_bone_capsules():
    # the bone sits between the two muscles; pushing both muscles' ends across it makes them wrap around it
    model, caps = _capsule_scene()
    model, state = rest_state(model)
    solver = PBDSolver(model)
    nxt = state.copy()
    worst = 0.0
    for f in range(48):
        t = min(f / 24, 1.0)
        ends = np.array([[[0.06 * t, 0, 0], [0.06 * t, 0, LENGTH]], [[0.05 - 0.06 * t, 0, 0], [0.05 - 0.06 * t, 0, LENGTH]]])
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=[0.5, 0.5]), 1 / 24)
        state, nxt = nxt, state
        radii = state.muscles.muscle_scalar[:, 3]
        for m in range(2):
            a, b = model.axis_start[m], model.axis_start[m + 1]
            p = state.x[a + 1:b - 1]
            e0, e1 = caps[0]
            tt = np.clip((p - e0) @ (e1 - e0) / ((e1 - e0) @ (e1 - e0)), 0, 1)
            d = np.linalg.norm(p - (e0 + tt[:, None] * (e1 - e0)), axis=1)
            s = model.particle_s[a + 1:b - 1]
            phi = FusiformMuscle((0, 0, 0), (0, 0, 1), width=1).profile_at(s)
            D = radii[m] * phi
            worst = max(worst, float(np.max(0.004 + D - d)))
    print(f"deepest capsule penetration after a frame: {worst * 1000:.3f} mm")
    assert worst < 1e-4  # 0.1 mm


def _overlap_after_pushing(muscle_collisions):
    model, _ = _capsule_scene(muscle_collisions=muscle_collisions, bone=False)
    model, state = rest_state(model)
    solver = PBDSolver(model)
    nxt = state.copy()
    for f in range(36):
        t = min(f / 24, 1.0)
        ends = np.array([[[0.025 * t, 0, 0], [0.025 * t, 0, LENGTH]], [[0.05 - 0.025 * t, 0, 0], [0.05 - 0.025 * t, 0, LENGTH]]])
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=[0.3, 0.3]), 1 / 24)
        state, nxt = nxt, state
    # smallest distance between the two bellies (the endpoints are pushed onto each other, so the ends must meet)
    belly = (model.particle_s > 0.3) & (model.particle_s < 0.7)
    a = state.x[:22][belly[:22]]
    b = state.x[22:][belly[22:]]
    return np.min(np.linalg.norm(a[:, None] - b[None], axis=2))


def test_muscle_muscle_collision_keeps_muscles_apart():
    apart = _overlap_after_pushing(True)
    overlap = _overlap_after_pushing(False)
    print(f"closest particles: with muscle collisions {apart * 1000:.1f} mm, without {overlap * 1000:.1f} mm")
    assert overlap < 0.005  # the axes meet when nothing stops them
    assert apart > 0.05  # with collisions the bellies (about 4.7 cm thick each side) keep apart


def test_bit_identical_and_snapshot_restore():
    model, _ = _capsule_scene(muscle_collisions=True)
    runs = []
    for _ in range(2):
        dev, states = shake(model, 0.2, frames=40, shake_frames=40, state=initial_state(model))
        runs.append(np.array([s.x for s in states]))
    assert np.array_equal(runs[0], runs[1])
    # snapshot at frame 20, restore into a fresh solver, continue: same as continuing
    solver = PBDSolver(model)
    state = initial_state(model)
    nxt = state.copy()
    controls = [PBDControl(endpoints=np.array([[[0.02 * np.sin(f), 0, 0], [0, 0, LENGTH]],
                                               [[0.05, 0, 0], [0.05, 0, LENGTH]]]), stiffness=[0.2, 0.4])
                for f in range(30)]
    for f in range(20):
        solver.step(state, nxt, controls[f], 1 / 24)
        state, nxt = nxt, state
    snapshot = state.copy()
    for f in range(20, 30):
        solver.step(state, nxt, controls[f], 1 / 24)
        state, nxt = nxt, state
    other = PBDSolver(model)
    restored = initial_state(model)
    restored.assign(snapshot)
    nxt2 = restored.copy()
    for f in range(20, 30):
        other.step(restored, nxt2, controls[f], 1 / 24)
        restored, nxt2 = nxt2, restored
    assert np.array_equal(restored.x, state.x) and np.array_equal(restored.v, state.v)


@pytest.mark.parametrize("posed", [False, True])
def test_held_frames_in_one_launch_are_the_frames_one_by_one(posed):
    """``PBDSolver.hold`` runs a held pose's frames in one kernel launch (the rest settle does): bit for bit the
    frames stepped one by one, bone capsule and muscle-muscle contact included, from the unsettled rest axes or
    from a pose held since the frame before."""
    model, _ = _capsule_scene(muscle_collisions=True)
    ends = np.array([[[0.01, 0, 0.01], [0.0, 0, LENGTH]], [[0.05, 0, 0], [0.04, 0.01, LENGTH]]])
    control = PBDControl(endpoints=ends if posed else None, stiffness=[0.3, 0.6])
    solver = PBDSolver(model)
    start = initial_state(model)
    if posed:  # the pose reached in one frame, then held
        moved = start.copy()
        solver.step(start, moved, control, 1 / 24)
        start = moved
    one, spare = start.copy(), start.copy()
    for _ in range(37):
        solver.step(one, spare, control, 1 / 24)
        one, spare = spare, one
    held = start.copy()
    solver.hold(start, held, control, 1 / 24, 37)
    assert np.abs(held.x - start.x).max() > 1e-4  # the axes did move
    assert np.array_equal(held.x, one.x) and np.array_equal(held.v, one.v)
    assert np.array_equal(held.muscles.axis_points, one.muscles.axis_points)
    assert np.array_equal(held.muscles.muscle_scalar, one.muscles.muscle_scalar)
    with pytest.raises(ValueError, match="frames to hold must be at least 1"):
        solver.hold(start, held, control, 1 / 24, 0)


class _ScriptedAxes:
    """Stands in for a ``PBDSolver`` in the settle's frame loop: frame ``k`` moves one particle by ``motion(k)`` [m]
    (``hold`` runs its frames one after the other); counts the frames and the measured ones."""

    def __init__(self, motion):
        self.motion, self.frames, self.measured = motion, 0, 0

    def _frame(self, state_in, state_out):
        self.frames += 1
        state_out.x[:] = state_in.x
        state_out.x[0, 0] += self.motion(self.frames)

    def step(self, state_in, state_out, control, dt):
        self.measured += 1
        self._frame(state_in, state_out)

    def hold(self, state_in, state_out, control, dt, frames):
        for _ in range(frames):
            self._frame(state_in, state_out)
            state_in = state_out


@pytest.mark.parametrize("motion, frames", [
    (lambda k: 1e-3 * 0.97 ** k, None),           # comes to rest: ends at the first still frame measured
    (lambda k: 1e-6 * (1 + 0.5 * (-1) ** k), 2),  # jitters for ever: ends when the motion stops falling
    (lambda k: 1e-6 * (1 + 1e-3 * k), 2),         # creeps ever faster: the same
])
def test_settle_rounds_end_when_still_or_when_the_motion_stops_falling(motion, frames):
    from implicit_muscles.core.pbd import settle

    model, _ = _capsule_scene()
    state = initial_state(model)
    axes = _ScriptedAxes(motion)
    settle._hold_until_still(axes, state, state.copy(), PBDControl(), 1 / 24, 4000, 1e-11)
    if frames is None:  # 1e-3 0.97^k < 1e-11 from k = 607 on, measured at most HOLD_FRAMES later
        assert 607 <= axes.frames <= 607 + settle.HOLD_FRAMES
    else:
        assert 2 * settle.STALL_FRAMES <= axes.frames <= 2 * settle.STALL_FRAMES + settle.HOLD_FRAMES
    assert axes.measured < axes.frames / 10  # the frames between measured ones ran held


def _icosphere(radius, centre, subdivisions=2):
    t = (1 + 5 ** 0.5) / 2
    v = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
                  [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], float)
    f = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6],
         [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10],
         [8, 6, 7], [9, 8, 1]]
    verts = list(v / np.linalg.norm(v, axis=1)[:, None])
    faces = f
    for _ in range(subdivisions):
        cache, new = {}, []

        def mid(i, j):
            key = (min(i, j), max(i, j))
            if key not in cache:
                p = verts[i] + verts[j]
                verts.append(p / np.linalg.norm(p))
                cache[key] = len(verts) - 1
            return cache[key]
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        faces = new
    return np.array(verts) * radius + centre, np.array(faces)


def test_distance_grid_of_a_sphere_mesh():
    verts, faces = _icosphere(0.02, np.array([0.01, 0.0, 0.15]), subdivisions=3)
    grid = mesh_distance_grid(verts, faces, resolution=24, padding=0.02)
    rng = np.random.default_rng(0)
    p = np.array([0.01, 0.0, 0.15]) + rng.uniform(-0.035, 0.035, (500, 3))
    values, grads, inside = grid.sample(p)
    exact = np.linalg.norm(p - [0.01, 0.0, 0.15], axis=1) - 0.02
    assert inside.all()
    # trilinear interpolation of a sphere SDF: error of order (cell size)^2 / radius plus the mesh's facets
    assert np.abs(values - exact).max() < 0.1 * grid.spacing[0] + 2e-4
    far = np.abs(exact) > 2 * grid.spacing[0]
    cos = np.einsum("ij,ij->i", grads[far], (p[far] - [0.01, 0, 0.15])) / (
        np.linalg.norm(grads[far], axis=1) * np.linalg.norm(p[far] - [0.01, 0, 0.15], axis=1))
    assert cos.min() > 0.98


def test_kernel_substep_matches_reference():
    """One substep with capsules, a bone grid (moved rigidly) and muscle-muscle collisions, both modes."""
    for xpbd in (True, False):
        m1 = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=10, name="a")
        m2 = FusiformMuscle((0.03, 0.0, 0.02), (0.03, 0.01, LENGTH), width=WIDTH, particles=10, name="b")
        verts, faces = _icosphere(0.02, np.array([0.015, 0.0, 0.15]), subdivisions=2)
        grid = mesh_distance_grid(verts, faces, resolution=16, padding=0.03)
        caps = np.array([[[0.015, 0.0, 0.02], [0.015, 0.0, 0.28]]])
        model = build_pbd_model([m1, m2], PBDSettings(xpbd=xpbd, iterations=2, substeps=4,
                                                      gravity=(0.0, -9.81, 0.0)),
                                caps, [0.006], grids=[BoneGrid(grid, 0)], contact_sets=[1, 1])
        solver = PBDSolver(model)
        state = initial_state(model)
        state.v[:] = np.random.default_rng(3).normal(scale=0.05, size=state.v.shape)
        angle = 0.2
        tf = np.eye(4)
        tf[:3, :3] = [[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]]
        tf[:3, 3] = [0.004, -0.002, 0.001]
        control = PBDControl(endpoints=np.array([[[0.01, 0, 0], [0, 0.01, LENGTH]], [[0.03, 0, 0.02], [0.02, 0.01, LENGTH]]]),
                             activation=[0.3, 0.8], stiffness=[0.2, 0.6], width_scale=[1.0, 1.2],
                             capsules=caps + 0.002, grid_transforms=tf[None], eccentricity=[0.0, 0.5])
        arrays = solver.inputs(control)
        # kernel: run substep 0 only, through the solver's internals
        ref_x, ref_v = state.x.copy(), state.v.copy()
        pbd_reference.substep(model, ref_x, ref_v, 0, 4, (1 / 24) / 4, arrays, state)
        out = state.copy()
        _kernel_substep(solver, state, out, control, arrays)
        tol = KERNEL_SOLVE_TOL if xpbd else KERNEL_TOL
        np.testing.assert_allclose(out.x, ref_x, atol=tol, rtol=0)
        np.testing.assert_allclose(out.v, ref_v, atol=tol * 1e3, rtol=0)


def _kernel_substep(solver, state_in, state_out, control, arrays):
    from implicit_muscles.core.muscle.batch import profile_tables
    from implicit_muscles.kernels.pbd import pbd_substeps
    from implicit_muscles.kernels.profile import profile_scalars
    model, b = solver.model, state_out.muscles
    x, v = state_out.x, state_out.v
    b.length[:] = [np.linalg.norm(np.diff(x[model.axis_start[m]:model.axis_start[m + 1]], axis=0), axis=1).sum()
                   for m in range(model.muscle_count)]
    profile_scalars(b.kernel_arrays(), arrays.activation, arrays.eccentricity, arrays.width_scale, b.volume,
                    b.length, profile_tables())
    pbd_substeps(0, 1, solver.params((1 / 24) / 4), model.arrays, solver.frame(state_in, arrays), x, v,
                 b.kernel_arrays(), solver.scratch)


def test_grid_collision_keeps_particles_outside_the_bone_mesh():
    verts, faces = _icosphere(0.015, np.array([0.0, 0.0, 0.15]), subdivisions=2)
    grid = mesh_distance_grid(verts, faces, resolution=20, padding=0.04)
    m = FusiformMuscle((0.03, 0, 0), (0.03, 0, LENGTH), width=0.02, particles=20)
    model = build_pbd_model([m], grids=[BoneGrid(grid, 0)])
    model, state = rest_state(model)
    solver = PBDSolver(model)
    nxt = state.copy()
    for f in range(30):
        t = min(f / 20, 1.0)
        ends = np.array([[[0.03 - 0.05 * t, 0, 0], [0.03 - 0.05 * t, 0, LENGTH]]])
        solver.step(state, nxt, PBDControl(endpoints=ends), 1 / 24)
        state, nxt = nxt, state
    values, _, inside = grid.sample(state.x[1:-1])
    D = state.muscles.muscle_scalar[0, 3] * m.profile_at(model.particle_s[1:-1])
    assert np.all(values[inside] - D[inside] > -2e-3)
    # the axis bent around the bone: its middle is away from the straight line
    assert abs(state.x[11, 0] - (-0.02)) > 0.01


def test_skin_keeps_particles_inside():
    """A skin field callable (compact convention, inside > 0.5): a cylinder of radius 3 cm around the z axis."""
    radius = 0.03

    def skin(points):
        r = np.linalg.norm(points[:, :2], axis=1)
        d = (r - radius) / 0.02
        values = np.clip(0.5 - 0.5 * d, 0.0, 1.0)
        grads = np.zeros_like(points)
        safe = r > 1e-12
        grads[safe, :2] = -0.5 / 0.02 * points[safe, :2] / r[safe, None]
        return values, grads

    model = one_muscle(particles=20)
    model, state = rest_state(model)
    solver = PBDSolver(model)
    nxt = state.copy()
    for f in range(48):
        off = 0.06 * np.sin(2 * np.pi * f / 24)
        ends = np.array([[[off * 0.3, 0, 0], [0, 0, LENGTH]]])
        solver.step(state, nxt, PBDControl(endpoints=ends, stiffness=[0.05], skin_field=skin), 1 / 24)
        state, nxt = nxt, state
        r = np.linalg.norm(state.x[1:-1, :2], axis=1)
        assert r.max() < radius + 1e-6


def test_widths_and_normals_follow_the_axis_after_a_step():
    model = one_muscle()
    model, state = rest_state(model)
    solver = PBDSolver(model)
    nxt = state.copy()
    ends = np.array([[[0.0, 0, 0.05], [0, 0, LENGTH]]])  # origin slides 5 cm up: the muscle shortens
    for _ in range(100):
        solver.step(state, nxt, PBDControl(endpoints=ends), 1 / 24)
        state, nxt = nxt, state
    length = np.linalg.norm(np.diff(state.x, axis=0), axis=1).sum()
    assert state.muscles.length[0] == pytest.approx(length, rel=1e-12)
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH)
    assert state.muscles.muscle_scalar[0, 3] == pytest.approx(np.sqrt(m.volume / (np.pi * length)), rel=1e-12)
    np.testing.assert_array_equal(state.muscles.axis_points, state.x)


def test_bad_input():
    model = one_muscle(particles=5)
    solver = PBDSolver(model)
    state = initial_state(model)
    with pytest.raises(ValueError, match="endpoints contain NaN"):
        solver.step(state, state.copy(), PBDControl(endpoints=np.full((1, 2, 3), np.nan)), 1 / 24)
    with pytest.raises(ValueError, match="stiffness must be from 0.0 to 1.0"):
        solver.step(state, state.copy(), PBDControl(stiffness=[1.5]), 1 / 24)
    with pytest.raises(ValueError, match="activation needs one value per muscle"):
        solver.step(state, state.copy(), PBDControl(activation=[0.1, 0.2]), 1 / 24)
    with pytest.raises(ValueError, match="frame duration must be greater than 0"):
        solver.step(state, state.copy(), PBDControl(), 0.0)
    with pytest.raises(ValueError, match="substeps must be a whole number"):
        PBDSettings(substeps=0).validated()
    with pytest.raises(ValueError, match="same place"):
        solver.step(state, state.copy(), PBDControl(endpoints=np.zeros((1, 2, 3))), 1 / 24)
    with pytest.raises(ValueError, match="capsule_radius needs one radius per capsule"):
        build_pbd_model([FusiformMuscle((0, 0, 0), (0, 0, 1), width=0.1)], capsules=np.zeros((2, 2, 3)),
                        capsule_radius=[0.1])
    # the input state is never written
    before = state.x.copy()
    out = state.copy()
    solver.step(state, out, PBDControl(endpoints=np.array([[[0.1, 0, 0], [0, 0, LENGTH]]])), 1 / 24)
    assert np.array_equal(state.x, before)


def test_capsule_radius_estimate():
    ang = np.linspace(0, 2 * np.pi, 50)
    skin = np.stack([0.04 * np.cos(ang), 0.04 * np.sin(ang), np.linspace(0, 0.3, 50)], 1)
    assert capsule_radius_from_skin((0, 0, 0), (0, 0, 0.3), skin) == pytest.approx(0.01)


WARM_REST_TOL = 1e-6
"""Settled rest from a stored earlier settle vs from scratch: largest particle difference [m]. Settling stops when
no particle moves 1e-11 m in a frame; the two muscles pressed together creep towards their rest through friction
more slowly than that, which leaves the two ends up to 0.1 micrometre apart."""


WARM_FRAMES = 16
"""Frames a settle from a stored settle takes at most: the last creep of the stored one (under a micrometre) ends
within a dozen frames at the run's damping ratio (0.25)."""


def test_rest_state_from_a_stored_settle_is_the_same_and_quick():
    """A host that keeps the settled rest with its file binds again from it (``rest_state(start=...)``): the same
    rest to a micrometre in a few frames instead of dozens; a start of the wrong size is ignored."""
    model, _ = _capsule_scene(muscle_collisions=True)
    model, cold = rest_state(model)
    hint = (cold.x.copy(), model.particle_s.copy())
    frames = []
    original = PBDSolver._advance  # frames of step and hold

    def counting(self, *args):
        frames.append(args[-1])
        return original(self, *args)

    PBDSolver._advance = counting
    try:
        fresh, _ = _capsule_scene(muscle_collisions=True)
        fresh, warm = rest_state(fresh, start=hint)
        warm_frames = sum(frames)
        frames.clear()
        other, _ = _capsule_scene(muscle_collisions=True)
        _, ignored = rest_state(other, start=(hint[0][:-1], hint[1][:-1]))
        cold_frames = sum(frames)
    finally:
        PBDSolver._advance = original
    print(f"rest settle: {cold_frames} frames from scratch, {warm_frames} from the stored settle")
    assert np.abs(warm.x - cold.x).max() < WARM_REST_TOL
    np.testing.assert_allclose(fresh.particle_s, model.particle_s, atol=WARM_REST_TOL / LENGTH)
    assert warm_frames <= WARM_FRAMES and cold_frames > 4 * warm_frames
    assert np.abs(ignored.x - cold.x).max() < WARM_REST_TOL


def test_keep_inside_steps_at_most_max_step_where_the_field_is_flat():
    """Far outside the skin the field is nearly flat: the Newton step -C/|grad| would be 0.4 / 1e-6 = 400 km; it
    is cut to ``max_step`` along the gradient (near the skin the exact step is kept). The contact is inelastic:
    the velocity out of the skin (against the gradient) stops, the rest of it is kept."""
    from implicit_muscles.kernels.pbd import keep_inside

    x = np.zeros((2, 3))
    v = np.array([[-0.3, 0.2, 0.0], [-0.3, 0.0, 0.0]])
    values = np.array([0.0, 0.45])  # far outside the 0.4-iso; inside it: untouched
    grads = np.array([[1e-6, 0.0, 0.0], [10.0, 0.0, 0.0]])
    keep_inside(x, v, np.ones(2), values, grads, 0.4, 0.005)
    assert x[0] == pytest.approx([0.005, 0.0, 0.0], abs=1e-15)
    assert v[0] == pytest.approx([0.0, 0.2, 0.0], abs=1e-15)  # no velocity outwards, the sliding kept
    assert np.array_equal(v[1], [-0.3, 0.0, 0.0])  # inside: untouched
    v[0] = [0.3, 0.0, 0.0]
    x[:] = 0.0
    keep_inside(x, v, np.ones(2), values, grads, 0.4, 0.005)
    assert v[0, 0] == 0.3  # moving inwards already: kept
    assert np.array_equal(x[1], [0.0, 0.0, 0.0])
    x[:] = 0.0
    keep_inside(x, v, np.ones(2), np.array([0.39, 0.0]), np.array([[10.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), 0.4,
                0.005)
    assert x[0, 0] == pytest.approx(0.001)  # the exact Newton step, 1 mm
    assert np.array_equal(x[1], [0.0, 0.0, 0.0])  # no gradient: nothing to follow


def test_a_first_frame_posed_far_from_rest_keeps_the_axes_together():
    """The full body's first frame with both knees bent 0.8 rad straight from rest: the shin muscles start outside
    the posed skin, and the bounded keep-inside step brings them back without throwing particles away."""
    from implicit_muscles.scenes import paper as scenes
    from implicit_muscles.core.character import CharacterSetup, MuscledCharacter

    rig = scenes.body_rig()
    muscles, _, owner = scenes.body_muscles()
    character = MuscledCharacter.bind(CharacterSetup(rig, tuple(muscles), owner, owner, owner))
    rest = character.state().x
    starts = character.model.pbd.axis_start
    B = np.broadcast_to(np.eye(4), (len(rig.names), 4, 4)).copy()
    for i, n in enumerate(rig.names):
        if n.startswith("shin"):
            B[i] = scenes.rotation_about((1, 0, 0), 0.8, rig.heads[i])
    for _ in range(3):
        character.advance(B, dt=1 / 24)
    x = character.state().x
    assert np.abs(x - rest).max() < 0.5  # the shin muscles follow their bones (0.3 m at the ankle), no further
    for m in range(len(muscles)):
        seg = np.linalg.norm(np.diff(x[starts[m]:starts[m + 1]], axis=0), axis=1)
        assert seg.max() < 0.1, muscles[m].name  # rest segments are 0.4 to 8 cm


def test_settle_starts_a_shot_calm_in_its_first_pose():
    """From rest straight into a bent elbow the axes jump: they leave their first frame fast; settled into the pose
    first, they start at rest in it (no velocity) and their first frame has a hundredth of the kinetic energy or
    less (about 1/800 here: what is left is the constraints' residual of the held pose)."""
    from implicit_muscles.scenes import paper as scenes

    character = scenes.arm_character()
    B = scenes.arm_pose(110.0)
    character.settle(B)
    assert not character.state().v.any()
    character.advance(B)
    calm = kinetic_energy(character.model.pbd, character.state())
    character.reset()
    character.advance(B)
    jump = kinetic_energy(character.model.pbd, character.state())
    print(f"kinetic energy after the first frame: {jump:.3g} J from rest, {calm:.3g} J settled")
    assert calm < 1e-2 * jump
