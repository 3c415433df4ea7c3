"""Joint volume (core/skin/joint_volume.py, kernels/joint_volume.py) on a closed tube with a joint in its middle: the
cone sum is the enclosed volume (closed form), its gradient matches finite differences, the restore gives the lost
volume back and leaves alone what it must (outside the region, the crease, pinned borders, a straight joint, a
gain), kernel vs numpy reference, settings checked."""
import dataclasses

import numpy as np
import pytest

from implicit_muscles.core.skin import joint_volume as jv
from implicit_muscles.core.skin.mesh_rings import cotangent_rings
from implicit_muscles.scenes.paper import rotation_about
from implicit_muscles.core.skin.skinning import lbs_reference, influences
from implicit_muscles.core.skin.tracking import STATE_CONTACT, TrackingSettings
from implicit_muscles.kernels.joint_volume import VolumeMesh, VolumeParams, VolumeScratch, restore

RADIUS, LENGTH, AROUND, RINGS = 0.05, 0.4, 24, 41
KERNEL_TOL = 1e-12
"""Kernel vs numpy reference [m]: the same sums in another order."""
VOLUME_REL_TOL = 1e-12
"""Cone sum vs the closed form, relative (round-off only)."""


def _tube():
    """Closed tube along x (``RINGS`` rings of ``AROUND`` vertices, a fan at each end), a joint at x = 0.2 and
    weights blending over 3 cm either side: ``(vertices, faces, weights, labels, heads, tails, parents)``."""
    xs = np.linspace(0.0, LENGTH, RINGS)
    phi = 2.0 * np.pi * np.arange(AROUND) / AROUND
    ring = np.stack([np.zeros(AROUND), RADIUS * np.cos(phi), RADIUS * np.sin(phi)], axis=1)
    v = np.concatenate([ring + [x, 0.0, 0.0] for x in xs] + [[[0.0, 0.0, 0.0]], [[LENGTH, 0.0, 0.0]]])
    f = []
    for i in range(RINGS - 1):
        for k in range(AROUND):
            a, b = i * AROUND + k, i * AROUND + (k + 1) % AROUND
            f += [[a, b, b + AROUND], [a, b + AROUND, a + AROUND]]
    first, last = RINGS * AROUND, RINGS * AROUND + 1
    for k in range(AROUND):
        f += [[first, (k + 1) % AROUND, k], [last, (RINGS - 1) * AROUND + k, (RINGS - 1) * AROUND + (k + 1) % AROUND]]
    s = np.clip((v[:, 0] - 0.17) / 0.06, 0.0, 1.0)
    w1 = s * s * (3.0 - 2.0 * s)
    weights = np.stack([1.0 - w1, w1], axis=1)
    heads = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0]])
    tails = np.array([[0.2, 0.0, 0.0], [0.4, 0.0, 0.0]])
    return v, np.array(f, dtype=np.int64), weights, np.argmax(weights, axis=1), heads, tails, np.array([-1, 0])


@pytest.fixture(scope="module")
def tube():
    v, f, w, labels, heads, tails, parents = _tube()
    regions = jv.bind_joint_regions(v, f, w, labels, heads, tails, parents)
    return dict(v=v, f=f, w=w, labels=labels, regions=regions, rings=cotangent_rings(v, f),
                influences=influences(w, labels))


def _bent(tube, degrees):
    """Linear blend skinning of the tube bent about z at the joint (it loses volume on the inner side)."""
    B = np.stack([np.eye(4), rotation_about((0.0, 0.0, 1.0), np.radians(degrees), (0.2, 0.0, 0.0))])
    return lbs_reference(tube["v"], tube["influences"], B), B


def _restore_kernel(tube, x, B, contact, pinned, gap=2, rings=5):
    r = tube["regions"]
    y = np.array(x, dtype=np.float64)
    state = np.where(contact, STATE_CONTACT, 0).astype(np.int8)
    V = len(y)
    deficits = np.zeros(r.count)
    mesh = VolumeMesh(faces=tube["f"], ring_start=tube["rings"].start, ring_neighbour=tube["rings"].neighbour,
                      pinned=np.asarray(pinned, dtype=np.bool_))
    params = VolumeParams(full_bend=float(jv.FULL_BEND), gap=int(gap), rings=int(rings),
                          volume_tol=float(jv.VOLUME_TOL), newton_steps=int(jv.NEWTON_STEPS),
                          newton_tol=float(jv.NEWTON_TOL))
    scratch = VolumeScratch(dist=np.empty(V, dtype=np.int64), normal=np.empty((V, 3)), grad=np.zeros((V, 3)))
    restore(y, B, state, mesh, r.kernel_arrays(), params, scratch, deficits)
    return y, deficits


def test_one_joint_with_its_radius_and_region(tube):
    r = tube["regions"]
    assert r.count == 1 and r.bones[0] == 1 and r.parent_bones[0] == 0
    assert abs(r.radii[0] - RADIUS) < 1e-12  # the tube's radius, measured over the forearm's first 30 %
    inside = r.vertices[r.vertex_start[0]:r.vertex_start[1]]
    assert np.all(np.linalg.norm(tube["v"][inside] - [0.2, 0.0, 0.0], axis=1) < 2.5 * RADIUS)


def test_cone_sum_over_a_closed_surface_is_its_enclosed_volume(tube):
    """All the tube's faces: the cone sum is the prism's volume ``n/2 r^2 sin(2 pi / n) L`` whatever the centre,
    and a rigid motion of the whole rig leaves it unchanged."""
    F = len(tube["f"])
    whole = dataclasses.replace(tube["regions"], face_start=np.array([0, F]), faces=np.arange(F))
    exact = 0.5 * AROUND * RADIUS ** 2 * np.sin(2.0 * np.pi / AROUND) * LENGTH
    identity = np.stack([np.eye(4)] * 2)
    assert abs(jv.region_volume(tube["v"], tube["f"], whole, 0, identity) - exact) < VOLUME_REL_TOL * exact
    moved = dataclasses.replace(whole, centres=np.array([[0.7, -0.3, 0.2]]))
    assert abs(jv.region_volume(tube["v"], tube["f"], moved, 0, identity) - exact) < VOLUME_REL_TOL * exact
    T = rotation_about((0.3, 1.0, -0.2), 0.8, (0.1, 0.0, 0.2))
    T[:3, 3] += [0.4, -0.3, 1.2]
    x = tube["v"] @ T[:3, :3].T + T[:3, 3]
    for regions in (whole, tube["regions"]):
        rest = jv.region_volume(tube["v"], tube["f"], regions, 0, identity)
        assert abs(jv.region_volume(x, tube["f"], regions, 0, np.stack([T, T])) - rest) < VOLUME_REL_TOL * abs(rest)


def test_volume_gradient_matches_finite_differences(tube):
    x, B = _bent(tube, 60.0)
    g = jv.region_volume_gradient(x, tube["f"], tube["regions"], 0, B)
    h = 1e-6
    rng = np.random.default_rng(0)
    inside = tube["regions"].vertices
    for v in rng.choice(inside, 25, replace=False):
        for c in range(3):
            xp, xm = x.copy(), x.copy()
            xp[v, c] += h
            xm[v, c] -= h
            fd = (jv.region_volume(xp, tube["f"], tube["regions"], 0, B)
                  - jv.region_volume(xm, tube["f"], tube["regions"], 0, B)) / (2 * h)
            assert abs(fd - g[v, c]) < 1e-7 * np.abs(g).max()


def test_restore_gives_back_the_lost_volume_and_leaves_the_rest(tube):
    x, B = _bent(tube, 60.0)
    r = tube["regions"]
    rest = r.rest_volume[0]
    lost = rest - jv.region_volume(x, tube["f"], r, 0, B)
    assert lost > 0.005 * rest  # linear blend loses volume at a bend
    v = tube["v"]
    contact = (np.abs(v[:, 0] - 0.2) < 0.011) & (v[:, 1] > 0.045)  # the inner side of the bend, at the joint
    pinned = np.zeros(len(v), dtype=bool)
    pinned[np.flatnonzero((np.abs(v[:, 0] - 0.25) < 0.005) & (v[:, 1] < -0.045))[:1]] = True
    y, deficits = jv.restore_reference(x, tube["f"], r, B, contact, tube["rings"].start, tube["rings"].neighbour,
                                       pinned, 2, 5)
    assert abs(deficits[0] - lost) < 1e-15
    assert abs(jv.region_volume(y, tube["f"], r, 0, B) - rest) < jv.NEWTON_TOL * rest
    move = np.linalg.norm(y - x, axis=1)
    assert move.max() < jv.MAX_BULGE * r.radii[0]
    near = jv.contact_rings(contact, tube["rings"].start, tube["rings"].neighbour, 5) <= 2
    outside = np.ones(len(v), dtype=bool)
    outside[r.vertices] = False
    assert np.all(move[near | pinned | outside] == 0.0)
    assert move.max() > 0.0
    n = jv.vertex_normals_on(x, tube["f"], r, 0)
    moved = move > 0.0
    assert np.all(np.einsum("ij,ij->i", y[moved] - x[moved], n[moved]) > 0.0)  # outwards, along the normal


def test_kernel_matches_numpy_reference(tube):
    x, B = _bent(tube, 75.0)
    v = tube["v"]
    contact = (np.abs(v[:, 0] - 0.2) < 0.011) & (v[:, 1] > 0.045)
    pinned = np.zeros(len(v), dtype=bool)
    pinned[::37] = True
    ref, ref_deficits = jv.restore_reference(x, tube["f"], tube["regions"], B, contact, tube["rings"].start,
                                             tube["rings"].neighbour, pinned, 1, 4)
    y, deficits = _restore_kernel(tube, x, B, contact, pinned, 1, 4)
    assert np.abs(y - ref).max() < KERNEL_TOL
    assert np.abs(deficits - ref_deficits).max() < 1e-15
    assert np.abs(y - x).max() > 1e-4


def test_nothing_moves_at_rest_under_rigid_motion_at_a_straight_joint_or_after_a_gain(tube):
    v, f = tube["v"], tube["f"]
    none = np.zeros(len(v), dtype=bool)
    T = rotation_about((0.3, 1.0, -0.2), 0.8, (0.1, 0.0, 0.2))
    T[:3, 3] += [0.4, -0.3, 1.2]
    rigid = v @ T[:3, :3].T + T[:3, 3]
    thin = v * [1.0, 0.98, 0.98]  # straight, 4 % of the volume lost: not to a bend, nothing to give back
    bent, B = _bent(tube, 60.0)
    fat = bent + 0.002 * jv.vertex_normals_on(bent, f, tube["regions"], 0)  # bent, but more volume than at rest
    identity = np.stack([np.eye(4)] * 2)
    for x, transforms in ((v, identity), (rigid, np.stack([T, T])), (thin, identity), (fat, B)):
        y, deficits = _restore_kernel(tube, x, transforms, none, none)
        assert np.array_equal(y, x)
        assert np.all(deficits == 0.0)


def test_bend_share_is_a_smoothstep_to_full_bend():
    B = np.stack([np.eye(4)] * 2)
    for degrees, share in ((0.0, 0.0), (10.0, 0.5), (20.0, 1.0), (90.0, 1.0)):
        B[1] = rotation_about((0.0, 1.0, 0.0), np.radians(degrees), (0.0, 0.0, 0.0))
        assert abs(jv.bend_share(B, 1, 0) - share) < 1e-9


@pytest.mark.parametrize("bad", [dict(volume_region=0.2), dict(volume_gap=5, volume_rings=5), dict(volume_rings=-1),
                                 dict(volume_gap=1.5)])
def test_bad_volume_settings_are_refused_with_a_sentence(bad):
    with pytest.raises(ValueError, match="volume"):
        TrackingSettings(**bad).validated()
