"""Implicit Skinning: HRBF part fields, their composition, DQS, tracking and joint volume (thesis ch. 2-3)."""
