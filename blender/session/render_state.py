"""Whether a render runs, and on which thread (docs/design.md#handlers-and-threads,
docs/design-notes.md#which-thread-runs-each-handler).

Between ``render_init`` and ``render_complete`` / ``render_cancel`` a render is running (``rendering``): frame
changes do not simulate gaps (``may_simulate``; the render's own come with their states cached,
``blender/session/renders.py``), frames evaluate at render quality (``blender/session/quality.py``), and while it runs on another
thread the main thread's handlers leave the meshes alone (``rendering_elsewhere``).
"""
from __future__ import annotations

import threading

import bpy

from ..scene.live import on_main_thread

_render_thread: int | None = None  # the thread of the render between render_init and its end


def render_started() -> None:
    """``render_init``: a render runs on this thread until ``render_ended``."""
    global _render_thread
    _render_thread = threading.get_ident()


def render_ended() -> None:
    global _render_thread
    _render_thread = None


def rendering() -> bool:
    """True between a render's ``render_init`` and its ``render_complete`` or ``render_cancel``."""
    return _render_thread is not None


def rendering_here() -> bool:
    """True while a render runs on this thread (a background or script render, seen from its own handlers)."""
    return _render_thread == threading.get_ident()


def rendering_elsewhere() -> bool:
    """True while a render runs on another thread: a render started from the interface, seen from the main thread.
    Its job's end returns to the viewport's frame after ``render_complete``; a job that ended without it is
    forgotten here."""
    if _render_thread is None or rendering_here():
        return False
    if bpy.app.is_job_running('RENDER'):
        return True
    render_ended()
    return False


def may_simulate() -> bool:
    """Whether a frame change may simulate gaps here: on the main thread, with no render running."""
    return on_main_thread() and not rendering_here() and not rendering_elsewhere()
