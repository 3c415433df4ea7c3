"""The fusiform muscle primitive (paper §5, thesis ch. 4). Scripts import ``FusiformMuscle`` and ``MuscleShape``
from here; the modules are ``profile``, ``axis``, ``field`` (numpy reference of the field), ``primitive``,
``batch`` (many muscles packed for the kernels) and ``surface`` (meshes and volumes)."""
from .primitive import FusiformMuscle, MuscleShape

__all__ = ["FusiformMuscle", "MuscleShape"]
