"""Numba kernels. Never imports bpy.

Kernels are compiled with ``cache=True``: the first start compiles them (tens of seconds), later starts load the
machine code from numba's cache directory (the host sets ``NUMBA_CACHE_DIR`` before importing this package; the
Blender extension points it at its user folder). :func:`warm_up` compiles or loads every kernel on tiny inputs and
says which happened and how long it took.
"""
from __future__ import annotations

import time


def warm_up() -> dict:
    """Compile (or load from the cache) every kernel. Returns ``{compiled, seconds, message, cache_dir}``."""
    import numba
    import numpy as np

    from ..core.muscle import FusiformMuscle
    from . import fusiform

    dispatchers = [fusiform.muscle_field]
    hits0, misses0 = _cache_counts(dispatchers)
    t0 = time.perf_counter()
    muscle = FusiformMuscle((0.0, 0.0, 0.0), (0.0, 0.0, 0.3), width=0.03, particles=3)
    muscle.field(np.zeros((2, 3)))
    muscle.field(np.zeros((2, 3)), compact=True)
    seconds = time.perf_counter() - t0
    hits, misses = _cache_counts(dispatchers)
    hits, misses = hits - hits0, misses - misses0
    compiled = misses > 0
    if hits == 0 and misses == 0:
        message = "The muscle kernels were already loaded."
    elif compiled:
        message = f"Compiled the muscle kernels in {seconds:.1f} s (cached for the next start)."
    else:
        message = f"Loaded the compiled muscle kernels from the cache in {seconds:.2f} s."
    return {"compiled": compiled, "seconds": seconds, "message": message, "cache_dir": numba.config.CACHE_DIR}


def _cache_counts(dispatchers) -> tuple[int, int]:
    """Total numba cache hits and misses of ``dispatchers`` so far in this process."""
    hits = sum(sum(d.stats.cache_hits.values()) for d in dispatchers)
    misses = sum(sum(d.stats.cache_misses.values()) for d in dispatchers)
    return hits, misses
