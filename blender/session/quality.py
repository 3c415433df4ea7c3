"""Which evaluation quality (``core/quality.py``) a frame is computed at.

Renders and bakes always use :data:`core.quality.RENDER`. Everything else (playback, scrubbing, posing, scripts)
uses the viewport quality: *Preview* when the scene's *Viewport Quality* says so (``scene.implicit_muscles``) or
when the scene's *Simplify* is on (Render Properties > Simplify), else *Render*. Each quality keeps its own cached
muscle states (``runtime.Bound.cache_for``), so a render never starts from states simulated at preview quality.
"""
from __future__ import annotations

from contextlib import contextmanager

from ...core.quality import PREVIEW, RENDER, EvaluationQuality
from . import render_state

_forced_render = 0  # > 0 while a bake runs (render_quality)


@contextmanager
def render_quality():
    """Every frame evaluated inside is at render quality (a bake)."""
    global _forced_render
    _forced_render += 1
    try:
        yield
    finally:
        _forced_render -= 1


def viewport_quality(scene) -> EvaluationQuality:
    """The quality of frames shown outside renders and bakes: Preview if the scene asks for it or its Simplify is
    on, else Render."""
    props = getattr(scene, "implicit_muscles", None)
    if props is not None and props.viewport_quality == 'PREVIEW':
        return PREVIEW
    if scene.render.use_simplify:
        return PREVIEW
    return RENDER


def frame_quality(scene, depsgraph=None) -> EvaluationQuality:
    """The quality of a frame of ``scene`` evaluated now: Render in a bake, a render (between ``render_init`` and
    its end, or a render engine's depsgraph), else :func:`viewport_quality`."""
    if _forced_render or render_state.rendering() or (depsgraph is not None and depsgraph.mode == 'RENDER'):
        return RENDER
    return viewport_quality(scene)
