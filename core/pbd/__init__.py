"""Position Based Dynamics of the muscle axes (paper §6, thesis ch. 5)."""
