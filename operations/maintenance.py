"""Hudi's table services over the declared tables: `lakehouse tables` shows what they have to
do, `lakehouse maintain` does it.

Every write already runs them inline (`hudi_options`, lakehouse/tables.py):
- a Bronze (MERGE_ON_READ) table compacts its log files into new base files every
  HUDI_COMPACT_EVERY_DELTA_COMMITS delta commits;
- every table cleans after each commit, deleting file versions older than the last
  HUDI_COMMITS_RETAINED commits, and archives its timeline beyond that.

`maintain` runs the same services on demand, with the same retention: it compacts every log
file still waiting (a table idle since its last few commits would otherwise keep them until
its next writes), then cleans and archives. It takes the layer's writer lock: without a lock
provider (this project runs one writer per table) a table service and a writer must not
overlap. A deployment that runs services beside its writers needs Hudi's multi-writer
concurrency control and a lock provider first.

There is no clustering. Every table is written with the bucket index, which hashes a key to
one of `buckets` file groups of its partition: however many commits land, a partition holds
that many file groups, so small files cannot pile up, and clustering would rewrite them into
file groups the index does not know.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lakehouse import catalog, timeline
from lakehouse.files import Storage, is_data, storage
from lakehouse.settings import Settings
from lakehouse.tables import Table, hudi_options


@dataclass(frozen=True)
class TableFiles:
    """What one table holds on storage.

    `files` counts every data file version the cleaner has not deleted yet (base, log and
    change-log files), which is what storage holds; `snapshot_files` the ones a snapshot read
    opens: each file group's latest base file and the log files written after it. Compaction
    brings the second down at once, cleaning the first once the retained commits have moved
    past the old versions."""

    name: str
    table_type: str
    storage: Storage
    snapshot_files: int
    log_files: int
    commits: int
    pending_compactions: int
    oldest_retained: str | None

    @property
    def files(self) -> int:
        return self.storage.files

    def as_dict(self) -> dict:
        return {
            "table": self.name,
            "type": self.table_type,
            "files": self.files,
            "snapshot_files": self.snapshot_files,
            "log_files": self.log_files,
            "bytes": self.storage.bytes,
            "average_file_bytes": self.storage.average_bytes,
            "partitions": self.storage.partitions,
            "commits": self.commits,
            "pending_compactions": self.pending_compactions,
            "oldest_retained_commit": self.oldest_retained,
        }


@dataclass(frozen=True)
class MaintenanceReport:
    before: TableFiles
    after: TableFiles
    services: tuple[str, ...]
    seconds: float

    def line(self) -> str:
        return (
            f"{self.after.name:<48} {', '.join(self.services):<28} snapshot files "
            f"{self.before.snapshot_files:>5} -> {self.after.snapshot_files:<5} stored files "
            f"{self.before.files:>5} -> {self.after.files:<5} {self.seconds:6.1f} s"
        )

    def as_dict(self) -> dict:
        return {
            "table": self.after.name,
            "services": list(self.services),
            "before": self.before.as_dict(),
            "after": self.after.as_dict(),
            "seconds": round(self.seconds, 3),
        }


def existing(spark: SparkSession, settings: Settings, tables: list[Table]) -> list[Table]:
    return [t for t in tables if catalog.exists(spark, t.path(settings))]


def files(spark: SparkSession, settings: Settings, table: Table) -> TableFiles:
    path = table.path(settings)
    jvm = spark.sparkContext._jvm
    root = jvm.org.apache.hadoop.fs.Path(path)
    listing = root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).listFiles(root, True)
    entries = []
    while listing.hasNext():
        status = listing.next()
        entries.append((status.getPath().toUri().getPath()[len(root.toUri().getPath()) :], status.getLen()))
    names = [relative.rpartition("/")[2] for relative, _ in entries if is_data(relative)]
    found = timeline.read(spark, path, checkpoint=False)
    active = timeline.active_timeline(spark, path)
    return TableFiles(
        name=table.qualified_name,
        table_type=table.table_type,
        storage=storage(entries),
        snapshot_files=snapshot_file_count(names, {r for r, _ in found.commits}),
        log_files=sum(".log." in n for n in names),
        commits=len(found.commits),
        pending_compactions=active.filterPendingCompactionTimeline().countInstants(),
        # Without a clean yet, every commit since the first is still readable.
        oldest_retained=found.earliest_retained or min((r for r, _ in found.commits), default=None),
    )


def snapshot_file_count(names: list[str], completed: set[str]) -> int:
    """How many of a table's data files a snapshot read opens, from their names (Hudi's
    naming): base files `<file id>_<write token>_<instant>.parquet`, log files
    `.<file id>_<instant>.log.<version>_<write token>`, change-log files the same with a
    `.cdc` suffix, which only change-log readers open. Files of a write that never completed
    (`completed` holds the instants that did) are read by nobody; the next writer rolls
    them back. Instants older than the active timeline were archived, which only completed
    ones are."""
    oldest_active = min(completed, default="")

    def committed(instant: str) -> bool:
        return instant in completed or instant < oldest_active

    latest_base: dict[str, str] = {}
    logs: list[tuple[str, str]] = []
    for name in names:
        if name.endswith(".parquet"):
            file_id, _, rest = name.partition("_")
            instant = rest.rsplit("_", 1)[-1].removesuffix(".parquet")
            if committed(instant):
                latest_base[file_id] = max(latest_base.get(file_id, ""), instant)
        elif ".log." in name and not name.endswith(".cdc"):
            file_id, _, rest = name.lstrip(".").partition("_")
            instant = rest.partition(".log.")[0]
            if committed(instant):
                logs.append((file_id, instant))
    return len(latest_base) + sum(instant > latest_base.get(file_id, "") for file_id, instant in logs)


# What a table service must share with the table's writers: whether the table keeps a
# metadata table (a service with Hudi's default would create one that a bucket-indexed
# table goes without), retention, compaction and task counts. Index settings stay out: a
# service finds no keys, and the bucket index's would need the key field list, which the
# procedures' `k=v,k=v` options cannot carry.
SERVICE_OPTION_PREFIXES = ("hoodie.metadata.", "hoodie.clean.", "hoodie.keep.", "hoodie.compact.")


def service_options(table: Table, settings: Settings, **overrides: str) -> str:
    shared = {
        key: value
        for key, value in hudi_options(table, settings).items()
        if key.startswith(SERVICE_OPTION_PREFIXES) or key.endswith(".parallelism")
    }
    return ",".join(f"{key}={value}" for key, value in (shared | overrides).items())


def compact(spark: SparkSession, settings: Settings, table: Table) -> bool:
    """Compacts every file slice with a log file, in every partition, not only those written
    since the last compaction (what inline planning looks at); whether there was any."""
    options = service_options(
        table,
        settings,
        **{
            "hoodie.compact.inline.max.delta.commits": "1",
            "hoodie.table.services.incremental.enabled": "false",
        },
    )
    return bool(
        spark.sql(
            f"CALL run_compaction(op => 'scheduleAndExecute', "
            f"path => '{table.path(settings)}', options => '{options}')"
        ).collect()
    )


def clean(spark: SparkSession, settings: Settings, table: Table, retention: str) -> None:
    """Runs the cleaner over the whole table with `retention`, the procedure's arguments
    that say what to keep."""
    options = service_options(table, settings, **{"hoodie.table.services.incremental.enabled": "false"})
    spark.sql(
        f"CALL run_clean(table => '{table.qualified_name}', {retention}, options => '{options}')"
    ).collect()


def maintain(spark: SparkSession, settings: Settings, table: Table) -> MaintenanceReport:
    began = time.monotonic()
    before = files(spark, settings, table)
    path, services = table.path(settings), []
    if table.table_type == "MERGE_ON_READ" and compact(spark, settings, table):
        services.append("compaction")
    clean(spark, settings, table, f"retain_commits => {settings.commits_retained}")
    services.append("clean")
    spark.sql(
        f"CALL archive_commits(path => '{path}', "
        f"min_commits => {settings.commits_retained + 10}, "
        f"max_commits => {settings.commits_retained + 20}, "
        f"retain_commits => {settings.commits_retained}, "
        f"enable_metadata => false)"
    ).collect()
    services.append("archive")
    return MaintenanceReport(before, files(spark, settings, table), tuple(services), time.monotonic() - began)


def render(tables: list[TableFiles]) -> str:
    header = (
        "table",
        "type",
        "partitions",
        "files",
        "snapshot files",
        "log files",
        "size",
        "avg file",
        "commits",
        "pending compactions",
        "oldest retained commit",
    )
    rows = [header] + [
        (
            t.name,
            "MOR" if t.table_type == "MERGE_ON_READ" else "COW",
            f"{t.storage.partitions:,}",
            f"{t.files:,}",
            f"{t.snapshot_files:,}",
            f"{t.log_files:,}",
            _size(t.storage.bytes),
            _size(t.storage.average_bytes),
            f"{t.commits:,}",
            str(t.pending_compactions),
            t.oldest_retained or "—",
        )
        for t in tables
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows)


def _size(n: int) -> str:
    value, units = float(n), ["B", "KiB", "MiB", "GiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{n} B" if units[0] == "B" else f"{value:.1f} {units[0]}"
