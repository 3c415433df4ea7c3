"""The compiled-kernel cache: a fingerprint of the kernels' sources for its folder's name, and a warm-up that
compiles (or loads) every kernel the bind, the evaluation and the bake use.

The fingerprint is the SHA-1 of all ``kernels/*.py`` sources (names and bytes, in file-name order); every host
caches compiled kernels into a folder named after it, so any change to any kernel starts a fresh cache
(docs/design-notes.md, *Kernel cache named by a fingerprint*).

:func:`warm_up` binds and plays a small limb (``core/io/warm_up_scene.py``) in stages; ``ENTRY_KERNELS`` names, per
stage, the kernels the core calls from Python (each compiles the helpers it calls). Progress is counted in entry
kernels: one is done once it has machine code for a signature in this process (compiled or loaded from the cache).
:func:`process_groups` splits the stages for two compile processes run at once (``core/io/compile_process.py``).
Nothing here imports numba until :func:`warm_up` or :func:`kernel_dispatchers` runs.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import time
from pathlib import Path

import numpy as np

KERNELS = Path(__file__).resolve().parents[2] / "kernels"

ENTRY_KERNELS = {
    "skinning": ("skinning.rigid_status", "skinning.bone_dual_quaternions", "skinning.dual_quaternion_skinning"),
    "muscles": ("fusiform.muscle_field", "profile.profile_scalars", "axis.axis_geometry",
                "muscle_surface.surface_rings"),
    "dynamics": ("profile.frame_scalars", "pbd.pbd_substeps", "axis.axis_update", "fat.fat_step",
                 "rod.rod_substeps"),
    "skin": ("sampling.poisson_select", "hrbf.hrbf_field", "part_grid.compact_field", "skin_field.place_nodes",
             "skin_field.skin_field", "tracking.contact_passed"),
    "frames": ("tracking.track", "joint_volume.restore", "skin_correction.limit_correction"),
    "muscled": ("pbd.keep_inside",),
}
"""Per warm-up stage (in order), the kernels (``module.function`` in ``kernels/``) that the core calls from Python
and that the stage compiles first: the muscle fields and display surfaces, the muscles' dynamics, the skin's bind
and its frames (the limb's skin bound without muscles: Implicit Skinning alone compiles the same machine code for
the skin as with muscles, and needs none of the muscle kernels), then the limb bound with its muscles and played.
A stage added here (at the end) is compiled by the first of the two compile processes (:func:`process_groups`)."""
STAGES = tuple(ENTRY_KERNELS)
"""The warm-up stages, in order."""
SKIN_GROUP = ("skin", "frames", "muscled")
"""The stages of the second compile process: the skin's kernels, which need none of the muscle kernels, then the
limb with its muscles, which by then the first process has cached (docs/design-notes.md, *Two compile
processes, one per core*)."""


def process_groups(stages=STAGES) -> tuple:
    """``stages`` split for two compile processes run at once: ``(every stage not in SKIN_GROUP, SKIN_GROUP's)``,
    each in ``STAGES`` order, without an empty group."""
    entry_kernels(stages)  # refuses an unknown stage
    first = tuple(s for s in STAGES if s in stages and s not in SKIN_GROUP)
    second = tuple(s for s in STAGES if s in stages and s in SKIN_GROUP)
    return tuple(g for g in (first, second) if g)


MARKER = "warm_up.json"
"""File in the cache folder written by a complete warm-up: the kernels' source stamps it compiled."""


def kernel_fingerprint(length: int = 12) -> str:
    """Hex digest (``length`` characters) of the kernel sources, in file-name order."""
    digest = hashlib.sha1()
    for path in sorted(KERNELS.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:length]


def source_stamps() -> dict:
    """``{file name: [mtime_ns, size]}`` of ``kernels/*.py``: numba's cache is valid for these stamps only (an
    update installs the same sources with new times, and numba compiles them again)."""
    return {p.name: [p.stat().st_mtime_ns, p.stat().st_size] for p in sorted(KERNELS.glob("*.py"))}


def entry_kernels(stages=STAGES) -> tuple:
    """The entry kernels of ``stages`` (names in ``ENTRY_KERNELS``), without repeats, in order."""
    unknown = [s for s in stages if s not in ENTRY_KERNELS]
    if unknown:
        raise ValueError(f"unknown warm-up stage {unknown[0]!r}: the stages are {', '.join(STAGES)}.")
    return tuple(dict.fromkeys(name for s in stages for name in ENTRY_KERNELS[s]))


def is_warm(cache_dir) -> bool:
    """Whether a complete warm-up filled ``cache_dir`` for the kernel sources as they are now."""
    try:
        marker = json.loads((Path(cache_dir) / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("stamps") == source_stamps()


def kernel_dispatchers() -> dict:
    """``{"module.function": dispatcher}`` of every numba kernel and helper in ``kernels/`` (imports them)."""
    from numba.core.dispatcher import Dispatcher

    package = __package__.rsplit(".", 2)[0] + ".kernels"
    found = {}
    for path in sorted(KERNELS.glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"{package}.{path.stem}")
        for name, value in vars(module).items():
            if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
                found[f"{path.stem}.{name}"] = value
    return found


def compiled_signatures() -> dict:
    """``{"module.function": number of signatures with machine code in this process}`` for every kernel."""
    return {name: len(d.overloads) for name, d in kernel_dispatchers().items()}


def warm_up(stages=STAGES, progress=None) -> dict:
    """Compile (or load from the cache) the entry kernels of ``stages`` and every helper they call, by binding and
    playing the warm-up limb. ``progress(done, total, name)`` is called as entry kernels get ready (``name`` the
    last one, ``""`` at the start). Returns ``{compiled, seconds, message, cache_dir, kernels, compile_seconds}``:
    ``compiled`` whether anything was compiled (not only loaded), ``kernels`` the number of entry kernels,
    ``compile_seconds`` numba's compile time per entry kernel compiled here (its helpers included) [s]. After a
    warm-up of every stage, the cache folder holds ``MARKER``."""
    import numba
    from numba.core import event

    names = entry_kernels(stages)
    dispatchers = kernel_dispatchers()
    watched = [dispatchers[n] for n in names]
    compile_seconds: dict = {}
    reported = [-1]

    def report(last=""):
        done = sum(1 for d in watched if d.overloads)
        if progress is not None and done != reported[0]:
            reported[0] = done
            progress(done, len(watched), last)

    class Listener(event.Listener):
        depth = 0

        def on_start(self, ev):
            self.depth += 1
            if self.depth == 1:
                self.t0 = time.perf_counter()

        def on_end(self, ev):
            self.depth -= 1
            if self.depth == 0:
                d = ev.data["dispatcher"]
                name = f"{d.py_func.__module__.rsplit('.', 1)[-1]}.{d.py_func.__name__}"
                compile_seconds[name] = compile_seconds.get(name, 0.0) + time.perf_counter() - self.t0
                report(name)

    listener = Listener()
    t0 = time.perf_counter()
    report()
    event.register("numba:compile", listener)
    try:
        state: dict = {}
        for stage in STAGES:
            if stage in stages:
                _STAGE_RUNS[stage](state)
                report()
    finally:
        event.unregister("numba:compile", listener)
    seconds = time.perf_counter() - t0
    cache_dir = numba.config.CACHE_DIR
    if set(stages) == set(STAGES) and cache_dir:
        try:
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
            (Path(cache_dir) / MARKER).write_text(json.dumps({"stamps": source_stamps(), "kernels": list(names)}))
        except OSError:
            pass  # a read-only cache: the next start warms up again
    compiled = bool(compile_seconds)
    if compiled:
        message = f"Compiled {len(names)} muscle kernels in {seconds:.1f} s (cached for the next start)."
    else:
        message = f"Loaded {len(names)} compiled muscle kernels in {seconds:.2f} s."
    return {"compiled": compiled, "seconds": seconds, "message": message, "cache_dir": cache_dir,
            "kernels": len(names), "compile_seconds": compile_seconds}


def _limb(state: dict) -> tuple:
    """The warm-up limb's rig and muscles, made once per warm-up."""
    if "limb" not in state:
        from . import warm_up_scene as scene
        state["limb"] = (scene.limb_rig(), *scene.limb_muscles())
    return state["limb"]


def _character(state: dict):
    """The warm-up limb bound with its muscles (:class:`core.character.MuscledCharacter`), once per warm-up."""
    if "character" not in state:
        from ..character import CharacterSetup, MuscledCharacter
        rig, muscles, origin, insertion, skin = _limb(state)
        state["character"] = MuscledCharacter.bind(CharacterSetup(rig, tuple(muscles), origin, insertion, skin))
    return state["character"]


def _skin_alone(state: dict):
    """The warm-up limb's skin bound without muscles (Implicit Skinning alone), once per warm-up."""
    if "skin" not in state:
        from ..character import CharacterSetup, MuscledCharacter
        from . import warm_up_scene as scene
        state["skin"] = MuscledCharacter.bind(CharacterSetup(scene.limb_rig()))
    return state["skin"]


def _run_skinning(state: dict) -> None:
    from ..skin.skinning import check_rigid, dqs, influences
    from . import warm_up_scene as scene

    rig = _limb(state)[0]
    B = check_rigid(scene.limb_pose(30.0), rig.names, 1.0)
    dqs(rig.vertices, influences(rig.weights), B)


def _run_muscles(state: dict) -> None:
    from ..muscle.batch import pack_muscles
    from ..muscle.surface import batch_surfaces, muscle_surface

    muscle = _limb(state)[1][0]
    muscle.field(muscle.axis[:2], compact=True)
    muscle_surface(muscle, rings=8, sides=6)
    batch_surfaces(pack_muscles([muscle]), rings=2, sides=3)  # the viewport's drawing (blender/display/)


def _run_dynamics(state: dict) -> None:
    from ..pbd.model import build_pbd_model
    from ..pbd.settle import rest_state

    rig, muscles, *_ = _limb(state)
    capsules = np.stack([rig.heads, rig.tails], axis=1)
    rest_state(build_pbd_model(muscles, capsules=capsules, capsule_radius=[0.01, 0.01], contact_sets=[0, 0]))
    _run_fat(capsules)
    _run_rod(muscles[0], capsules)


def _run_rod(muscle, capsules) -> None:
    """One frame of the limb's front muscle as a VIPER rod (``core/rod/``, a muscle whose *Solver* is Rod)."""
    from ..pbd.control import PBDControl
    from ..rod.model import build_rod_model
    from ..rod.solver import RodSolver
    from ..rod.state import RodState

    from ...kernels.rod import chain_radii
    from ..muscle.batch import pack_muscles

    model = build_rod_model([muscle], capsules=capsules, capsule_radius=[0.01, 0.01])
    state = RodState.at_rest(model)
    RodSolver(model).step(state, state.copy(), PBDControl(activation=0.5), 1.0 / 24.0)
    arrays = pack_muscles([muscle]).arrays  # the axis muscles' radii the rods collide with (RodMuscles.chains)
    count = len(arrays.axis_points)
    chain_radii(np.ascontiguousarray(arrays.axis_start, dtype=np.int64), np.linspace(0.0, 1.0, count),
                arrays.muscle_exponent, arrays.muscle_scalar, np.zeros(count))


def _run_fat(capsules) -> None:
    """One frame of a fat on the limb's upper bone (``core/fat/dynamics.py``)."""
    from ..fat import FatPrimitive
    from ..fat.dynamics import FatControl, FatSolver, build_fat_model
    from . import warm_up_scene as scene

    model = build_fat_model([FatPrimitive((0.1, 0.0, -0.018), (0.04, 0.012, 0.008))], [0], capsules, [0.01, 0.01])
    state = model.rest_state()
    FatSolver(model).step(state, state.copy(), FatControl.of(model, scene.limb_pose(20.0), 0.3, 0.1), 1.0 / 24.0)


def _run_skin(state: dict) -> None:
    _skin_alone(state)


def _play(character, activation=None) -> None:
    from ..pbd.control import MuscleInputs
    from . import warm_up_scene as scene

    character.settle(scene.limb_pose(10.0))
    for degrees in (40.0, 90.0):
        character.frame(scene.limb_pose(degrees), MuscleInputs(activation=activation))
    character.offset_turns()


def _run_frames(state: dict) -> None:
    _play(_skin_alone(state))


def _run_muscled(state: dict) -> None:
    _play(_character(state), activation=[1.0, 0.0])


_STAGE_RUNS = {"skinning": _run_skinning, "muscles": _run_muscles, "dynamics": _run_dynamics, "skin": _run_skin,
               "frames": _run_frames, "muscled": _run_muscled}
