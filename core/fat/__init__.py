"""The fat primitive (thesis ch. 6, Fig. 6.13): an ellipsoid of soft tissue on one dynamic particle tied by springs
to anchors on a bone, joined to its skin part like a muscle. Modules: ``primitive`` (``FatPrimitive``), ``field``
(numpy reference of its field), ``batch`` (many fats placed for the kernels), ``dynamics`` (model, state, control,
solver and its numpy reference)."""
from .primitive import FatPrimitive

__all__ = ["FatPrimitive"]
