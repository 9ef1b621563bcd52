"""`python -m pipeline.cli`: the `lakehouse` command."""

from pipeline.cli import command

command()
