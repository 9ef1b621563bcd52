"""A feature table as it was at one commit, read without a JVM (hudi-rs time travel).

A model is reproducible when it is trained on exactly the rows one commit left in the table:
the commit is named by its completion time (what `lakehouse history` lists and Spark's
`TIMESTAMP AS OF` takes), and the rows come back sorted by record key, so the same commit
gives the same frame, row for row, whatever commits came after it.

Time travel reads the file slices the commit saw. The cleaner deletes a slice once
`HUDI_COMMITS_RETAINED` newer commits replaced it, after which the same read would quietly
miss rows, so a commit older than that is refused unless a savepoint keeps its files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas
import pyarrow as pa
from hudi import HudiReadOptions, HudiTable

from lakehouse.settings import ConfigurationError, Settings
from lakehouse.tables import DerivedTable
from serving.history import completed_instants

COMMIT_ACTIONS = ("commit", "replacecommit", "deltacommit")


@dataclass(frozen=True)
class Snapshot:
    """The rows of `table` (qualified name) as of the commit that completed at `completed`."""

    table: str
    requested: str
    completed: str
    frame: pandas.DataFrame


def _commits(path: str) -> tuple[list[tuple[str, str]], set[str]]:
    """The table's completed commits as (requested, completed), oldest first, and the
    requested times of its savepoints."""
    instants = completed_instants(path)
    commits = sorted(
        (
            (requested, completed)
            for (requested, action), completed in instants.items()
            if action in COMMIT_ACTIONS
        ),
        key=lambda commit: commit[1],
    )
    savepoints = {requested for (requested, action) in instants if action == "savepoint"}
    return commits, savepoints


def resolve(settings: Settings, table: DerivedTable, as_of: str | None = None) -> tuple[str, str]:
    """The commit (requested, completed) `as_of` names, by either time; the newest without
    one. Fails with what to do when there is none, or its files may be gone."""
    path = table.path(settings)
    if not Path(path, ".hoodie").is_dir():
        raise ConfigurationError(
            f"{table.qualified_name} has no data yet at {path}: run `lakehouse run` first"
        )
    commits, savepoints = _commits(path)
    if not commits:
        raise ConfigurationError(
            f"{table.qualified_name} has no completed commit yet: run `lakehouse run` first"
        )
    if as_of is None:
        return commits[-1]
    found = [c for c in commits if as_of in c]
    if not found:
        raise ConfigurationError(
            f"{table.qualified_name} has no commit {as_of} on its active timeline "
            f"(`lakehouse history {table.qualified_name}` lists them)"
        )
    commit = found[0]
    retained = [c for c, _ in commits[-settings.commits_retained :]]
    if commit[0] not in retained and commit[0] not in savepoints:
        raise ConfigurationError(
            f"commit {commit[1]} of {table.qualified_name} is more than HUDI_COMMITS_RETAINED "
            f"({settings.commits_retained}) commits old and has no savepoint, so the cleaner may "
            f"have deleted rows it saw; train as of a savepoint (`lakehouse savepoint create "
            f"{table.qualified_name}` keeps the newest commit for good)"
        )
    return commit


def read_as_of(settings: Settings, table: DerivedTable, as_of: str | None = None) -> Snapshot:
    """The table's rows as of the commit `as_of` names (the newest by default), without
    Hudi's columns, sorted by record key."""
    requested, completed = resolve(settings, table, as_of)
    batches = HudiTable(table.path(settings)).read(HudiReadOptions().with_as_of_timestamp(completed))
    data = pa.Table.from_batches(batches) if batches else None
    frame = data.to_pandas() if data is not None else pandas.DataFrame()
    frame = frame[[c for c in frame.columns if not c.startswith("_hoodie")]]
    if not frame.empty:
        frame = frame.sort_values(list(table.record_key), ignore_index=True)
    return Snapshot(table.qualified_name, requested, completed, frame)
