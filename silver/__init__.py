"""The Silver layer: the cleaned, joined tables built incrementally from Bronze. Each table
is declared in tables.py, its SQL transform in transforms/."""
