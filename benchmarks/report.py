"""What every results page of `make bench` shares: its header, and how durations are summed up."""

from __future__ import annotations

import statistics


def header(title: str, results: dict) -> list[str]:
    """The page's title with the run's date, and the machine and versions it ran on."""
    machine = results["machine"]
    return [
        f"# {title} ({machine['date']})",
        "",
        "Machine and versions: " + ", ".join(f"{k} {v}" for k, v in machine.items() if k != "date"),
        "",
    ]


def distribution(seconds: list[float], digits: int = 1) -> dict:
    """Median, 95th percentile (interpolated between ranks) and maximum of some durations."""
    ordered = sorted(seconds)
    percentiles = (
        statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else ordered * 99
    )
    p50, p95 = percentiles[49], percentiles[94]
    return {
        "p50_seconds": round(p50, digits),
        "p95_seconds": round(p95, digits),
        "max_seconds": round(ordered[-1], digits),
    }
