"""Engine status: which numba the muscle kernels run on, where they cache, whether they are compiled.

``setup()`` runs first in ``register()``, before anything imports ``kernels``:

1. numba's cache goes to the extension's user folder,
   ``bpy.utils.extension_path_user(__package__, path="numba_cache/<fingerprint>", create=True)``, so compiled
   kernels survive a restart and an extension update never loads stale machine code from the read-only install
   folder; the fingerprint of the kernel sources (``core/io/kernel_cache.py``) starts a fresh cache whenever a kernel
   changes. When the
   add-on is not loaded as an extension (``extension_path_user`` raises ``ValueError``, e.g. a legacy add-on
   install or a plain import), the cache location is left to numba's default: ``__pycache__`` beside the kernel
   sources, or numba's per-user cache folder when that is not writable.
   If numba is not imported yet the folder is passed as ``NUMBA_CACHE_DIR`` (numba reads it on import);
   otherwise ``numba.config.CACHE_DIR`` is set (setting the variable then would make numba re-read its whole
   environment on the next compile and drop other add-ons' settings). Either way it holds for the whole
   process: there is one numba per Blender session.
2. ``import numba``. The first import in a session wins: if another add-on brought a different numba first, ours
   is not used and a warning says so. If numba cannot be imported at all, registration still succeeds; the
   reason is kept in ``status.error``, printed to stderr, reported once in the UI and shown in red in the panel.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import bpy

NUMBA_SERIES = "0.62"
"""The numba release series the bundled wheels and the kernels are built and tested with."""

CACHE_FOLDER = "numba_cache"
"""Folder name inside the extension's user folder that holds numba's compiled-kernel cache."""

REPORT_DELAY = 1.0
"""Seconds after registration before a problem is reported in the UI (the window must exist by then)."""


@dataclass
class EngineStatus:
    numba_version: str = ""
    """Version of the numba in use, ``""`` if it could not be imported."""
    numba_path: str = ""
    """Folder numba was imported from (the bundled wheel or another add-on's)."""
    cache_dir: str = ""
    """Where numba caches compiled kernels; ``""`` means numba's default location."""
    error: str = ""
    """Why the muscle engine cannot run, ``""`` if it can."""
    warning: str = ""
    """A problem worth telling the user that does not stop the engine, ``""`` if none."""
    kernels_compiled: bool = False
    """True once the kernels are compiled or loaded from the cache in this session."""
    kernels_message: str = ""
    """What the last compile did, e.g. ``"Compiled kernels in 4.2 s (cached for next start)"``."""


status = EngineStatus()
"""The engine status of this session, read by the panel and the operators."""


def setup(package: str) -> EngineStatus:
    """Point numba's cache at the extension's user folder, import numba and check its version."""
    global status
    status = EngineStatus()
    try:
        status.cache_dir = _set_cache_dir(package)
    except OSError as ex:  # the user folder cannot be created (read-only profile, disk full): compile every start
        status.warning = f"The compiled-kernel cache folder cannot be created, kernels compile at every start ({ex})."
    preloaded = "numba" in sys.modules
    try:
        import numba
    except Exception as ex:  # a broken numba raises more than ImportError (numpy too new or old, missing llvmlite)
        status.error = (f"The muscle engine is unavailable: numba could not be imported "
                        f"({type(ex).__name__}: {ex}).")
        return status
    status.numba_version = str(getattr(numba, "__version__", "unknown"))
    status.numba_path = os.path.dirname(getattr(numba, "__file__", "") or "")
    if not status.numba_version.startswith(NUMBA_SERIES + "."):
        origin = ("another add-on loaded it first (one numba per Blender session, the first import wins)"
                  if preloaded else f"it was imported from {status.numba_path}")
        status.warning = " ".join(filter(None, (
            status.warning,
            f"The muscle kernels are built for numba {NUMBA_SERIES}.x but numba {status.numba_version} is in use: "
            f"{origin}.")))
    return status


def _set_cache_dir(package: str) -> str:
    from ...core.io.kernel_cache import kernel_fingerprint

    try:
        path = bpy.utils.extension_path_user(package, path=f"{CACHE_FOLDER}/{kernel_fingerprint()}", create=True)
    except ValueError:
        return ""  # not loaded as an extension: numba's default cache location
    numba = sys.modules.get("numba")
    config = getattr(numba, "config", None)
    if config is None:
        os.environ["NUMBA_CACHE_DIR"] = path
    else:
        config.CACHE_DIR = path
    return path


def kernels_ready(compiled: bool, seconds: float) -> str:
    """Record a successful warm-up and return the message to report."""
    if status.kernels_compiled and not compiled:
        message = f"The kernels were already loaded ({seconds:.1f} s)"
    elif compiled:
        message = f"Compiled kernels in {seconds:.1f} s (cached for next start)"
    else:
        message = f"Loaded compiled kernels from the cache in {seconds:.1f} s"
    status.kernels_compiled = True
    status.kernels_message = message
    return message


def kernels_failed(reason: str) -> str:
    """Record a failed warm-up and return the message to report."""
    status.kernels_compiled = False
    status.kernels_message = f"Could not compile the muscle kernels: {reason}"
    return status.kernels_message


def report_problems() -> None:
    """Print any problem to stderr and, with a UI, report it once through ``implicit_muscles.report_status``."""
    for message in (status.error, status.warning):
        if message:
            print(f"Implicit Muscles: {message}", file=sys.stderr)
    if (status.error or status.warning) and not bpy.app.background:
        if not bpy.app.timers.is_registered(_report_once):
            bpy.app.timers.register(_report_once, first_interval=REPORT_DELAY)


def cancel_report() -> None:
    """Remove the pending one-shot report, if any (called by ``unregister()``)."""
    if bpy.app.timers.is_registered(_report_once):
        bpy.app.timers.unregister(_report_once)


def _report_once():
    try:
        bpy.ops.implicit_muscles.report_status()
    except RuntimeError:
        pass  # an ERROR report is raised back to the Python caller; the UI has shown it all the same
    except Exception as ex:  # no window to report in: stderr already has the message
        print(f"Implicit Muscles: could not show the engine status in the UI ({ex}).", file=sys.stderr)
    return None  # one shot
