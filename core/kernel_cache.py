"""A fingerprint of the numba kernels' sources, for the compiled-kernel cache folder's name.

numba decides whether a cached kernel is still valid from its own source file's timestamp only: a kernel that
inlines a function from another module (the skin tracking calls the skin field, which calls the muscle field) keeps
its stale machine code when only that other module changes. Every host therefore caches into a folder named after
this fingerprint (the SHA-1 of all ``kernels/*.py`` sources): any change to any kernel starts a fresh cache.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[1] / "kernels"


def kernel_fingerprint(length: int = 12) -> str:
    """Hex digest (``length`` characters) of the kernel sources, in file-name order."""
    digest = hashlib.sha1()
    for path in sorted(KERNELS.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:length]
