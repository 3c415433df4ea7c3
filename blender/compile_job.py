"""Compiling the muscle kernels in the background: a separate process fills numba's cache, Blender stays usable.

``start()`` runs ``core/io/compile_process.py`` with Blender's Python on the extension's own package path and cache
folder (``blender/engine.py``); a reader thread collects its progress lines, and ``poll()`` (a timer on the main
thread, every ``POLL_INTERVAL`` seconds) shows them: ``status.done`` of ``status.total`` entry kernels
(``core/io/kernel_cache.py``) in the status bar and the *Muscles* tab. When the process ends, ``poll()`` loads the
kernels into this session from the cache (``kernel_cache.warm_up``, which then only loads), binds the meshes whose
Bind waited (``defer_bind``) and shows the current frame again.

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

from . import engine

POLL_INTERVAL = 0.25
"""Seconds between two looks at the compile process's progress."""
AUTO_START_DELAY = 2.0
"""Seconds after registration before the compile after an install or update starts."""
NICE = 5
"""How much lower the compile process runs than Blender (POSIX niceness), so the interface keeps its core."""


@dataclass
class JobStatus:
    running: bool = False
    """A compile process runs."""
    done: int = 0
    """Entry kernels ready in the compile process."""
    total: int = 0
    """Entry kernels the compile process compiles."""
    kernel: str = ""
    """The last entry kernel it finished (``module.function``)."""
    error: str = ""
    """Why the last compile failed, ``""`` if it did not."""
    seconds: float = 0.0
    """How long the last compile process ran [s]."""
    compiled: bool = False
    """Whether the last compile process compiled anything (rather than only loading the cache)."""
    stages: tuple = ()
    """The warm-up stages it compiles (``kernel_cache.STAGES`` or some)."""
    pending: list = field(default_factory=list)
    """Names of the meshes whose Bind waits for the kernels."""


status = JobStatus()
"""The compile job of this session."""

_process: subprocess.Popen | None = None
_lines: queue.Queue = queue.Queue()
_errors: collections.deque = collections.deque(maxlen=20)
_started = 0.0


def _package() -> str:
    return __package__.rsplit(".", 1)[0]


def _package_path() -> str:
    return sys.modules[_package()].__path__[0]


def kernels_loaded() -> bool:
    """Whether this session has the kernels already (a warm-up or a bind ran here)."""
    if engine.status.kernels_compiled:
        return True
    track = sys.modules.get(f"{_package()}.kernels.tracking")
    return bool(track is not None and track.track.overloads)


def waiting() -> str:
    """The sentence saying what waits for the compile, or ``""`` when the kernels can be used now."""
    if not status.running or kernels_loaded():
        return ""
    return f"The muscle kernels are compiling ({status.done}/{status.total})"


def start(stages=None, cache_dir: str | None = None) -> bool:
    """Start the compile process for ``stages`` (default: all) into ``cache_dir`` (default: the session's numba
    cache); False if one runs already. The engine must be set up (``engine.status.error`` empty)."""
    global _process, _started, _lines
    from ..core.io import compile_process, kernel_cache

    if status.running:
        return False
    stages = tuple(stages or kernel_cache.STAGES)
    folder = engine.status.cache_dir if cache_dir is None else cache_dir
    if cache_dir is None and not folder and "numba" in sys.modules:
        folder = sys.modules["numba"].config.CACHE_DIR or ""
    args = compile_process.command(_package(), _package_path(), folder, stages, nice=NICE)
    kwargs = {}
    if os.name == "nt":
        kwargs["creationflags"] = subprocess.BELOW_NORMAL_PRIORITY_CLASS | subprocess.CREATE_NO_WINDOW
    _process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    _lines = queue.Queue()
    _errors.clear()
    threading.Thread(target=_read, args=(_process.stdout, _lines.put), daemon=True).start()
    threading.Thread(target=_read, args=(_process.stderr, _errors.append), daemon=True).start()
    status.running, status.error, status.kernel, status.stages, status.compiled = True, "", "", stages, False
    status.done, status.total = 0, len(kernel_cache.entry_kernels(stages))
    engine.status.kernels_message = waiting() or f"Compiling the muscle kernels (0/{status.total})"
    _started = time.perf_counter()
    if interactive() and not bpy.app.timers.is_registered(poll):
        bpy.app.timers.register(poll, first_interval=POLL_INTERVAL)
    return True


def _read(stream, put) -> None:
    for line in stream:
        put(line)
    put(None)


def poll():
    """Take the compile process's news (a ``bpy.app.timers`` function: seconds to the next call, or None)."""
    ended = False
    while True:
        try:
            line = _lines.get_nowait()
        except queue.Empty:
            break
        if line is None:
            ended = True
            break
        try:
            news = json.loads(line)
        except ValueError:
            continue
        if "done" in news:
            status.done, status.total, status.kernel = news["done"], news["total"], news["kernel"]
        elif "error" in news:
            status.error = news["error"]
        elif "result" in news:
            status.compiled = bool(news["result"].get("compiled"))
    if not ended:
        if not kernels_loaded():
            engine.status.kernels_message = f"Compiling the muscle kernels ({status.done}/{status.total})"
        _redraw()
        return POLL_INTERVAL
    _finish()
    return None


def wait() -> None:
    """Block until the compile process ends, then finish as ``poll()`` would (background mode, scripts, tests)."""
    while status.running:
        if _process is not None:
            _process.wait()
        if poll() is not None:
            time.sleep(0.01)


def _finish() -> None:
    global _process
    process, _process = _process, None
    code = process.wait() if process is not None else 1
    status.running = False
    status.seconds = time.perf_counter() - _started
    if code != 0 and not status.error:
        err = [line.strip() for line in _errors if line and line.strip()]
        status.error = err[-1] if err else f"the compile process ended with status {code}"
    if status.error:
        engine.kernels_failed(status.error)
    else:
        try:  # loads what the process compiled (and compiles anything it could not cache)
            from ..core.io import kernel_cache
            kernel_cache.warm_up(status.stages)
            engine.kernels_ready(status.compiled, status.seconds)
        except Exception as ex:  # noqa: BLE001 - shown in the panel; Bind then compiles on its own
            engine.kernels_failed(f"{type(ex).__name__}: {ex}")
    _bind_pending()
    _show_frames()
    _redraw()


def interactive() -> bool:
    """Whether Blender runs with its interface (not ``blender -b`` or the ``bpy`` module)."""
    return not bpy.app.background


def defer_bind(mesh_obj) -> str:
    """While the kernels compile: with the interface, queue ``mesh_obj``'s Bind until they are ready and return the
    sentence to report; in background mode, wait for them. ``""``: bind now. With the interface, a session without
    kernels and a cache folder without a complete warm-up start the compile first."""
    if interactive() and not status.running and not kernels_loaded() and engine.status.cache_dir \
            and not engine.status.error and not _cache_is_warm():
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


def _show_frames() -> None:
    from . import playback

    scene = bpy.context.scene
    if scene is None:
        return
    try:
        playback.prepare_frame(scene)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for obj in playback.live_meshes(scene):
            playback.evaluate_safely(obj, scene, depsgraph)
    except Exception as ex:  # noqa: BLE001 - the next frame change tries again
        print(f"Implicit Muscles: could not show the frame after the kernels compiled: {ex}", file=sys.stderr)


def _redraw() -> None:
    wm = getattr(bpy.context, "window_manager", None)
    for window in (wm.windows if wm else ()):
        for area in window.screen.areas:
            area.tag_redraw()


def _cache_is_warm() -> bool:
    from ..core.io import kernel_cache
    return kernel_cache.is_warm(engine.status.cache_dir)


def start_if_needed() -> None:
    """Start the compile once after an install or update (module docstring); never in background mode."""
    if not interactive() or engine.status.error or status.running or kernels_loaded():
        return
    if engine.status.cache_dir and _cache_is_warm():
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
    global _process
    for fn in (_auto_start, poll):
        if bpy.app.timers.is_registered(fn):
            bpy.app.timers.unregister(fn)
    if _process is not None:
        _process.terminate()
        _process = None
    status.running = False
    status.pending = []
