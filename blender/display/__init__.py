"""The muscles and fats drawn in the viewport (see README.md)."""
