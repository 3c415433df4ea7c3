"""Baseline: chains of particles + distance constraints in Jan Bender's PositionBasedDynamics (``pypbd`` 2.2.2).

Needs ``pip install pypbd==2.2.2 numpy`` in a Python 3.11 environment (a cp311 manylinux wheel exists; it also
pulls in pygame and PyOpenGL, which this module does not use). ``pypbd`` is imported inside ``run_chains`` so this
file can be imported without it.

Scene: ``n_chains`` independent straight chains of length 0.3 m along +x, spaced 0.1 m apart on a grid in the
y-z plane (they never interact: pypbd has no particle-particle collisions and no collision detection is set up).
Each chain has 2 kinematic endpoints (mass 0, so inverse mass 0) and ``particles`` inner particles of mass 1 kg
(pypbd's default), joined by ``particles + 1`` distance constraints. The first and last 10 % of the constraints
("tendon") get stiffness ``tendon_stiffness``, the rest ``muscle_stiffness``; pypbd keeps one stiffness per
constraint.

Stepping (pypbd's ``TimeStepController``, the only time-step class in the bindings): one ``step(model)`` call
advances ``TimeManager`` step size h = 1/fps, split into ``NUM_SUB_STEPS`` substeps of h/substeps. Each substep:
semi-implicit Euler on the dynamic particles (v += g dt, x += v dt), ``MAX_ITERATIONS`` sweeps of position-constraint
projection, then the first-order velocity update v = (x - x_old)/dt. No damping exists for particles in pypbd.
The projection is Gauss-Seidel over constraint groups: ``initConstraintGroups`` greedily colours the constraints
into independent sets (for chains: the even and the odd links), each set is solved in place, in parallel with
OpenMP when it has more than 64 constraints. After the substeps it runs ``MAX_ITERATIONS_V`` velocity sweeps, which
do nothing for distance constraints; we set them to 0.

Kinematic endpoints: ``ParticleData.setPosition`` on all mass-0 particles (shaken origins and still insertions) once
per frame, before the step, to their position at the end of the frame; they stay there through all substeps
(pypbd's integrator and velocity update skip mass-0 particles), i.e. the origin jumps once per frame.
With ``kinematic_per_substep=True`` the frame is instead stepped one substep per ``step`` call with the endpoints
moved to the end-of-substep position each time (same arithmetic, more Python calls).

Threads: pypbd's wheel bundles libgomp; ``OMP_NUM_THREADS`` (read when pypbd is first used) sets the threads.
With the default (all cores, active spin-waiting) frame times have large outliers on a busy 2-core machine.

Gravity: pypbd's gravity is a 3-vector parameter of the ``Simulation`` singleton (default (0, -9.81, 0)) and the
bindings cannot set it (``setValueFloat`` on a vector parameter prints "Type mismatch in setValue!" and changes
nothing). With ``gravity=False`` (the default, like ours, which has none) we overwrite it in memory through
ctypes after checking the object layout, and confirm it from the acceleration pypbd gives a dynamic particle; if
that check fails we raise rather than report a run with gravity on. ``gravity=True`` writes pypbd's default
(0, -9.81, 0) back (the singleton lives for the whole process); a 3-tuple sets that vector.

Stiffness semantics: ``addDistanceConstraint`` is plain PBD, the correction is scaled by ``stiffness`` in [0, 1]
every iteration of every substep with no iteration-count correction, so the effective stiffness depends on
substeps x iterations. ``xpbd=True`` uses ``addDistanceConstraint_XPBD`` instead: the number passed is a stiffness
k [N/m], compliance alpha = 1/(k dt^2) with dt the substep (k = 0 means alpha = 0, i.e. rigid), lambda reset at
the first iteration of each substep.
"""
from __future__ import annotations

import ctypes
import math
import os
import statistics
import sys
import time

import numpy as np

PYPBD_VERSION = "2.2.2"
CHAIN_LENGTH = 0.3  # m
CHAIN_SPACING = 0.1  # m between neighbouring chains
TENDON_FRACTION = 0.1
PYPBD_DEFAULT_GRAVITY = (0.0, -9.81, 0.0)

# pypbd's Simulation object (C++): vtable pointer, std::vector m_parameters (3 pointers),
# SimulationModel *m_model, TimeStep *m_timeStep, Vector3r m_gravitation (3 doubles).
_SIM_TIMESTEP_OFFSET = 40
_SIM_GRAVITY_OFFSET = 48


def _cpp_pointer(obj) -> int:
    """The C++ object behind a pybind11 wrapper (simple layout: PyObject_HEAD, then the value pointer)."""
    if hasattr(sys, "gettotalrefcount"):
        raise RuntimeError("debug CPython build: pybind11 instance layout differs")
    return ctypes.c_void_p.from_address(id(obj) + 2 * ctypes.sizeof(ctypes.c_void_p)).value


def _set_gravity(pbd, gravity) -> None:
    """Overwrite Simulation::m_gravitation, after checking the neighbouring m_timeStep pointer is where expected."""
    sim = pbd.Simulation.getCurrent()
    base = _cpp_pointer(sim)
    ts_ptr = ctypes.c_void_p.from_address(base + _SIM_TIMESTEP_OFFSET).value
    if ts_ptr != _cpp_pointer(sim.getTimeStep()):
        raise RuntimeError("pypbd Simulation layout not as expected; cannot set gravity")
    g = (ctypes.c_double * 3).from_address(base + _SIM_GRAVITY_OFFSET)
    g[0], g[1], g[2] = (float(v) for v in gravity)


def _gravity_in_effect(pbd, pd, particle: int) -> np.ndarray:
    """Gravity as pypbd applies it: TimeStep::clearAccelerations sets a = gravity on dynamic particles each step."""
    return np.array(pd.getAcceleration(particle), dtype=float).reshape(3)


def _sine_fit(t, y, freq) -> dict:
    """Least-squares a sin(wt) + b cos(wt) + c: amplitude [m] and phase lag [deg] behind the origin's sin(wt)."""
    w = 2.0 * math.pi * freq
    A = np.stack([np.sin(w * t), np.cos(w * t), np.ones_like(t)], 1)
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    a, b = coef[0], coef[1]
    resid = y - A @ coef
    return {"amplitude_m": float(math.hypot(a, b)), "lag_deg": float(-math.degrees(math.atan2(b, a))),
            "rms_residual_m": float(np.sqrt(np.mean(resid ** 2)))}


def run_chains(n_chains=50, particles=30, frames=100, substeps=10, iterations=1, fps=24.0, shake=True,
               *, tendon_stiffness=1.0, muscle_stiffness=0.5, xpbd=False, gravity=False,
               shake_amplitude=0.05, shake_frequency=2.0, shake_axis=(0.0, 1.0, 0.0),
               warmup=5, kinematic_per_substep=False) -> dict:
    """Build ``n_chains`` chains in pypbd, shake their origin endpoints, step ``frames`` frames; timings + state.

    Returns a dict with per-frame timings (``median_frame_ms`` over frames after ``warmup``, ``total_s`` over all
    frames), counts, the exact pypbd settings, sanity measures, and ``inner_positions`` (n_chains, particles, 3).
    """
    import pypbd as pbd

    n_chains, particles, frames = int(n_chains), int(particles), int(frames)
    substeps, iterations = int(substeps), int(iterations)
    n_points = particles + 2
    n_cons = particles + 1
    n_tendon = max(1, int(round(TENDON_FRACTION * n_cons)))
    seg = CHAIN_LENGTH / n_cons
    axis = np.asarray(shake_axis, dtype=float)
    axis = axis / np.linalg.norm(axis)

    t_build0 = time.perf_counter()
    sim = pbd.Simulation.getCurrent()  # singleton; creates its TimeStepController and the TimeManager
    tm = pbd.TimeManager.getCurrent()
    ts = sim.getTimeStep()
    TSC = pbd.TimeStepController
    target_g = PYPBD_DEFAULT_GRAVITY if gravity is True else ((0.0, 0.0, 0.0) if gravity is False else gravity)
    _set_gravity(pbd, target_g)

    # Our own model (no Simulation.initDefault(): that would also attach an SDF collision detection).
    model = pbd.SimulationModel()
    model.init()
    pd = model.getParticles()

    side = int(math.ceil(math.sqrt(n_chains)))
    offsets = np.array([[0.0, CHAIN_SPACING * (c // side), CHAIN_SPACING * (c % side)] for c in range(n_chains)])
    rest = np.zeros((n_chains, n_points, 3))
    rest[:, :, 0] = np.linspace(0.0, CHAIN_LENGTH, n_points)[None, :]
    rest += offsets[:, None, :]
    for c in range(n_chains):
        for k in range(n_points):
            pd.addVertex(rest[c, k])
    origin_idx = np.arange(n_chains) * n_points
    insertion_idx = origin_idx + n_points - 1
    for i in np.concatenate([origin_idx, insertion_idx]):
        pd.setMass(int(i), 0.0)

    add = model.addDistanceConstraint_XPBD if xpbd else model.addDistanceConstraint
    stiffness = np.full(n_cons, float(muscle_stiffness))
    stiffness[:n_tendon] = tendon_stiffness
    stiffness[n_cons - n_tendon:] = tendon_stiffness
    for c in range(n_chains):
        b = c * n_points
        for k in range(n_cons):
            if not add(b + k, b + k + 1, float(stiffness[k])):
                raise RuntimeError("pypbd refused a distance constraint")

    steps_per_frame = substeps if kinematic_per_substep else 1
    ts.setValueUInt(TSC.NUM_SUB_STEPS, 1 if kinematic_per_substep else substeps)
    ts.setValueUInt(TSC.MAX_ITERATIONS, iterations)
    ts.setValueUInt(TSC.MAX_ITERATIONS_V, 0)
    ts.setValueInt(TSC.VELOCITY_UPDATE_METHOD, 0)  # first-order velocity update (pypbd's default)
    ts.reset()
    h_call = 1.0 / fps / steps_per_frame
    tm.setTimeStepSize(h_call)
    tm.setTime(0.0)
    model.initConstraintGroups()
    groups = model.getConstraintGroups()
    build_s = time.perf_counter() - t_build0

    X = np.asarray(pd.getVertices())  # read-only view of pypbd's current positions (no copy)

    def origin_targets(t):
        d = shake_amplitude * math.sin(2.0 * math.pi * shake_frequency * t) if shake else 0.0
        return rest[:, 0, :] + d * axis

    insertion_targets = rest[:, -1, :].copy()  # the insertion endpoints are re-set every frame too (held still)
    set_pos = pd.setPosition
    frame_s, endpoint_s = [], []
    max_rel_stretch = 0.0
    origin_y, first_inner_y, mid_y = [], [], []
    oi = [int(i) for i in origin_idx]
    ii = [int(i) for i in insertion_idx]
    for f in range(frames):
        t0 = time.perf_counter()
        te = 0.0
        for s in range(steps_per_frame):
            ta = time.perf_counter()
            targets = origin_targets((f * steps_per_frame + s + 1) * h_call)
            for c in range(n_chains):
                set_pos(oi[c], targets[c])
                set_pos(ii[c], insertion_targets[c])
            te += time.perf_counter() - ta
            ts.step(model)
        frame_s.append(time.perf_counter() - t0)
        endpoint_s.append(te)
        # sanity measures, outside the timing
        P = X.reshape(n_chains, n_points, 3)
        lengths = np.linalg.norm(np.diff(P, axis=1), axis=2)
        max_rel_stretch = max(max_rel_stretch, float(np.max(np.abs(lengths - seg)) / seg))
        origin_y.append(float(P[0, 0] @ axis - rest[0, 0] @ axis))
        first_inner_y.append(float(P[0, 1] @ axis - rest[0, 1] @ axis))
        mid_y.append(float(P[0, n_points // 2] @ axis - rest[0, n_points // 2] @ axis))

    g_eff = _gravity_in_effect(pbd, pd, 1)
    if not np.allclose(g_eff, target_g, atol=1e-12):
        raise RuntimeError(f"gravity in effect {g_eff.tolist()} is not the requested {list(target_g)}")

    P = X.reshape(n_chains, n_points, 3).copy()
    lengths = np.linalg.norm(np.diff(P, axis=1), axis=2)
    rel = lengths / seg - 1.0
    t_frames = (np.arange(frames) + 1) / fps
    measured = frame_s[warmup:] if frames > warmup else frame_s
    measured_ep = endpoint_s[warmup:] if frames > warmup else endpoint_s
    return {
        "library": f"pypbd {getattr(pbd, '__version__', PYPBD_VERSION)}",
        "n_chains": n_chains,
        "particles_per_chain": particles,
        "n_particles": int(pd.size()),
        "n_dynamic_particles": n_chains * particles,
        "n_kinematic_particles": 2 * n_chains,
        "n_constraints": int(len(model.getConstraints())),
        "n_tendon_constraints_per_end": n_tendon,
        "n_constraint_groups": len(groups),
        "frames": frames,
        "warmup_frames": min(warmup, frames),
        "build_s": build_s,
        "median_frame_ms": 1e3 * statistics.median(measured),
        "mean_frame_ms": 1e3 * statistics.fmean(measured),
        "min_frame_ms": 1e3 * min(measured),
        "max_frame_ms": 1e3 * max(measured),
        "median_endpoint_update_ms": 1e3 * statistics.median(measured_ep),
        "total_s": float(sum(frame_s)),
        "total_measured_s": float(sum(measured)),
        "frame_ms": [1e3 * v for v in frame_s],
        "settings": {
            "time_step_class": "TimeStepController",
            "frame_dt_s": 1.0 / fps,
            "TimeManager.setTimeStepSize_s": h_call,
            "step_calls_per_frame": steps_per_frame,
            "NUM_SUB_STEPS": 1 if kinematic_per_substep else substeps,
            "substep_dt_s": 1.0 / fps / substeps,
            "MAX_ITERATIONS": iterations,
            "MAX_ITERATIONS_V": 0,
            "VELOCITY_UPDATE_METHOD": "first order",
            "constraint": "DistanceConstraint_XPBD (stiffness k, compliance 1/(k dt^2))" if xpbd
            else "DistanceConstraint (PBD stiffness in [0,1], per iteration)",
            "tendon_stiffness": float(tendon_stiffness),
            "muscle_stiffness": float(muscle_stiffness),
            "solver": "Gauss-Seidel over greedy-coloured constraint groups (OpenMP inside groups > 64)",
            "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
            "particle_mass_kg": 1.0,
            "gravity": g_eff.tolist(),
            "damping": "none (pypbd has no particle damping)",
            "collision_detection": "none",
            "kinematic_update": "per substep" if kinematic_per_substep else "per frame (end-of-frame target)",
            "shake": {"enabled": bool(shake), "amplitude_m": shake_amplitude, "frequency_hz": shake_frequency,
                      "axis": axis.tolist()},
            "chain_length_m": CHAIN_LENGTH,
            "rest_segment_m": seg,
        },
        "sanity": {
            "max_rel_stretch_any_frame": max_rel_stretch,
            "max_rel_stretch_final": float(np.max(np.abs(rel))),
            "mean_abs_rel_length_error_final": float(np.mean(np.abs(rel))),
            "chain_length_ratio_final": float(np.mean(lengths.sum(axis=1)) / CHAIN_LENGTH),
            "chain0_rel_length_error_final": rel[0].tolist(),
            "chain0_first_inner_fit": _sine_fit(t_frames, np.array(first_inner_y), shake_frequency),
            "chain0_middle_fit": _sine_fit(t_frames, np.array(mid_y), shake_frequency),
            "chain0_origin_disp": origin_y,
            "chain0_first_inner_disp": first_inner_y,
            "chain0_middle_disp": mid_y,
            "max_inner_displacement_m": float(np.max(np.linalg.norm(P[:, 1:-1] - rest[:, 1:-1], axis=2))),
        },
        "inner_positions": P[:, 1:-1, :],
    }


if __name__ == "__main__":
    res = run_chains()
    disp = {k: res["sanity"][k] for k in ("max_rel_stretch_any_frame", "max_rel_stretch_final",
                                           "mean_abs_rel_length_error_final", "chain_length_ratio_final",
                                           "max_inner_displacement_m", "chain0_first_inner_fit",
                                           "chain0_middle_fit")}
    for k, v in res.items():
        if k not in ("sanity", "inner_positions", "frame_ms"):
            print(f"{k}: {v}")
    for k, v in disp.items():
        print(f"sanity.{k}: {v}")
    o, a, m = (res["sanity"][k] for k in ("chain0_origin_disp", "chain0_first_inner_disp", "chain0_middle_disp"))
    print("frame  origin[m]  first inner[m]  middle[m]  (displacement along the shake axis, chain 0)")
    for f in range(0, len(o), max(1, len(o) // 20)):
        print(f"{f:5d}  {o[f]:+.4f}    {a[f]:+.4f}         {m[f]:+.4f}")
    print("inner_positions shape:", res["inner_positions"].shape)
