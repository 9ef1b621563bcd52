"""What every results page of `make bench` starts with."""

from __future__ import annotations


def header(title: str, results: dict) -> list[str]:
    """The page's title with the run's date, and the machine and versions it ran on."""
    machine = results["machine"]
    return [f"# {title} ({machine['date']})", "",
            "Machine and versions: " + ", ".join(f"{k} {v}" for k, v in machine.items() if k != "date"),
            ""]
