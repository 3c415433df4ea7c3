"""Authoring: new muscles and fats placed, copied, mirrored, fitted, and the handles that move them (see README.md)."""
