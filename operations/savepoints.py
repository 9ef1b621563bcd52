"""`lakehouse savepoint create|list|restore|delete`: Hudi savepoints of the declared tables.

A savepoint pins a table's latest commit: the cleaner keeps its files, and a restore brings
the table back to exactly that state, rolling back every commit after it. What each layer's
checkpoint needs to follow its data back:

- Silver and Gold keep their checkpoint (the input commits they consumed) in each commit's
  metadata, so a restore takes it back with the data, never ahead of it; the next run reads
  the inputs' changes since then and brings the table up to date.
- Bronze's checkpoint is its Spark stream's (Kafka offsets), kept beside the table: a
  savepoint copies it, taken under the writer lock so that it matches the commit, and a
  restore puts the copy back, so the stream replays from Kafka what came after.
- A table that read a commit a restore removed rebuilds from full snapshots on its next run
  (lakehouse/incremental.py), so nothing derived from the undone commits survives.

Quarantine and quality-result tables are not savepointed: their rows are keyed, and the next
run's re-derivation decides them again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lakehouse import catalog, timeline
from lakehouse.settings import ConfigurationError, Settings
from lakehouse.tables import Table
from medallion.tables import derived_tables

USER = "lakehouse"


@dataclass(frozen=True)
class Savepoint:
    table: str
    instant: str
    completed: str


def _stream_checkpoint(settings: Settings, table: Table) -> str | None:
    if table.layer != "bronze":
        return None
    from bronze.job import checkpoint_location

    return checkpoint_location(settings, table)


def _saved_checkpoint(settings: Settings, table: Table, instant: str) -> str:
    return f"{settings.checkpoints.rstrip('/')}/savepoints/{table.layer}/{table.name}/{instant}"


def _require_table(spark: SparkSession, settings: Settings, table: Table) -> str:
    path = table.path(settings)
    if not catalog.exists(spark, path):
        raise ConfigurationError(
            f"{table.qualified_name} has no commit yet at {path}: there is nothing to savepoint or restore"
        )
    return path


def listed(spark: SparkSession, settings: Settings, table: Table) -> list[Savepoint]:
    """The table's savepoints, oldest first, each with its commit's completion time."""
    path = _require_table(spark, settings, table)
    completed = dict(timeline.read(spark, path, checkpoint=False).commits)
    return [
        Savepoint(table.qualified_name, i, completed.get(i, "")) for i in timeline.savepoints(spark, path)
    ]


def create(spark: SparkSession, settings: Settings, table: Table, comment: str = "") -> Savepoint:
    """Savepoints the table's latest commit; the caller holds the layer's writer lock."""
    path = _require_table(spark, settings, table)
    instant, completed = max(timeline.read(spark, path, checkpoint=False).commits, key=lambda c: c[1])
    stream = _stream_checkpoint(settings, table)
    if stream:
        _copy(spark, stream, _saved_checkpoint(settings, table, instant))
    comment = comment.replace("'", "")
    spark.sql(
        f"CALL create_savepoint(path => '{path}', commit_time => '{instant}', "
        f"user => '{USER}', comments => '{comment}')"
    ).collect()
    return Savepoint(table.qualified_name, instant, completed)


def restore(spark: SparkSession, settings: Settings, table: Table, instant: str | None = None) -> Savepoint:
    """Restores the table to `instant` (its latest savepoint by default); the caller holds the
    layer's writer lock, so no writer is running."""
    savepoints = listed(spark, settings, table)
    if not savepoints:
        raise ConfigurationError(
            f"{table.qualified_name} has no savepoint; create one first "
            f"with `lakehouse savepoint create {table.qualified_name}`"
        )
    chosen = next((s for s in savepoints if s.instant == instant), None) if instant else savepoints[-1]
    if chosen is None:
        raise ConfigurationError(
            f"{table.qualified_name} has no savepoint {instant}; its "
            f"savepoints: {', '.join(s.instant for s in savepoints)}"
        )
    stream = _stream_checkpoint(settings, table)
    saved = _saved_checkpoint(settings, table, chosen.instant) if stream else None
    if saved and not _exists(spark, saved):
        raise ConfigurationError(
            f"{table.qualified_name}'s savepoint {chosen.instant} has no copy "
            f"of the stream's checkpoint at {saved} (it was not made by "
            f"`lakehouse savepoint create`), so the stream could not resume "
            f"where the data stops; restore it with Hudi's own tools"
        )
    spark.sql(
        f"CALL rollback_to_savepoint(path => '{table.path(settings)}', instant_time => '{chosen.instant}')"
    ).collect()
    if saved:
        _delete(spark, stream)
        _copy(spark, saved, stream)
    return chosen


def delete(spark: SparkSession, settings: Settings, table: Table, instant: str) -> None:
    """Deletes a savepoint, so the cleaner may delete the files only it kept."""
    if instant not in {s.instant for s in listed(spark, settings, table)}:
        raise ConfigurationError(f"{table.qualified_name} has no savepoint {instant}")
    spark.sql(
        f"CALL delete_savepoint(path => '{table.path(settings)}', instant_time => '{instant}')"
    ).collect()
    if _stream_checkpoint(settings, table):
        _delete(spark, _saved_checkpoint(settings, table, instant))


def apply(
    spark: SparkSession,
    settings: Settings,
    action: str,
    tables: list[Table],
    instant: str | None = None,
    comment: str = "",
) -> Iterator[str]:
    """What `lakehouse savepoint <action>` does to each of `tables`, a line each; the caller
    holds their layers' writer locks for any action but `list`."""
    if action == "list":
        found = [
            s for t in tables if catalog.exists(spark, t.path(settings)) for s in listed(spark, settings, t)
        ]
        yield from (f"{s.table:<50} {s.instant}  (completed {s.completed})" for s in found)
        if not found:
            yield "no savepoints"
    elif action == "create":
        for table in tables:
            s = create(spark, settings, table, comment)
            yield f"{s.table:<50} savepoint {s.instant} (completed {s.completed})"
    elif action == "restore":
        restored = {t.qualified_name for t in tables}
        for table in tables:
            s = restore(spark, settings, table, instant)
            rebuilt = [r for r in readers(table) if r not in restored]
            yield (
                f"{s.table:<50} restored to savepoint {s.instant}"
                + (f"; {', '.join(rebuilt)} rebuild on their next run" if rebuilt else "")
            )
    elif action == "delete":
        if not instant:
            raise ConfigurationError("name the savepoint to delete with --instant")
        for table in tables:
            delete(spark, settings, table, instant)
            yield f"{table.qualified_name:<50} savepoint {instant} deleted"
    else:
        raise ConfigurationError(f"unknown savepoint action {action!r}")


def readers(table: Table) -> list[str]:
    """The derived tables that read `table`: they rebuild after it is restored."""
    return [t.qualified_name for t in derived_tables() if any(i.table.name == table.name for i in t.inputs)]


def _hadoop(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def _exists(spark: SparkSession, path: str) -> bool:
    fs, hadoop_path = _hadoop(spark, path)
    return fs.exists(hadoop_path)


def _delete(spark: SparkSession, path: str) -> None:
    fs, hadoop_path = _hadoop(spark, path)
    fs.delete(hadoop_path, True)


def _copy(spark: SparkSession, source: str, target: str) -> None:
    """Copies a directory on any Hadoop file system (local, hdfs://, s3a://)."""
    source_fs, source_path = _hadoop(spark, source)
    target_fs, target_path = _hadoop(spark, target)
    target_fs.delete(target_path, True)
    jvm = spark.sparkContext._jvm
    if not jvm.org.apache.hadoop.fs.FileUtil.copy(
        source_fs, source_path, target_fs, target_path, False, spark.sparkContext._jsc.hadoopConfiguration()
    ):
        raise RuntimeError(f"could not copy {source} to {target}")
