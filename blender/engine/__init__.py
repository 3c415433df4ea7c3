"""The muscle engine: numba set up for the kernels and the kernels compiled in the background (see README.md)."""
