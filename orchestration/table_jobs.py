"""Running one table's command as a subprocess, and reading back what it did: its JSON
report on stdout, and its quality results from the layer's results table (JVM-free)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

from lakehouse.settings import Settings
from lakehouse.tables import DerivedTable, Table, quality_results_table
from medallion.invocation import EXIT_FAILURE, EXIT_WRITER_BUSY, MESSAGE_PREFIXES, lakehouse
from serving import fastpath


@dataclass(frozen=True)
class TableJobFailed(Exception):
    table: str
    exit_status: int
    message: str

    @property
    def retryable(self) -> bool:
        """A service restarting or a busy writer may be gone at the next try; a
        misconfiguration or a fail-tier breach needs a person."""
        return self.exit_status in (EXIT_FAILURE, EXIT_WRITER_BUSY)

    def __str__(self) -> str:
        return f"{self.table}: `lakehouse` exited {self.exit_status}: {self.message}"


def command(table: Table, full_refresh: bool = False) -> list[str]:
    if full_refresh and not isinstance(table, DerivedTable):
        raise ValueError(
            f"{table.name}: only Silver and Gold tables have a full refresh; a Bronze "
            f"table is rebuilt by replaying its topic"
        )
    return lakehouse(
        table.layer, "--table", table.name, "--json", *(["--full-refresh"] if full_refresh else [])
    )


def run_table(table: Table, settings: Settings, full_refresh: bool = False) -> dict:
    """Runs the table's command; returns its report (`--json`)."""
    reports = _run(command(table, full_refresh), settings, table.name)
    found = [r for r in reports if r.get("table") == table.name]
    if not found:
        raise TableJobFailed(table.name, EXIT_FAILURE, "no report for the table in its output")
    return found[-1]


def maintain(settings: Settings) -> list[dict]:
    """Runs `lakehouse maintain` over every table; returns one report per table."""
    return _run(lakehouse("maintain", "--json"), settings, "maintenance")


def _run(arguments: list[str], settings: Settings, name: str) -> list[dict]:
    """Runs a `lakehouse` command; returns the JSON objects it printed."""
    done = subprocess.run(
        arguments, env={**os.environ, **settings.environment()}, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise TableJobFailed(name, done.returncode, _message(done.stderr))
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _message(stderr: str) -> str:
    """The CLI's message: from its first line to the end; the log's tail without one."""
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(MESSAGE_PREFIXES)]
    return "\n".join(lines[starts[0] :] if starts else lines[-30:]).strip()


def latest_results(settings: Settings, table: DerivedTable) -> dict[str, dict]:
    """Per rule name, the newest result the table's quality gate recorded for it."""
    results = quality_results_table(table.layer)
    try:
        frame = fastpath.query(
            settings.warehouse,
            f"SELECT rule, tier, success, rows_checked, unexpected_count, sample_values, "
            f"validated_at, run_id FROM {results.qualified_name} "
            f"WHERE table_name = '{table.name}' ORDER BY validated_at DESC",
        ).table
    except fastpath.QueryError:  # no results table yet: nothing was ever validated
        return {}
    newest: dict[str, dict] = {}
    for row in frame.to_pylist():
        newest.setdefault(row["rule"], row)
    return newest
