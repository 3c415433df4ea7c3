"""The fat primitive's particle (thesis ch. 6, Fig. 6.13): rest stays at rest, stiffness is a natural frequency,
jiggle ordered by stiffness, the volume constant while it jiggles, bone collisions, kernel against reference."""
import math

import numpy as np
import pytest

from implicit_muscles.core.fat import FatPrimitive
from implicit_muscles.core.fat.batch import FatBatch
from implicit_muscles.core.fat.dynamics import (FatControl, FatSolver, build_fat_model, step_reference,
                                                stiffness_frequency)

DT = 1.0 / 24.0
KERNEL_TOL = 1e-9
"""Kernel vs numpy reference after 48 frames of shaking, positions [m] (same steps, different order)."""
FREQUENCY_TOL = 0.03
"""Measured period of an undamped fat against ``1 / stiffness_frequency``, relative (sub-stepping error)."""
VOLUME_TOL = 0.01
"""The volume of ``f < 0`` by quadrature (a 100^3 grid) against ``4/3 pi a b c``, relative."""

# a belly on a spine bone along z, 0.1 m in front of it (y); capsule 0 is the spine
SPINE = np.array([[[0.0, 0.0, 0.9], [0.0, 0.0, 1.3]]])


def _belly(**kw):
    return FatPrimitive(center=(0.0, -0.12, 1.05), axes=(0.12, 0.06, 0.1), name="belly", **kw)


def _translation(offset):
    B = np.eye(4)[None].copy()
    B[0, :3, 3] = offset
    return B


def _run(model, motion, stiffness, damping, frames, solver=None, reference=False):
    """Centres ``(frames, F, 3)`` of the fats with the bone moved by ``motion(frame) -> (3,)``."""
    solver = solver or FatSolver(model)
    state = model.rest_state()
    nxt = state.copy()
    out = []
    for frame in range(1, frames + 1):
        control = FatControl.of(model, _translation(motion(frame)), stiffness, damping)
        if reference:
            state = step_reference(model, state, control, DT)
        else:
            solver.step(state, nxt, control, DT)
            state, nxt = nxt, state
        out.append(state.x.copy())
    return np.array(out), state


def test_rest_stays_at_rest():
    model = build_fat_model([_belly()], [0], SPINE, [0.03])
    xs, state = _run(model, lambda f: (0.0, 0.0, 0.0), 0.2, 0.0, 200)
    np.testing.assert_array_equal(xs[-1], model.center)
    assert not state.v.any()
    # carried by a bone moving at constant velocity, it moves with it after the start (relative damping)
    xs, _ = _run(model, lambda f: (0.0, 0.0, 0.01 * f), 0.5, 0.5, 200)
    assert np.abs(xs[-1] - model.center - (0.0, 0.0, 2.0)).max() < 1e-4


@pytest.mark.parametrize("stiffness", [0.0, 0.5, 1.0])
def test_stiffness_is_a_natural_frequency_whatever_the_size(stiffness):
    for scale in (0.5, 2.0):
        fat = FatPrimitive(center=(0.0, -0.12, 1.05), axes=(0.12 * scale, 0.06, 0.1), stiffness=stiffness)
        model = build_fat_model([fat], [0])
        state = model.rest_state()
        state.x[0, 1] += 0.002                  # let go 2 mm from rest, undamped
        nxt, solver = state.copy(), FatSolver(model)
        control = FatControl.of(model, np.eye(4)[None], stiffness, 0.0)
        frames = int(6 * 24 / stiffness_frequency(stiffness)) + 2
        y = []
        for _ in range(frames):
            solver.step(state, nxt, control, DT)
            state, nxt = nxt, state
            y.append(state.x[0, 1] - fat.center[1])
        y = np.array(y)
        up = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0))
        t = up + y[up] / (y[up] - y[up + 1])   # linear interpolation of the upward zero crossings [frames]
        period = np.mean(np.diff(t)) * DT
        assert period == pytest.approx(1.0 / stiffness_frequency(stiffness), rel=FREQUENCY_TOL)
        assert np.abs(y).max() < 0.0021        # undamped: no energy gained


def test_jiggle_amplitude_is_ordered_by_stiffness():
    """The bone jerked 2 cm in two frames then held: the looser the fat, the wider it swings about its bone
    afterwards, and the longer it keeps moving (a shake instead would resonate with one stiffness). The swings stay
    within the fat's travel (3 cm), where the springs alone decide."""
    model = build_fat_model([_belly()], [0])
    jerk = lambda f: (0.0, 0.02 * min(f, 2) / 2, 0.0)  # noqa: E731
    swing, late = [], []
    for stiffness in (0.0, 0.25, 0.5, 0.75, 1.0):
        xs, _ = _run(model, jerk, stiffness, 0.1, 48)
        bone = np.array([jerk(f) for f in range(1, 49)])
        rel = np.linalg.norm(xs[:, 0] - model.center[0] - bone, axis=1)
        swing.append(rel[2:].max())
        late.append(rel[24:].max())
    assert all(a > b for a, b in zip(swing, swing[1:])), swing
    assert all(a > b for a, b in zip(late, late[1:])), late
    assert 0.5 * 0.06 > swing[0] > 0.015 and swing[-1] < 0.008 and late[-1] < 4e-4


def test_volume_constant_while_it_jiggles():
    fat = _belly()
    model = build_fat_model([fat], [0])
    n = 100
    half = 0.2
    ticks = (np.arange(n) + 0.5) / n * 2 * half - half
    grid = np.stack(np.meshgrid(ticks, ticks, ticks, indexing="ij"), axis=-1).reshape(-1, 3)
    from implicit_muscles.kernels.fat import fat_field

    solver = FatSolver(model)
    state = model.rest_state()
    nxt = state.copy()
    volumes = []
    for frame in range(1, 25):
        angle = 0.6 * math.sin(2 * math.pi * 2 * frame * DT)
        B = np.eye(4)[None].copy()
        B[0, :3, :3] = [[math.cos(angle), -math.sin(angle), 0], [math.sin(angle), math.cos(angle), 0], [0, 0, 1]]
        B[0, :3, 3] = (0.05 * math.sin(frame), 0.0, 0.0)
        solver.step(state, nxt, FatControl.of(model, B, 0.1, 0.05), DT)
        state, nxt = nxt, state
        batch = FatBatch(state.x, state.frame, model.axes)
        assert np.linalg.norm(batch.center[0] - (B[0, :3, :3] @ fat.center + B[0, :3, 3])) > 1e-3 or frame < 3
        f, g = np.empty(len(grid)), np.empty((len(grid), 3))
        fat_field(grid + batch.center[0], batch.center[0], batch.frame[0], batch.axes[0], f, g)
        volumes.append(np.count_nonzero(f < 0) * (2 * half / n) ** 3)
    np.testing.assert_allclose(volumes, fat.volume, rtol=VOLUME_TOL)


def test_bone_collisions_keep_the_ellipsoid_off_the_capsule():
    """The bone jerked towards the fat: without collisions its centre swings into the bone's capsule; with them the
    ellipsoid stays out (its extent towards the capsule plus the radius, or its rest distance if smaller). A 5 cm
    capsule: the centre's travel (3 cm) alone would keep it clear of a thinner one."""
    fat = _belly(stiffness=0.0)
    shove = lambda f: (0.0, -0.1 * min(f, 3) / 3, 0.0)  # noqa: E731  # 10 cm in 3 frames, towards the belly
    gaps = {}
    for collide in (False, True):
        model = build_fat_model([fat], [0], SPINE, [0.05], collide_bones=[collide])
        xs, _ = _run(model, shove, 0.0, 0.0, 12)
        d = np.array([np.linalg.norm((x[0] - shove(f + 1) - fat.center)[:2] + fat.center[:2])
                      for f, x in enumerate(xs)])
        gaps[collide] = d
    allowed = min(0.05 + 0.06, 0.12)
    assert gaps[False].min() < allowed - 0.015
    assert gaps[True].min() > allowed - 1e-9


def _hop(frame, speed=3.0, g=9.81):
    """A bone hopping straight up from the floor at ``speed`` [m/s] each time it lands, as a jump's pelvis does
    (0.46 m high, 0.61 s in the air): its offset ``(3,)`` [m] at ``frame``, after 6 frames standing."""
    t = max(frame - 6, 0) * DT % (2 * speed / g)
    return (0.0, 0.0, speed * t - 0.5 * g * t * t)


def test_a_hopping_fat_stays_within_its_travel_and_jiggles_after_each_landing():
    """Soft springs on a hopping bone: without the travel the belly (1 Hz) would trail its bone by tens of
    centimetres, out through the skin; with it the centre stays within the travel (half its smallest semi-axis) of
    where the bone carries it, and still swings after the landings. Kernel and reference agree at the limit."""
    fat = _belly(stiffness=0.25, damping=0.1)
    model = build_fat_model([fat], [0], SPINE, [0.03])
    travel = 0.5 * fat.axes.min()
    xs, _ = _run(model, _hop, 0.25, 0.1, 72)
    carried = model.center[0] + np.array([_hop(f) for f in range(1, 73)])
    away = np.linalg.norm(xs[:, 0] - carried, axis=1)
    print(f"largest distance from where the bone carries it: {1e3 * away.max():.1f} mm")
    assert away.max() <= travel + 1e-12
    # it does reach its travel: the test exercises the limit
    assert model.travel[0] == pytest.approx(travel) and away.max() > 0.9 * travel
    # after a landing it keeps moving about its bone: not stuck at the limit, not still
    landing = int(round(6 + 2 * 3.0 / 9.81 / DT))
    after = away[landing:landing + 12]
    assert after.max() - after.min() > 0.005
    ref, _ = _run(model, _hop, 0.25, 0.1, 72, reference=True)
    np.testing.assert_allclose(xs, ref, atol=KERNEL_TOL)


def test_at_its_travel_a_fat_moves_with_its_bone_and_does_not_slide_along_it():
    """A fat sent out past its travel with a sideways velocity, its bone still: the stop takes all its velocity
    relative to the bone, so it does not slide round its travel's sphere (where it would pass the skin's side and
    bump it for a frame); the springs then pull it straight back. Kernel and reference alike."""
    fat = _belly(stiffness=0.25, damping=0.0)
    model = build_fat_model([fat], [0])
    e = np.array([0.0, -1.0, 0.0])
    for reference in (False, True):
        state = model.rest_state()
        state.x[0] = model.center[0] + 1.5 * model.travel[0] * e
        state.v[0] = (0.0, -0.3, 0.6)                      # outward and sideways [m/s]
        control = FatControl.of(model, _translation((0.0, 0.0, 0.0)), 0.25, 0.0)
        if reference:
            out = step_reference(model, state, control, DT)
        else:
            out = state.copy()
            FatSolver(model).step(state, out, control, DT)
        offset = out.x[0] - model.center[0]
        side = offset / np.linalg.norm(offset)
        # it went sideways only in the first substep, before the stop (0.6 m/s for a quarter of the frame) ...
        assert np.linalg.norm(offset - (offset @ e) * e) <= 0.6 * DT / 4 + 1e-12
        # ... and after the frame it moves back towards where its bone carries it, not round the sphere
        assert out.v[0] @ side < 0.0
        assert np.linalg.norm(out.v[0] - (out.v[0] @ side) * side) < 0.1 * np.linalg.norm(out.v[0])


def test_kernel_matches_reference_and_never_writes_its_input():
    fats = [_belly(), FatPrimitive(center=(0.1, 0.1, 0.9), axes=(0.05, 0.08, 0.05), name="buttock")]
    model = build_fat_model(fats, [0, 0], SPINE, [0.03])
    motion = lambda f: (0.03 * math.sin(f / 2), -0.05 * math.sin(f / 3), 0.0)  # noqa: E731
    for s in (0.05, 0.9):
        a, _ = _run(model, motion, [s, 0.5], [0.2, 0.0], 48)
        b, _ = _run(model, motion, [s, 0.5], [0.2, 0.0], 48, reference=True)
        np.testing.assert_allclose(a, b, atol=KERNEL_TOL)
    state = model.rest_state()
    state.v[:] = 0.1
    before = state.copy()
    FatSolver(model).step(state, state.copy(), FatControl.of(model, _translation((0.0, 0.1, 0.0)), 0.3, 0.1), DT)
    for name in ("x", "v", "anchors", "capsules", "frame"):
        np.testing.assert_array_equal(getattr(state, name), getattr(before, name))


def test_bad_controls_are_refused_with_a_sentence():
    model = build_fat_model([_belly()], [0])
    with pytest.raises(ValueError, match="fat belly: stiffness must be from 0 to 1, got 2"):
        FatControl.of(model, np.eye(4)[None], 2.0, 0.1)
    with pytest.raises(ValueError, match="damping must be from 0 to 1"):
        FatControl.of(model, np.eye(4)[None], 0.2, np.nan)
    with pytest.raises(ValueError, match="one bone per fat"):
        build_fat_model([_belly()], [0, 1])
