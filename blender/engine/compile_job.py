"""Compiling the muscle kernels in the background: two separate processes fill numba's cache, Blender stays usable.

``start()`` runs ``core/io/compile_process.py`` twice at once with Blender's Python on the extension's own package
path and cache folder (``blender/engine/numba_setup.py``), one process per group of warm-up stages
(``kernel_cache.process_groups``: the muscles' kernels and the skin's, one core each), both at a lower priority
(``NICE``). Reader threads collect their progress lines, and ``poll()`` (a timer on the main thread, every
``POLL_INTERVAL`` seconds) shows them summed: ``status.done`` of ``status.total`` entry kernels
(``core/io/kernel_cache.py``) in the status bar and the *Muscles* tab. When both processes have ended, ``poll()``
loads the kernels into this session from the cache (``kernel_cache.warm_up``, which then only loads), binds the
meshes whose Bind waited (``defer_bind``) and runs what the session registered to run then (``on_ready``: the
handlers show the current frame again). If either fails, its sentence is the job's error.

While the job runs and this session has no kernels yet, ``waiting()`` says so: Bind waits for it (queued), frames
show the plain Armature result, a bake is refused; nothing compiles on the main thread meanwhile.
``start_if_needed()`` runs once after the extension is installed or updated (its cache folder has no complete
warm-up for the kernels' sources as they are on disk), never in background mode and never inside ``register()``.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import bpy

from . import numba_setup

POLL_INTERVAL = 0.25
"""Seconds between two looks at the compile process's progress."""
AUTO_START_DELAY = 2.0
"""Seconds after registration before the compile after an install or update starts."""
NICE = 5
"""How much lower the compile processes run than Blender (POSIX niceness), so the interface keeps a core."""


@dataclass
class JobStatus:
    running: bool = False
    """The compile processes run."""
    done: int = 0
    """Entry kernels ready in the compile processes (summed)."""
    total: int = 0
    """Entry kernels the compile processes compile (summed)."""
    kernel: str = ""
    """The last entry kernel it finished (``module.function``)."""
    error: str = ""
    """Why the last compile failed, ``""`` if it did not."""
    seconds: float = 0.0
    """How long the last compile ran, until both processes ended [s]."""
    compiled: bool = False
    """Whether the last compile processes compiled anything (rather than only loading the cache)."""
    stages: tuple = ()
    """The warm-up stages they compile (``kernel_cache.STAGES`` or some)."""
    processes: int = 0
    """How many compile processes the last compile ran at once."""
    compile_seconds: dict = field(default_factory=dict)
    """numba's compile time per entry kernel in the last compile's processes [s] (``kernel_cache.warm_up``)."""
    cpu_seconds: list = field(default_factory=list)
    """CPU time of each of the last compile's processes that finished [s]."""
    pending: list = field(default_factory=list)
    """Names of the meshes whose Bind waits for the kernels."""


status = JobStatus()
"""The compile job of this session."""

_processes: list = []
"""The running compile processes (``subprocess.Popen``)."""
_lines: queue.Queue = queue.Queue()
"""``(process index, line)`` from their standard outputs; ``(index, None)`` when one's output ends."""
_progress: list = []
"""``[done, total]`` per process."""
_ended: set = set()
"""The processes (indices) whose standard output has ended."""
_errors: list = []
"""Per process, the last lines of its standard error."""
_started = 0.0
_ready: list = []
"""What runs once a compile has ended (``on_ready``), in the order registered."""


def _package() -> str:
    """The extension's package: this module's, less ``.blender.engine``."""
    return __package__.rsplit(".", 2)[0]


def _package_path() -> str:
    return sys.modules[_package()].__path__[0]


def kernels_loaded() -> bool:
    """Whether this session has the kernels already (a warm-up or a bind ran here)."""
    if numba_setup.status.kernels_compiled:
        return True
    track = sys.modules.get(f"{_package()}.kernels.tracking")
    return bool(track is not None and track.track.overloads)


def waiting() -> str:
    """The sentence saying what waits for the compile, or ``""`` when the kernels can be used now."""
    if not status.running or kernels_loaded():
        return ""
    return f"The muscle kernels are compiling ({status.done}/{status.total})"


def start(stages=None, cache_dir: str | None = None) -> bool:
    """Start the compile processes for ``stages`` (default: all) into ``cache_dir`` (default: the session's numba
    cache); False if they run already. The engine must be set up (``numba_setup.status.error`` empty)."""
    global _started, _lines, _progress, _errors, _ended
    from ...core.io import compile_process, kernel_cache

    if status.running:
        return False
    stages = tuple(stages or kernel_cache.STAGES)
    folder = numba_setup.status.cache_dir if cache_dir is None else cache_dir
    if cache_dir is None and not folder and "numba" in sys.modules:
        folder = sys.modules["numba"].config.CACHE_DIR or ""
    groups = kernel_cache.process_groups(stages)
    kwargs = {}
    if os.name == "nt":
        kwargs["creationflags"] = subprocess.BELOW_NORMAL_PRIORITY_CLASS | subprocess.CREATE_NO_WINDOW
    _lines = queue.Queue()
    _progress = [[0, len(kernel_cache.entry_kernels(g))] for g in groups]
    _ended = set()
    _errors = [collections.deque(maxlen=20) for _ in groups]
    try:
        for i, args in enumerate(compile_process.commands(_package(), _package_path(), folder, stages, nice=NICE)):
            process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
            _processes.append(process)
            threading.Thread(target=_read, args=(process.stdout, lambda line, i=i: _lines.put((i, line))),
                             daemon=True).start()
            threading.Thread(target=_read, args=(process.stderr, _errors[i].append), daemon=True).start()
    except OSError:
        _stop()
        raise
    status.running, status.error, status.kernel, status.stages, status.compiled = True, "", "", stages, False
    status.processes, status.compile_seconds, status.cpu_seconds = len(groups), {}, []
    status.done, status.total = 0, sum(total for _, total in _progress)
    numba_setup.status.kernels_message = waiting() or f"Compiling the muscle kernels (0/{status.total})"
    _started = time.perf_counter()
    if interactive() and not bpy.app.timers.is_registered(poll):
        bpy.app.timers.register(poll, first_interval=POLL_INTERVAL)
    return True


def _stop() -> None:
    """End the compile processes this session started (unregister, or one that could not be started)."""
    while _processes:
        process = _processes.pop()
        if process.poll() is None:
            process.terminate()


def _read(stream, put) -> None:
    for line in stream:
        put(line)
    put(None)


def poll():
    """Take the compile processes' news (a ``bpy.app.timers`` function: seconds to the next call, or None)."""
    while True:
        try:
            index, line = _lines.get_nowait()
        except queue.Empty:
            break
        if line is None:
            _ended.add(index)
            continue
        try:
            news = json.loads(line)
        except ValueError:
            continue
        if "done" in news:
            _progress[index][:2] = news["done"], news["total"]
            status.kernel = news["kernel"] or status.kernel
        elif "error" in news:
            status.error = status.error or news["error"]
        elif "result" in news:
            status.compiled = status.compiled or bool(news["result"].get("compiled"))
            status.compile_seconds.update(news["result"].get("compile_seconds", {}))
            status.cpu_seconds.append(float(news["result"].get("cpu_seconds", 0.0)))
    status.done = sum(p[0] for p in _progress)
    status.total = sum(p[1] for p in _progress)
    if len(_ended) < len(_progress):
        if not kernels_loaded():
            numba_setup.status.kernels_message = f"Compiling the muscle kernels ({status.done}/{status.total})"
        _redraw()
        return POLL_INTERVAL
    _finish()
    return None


def wait() -> None:
    """Block until the compile processes end, then finish as ``poll()`` would (background mode, scripts, tests)."""
    while status.running:
        for process in list(_processes):
            process.wait()
        if poll() is not None:
            time.sleep(0.01)


def _finish() -> None:
    processes = list(_processes)
    _processes.clear()
    codes = [process.wait() for process in processes]
    status.running = False
    status.seconds = time.perf_counter() - _started
    for code, errors in zip(codes, _errors):
        if code != 0 and not status.error:
            err = [line.strip() for line in errors if line and line.strip()]
            status.error = err[-1] if err else f"a compile process ended with status {code}"
    if not processes and not status.error:
        status.error = "the compile processes did not start"
    if status.error:
        numba_setup.kernels_failed(status.error)
    else:
        try:  # loads what the processes compiled (and compiles anything they could not cache)
            from ...core.io import kernel_cache
            kernel_cache.warm_up(status.stages)
            numba_setup.kernels_ready(status.compiled, status.seconds)
        except Exception as ex:  # noqa: BLE001 - shown in the panel; Bind then compiles on its own
            numba_setup.kernels_failed(f"{type(ex).__name__}: {ex}")
    _bind_pending()
    for fn in list(_ready):
        fn()
    _redraw()


def on_ready(fn) -> None:
    """Call ``fn()`` on the main thread each time a compile has ended, after the meshes whose Bind waited are bound
    (``fn`` must not raise); ``remove_on_ready`` forgets it. The session registers what it shows again then."""
    if fn not in _ready:
        _ready.append(fn)


def remove_on_ready(fn) -> None:
    if fn in _ready:
        _ready.remove(fn)


def interactive() -> bool:
    """Whether Blender runs with its interface (not ``blender -b`` or the ``bpy`` module)."""
    return not bpy.app.background


def defer_bind(mesh_obj) -> str:
    """While the kernels compile: with the interface, queue ``mesh_obj``'s Bind until they are ready and return the
    sentence to report; in background mode, wait for them. ``""``: bind now. With the interface, a session without
    kernels and a cache folder without a complete warm-up start the compile first."""
    if interactive() and not status.running and not kernels_loaded() and numba_setup.status.cache_dir \
            and not numba_setup.status.error and not _cache_is_warm():
        try:  # a cold cache and no compile running (its folder was emptied): compile it rather than freeze
            start()
        except OSError as ex:  # no Python to run: this Bind compiles in place
            print(f"Implicit Muscles: could not start compiling the kernels in the background: {ex}", file=sys.stderr)
    if not waiting():
        return ""
    if not interactive():
        wait()
        return ""
    if mesh_obj.name_full not in status.pending:
        status.pending.append(mesh_obj.name_full)
    return f"{waiting()}: {mesh_obj.name} binds when they are ready."


def _bind_pending() -> None:
    names, status.pending = status.pending, []
    for name in names:
        obj = bpy.data.objects.get(name)
        if obj is None or obj.type != 'MESH':
            continue
        try:
            with bpy.context.temp_override(object=obj, active_object=obj):
                bpy.ops.implicit_muscles.bind_skin()
        except Exception as ex:  # noqa: BLE001 - a bind that fails says why in its own report
            print(f"Implicit Muscles: {name} could not be bound after the kernels compiled: {ex}", file=sys.stderr)


def _redraw() -> None:
    wm = getattr(bpy.context, "window_manager", None)
    for window in (wm.windows if wm else ()):
        for area in window.screen.areas:
            area.tag_redraw()


def _cache_is_warm() -> bool:
    from ...core.io import kernel_cache
    return kernel_cache.is_warm(numba_setup.status.cache_dir)


def start_if_needed() -> None:
    """Start the compile once after an install or update (module docstring); never in background mode."""
    if not interactive() or numba_setup.status.error or status.running or kernels_loaded():
        return
    if numba_setup.status.cache_dir and _cache_is_warm():
        return
    try:
        start()
    except OSError as ex:  # no Python to run: Bind compiles on its own
        print(f"Implicit Muscles: could not start compiling the kernels in the background: {ex}", file=sys.stderr)


def _auto_start():
    start_if_needed()
    return None


def register() -> None:
    if interactive() and not bpy.app.timers.is_registered(_auto_start):
        bpy.app.timers.register(_auto_start, first_interval=AUTO_START_DELAY)


def unregister() -> None:
    for fn in (_auto_start, poll):
        if bpy.app.timers.is_registered(fn):
            bpy.app.timers.unregister(fn)
    _stop()
    status.running = False
    status.pending = []
