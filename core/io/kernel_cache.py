"""The compiled-kernel cache: a fingerprint of the kernels' sources for its folder's name, and a warm-up.

The fingerprint is the SHA-1 of all ``kernels/*.py`` sources (names and bytes, in file-name order); every host
caches compiled kernels into a folder named after it, so any change to any kernel starts a fresh cache
(docs/design-notes.md, *Kernel cache named by a fingerprint*).
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def kernel_fingerprint(length: int = 12) -> str:
    """Hex digest (``length`` characters) of the kernel sources, in file-name order."""
    digest = hashlib.sha1()
    for path in sorted(KERNELS.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:length]


def warm_up() -> dict:
    """Compile (or load from the cache) the muscle field kernel. Returns ``{compiled, seconds, message,
    cache_dir}``."""
    import numba
    import numpy as np

    from ...kernels import fusiform
    from ..muscle.primitive import FusiformMuscle

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
