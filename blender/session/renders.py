"""What a render needs before each frame, and which thread simulates it (docs/design.md#handlers-and-threads,
docs/design-notes.md#the-frames-a-render-needs).

A render's frame-change handlers only evaluate from the muscle states cached before (``blender/session/playback.py``), so
before each frame renders (``render_pre``) the states its frame and motion steps start from are simulated:
``render_states`` says which (``render_span``: the frame, its motion-blur shutter or a vector pass's neighbours), and
``prepare_render_frame`` simulates them with ``playback.simulate_gaps`` at render quality (``blender/session/quality.py``),
on the main thread. A background or script
render runs its handlers on the main thread and simulates directly. A render started from the interface runs them on
its own thread, which must not update the view layer or set a frame: it hands the work to the main thread
(``request_on_main_thread``) and waits, and a timer on the main thread runs it (``serve_render_requests``).
Whether a render runs, and on which thread, is ``blender/session/render_state.py``.
"""
from __future__ import annotations

import sys
import threading
import traceback

import bpy

from ...core.quality import RENDER
from ..scene.live import live_meshes, on_main_thread
from . import playback, render_state

HANDOFF_START_TIMEOUT = 10.0
"""Seconds a render thread waits for the main thread to start simulating what its frame needs
(``request_on_main_thread``); after that the render goes on, and the frames it lacks fall back."""
POLL_RENDERING = 0.1
POLL_IDLE = 0.5
"""Seconds between two calls of ``serve_render_requests`` while a render job runs, and otherwise."""

_requests: list = []  # _Request from render threads, served on the main thread


def render_span(scene) -> tuple:
    """``(first, last)`` times [frames] a render of the scene's current frame ``t`` visits: ``t`` alone, its
    motion-blur shutter (``motion_blur_shutter`` frames placed by ``motion_blur_position``: START ``t..t+s``, CENTER
    ``t-s/2..t+s/2``, END ``t-s..t``), or the frames either side of it for a vector pass."""
    t = scene.frame_current + scene.frame_subframe
    render = scene.render
    if render.use_motion_blur:
        s = render.motion_blur_shutter
        return {'START': (t, t + s), 'END': (t - s, t)}.get(render.motion_blur_position, (t - s / 2, t + s / 2))
    if any(layer.use and layer.use_pass_vector for layer in scene.view_layers):
        return t - 1, t + 1
    return t, t


def render_states(scene) -> tuple:
    """``(first, last)`` frames whose states a render of the scene's current frame ``f`` needs before it starts
    (``render_span``). The state after ``f`` itself is left out when nothing later is needed: the render evaluates
    ``f`` before its subframes (Cycles and EEVEE sync the frame first, then its motion steps)."""
    lo, hi = render_span(scene)
    first, last = playback.state_needed(lo), playback.state_needed(hi)
    if last == scene.frame_current:
        last -= 1
    return first, last


def prepare_render_frame(scene) -> None:
    """``render_pre``: simulate what the frame about to render needs, on the main thread (directly, or handed over
    by the render's thread, ``request_on_main_thread``)."""
    first, last = render_states(scene)
    if on_main_thread():
        playback.simulate_gaps(scene, live_meshes(scene), first, last, RENDER)
    else:
        request_on_main_thread(scene, first, last)


class _Request:
    """States a render thread needs (``first..last``, scene by name), waiting for the main thread."""

    def __init__(self, scene_name: str, first: int, last: int):
        self.scene_name, self.first, self.last = scene_name, first, last
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.done = threading.Event()
        self.withdrawn = False


def request_on_main_thread(scene, first: int, last: int) -> bool:
    """From a render's thread: have the main thread run ``simulate_gaps`` for ``scene``'s live meshes and wait for
    it. Returns False, and withdraws the request, if the main thread does not start it within
    ``HANDOFF_START_TIMEOUT`` (the render goes on; the frames it lacks fall back, saying to bake)."""
    request = _Request(scene.name_full, first, last)
    _requests.append(request)
    if not request.started.wait(HANDOFF_START_TIMEOUT):
        with request.lock:
            if not request.started.is_set():
                request.withdrawn = True
                return False
    request.done.wait()
    return True


def serve_render_requests() -> float:
    """Run the render threads' requests on the main thread (a ``bpy.app.timers`` function, registered for the
    session by ``blender/session/handlers.py``); returns the seconds until its next call."""
    while _requests:
        request = _requests.pop(0)
        with request.lock:
            if request.withdrawn:
                continue
            request.started.set()
        try:
            scene = bpy.data.scenes.get(request.scene_name)
            if scene is not None:
                playback.simulate_gaps(scene, live_meshes(scene), request.first, request.last, RENDER)
        except Exception as ex:  # noqa: BLE001 - a timer must never raise; the render falls back and says so
            print(f"Implicit Muscles: could not simulate the muscles a render needs: {ex}", file=sys.stderr)
            traceback.print_exc()
        finally:
            request.done.set()
    return POLL_RENDERING if render_state.rendering_elsewhere() else POLL_IDLE
