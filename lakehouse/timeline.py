"""What a Hudi table's timeline says, read through Hudi's own Java API.

Hudi 1.x names every commit by two times: when it was requested and when it completed.
Incremental reads (`hudi_table_changes`) select commits by *completion* time, in the range
(start, end], so a reader that remembers the completion time it read up to neither skips a
commit that was requested earlier but finished later nor reads one twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import SparkSession

# Hudi copies write options whose key starts with this prefix (its default
# `hoodie.datasource.write.commitmeta.key.prefix`) into the commit's metadata.
CONSUMED_KEY = "_retailmax.consumed"
# Beside it, a fingerprint of the transform that wrote the commit (DerivedTable.fingerprint).
TRANSFORM_KEY = "_retailmax.transform"
# And, on every commit that changes rows, when the oldest source change it brings was made
# (a Postgres commit or an event's arrival in Kafka), as an instant: what a table's lag
# behind the source is measured from (monitoring/state.py).
OLDEST_CHANGE_KEY = "_retailmax.oldest_change"
# And, on a quarantine commit a rebuild wrote, a fingerprint of the rows the quarantine holds
# after it (lakehouse/incremental.py, `_keep_out`).
KEPT_OUT_KEY = "_retailmax.kept_out"
INSTANT_FORMAT = "%Y%m%d%H%M%S%f"


def instant(at: datetime) -> str:
    """`at` (naive UTC) as Hudi names instants: milliseconds, no separators."""
    return at.strftime(INSTANT_FORMAT)[:-3]


def instant_time(name: str) -> datetime:
    # Hudi's instants carry milliseconds; %f reads the three digits as a fraction.
    return datetime.strptime(name, INSTANT_FORMAT)


@dataclass(frozen=True)
class Timeline:
    """The completed commits of one table, oldest first, as (requested, completed) times."""

    commits: tuple[tuple[str, str], ...]
    earliest_retained: str | None
    last_consumed: dict[str, str] | None
    last_transform: str | None = None

    @property
    def latest(self) -> str | None:
        return max((completed for _, completed in self.commits), default=None)

    def completed_at(self, completion_time: str) -> bool:
        """Whether a commit on the active timeline completed at `completion_time`."""
        return any(completed == completion_time for _, completed in self.commits)

    def has_commits_after(self, completion_time: str) -> bool:
        return any(completed > completion_time for _, completed in self.commits)

    @property
    def readable_since(self) -> str:
        """The start (exclusive) of the longest range of changes still readable: the latest
        completion time of a commit requested before the oldest one the cleaner retains, or
        `earliest` when nothing older has been cleaned. The range never holds a commit the
        cleaner may have passed; with one writer per table, commits complete in the order
        they start, so it misses no retained one either."""
        older = [
            completed
            for requested, completed in self.commits
            if self.earliest_retained and requested < self.earliest_retained
        ]
        return max(older, default="earliest")

    def can_read_after(self, completion_time: str) -> bool:
        """Whether every commit that completed after `completion_time` is still readable:
        still on the active timeline and not yet removed by the cleaner."""
        if not self.commits:
            return False
        if completion_time < min(completed for _, completed in self.commits):
            # Commits between it and the oldest active one were archived.
            return False
        later = [requested for requested, completed in self.commits if completed > completion_time]
        return not later or self.earliest_retained is None or min(later) >= self.earliest_retained


def active_timeline(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    storage = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(
        spark.sparkContext._jsc.hadoopConfiguration()
    )
    client = (
        jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
        .setConf(storage)
        .setBasePath(path)
        .build()
    )
    return client.getActiveTimeline()


def has_commits(spark: SparkSession, path: str) -> bool:
    """Whether the table at `path` (which must exist) has a completed commit."""
    return not active_timeline(spark, path).getCommitsTimeline().filterCompletedInstants().empty()


def read(spark: SparkSession, path: str, checkpoint: bool = True) -> Timeline:
    """The table's timeline; with `checkpoint`, also the newest derived run's checkpoint,
    which takes reading commit metadata back to it (every commit of a table that has none,
    such as a Bronze input: leave it out there)."""
    active = active_timeline(spark, path)
    completed = active.getCommitsTimeline().filterCompletedInstants()
    commits = tuple((i.requestedTime(), i.getCompletionTime()) for i in completed.getInstants().toArray())
    consumed, transform = _last_checkpoint(completed) if checkpoint else (None, None)
    return Timeline(
        commits=commits,
        earliest_retained=_earliest_retained(active),
        last_consumed=consumed,
        last_transform=transform,
    )


def savepoints(spark: SparkSession, path: str) -> list[str]:
    """The instants of the table's savepoints, oldest first."""
    pinned = active_timeline(spark, path).getSavePointTimeline().filterCompletedInstants()
    return [i.requestedTime() for i in pinned.getInstants().toArray()]


def newest_metadata(spark: SparkSession, path: str, key: str) -> str | None:
    """The value of `key` in the metadata of the newest completed commit that has it (table
    services such as compaction write commits without the writer's keys)."""
    completed = active_timeline(spark, path).getCommitsTimeline().filterCompletedInstants()
    for instant in completed.getReverseOrderedInstants().toArray():
        value = completed.readCommitMetadata(instant).getMetadata(key)
        if value:
            return value
    return None


# Operations that rewrite files without changing a row (Hudi's WriteOperationType names).
TABLE_SERVICES = frozenset({"COMPACT", "LOG_COMPACT", "CLUSTER"})


def last_write_metadata(spark: SparkSession, path: str, key: str) -> str | None:
    """The value of `key` in the metadata of the newest completed commit that changed rows
    (None when that commit lacks it): unlike `newest_metadata`, a later write without the
    key hides an older one that has it."""
    completed = active_timeline(spark, path).getCommitsTimeline().filterCompletedInstants()
    for instant_ in completed.getReverseOrderedInstants().toArray():
        metadata = completed.readCommitMetadata(instant_)
        if metadata.getOperationType().name() not in TABLE_SERVICES:
            return metadata.getMetadata(key) or None
    return None


def _changing_commits(spark: SparkSession, path: str, start: str, end: str):
    """(instant, metadata) of each commit completed in (start, end] that changed rows: table
    services (compaction, clustering) rewrite files without changing a row and are left out."""
    completed = active_timeline(spark, path).getCommitsTimeline().filterCompletedInstants()
    for instant_ in completed.getInstants().toArray():
        if not start < instant_.getCompletionTime() <= end:
            continue
        metadata = completed.readCommitMetadata(instant_)
        if metadata.getOperationType().name() not in TABLE_SERVICES:
            yield instant_, metadata


def changes_committed(spark: SparkSession, path: str, start: str, end: str) -> dict[str, int]:
    """Per commit completed in (start, end] that changed rows, named by its requested time
    (the `ts_ms` of its rows in the change log), the rows its write statistics record as
    inserted, updated or deleted."""
    return {
        instant_.requestedTime(): sum(
            stat.getNumInserts() + stat.getNumUpdateWrites() + stat.getNumDeletes()
            for stat in metadata.getWriteStats().toArray()
        )
        for instant_, metadata in _changing_commits(spark, path, start, end)
    }


@dataclass(frozen=True)
class LastCommit:
    """The newest completed commit of a table: the checkpoint it recorded (the input commits
    it consumed) and the rows its write statistics record."""

    consumed: dict[str, str] | None
    written: int  # rows in the files it wrote, untouched rows of a rewritten file included
    upserted: int  # rows it inserted or updated
    deleted: int


def last_commit(spark: SparkSession, path: str) -> LastCommit:
    completed = active_timeline(spark, path).getCommitsTimeline().filterCompletedInstants()
    last = completed.lastInstant()
    if not last.isPresent():
        return LastCommit(None, 0, 0, 0)
    metadata = completed.readCommitMetadata(last.get())
    consumed = metadata.getMetadata(CONSUMED_KEY)
    stats = metadata.getWriteStats().toArray()
    return LastCommit(
        json.loads(consumed) if consumed else None,
        written=sum(stat.getNumWrites() for stat in stats),
        upserted=sum(stat.getNumInserts() + stat.getNumUpdateWrites() for stat in stats),
        deleted=sum(stat.getNumDeletes() for stat in stats),
    )


def rebuilt(spark: SparkSession, path: str, start: str, end: str) -> bool:
    """Whether a commit completed in (start, end] rewrote the whole table (a rebuild's
    `insert_overwrite_table`): the change log of that range then holds every row."""
    return any(
        metadata.getOperationType().name() == "INSERT_OVERWRITE_TABLE"
        for _, metadata in _changing_commits(spark, path, start, end)
    )


def oldest_change(spark: SparkSession, path: str, start: str, end: str) -> str | None:
    """The oldest source change (an instant) among the commits completed in (start, end];
    a commit written before tables recorded it counts from its requested time."""
    return min(
        (
            metadata.getMetadata(OLDEST_CHANGE_KEY) or instant_.requestedTime()
            for instant_, metadata in _changing_commits(spark, path, start, end)
        ),
        default=None,
    )


def _earliest_retained(active) -> str | None:
    """The oldest commit whose files the cleaner keeps: named by the newest clean that keeps
    commits, or later, by a clean that keeps file versions (`lakehouse erase`), which names
    none: any commit requested before it may have lost its files."""
    newest_by_versions = None
    for clean in active.getCleanerTimeline().filterCompletedInstants().getReverseOrderedInstants().toArray():
        metadata = active.readCleanMetadata(clean)
        if metadata.getEarliestCommitToRetain():
            return max(metadata.getEarliestCommitToRetain(), newest_by_versions or "")
        policies = {p.getPolicy() for p in metadata.getPartitionMetadata().values()}
        if newest_by_versions is None and "KEEP_LATEST_FILE_VERSIONS" in policies:
            newest_by_versions = clean.requestedTime()
    return newest_by_versions


def _last_checkpoint(completed) -> tuple[dict[str, str] | None, str | None]:
    """The input commits the newest derived run consumed, and its transform's fingerprint."""
    for instant in completed.getReverseOrderedInstants().toArray():
        metadata = completed.readCommitMetadata(instant)
        value = metadata.getMetadata(CONSUMED_KEY)
        if value:
            return json.loads(value), metadata.getMetadata(TRANSFORM_KEY) or None
    return None, None
