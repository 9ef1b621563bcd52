"""What every table declaration shares, and the one function that turns one into Hudi options.

A layer declares each of its tables once (bronze/tables.py, ...); paths, Hudi write options,
quarantine tables and catalog entries are all derived from that declaration here, so nobody
retypes an options dict.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakehouse.settings import Settings

LAYERS = ("bronze", "silver", "gold")
TABLE_TYPES = ("MERGE_ON_READ", "COPY_ON_WRITE")


@dataclass(frozen=True)
class Partitioning:
    """The partition column; `from_ts` derives it as the UTC date (yyyy-MM-dd) of a timestamp."""

    column: str
    from_ts: str | None = None


@dataclass(frozen=True)
class Table:
    name: str
    layer: str
    table_type: str
    record_key: tuple[str, ...]
    ordering: tuple[str, ...]
    partitioning: Partitioning | None = None
    change_log: bool = False
    description: str = ""

    def __post_init__(self):
        if self.layer not in LAYERS:
            raise ValueError(f"table {self.name}: layer must be one of {LAYERS}, got {self.layer!r}")
        if self.table_type not in TABLE_TYPES:
            raise ValueError(f"table {self.name}: table_type must be one of {TABLE_TYPES}, "
                             f"got {self.table_type!r}")
        if not self.record_key or not self.ordering:
            raise ValueError(f"table {self.name}: record_key and ordering must not be empty")

    @property
    def qualified_name(self) -> str:
        return f"{self.layer}.{self.name}"

    def path(self, settings: Settings) -> str:
        return f"{settings.warehouse.rstrip('/')}/{self.layer}/{self.name}"


def _key_generator(table: Table) -> str:
    if table.partitioning is None:
        return "NON_PARTITION"
    return "COMPLEX" if len(table.record_key) > 1 else "SIMPLE"


def _parallelism(tasks: int) -> dict[str, str]:
    """Hudi sizes many steps of a commit by fixed defaults of 60 to 200 tasks, made for
    clusters; on a small machine each mostly-empty task costs more than its work, so every
    step gets the same task count as Spark's shuffles."""
    keys = ("upsert.shuffle", "insert.shuffle", "delete.shuffle", "global.index.reconcile",
            "file.listing", "finalize.write", "clean", "rollback", "markers.delete",
            "archive.delete")
    return {f"hoodie.{key}.parallelism": str(tasks) for key in keys}


def hudi_options(table: Table, settings: Settings) -> dict[str, str]:
    """Hudi write options for an upsert into `table`.

    - Record index, global: a key is unique across the table even when its partition value
      changes (a customer moving country, a stock position updated on a later day); the
      old copy is deleted from its former partition.
    - Event-time ordering on the declared fields: for one key the record with the highest
      ordering value wins, whatever order records arrive in, replays included.
    - Deletes are rows with `_hoodie_is_deleted = true`.
    - `change_log` turns on Hudi's CDC log (before and after images), which readers of
      `hudi_table_changes(..., 'cdc', ...)` need; it can only be set when a table is created.
    - MERGE_ON_READ tables compact inline every `compact_every_delta_commits` delta commits,
      so log files do not pile up; the cleaner keeps `commits_retained` commits, which is
      how far back an incremental reader may fall behind before it must rebuild.
    """
    options = {
        "hoodie.table.name": table.name,
        "hoodie.datasource.write.table.type": table.table_type,
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.recordkey.field": ",".join(table.record_key),
        "hoodie.datasource.write.partitionpath.field":
            table.partitioning.column if table.partitioning else "",
        "hoodie.datasource.write.keygenerator.type": _key_generator(table),
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.table.ordering.fields": ",".join(table.ordering),
        "hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING",
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.metadata.global.record.level.index.enable": "true",
        "hoodie.record.index.update.partition.path": "true",
        "hoodie.table.timeline.timezone": "UTC",
        # The record index is the only metadata index the jobs use; column and partition
        # statistics would be rewritten on every small commit for no reader.
        "hoodie.metadata.index.column.stats.enable": "false",
        "hoodie.metadata.index.partition.stats.enable": "false",
        "hoodie.clean.commits.retained": str(settings.commits_retained),
        "hoodie.keep.min.commits": str(settings.commits_retained + 10),
        "hoodie.keep.max.commits": str(settings.commits_retained + 20),
        "hoodie.metadata.record.index.min.filegroup.count": "1",
        "hoodie.metadata.record.index.max.filegroup.count": "4",
        "hoodie.embed.timeline.server": "false",
        "hoodie.write.markers.type": "DIRECT",
        **_parallelism(settings.shuffle_partitions),
    }
    if table.table_type == "MERGE_ON_READ":
        options |= {
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": str(settings.compact_every_delta_commits),
        }
    if table.change_log:
        options |= {
            "hoodie.table.cdc.enabled": "true",
            "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER",
        }
    return options
