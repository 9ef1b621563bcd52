"""What every results file shares: the machine it was measured on, its page's header, and
how durations are summed up."""

from __future__ import annotations

import os
import statistics
from datetime import UTC, datetime
from pathlib import Path

import pyspark

from lakehouse.settings import read_versions

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    memory_kib = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    versions = read_versions()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kib / 2**20),
        "pyspark": pyspark.__version__,
        "hudi": versions["HUDI_VERSION"],
        "kafka": versions["KAFKA_VERSION"],
        "debezium": versions["DEBEZIUM_VERSION"],
    }


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
