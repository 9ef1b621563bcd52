"""The Gold layer: the business aggregates and feature tables built incrementally from
Silver and Bronze. Each table is declared in tables.py, its SQL transform in transforms/."""
