"""Per-frame cache of a simulation's state, keyed by frame number (headless: numpy only).

A host that shows frames in any order (scrubbing, jumps, renders, bakes) keeps the state after each simulated frame
here and resumes from it. ``FrameCache`` holds:

* ``states``: frame -> state after that frame (any object; the muscles' ``PBDState`` in Blender). The frames of
  the ``window`` up to the last one stored and every ``every``-th frame (checkpoints) are kept, so memory stays
  at most ``window + frames / every`` states over a shot, however its frames are visited;
* ``keys``: the last snapshot of the animation's keys, ``{channel: (keys, columns) float64}`` with the key's frame
  in column 0, so an edit forgets the states from the first frame it changes on (``update_keys``).

``resume(frame, start)`` says where simulation resumes to reach ``frame``: the state after ``frame - 1`` if kept,
else the last state kept before it (a checkpoint), else the rest state at the simulation's ``start`` frame. The
states were simulated from one start frame (``start``): a resume with another start forgets them all.
"""
from __future__ import annotations

import numpy as np

CACHE_WINDOW = 48
"""Frames kept after the last one stored (all of them)."""
CACHE_EVERY = 8
"""Before the window, frames that are a multiple of this are kept (checkpoints)."""


def first_changed_frame(new, old) -> float | None:
    """First frame from which the key snapshot ``new`` differs from ``old`` (both ``{channel: (keys, columns)}``,
    column 0 the key's frame, sorted), or None if they are equal. ``-inf`` if a channel was added or removed, or
    its first key changed (its value before that key changes too); else the floor of the key before the first
    changed key."""
    first = None
    for channel in set(new) | set(old):
        a, b = new.get(channel), old.get(channel)
        if a is not None and b is not None and len(a) == len(b) and np.array_equal(a, b):
            continue
        frame = _first_difference(a, b)
        first = frame if first is None else min(first, frame)
    return first


def _first_difference(a, b) -> float:
    """Frame from which curve ``a`` differs from curve ``b`` (either may be None: an added or removed curve)."""
    if a is None or b is None or len(a) == 0 or len(b) == 0:
        return -np.inf
    n = min(len(a), len(b))
    diff = np.flatnonzero(np.any(a[:n] != b[:n], axis=1))
    k = int(diff[0]) if len(diff) else n
    if k == 0:
        return -np.inf
    return float(np.floor(min(a[k - 1, 0], b[k - 1, 0])))


class FrameCache:
    """States per frame with a window of recent frames and checkpoints before it (module docstring).

    ``window`` (default ``CACHE_WINDOW``) and ``every`` (default ``CACHE_EVERY``) are in frames. Supports ``len``,
    ``in`` and iteration over the kept frames."""

    def __init__(self, window: int = CACHE_WINDOW, every: int = CACHE_EVERY, keys: dict | None = None):
        self.window = int(window)
        self.every = int(every)
        self.states: dict = {}
        self._recent: set = set()  # kept frames that are not checkpoints
        self.keys: dict = dict(keys) if keys is not None else {}
        self.start: int | None = None  # the start frame the kept states were simulated from

    def __len__(self) -> int:
        return len(self.states)

    def __contains__(self, frame) -> bool:
        return frame in self.states

    def __iter__(self):
        return iter(self.states)

    def get(self, frame):
        """The state after ``frame``, or None."""
        return self.states.get(frame)

    def store(self, frame: int, state) -> None:
        """Keep ``frame``'s state; the kept frames outside the window ``frame - window < f <= frame`` are dropped
        unless they are multiples of ``every``."""
        self.states[frame] = state
        if frame % self.every:
            self._recent.add(frame)
        for f in [f for f in self._recent if not frame - self.window < f <= frame]:
            self._recent.discard(f)
            del self.states[f]

    def last_before(self, frame):
        """The last kept frame before ``frame``, or None."""
        earlier = [f for f in self.states if f < frame]
        return max(earlier) if earlier else None

    def resume(self, frame: int, start: int) -> tuple:
        """``(first, state)``: to reach ``frame``, continue from ``state`` (None: the rest state) and simulate the
        frames ``first .. frame - 1``. ``frame <= start``: ``(frame, None)``, the frame starts from rest; the state
        after ``frame - 1`` kept: ``(frame, it)``; else the last kept state at or after ``start``, or from rest at
        ``start``. A ``start`` other than the last one forgets every kept state first."""
        if self.start is not None and start != self.start:
            self.invalidate()
        self.start = start
        if frame <= start:
            return frame, None
        previous = self.states.get(frame - 1)
        if previous is not None:
            return frame, previous
        last = self.last_before(frame)
        if last is None or last < start:
            return start, None
        return last + 1, self.states[last]

    def invalidate(self, from_frame=None) -> None:
        """Forget the states from ``from_frame`` on (all if None)."""
        if from_frame is None:
            self.states.clear()
            self._recent.clear()
        else:
            for f in [f for f in self.states if f >= from_frame]:
                del self.states[f]
                self._recent.discard(f)

    def update_keys(self, keys: dict):
        """Record the animation's key snapshot ``keys``; forget the states from the first frame it changes on.
        Returns that frame, or None if no key changed."""
        changed = first_changed_frame(keys, self.keys)
        self.keys = keys
        if changed is not None:
            self.invalidate(changed)
        return changed
