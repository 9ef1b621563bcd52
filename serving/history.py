"""`lakehouse history <table>`: a table's commits, read from its timeline without a JVM.

Each commit has two times in Hudi 1.x: the instant it was requested (its name) and the time
it completed. Time travel and incremental reads select by completion time, so that is the
time to pass to `TIMESTAMP AS OF` or `hudi_table_changes`. hudi-rs reads each commit's
metadata; it does not expose completion times, which Hudi's timeline (layout 2) keeps in
the completed instant's file name, `<requested>_<completed>.<action>`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hudi import HudiTable

from lakehouse.tables import LAYERS, table_path
from serving.fastpath import QueryError, existing_tables


@dataclass(frozen=True)
class Commit:
    requested: str
    completed: str
    action: str
    operation: str
    rows_written: int
    inserted: int
    updated: int
    deleted: int


def history(warehouse: str, qualified_name: str) -> list[Commit]:
    """The table's commits on its active timeline, oldest first. The layer may be left out
    of the name where the table's name is found in one layer only."""
    if "." not in qualified_name:
        matches = [
            f"{layer}.{qualified_name}"
            for layer in LAYERS
            if Path(table_path(warehouse, layer, qualified_name)).is_dir()
        ]
        qualified_name = matches[0] if len(matches) == 1 else qualified_name
    layer, _, name = qualified_name.partition(".")
    if layer not in LAYERS or not name:
        raise QueryError(
            f"name a table as <layer>.<table>, e.g. gold.hudi_daily_sales_gold (got {qualified_name!r})"
        )
    if "://" in warehouse:
        raise QueryError(
            "history lists a local warehouse; on remote storage use Spark: "
            f"lakehouse sql \"CALL show_commits(table => '{qualified_name}')\""
        )
    path = table_path(warehouse, layer, name)
    timeline_dir = Path(path, ".hoodie", "timeline")
    if not timeline_dir.is_dir():
        raise QueryError(
            f"unknown table {qualified_name}: no Hudi table at {path} (tables: "
            f"{', '.join(existing_tables(warehouse)) or 'none yet'})"
        )
    completed_at = completed_instants(path)
    timeline = HudiTable(path).get_timeline()
    instants = (
        timeline.get_completed_commits()
        + timeline.get_completed_deltacommits()
        + timeline.get_completed_replacecommits()
    )
    commits = [
        _commit(timeline, instant, completed_at.get((instant.timestamp, instant.action), ""))
        for instant in instants
    ]
    return sorted(commits, key=lambda c: (c.completed, c.requested))


def completed_instants(path: str) -> dict[tuple[str, str], str]:
    """(requested time, action) to completion time, for every completed instant on the
    active timeline of the local table at `path`, read from the file names alone."""
    completed_at = {}
    timeline_dir = Path(path, ".hoodie", "timeline")
    for instant_file in timeline_dir.iterdir() if timeline_dir.is_dir() else ():
        times, _, action = instant_file.name.partition(".")
        requested, _, completed = times.partition("_")
        if completed and "." not in action:
            completed_at[(requested, action)] = completed
    return completed_at


def _commit(timeline, instant, completed: str) -> Commit:
    metadata = json.loads(timeline.get_instant_metadata_in_json(instant))
    stats = [s for partition in (metadata.get("partitionToWriteStats") or {}).values() for s in partition]
    return Commit(
        requested=instant.timestamp,
        completed=completed,
        action=instant.action,
        # Compaction commits carry no operation type: they rewrite, they do not change rows.
        operation=metadata.get("operationType") or ("COMPACT" if metadata.get("compacted") else ""),
        rows_written=sum(s.get("numWrites", 0) for s in stats),
        inserted=sum(s.get("numInserts", 0) for s in stats),
        updated=sum(s.get("numUpdateWrites", 0) for s in stats),
        deleted=sum(s.get("numDeletes", 0) for s in stats),
    )


def render(commits: list[Commit]) -> str:
    header = (
        "requested",
        "completed",
        "action",
        "operation",
        "rows written",
        "inserted",
        "updated",
        "deleted",
    )
    rows = [header] + [
        (
            c.requested,
            c.completed,
            c.action,
            c.operation,
            f"{c.rows_written:,}",
            f"{c.inserted:,}",
            f"{c.updated:,}",
            f"{c.deleted:,}",
        )
        for c in commits
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(
        lines
        + [
            f"{len(commits)} commits on the active timeline; read the table as "
            f"of one with TIMESTAMP AS OF '<completed>'"
        ]
    )
