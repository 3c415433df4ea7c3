"""The session: binds, the per-frame evaluation, renders, bakes, the handlers and the farm command (see README.md)."""
