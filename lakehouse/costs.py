"""Which path a derived table's run takes: the incremental one, or a rebuild from full
snapshots when the changes waiting would cost more than that (docs/architecture.md, "A run
costs at most a rebuild").

A run knows before it starts how many changes its inputs' commits recorded since its
checkpoint, and what each path cost this table the last time it ran. An incremental run's
cost grows with the changes it reads; a rebuild's does not. So after a backlog (a first
build while the workload runs, a bulk load, a machine that was busy) a run rebuilds once
instead of reading a change log larger than the table, and the next runs are small again.

The estimate is deliberately simple: the last incremental run's seconds, scaled up by how
many more changes wait now than it read (never down: most of a small run is fixed cost).
Both figures correct themselves: each run measures the path it took, so a stale estimate
leads to the path that measures it again. Either path is exact; only the time differs.

Costs are kept per table in `<state dir>/costs/`, beside the other state of the runs on
this machine; without them (a new state directory) a run takes the incremental path.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from lakehouse.reports import RunReport
from lakehouse.settings import Settings

INCREMENTAL, FULL = "incremental", "full"


@dataclass(frozen=True)
class Measured:
    seconds: float
    changes: int


@dataclass(frozen=True)
class PathCosts:
    """What each path last cost one table; None for a path it has not taken yet."""

    incremental: Measured | None = None
    full: Measured | None = None
    last: str | None = None  # the path the newest run took

    @property
    def expected_seconds(self) -> float:
        """What the next run is expected to take: what the newest one did (0 before any)."""
        newest = self.incremental if self.last == INCREMENTAL else self.full
        return newest.seconds if newest else 0.0

    def estimate(self, changes: int) -> float | None:
        """Seconds an incremental run over `changes` changes would take, if one was measured."""
        if self.incremental is None:
            return None
        return self.incremental.seconds * max(1.0, changes / max(1, self.incremental.changes))

    def rebuild_reason(self, changes: int) -> str | None:
        """Why a run over `changes` changes should rebuild instead, or None to go incrementally."""
        estimate = self.estimate(changes)
        if estimate is None or self.full is None or estimate <= self.full.seconds:
            return None
        return (
            f"rebuilt: {changes} changes would take about {estimate:.0f} s incrementally "
            f"({self.incremental.changes} took {self.incremental.seconds:.1f} s), a rebuild "
            f"took {self.full.seconds:.1f} s"
        )


def _path(settings: Settings, table: str) -> Path:
    return settings.state_dir / "costs" / f"{table}.json"


def read(settings: Settings, table: str) -> PathCosts:
    """What the table's runs measured; nothing when no run has, or the file cannot be read
    (by the metrics endpoint in a container of its own, say)."""
    try:
        stored = json.loads(_path(settings, table).read_text())
    except (OSError, ValueError):
        return PathCosts()
    return PathCosts(
        **{mode: Measured(**stored[mode]) for mode in (INCREMENTAL, FULL) if mode in stored},
        last=stored.get("last"),
    )


def record(settings: Settings, report: RunReport) -> None:
    """Keeps what the path `report` took cost; an idle run measures neither."""
    if report.mode not in (INCREMENTAL, FULL):
        return
    path = _path(settings, report.table)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        stored = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        stored = {}
    stored[report.mode] = {"seconds": round(report.seconds, 2), "changes": report.changes_read}
    stored["last"] = report.mode
    # Written whole, then renamed: a reader never sees half a file.
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(stored, sort_keys=True))
    partial.replace(path)
