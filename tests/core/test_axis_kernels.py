"""Axis geometry and profile-scalar kernels vs the numpy reference in core/muscle/axis.py and core/muscle/profile.py."""
import numpy as np
import pytest

from implicit_muscles.core.muscle import profile
from implicit_muscles.core.muscle.axis import axis_geometry
from implicit_muscles.core.muscle.primitive import FusiformMuscle, MuscleShape
from implicit_muscles.core.muscle.batch import pack_muscles

from core_scenes import LENGTH, WIDTH, bent_muscle, twisted_muscle

GEOMETRY_TOL = 1e-12
"""Kernel vs reference for arc lengths [m], unit tangents and normals, angles [rad]."""


def _collapsed():
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=6)
    axis = m.axis
    axis[3] = axis[2]  # a collapsed segment, as PBD can produce
    m.set_axis(axis)
    return m


def _antipodal():
    return FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=8,
                          origin_normal=(1, 0, 0), insertion_normal=(-1, 0, 0))


def _zigzag():
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=10, origin_normal=(0, 1, 0))
    rng = np.random.default_rng(2)
    axis = m.axis
    axis[1:-1] += rng.normal(scale=0.02, size=axis[1:-1].shape)
    m.set_axis(axis)
    return m


CASES = [bent_muscle, twisted_muscle, _collapsed, _antipodal, _zigzag]


def test_axis_kernel_matches_reference():
    muscles = [case() for case in CASES]
    batch = pack_muscles(muscles)
    for m, muscle in enumerate(muscles):
        a, b = batch.axis_start[m], batch.axis_start[m + 1]
        ref = axis_geometry(muscle.axis, muscle.origin_normal, muscle.insertion_normal)
        np.testing.assert_allclose(batch.axis_cumulative[a:b], ref.cumulative, atol=GEOMETRY_TOL)
        np.testing.assert_allclose(batch.axis_tangent[a:b], ref.tangents, atol=GEOMETRY_TOL)
        np.testing.assert_allclose(batch.axis_normal[a:b], ref.normals, atol=GEOMETRY_TOL)
        np.testing.assert_allclose(batch.seg_length[a:b - 1], ref.seg_length, atol=GEOMETRY_TOL)
        np.testing.assert_allclose(batch.seg_tangent[a:b - 1], ref.seg_tangent, atol=GEOMETRY_TOL)
        np.testing.assert_allclose(batch.seg_angle[a:b - 1], ref.seg_angle, atol=1e-7)  # acos near 0
        assert batch.length[m] == pytest.approx(ref.length, abs=GEOMETRY_TOL)
        # control normals are unit and orthogonal to the vertex tangents
        np.testing.assert_allclose(np.linalg.norm(ref.normals, axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(np.einsum("ij,ij->i", ref.normals, ref.tangents), 0.0, atol=1e-12)


def test_antipodal_endpoint_normals_twist_about_the_axis():
    geo = _antipodal().geometry()
    # half a turn from +x to -x about the z axis: the middle normal is +-y, every normal stays in the xy plane
    np.testing.assert_allclose(geo.normals[:, 2], 0.0, atol=1e-12)
    assert abs(abs(geo.normals[len(geo.normals) // 2 - 1, 1]) - np.sin(np.pi * geo.vertex_parameters[4])) < 1e-9


def test_profile_scalars_kernel_matches_reference():
    shapes = [MuscleShape(3, 3, 4, 7, 0.0, 0.9), MuscleShape(1, 3, 9, 2, 0.95, 0.3), MuscleShape(9, 9, 1, 1, 0.5, 0.5)]
    muscles = []
    for shape in shapes:
        for a in (0.0, 0.37, 1.0):
            muscles.append(FusiformMuscle((0, 0, 0), (0.1, 0, LENGTH), width=WIDTH, shape=shape, activation=a,
                                          width_scale=1.2))
    batch = pack_muscles(muscles)
    for m, muscle in enumerate(muscles):
        p = muscle.profile()
        np.testing.assert_allclose(batch.muscle_scalar[m, 1:7], [p.c0, p.c1, p.width, p.u, p.v, p.support],
                                   rtol=1e-13)


def test_bad_geometry_names_the_muscle():
    m = FusiformMuscle((0, 0, 0), (0, 0, LENGTH), width=WIDTH, particles=4, name="biceps.L")
    axis = m.axis
    axis[:] = axis[0]
    m._axis = axis  # bypass set_axis validation to reach the kernel's check
    with pytest.raises(ValueError, match="muscle biceps.L: its axis has zero length"):
        pack_muscles([m])
    m._axis = np.stack([np.zeros(6), np.zeros(6), np.linspace(0, 0.3, 6)], 1)
    m.origin_normal = np.array([0.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="muscle biceps.L: its origin normal is parallel"):
        pack_muscles([m])


def test_profile_max_kernel_matches_reference_for_every_pair():
    from implicit_muscles.kernels.profile import profile_max
    for a0 in range(1, 10, 2):
        for b1 in range(1, 10, 2):
            c0, c1 = profile.profile_coefficients(a0, 3, 4, b1, 0.6)
            ref = profile.profile_max(a0, 3, 4, b1, 0.6)
            assert profile_max(a0 - 1, 2, 3, b1 - 1, c0, c1, profile.PROFILE_MAX_SAMPLES,
                               profile.PROFILE_MAX_NEWTON) == pytest.approx(ref, rel=1e-14)


def test_batch_exposes_its_kernel_arrays_by_name():
    from implicit_muscles.core.muscle.batch import _ARRAY_NAMES
    from implicit_muscles.kernels.fusiform import MuscleArrays
    batch = pack_muscles([bent_muscle(), twisted_muscle()])
    assert _ARRAY_NAMES == MuscleArrays._fields
    assert batch.kernel_arrays() is batch.arrays
    for name in MuscleArrays._fields:
        assert getattr(batch, name) is getattr(batch.arrays, name)


MONOMIAL_TOL = 1e-13
"""Kernel vs reference for ``s^p (1-s)^q`` and its derivative, relative to the largest value over ``s``."""


def test_monomial_kernel_matches_reference():
    from implicit_muscles.kernels.fusiform import _monomial
    s = np.linspace(0.0, 1.0, 257)
    for p in range(9):
        for q in range(9):
            value, slope = profile.beta_monomial(p, q, s)
            kernel = np.array([_monomial(p, q, x)[:2] for x in s])
            np.testing.assert_allclose(kernel[:, 0], value, rtol=0, atol=MONOMIAL_TOL * np.abs(value).max())
            np.testing.assert_allclose(kernel[:, 1], slope, rtol=0, atol=MONOMIAL_TOL * np.abs(slope).max() + 1e-300)
