"""Rods pushed by other muscles and bundles of rods (``core/rod/contacts.py``, kernels/rod.py
``_muscle_contacts``): closest points of two segments against a plain reference, who touches whom, a rod pressed by
an axis muscle's chain, two rods crossing, a bundle of three rods pressed together, determinism."""
import numpy as np
import pytest

from implicit_muscles.core.muscle.primitive import FusiformMuscle
from implicit_muscles.core.pbd.control import PBDControl
from implicit_muscles.core.rod.contacts import clearance, closest_parameters, muscle_touches
from implicit_muscles.core.rod.model import build_rod_model
from implicit_muscles.core.rod.settings import RodSettings
from implicit_muscles.core.rod.solver import RodChains, RodSolver
from implicit_muscles.core.rod.state import RodState

LENGTH, WIDTH = 0.3, 0.03
PAIR_TOL = 1e-9
"""[m] Distance between the closest points of two segments, kernel against the plain reference."""
PASS_TOL = 0.002
"""[m] Largest overlap of two rods pressed together (each takes a share of a contact's correction per substep, and
its elasticity answers before the next: a press leaves a small overlap; docs/design-notes.md, *Muscle contacts
and bundles*)."""
CHAIN_TOL = 0.006
"""[m] Largest overlap of a rod and an axis muscle's chain that does not yield, pressed 5.7 cm into it (the rod
takes its half of the contact mostly before its elastic solve, which takes some of it back; an axis muscle in a
character yields, taking the other half itself; docs/design-notes.md#muscle-contacts-and-bundles)."""
FREE_OVERLAP = 0.01
"""[m] Least overlap of two rods of one overlap group pushed through each other (they ignore each other)."""
VOLUME_TOL = 0.03
"""Each fibre's rod volume against its rest while its bundle is pressed."""
SLIDE_TOL = 0.001
"""[m] A fibre of a frictionless bundle slid along its neighbours against the same fibre alone."""


def rod_muscle(a, b, name, particles=14, width=WIDTH, normal=(1, 0, 0)):
    return FusiformMuscle(a, b, width=width, particles=particles, origin_normal=normal, insertion_normal=normal,
                          name=name)


def run(model, controls, chains=None, state=None):
    """Step ``model`` through ``controls`` (one per frame at 24 fps); ``chains(frame)``: the axis chains of each
    frame. Returns the states after each frame."""
    solver = RodSolver(model)
    state = state or RodState.at_rest(model)
    nxt = state.copy()
    out = []
    for f, control in enumerate(controls):
        solver.step(state, nxt, control, 1 / 24, chains=None if chains is None else chains(f))
        state, nxt = nxt, state
        out.append(state.copy())
    return out


def rod_rows(model, state, i):
    a, b = model.axis_start[i], model.axis_start[i + 1]
    return state.x[a:b], model.rest_radius[a:b] * state.s[a:b]


@pytest.mark.parametrize("case", range(40))
def test_closest_points_of_two_segments_match_the_reference(case):
    from implicit_muscles.kernels.rod import segment_pair

    rng = np.random.default_rng(case)
    a, b, c, d = rng.normal(0, 0.05, (4, 3))
    if case % 4 == 1:  # parallel
        d = c + 0.7 * (b - a)
    elif case % 4 == 2:  # a point against a segment
        d = c.copy()
    elif case % 4 == 3:  # collinear, overlapping
        c, d = a + 0.3 * (b - a), a + 1.6 * (b - a)
    t, u = segment_pair(*a, *b, *c, *d)
    t_ref, u_ref = closest_parameters(a, b, c, d)
    assert 0.0 <= t <= 1.0 and 0.0 <= u <= 1.0
    gap = np.linalg.norm(a + t * (b - a) - c - u * (d - c))
    gap_ref = np.linalg.norm(a + t_ref * (b - a) - c - u_ref * (d - c))
    assert gap == pytest.approx(gap_ref, abs=PAIR_TOL)


def test_who_touches_whom():
    rod = [True, True, False, True]
    # one contact set; 0, 1 one overlap group and one bundle; 2 an axis muscle of that group; 3 no group
    touches, chain_rod = muscle_touches(rod, [0, 0, 0, 0], [5, 5, 5, None], [7, 7, 7, None])
    assert chain_rod.tolist() == [0, 1, -1, 2]
    assert touches == [[(1, True), (3, False)], [(0, True), (3, False)], [(0, False), (1, False), (2, False)]]
    # without the bundle the fibres overlap freely; the axis muscle of the group never pushes them
    touches, _ = muscle_touches(rod, [0, 0, 0, 0], [5, 5, 5, None], None)
    assert touches == [[(3, False)], [(3, False)], [(0, False), (1, False), (2, False)]]
    # another contact set, or a muscle with its muscle collisions off (no set): nothing
    touches, _ = muscle_touches(rod, [0, 1, 0, None], None, None)
    assert touches == [[(2, False)], [], []]
    with pytest.raises(ValueError, match="one entry per muscle"):
        muscle_touches(rod, [0, 0])


def _pressed_by_a_chain(swap=False):
    """A rod along z (4.7 cm thick at the belly) and an axis muscle's chain (12 particles of radius 1 cm, across
    x) from just clear of it at +y pressed 5.7 cm towards it over 24 frames, onto its axis, then held."""
    model = build_rod_model([rod_muscle((0, 0, 0), (0, 0, LENGTH), "rod")],
                            touches=[[(1, False)]], chain_rod=[0, -1])
    n = model.vertex_count
    chain_x = np.stack([np.linspace(-0.1, 0.1, 12), np.zeros(12), np.full(12, 0.15)], 1)
    radius = np.full(12, 0.01)

    def at(f):
        y = 0.057 - 0.057 * min(f / 24, 1.0)
        return chain_x + [0, y, 0]

    def chains(f):
        return RodChains(np.array([0, n, n + 12]), np.concatenate([np.zeros((n, 3)), at(f - 1)]),
                         np.concatenate([np.zeros((n, 3)), at(f)]), np.concatenate([np.zeros(n), radius]))

    states = run(model, [PBDControl()] * 40, chains)
    return model, states, at, radius


def test_a_rod_pressed_by_an_axis_muscle_moves_away_and_does_not_pass_through():
    model, states, at, radius = _pressed_by_a_chain()
    mid = model.vertex_count // 2
    for f, state in enumerate(states):
        x, r = rod_rows(model, state, 0)
        gap = min(clearance(x, r, p[None], [rr]) for p, rr in zip(at(f), radius))
        assert gap > -CHAIN_TOL, f
        assert state.x[mid, 1] < at(f)[0, 1]  # still on its side of the chain
    assert states[-1].x[mid, 1] < -0.045  # pushed away by about its radius and the chain's
    assert np.all(np.isfinite(states[-1].x))
    volume = model.rod_volume(states[-1].x, states[-1].s)
    assert volume[0] == pytest.approx(model.rod_volume(model.rest_points, np.ones(model.vertex_count))[0],
                                      rel=VOLUME_TOL)


def _crossing(overlap_groups=None, order=(0, 1)):
    """Rod ``a`` along z; rod ``b`` along x across its middle, 6 cm in front (+y; both 2.3 cm thick at the belly),
    its ends pulled 10 cm to -y over 24 frames (through ``a`` if nothing stops it)."""
    muscles = [rod_muscle((0, 0, 0), (0, 0, LENGTH), "a", width=0.015),
               rod_muscle((-0.15, 0.06, 0.15), (0.15, 0.06, 0.15), "b", width=0.015, normal=(0, 1, 0))]
    muscles = [muscles[i] for i in order]
    groups = None if overlap_groups is None else [overlap_groups[i] for i in order]
    touches, chain_rod = muscle_touches([True, True], [0, 0], groups)
    model = build_rod_model(muscles, touches=touches, chain_rod=chain_rod)
    rest = RodState.at_rest(model)
    ib = order.index(1)

    def control(f):
        ends = rest.endpoints.copy()
        ends[ib, :, 1] -= 0.1 * min(f / 24, 1.0)
        return PBDControl(endpoints=ends)

    return model, run(model, [control(f) for f in range(1, 41)]), order.index(0), ib


def test_two_rods_crossing_do_not_pass_through():
    model, states, ia, ib = _crossing()
    for f, state in enumerate(states):
        gap = clearance(*rod_rows(model, state, ia), *rod_rows(model, state, ib))
        assert gap > -PASS_TOL, f
    x_a, _ = rod_rows(model, states[-1], ia)
    x_b, _ = rod_rows(model, states[-1], ib)
    assert x_b[len(x_b) // 2, 1] > x_a[len(x_a) // 2, 1]  # b is still in front of a
    assert x_a[len(x_a) // 2, 1] < -0.01  # a was pushed back: the contact is two-way
    assert np.all(np.isfinite(states[-1].x))


def test_two_rods_of_one_overlap_group_pass_through_each_other():
    model, states, ia, ib = _crossing(overlap_groups=[3, 3])
    assert model.touch_chain.size == 0
    gaps = [clearance(*rod_rows(model, state, ia), *rod_rows(model, state, ib)) for state in states]
    assert min(gaps) < -FREE_OVERLAP
    x_a, _ = rod_rows(model, states[-1], ia)
    x_b, _ = rod_rows(model, states[-1], ib)
    assert x_b[len(x_b) // 2, 1] < x_a[len(x_a) // 2, 1]  # b went through to behind a
    assert np.abs(x_a - model.rest_points[model.axis_start[ia]:model.axis_start[ia + 1]]).max() < 1e-12


def test_contacts_are_deterministic_and_do_not_depend_on_the_rods_order():
    model, first, ia, ib = _crossing()
    _, again, _, _ = _crossing()
    assert all(np.array_equal(p.x, q.x) and np.array_equal(p.s, q.s) for p, q in zip(first, again))
    swapped, other, ja, jb = _crossing(order=(1, 0))
    for p, q in zip(first, other):
        assert np.array_equal(rod_rows(model, p, ia)[0], rod_rows(swapped, q, ja)[0])
        assert np.array_equal(rod_rows(model, p, ib)[0], rod_rows(swapped, q, jb)[0])


def _bundle(friction=0.0, slide=0.0, bundled=True, fibres=(0, 1, 2)):
    """Three fibres along z, 5 cm apart (2.3 cm radius at the belly: 3 mm apart), one overlap group and one
    bundle; the outer fibres' ends pressed 2 cm inwards over 12 frames (their chords 1.7 cm into the middle
    fibre's belly), then the middle fibre's ends slid ``slide`` [m] along z over 12 frames. Returns the model and
    the states."""
    xs = (-0.05, 0.0, 0.05)
    muscles = [rod_muscle((xs[i], 0, 0), (xs[i], 0, LENGTH), f"f{i}", width=0.015) for i in fibres]
    count = len(muscles)
    touches, chain_rod = muscle_touches([True] * count, [0] * count, [1] * count,
                                        [2] * count if bundled else None)
    model = build_rod_model(muscles, RodSettings(contact_friction=friction), touches=touches, chain_rod=chain_rod)
    rest = RodState.at_rest(model)
    mid = list(fibres).index(1) if 1 in fibres else None

    def control(f):
        ends = rest.endpoints.copy()
        for i, fibre in enumerate(fibres):
            if fibre != 1:
                ends[i, :, 0] -= np.sign(xs[fibre]) * 0.02 * min(f / 12, 1.0)
        if mid is not None:
            ends[mid, :, 2] += slide * min(max(f - 12, 0) / 12, 1.0)
        return PBDControl(endpoints=ends)

    return model, run(model, [control(f) for f in range(1, 37)])


def test_a_bundle_keeps_its_fibres_apart_and_their_volume():
    model, states = _bundle()
    rest = model.rod_volume(model.rest_points, np.ones(model.vertex_count))
    for f, state in enumerate(states):
        for i, j in ((0, 1), (1, 2)):
            assert clearance(*rod_rows(model, state, i), *rod_rows(model, state, j)) > -PASS_TOL, (f, i, j)
        assert np.abs(model.rod_volume(state.x, state.s) / rest - 1.0).max() < VOLUME_TOL, f
    # pressed: the outer fibres' bellies are held off the middle one, which they would otherwise overlap by 1.7 cm
    free_model, free = _bundle(bundled=False)
    assert clearance(*rod_rows(free_model, free[-1], 0), *rod_rows(free_model, free[-1], 1)) < -FREE_OVERLAP


def _belly(x):
    """z [m] of the rod rows ``x (n, 3)``'s middle vertex."""
    return x[len(x) // 2, 2]


def test_a_bundle_slides_lengthwise_without_friction_unless_the_rig_says_so():
    """The middle fibre, pressed between the outer two, slid 3 cm along them over frames 13-24: its belly moves as
    the same fibre alone on every frame; with the rig's friction (Coulomb 1) its neighbours hold it back while it
    slides (by up to about 3 mm), and its own stretch pulls it after its ends once they stop."""
    def belly_z(model, states, i):
        return np.array([_belly(rod_rows(model, state, i)[0]) for state in states])

    model, states = _bundle(slide=0.03)
    alone_model, alone = _bundle(slide=0.03, fibres=(1,))
    sticky_model, sticky = _bundle(slide=0.03, friction=1.0)
    free, sticky_z = belly_z(model, states, 1), belly_z(sticky_model, sticky, 1)
    np.testing.assert_allclose(free, belly_z(alone_model, alone, 0), atol=SLIDE_TOL)
    assert free[-1] - free[0] > 0.02
    sliding = slice(12, 24)
    assert (free - sticky_z)[sliding].max() > 2 * SLIDE_TOL
    assert sticky_z[-1] == pytest.approx(free[-1], abs=SLIDE_TOL)
