"""The composition root: what puts the layers together (the registry of every table, a pass
over them, the demo, the checks of what they hold) and the `lakehouse` command."""
