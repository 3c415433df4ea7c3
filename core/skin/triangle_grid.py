"""A triangle mesh's triangles sorted into a uniform grid of cells, for rays and nearest-point queries
(``kernels/ray_cast.py``, ``kernels/mesh_distance.py``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CELL_EDGES = 2.0
"""Cell size in mean edge lengths."""
MAX_CELLS = 4_000_000
"""Most cells of a grid (coarser cells beyond it)."""


@dataclass(frozen=True)
class TriangleGrid:
    """Cells of size ``1 / inv_cell`` [m] from ``origin (3,)`` [m], ``dims (3,)`` of them; CSR ``cell_start (C + 1,)``
    and ``cell_triangle``: the triangles whose bounding boxes touch each cell (``kernels/ray_cast.triangle_cells``)."""

    origin: np.ndarray
    inv_cell: float
    dims: np.ndarray
    cell_start: np.ndarray
    cell_triangle: np.ndarray

    @classmethod
    def build(cls, x, faces, edge_length: float | None = None) -> "TriangleGrid":
        """The grid over ``x (V, 3)`` [m] of ``faces (F, 3)``, cells of ``CELL_EDGES`` times ``edge_length`` [m]
        (None: the mean edge length), coarser if there would be more than ``MAX_CELLS``."""
        from ...kernels.ray_cast import triangle_cells

        x = np.ascontiguousarray(x, dtype=np.float64)
        f = np.ascontiguousarray(faces, dtype=np.int64).reshape(-1, 3)
        if edge_length is None:
            edge_length = float(np.linalg.norm(x[f[:, [1, 2, 0]]] - x[f], axis=2).mean()) if len(f) else 1e-3
        lo = x.min(axis=0)
        extent = np.maximum(x.max(axis=0) - lo, 1e-9)
        cell = max(CELL_EDGES * edge_length, float(np.prod(extent) / MAX_CELLS) ** (1.0 / 3.0), 1e-9)
        dims = np.maximum(np.ceil(extent / cell).astype(np.int64), 1)
        while int(np.prod(dims)) > MAX_CELLS:
            cell *= 1.25
            dims = np.maximum(np.ceil(extent / cell).astype(np.int64), 1)
        origin = np.ascontiguousarray(lo)
        start = np.zeros(int(np.prod(dims)) + 1, dtype=np.int64)
        n = triangle_cells(x, f, origin, 1.0 / cell, dims, start, np.zeros(0, dtype=np.int64))
        triangle = np.empty(n, dtype=np.int64)
        triangle_cells(x, f, origin, 1.0 / cell, dims, start, triangle)
        return cls(origin=origin, inv_cell=1.0 / cell, dims=dims, cell_start=start, cell_triangle=triangle)

    def kernel_args(self) -> tuple:
        """``(cell_start, cell_triangle, origin, inv_cell, dims)``: the kernels' arguments, in their order."""
        return self.cell_start, self.cell_triangle, self.origin, float(self.inv_cell), self.dims
