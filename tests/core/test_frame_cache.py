"""The frame-state cache (``core/frame_cache.py``) without Blender: a toy simulation whose state after frame f
depends on every frame before it, visited in different orders through ``resume`` and ``store``."""
import numpy as np
import pytest

from implicit_muscles.core.frame_cache import CACHE_EVERY, CACHE_WINDOW, FrameCache, first_changed_frame

START = 1


def _rest():
    return np.zeros(3)


def _step(state, frame):
    """One frame of a toy simulation: the state carries the whole history, so a wrong resume shows."""
    return np.array([state[0] * 0.9 + np.sin(frame), state[1] + frame, state[2] * 1.01 + 1.0])


class _Host:
    """Shows frames through the cache the way ``blender/session/playback.py`` does; counts the frames it simulates."""

    def __init__(self, cache):
        self.cache = cache
        self.simulated = 0

    def show(self, frame):
        first, state = self.cache.resume(frame, START)
        state = _rest() if state is None else state
        for f in range(first, frame + 1):
            state = _step(state, f)
            self.simulated += 1
            self.cache.store(f, state)
        return state


def _sequential(last):
    state, out = _rest(), {}
    for f in range(START, last + 1):
        state = _step(state, f)
        out[f] = state
    return out


def test_the_state_of_a_frame_does_not_depend_on_the_order_frames_are_visited():
    truth = _sequential(400)
    rng = np.random.default_rng(0)
    orders = [list(range(1, 401)), list(range(400, 0, -1)), list(rng.integers(1, 401, 300)),
              list(range(1, 401, 37)) + list(range(399, 0, -53))]
    for order in orders:
        host = _Host(FrameCache())
        for f in order:
            assert np.array_equal(host.show(int(f)), truth[int(f)]), f
            assert len(host.cache) <= CACHE_WINDOW + 400 // CACHE_EVERY + 1


def test_checkpoints_keep_memory_flat_on_a_long_shot():
    cache = FrameCache()
    host = _Host(cache)
    for f in range(1, 10_001):
        host.show(f)
        assert len(cache) <= CACHE_WINDOW + f // CACHE_EVERY + 1
    assert len(cache) <= CACHE_WINDOW + 10_000 // CACHE_EVERY + 1
    assert set(range(10_000 - CACHE_WINDOW + 1, 10_001)) <= set(cache)
    kept_before = {f for f in cache if f <= 10_000 - CACHE_WINDOW}
    assert kept_before and all(f % CACHE_EVERY == 0 for f in kept_before)


def test_a_dropped_frame_is_simulated_again_from_the_checkpoint_before_it():
    cache = FrameCache()
    host = _Host(cache)
    for f in range(1, 301):
        host.show(f)
    assert 123 not in cache and 120 in cache
    host.simulated = 0
    assert np.array_equal(host.show(123), _sequential(123)[123])
    assert host.simulated == 123 - 120
    assert cache.resume(122, START) == (122, cache.get(121))


def test_resume_starts_from_rest_at_or_before_the_start_frame():
    cache = FrameCache()
    assert cache.resume(START, START) == (START, None)
    assert cache.resume(START - 5, START) == (START - 5, None)
    assert cache.resume(20, START) == (START, None)
    cache.store(10, "ten")
    assert cache.resume(20, START) == (11, "ten")
    assert cache.resume(20, 15) == (15, None)  # a state before the start frame is not resumed from


def test_invalidating_forgets_from_a_frame_on():
    cache = FrameCache()
    for f in range(1, 31):
        cache.store(f, f)
    cache.invalidate(12)
    assert set(cache) == set(range(1, 12))
    cache.invalidate()
    assert len(cache) == 0


def _keys(*frames_values):
    return np.array([[f, v, f - 0.5, v, f + 0.5, v, 2.0] for f, v in frames_values], dtype=np.float64)


def test_key_edits_forget_the_states_from_the_key_before_the_first_changed_key():
    old = {("rotation", 0): _keys((1, 0.0), (10, 1.0), (20, 0.5)), ("location", 2): _keys((1, 0.0), (30, 1.0))}
    cache = FrameCache(keys=old)
    for f in range(1, 41):
        cache.store(f, f)
    assert cache.update_keys({k: v.copy() for k, v in old.items()}) is None and len(cache) == 40
    moved = dict(old)
    moved[("rotation", 0)] = _keys((1, 0.0), (10, 1.0), (20, 0.7))
    assert cache.update_keys(moved) == 10.0
    assert set(cache) == set(range(1, 10))
    assert first_changed_frame({**moved, ("scale", 1): _keys((5, 1.0))}, moved) == -np.inf
    assert first_changed_frame({("rotation", 0): _keys((2, 0.0))}, {("rotation", 0): _keys((1, 0.0))}) == -np.inf


@pytest.mark.parametrize("window, every", [(4, 2), (10, 3)])
def test_other_windows_keep_the_same_answers(window, every):
    truth = _sequential(120)
    host = _Host(FrameCache(window, every))
    for f in list(range(1, 121)) + list(range(119, 0, -7)):
        assert np.array_equal(host.show(f), truth[f])
    assert len(host.cache) <= window + 120 // every + 1
