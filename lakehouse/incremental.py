"""The one runner behind every Silver and Gold table (DESIGN.md §6).

A run of one derived table:
1. reads each input's changes since the completion time it last consumed, with
   `hudi_table_changes(<input>, 'cdc', <start>, <end>)`, `end` being the input's newest
   completed commit when the run began;
2. turns them into the output keys they affect (`Input.affects`), before- and after-images
   alike, so a row that moves between groups recomputes both;
3. recomputes exactly those keys with the table's transform over the inputs' current
   snapshots, keeps the rows that differ from what the table holds, and marks the keys the
   transform no longer produces as deletes; inputs declared with `prune` (and the output,
   when partitioned by the pruned column) are read only where the affected values lie;
4. upserts both in one Hudi commit whose metadata records the consumed `end` times, so the
   output and its checkpoint move together or not at all.

A full refresh is the same transform over whole snapshots, written with
`insert_overwrite_table`; it runs on `--full-refresh`, on the first run, and when an input's
checkpoint is no longer readable (archived or cleaned) — and says which.

Snapshots may already hold commits newer than `end` (Bronze can be streaming meanwhile).
That is harmless: recomputing a key from a newer snapshot gives the newer truth, and those
commits' changes are read again, and recomputed again, by the next run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import reduce

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakehouse import timeline
from lakehouse.catalog import exists
from lakehouse.settings import Settings
from lakehouse.tables import DerivedTable, Input, hudi_options

DELETED = "_hoodie_is_deleted"


class IncrementalError(RuntimeError):
    """A derived table cannot run; the message names it and says what to do."""


class UnreadableChanges(Exception):
    """Hudi could not read an input's change log for the range a run needs."""


@dataclass(frozen=True)
class RunReport:
    table: str
    mode: str  # "incremental", "full" or "idle"
    changes_read: int = 0
    upserted: int = 0
    deleted: int = 0
    seconds: float = 0.0
    note: str = ""

    def line(self) -> str:
        if self.mode == "idle":
            return f"{self.table:<40} no new input; nothing committed ({self.seconds:.1f} s)"
        what = "incremental" if self.mode == "incremental" else "full refresh"
        text = (f"{self.table:<40} {what:<12} {self.changes_read:>9} changes read  "
                f"{self.upserted:>9} upserted  {self.deleted:>7} deleted  {self.seconds:6.1f} s")
        return f"{text}  ({self.note})" if self.note else text


def snapshot(spark: SparkSession, table, settings: Settings) -> DataFrame:
    """The table's current rows, without Hudi's bookkeeping columns."""
    frame = spark.read.format("hudi").load(table.path(settings))
    return frame.select([c for c in frame.columns if not c.startswith("_hoodie_")])


def changed_images(spark: SparkSession, table, settings: Settings, start: str, end: str,
                   columns: T.StructType) -> DataFrame:
    """Before- and after-images of the rows changed in (start, end], one row per image.

    The CDC log stores images as JSON in Avro's encoding: timestamps as epoch microseconds,
    dates as epoch days, and (in Hudi 1.2) decimals as an unusable object. Images are only
    used to find keys, never values, so decimals are left out and the rest converted back.
    """
    as_read = T.StructType([
        T.StructField(f.name, T.LongType() if isinstance(f.dataType, T.TimestampType)
                      else T.IntegerType() if isinstance(f.dataType, T.DateType) else f.dataType)
        for f in columns if not isinstance(f.dataType, T.DecimalType)])
    restored = [
        F.timestamp_micros(F.col(f"image.{f.name}")).alias(f.name)
        if isinstance(f.dataType, T.TimestampType)
        else F.date_from_unix_date(F.col(f"image.{f.name}")).alias(f.name)
        if isinstance(f.dataType, T.DateType) else F.col(f"image.{f.name}")
        for f in columns if not isinstance(f.dataType, T.DecimalType)]
    log = spark.sql("SELECT before, after FROM hudi_table_changes(?, 'cdc', ?, ?)",
                    args=[table.path(settings), start, end])
    images = log.select(F.explode(F.array("before", "after")).alias("json")).where("json IS NOT NULL")
    return images.select(F.from_json("json", as_read).alias("image")).select(restored)


def affected_rows(spark: SparkSession, table: DerivedTable, source: Input,
                  changed: DataFrame) -> DataFrame:
    """The output's affected columns (key, and the columns inputs are pruned by) that the
    changes of one input reach."""
    changed.createOrReplaceTempView("changed")
    columns = table.affected_columns
    query = source.affects or f"SELECT {', '.join(columns)} FROM changed"
    found = spark.sql(query)
    missing = [c for c in columns if c not in found.columns]
    if missing:
        raise IncrementalError(f"{table.name}: what input {source.alias} affects must include "
                               f"{', '.join(missing)}; add it to the Input's `affects` query")
    return found.select(*columns)


def _within(frame: DataFrame, column: str, values: list) -> DataFrame:
    """Rows whose `column` holds one of `values`, as a filter on literals so that Hudi can
    prune partitions by it (whatever type the values were found in)."""
    kind = frame.schema[column].dataType
    return frame.where(F.col(column).isin([F.lit(v).cast(kind) for v in values]))


def _write(frame: DataFrame, table: DerivedTable, settings: Settings, operation: str,
           consumed: dict[str, str]) -> None:
    options = hudi_options(table, settings) | {
        "hoodie.datasource.write.operation": operation,
        timeline.CONSUMED_KEY: json.dumps(consumed, sort_keys=True),
    }
    frame.write.format("hudi").options(**options).mode("append").save(table.path(settings))


def _rebuild_reason(inputs: dict[str, timeline.Timeline], consumed: dict[str, str] | None) -> str | None:
    if consumed is None:
        return "first run"
    for name, found in inputs.items():
        start = consumed.get(name)
        if start is None:
            return f"no checkpoint for input {name}"
        if not found.can_read_after(start):
            return (f"checkpoint {start} of input {name} is no longer on its active timeline "
                    f"(archived or cleaned; raise HUDI_COMMITS_RETAINED or run more often), "
                    f"rebuilt from full snapshots")
    return None


class Runner:
    def __init__(self, spark: SparkSession, settings: Settings):
        self.spark, self.settings = spark, settings

    def run(self, table: DerivedTable, full_refresh: bool = False) -> RunReport:
        began = time.monotonic()
        inputs = {i.table.name: self._input_timeline(table, i) for i in table.inputs}
        ends = {name: t.latest for name, t in inputs.items()}
        snapshots = self._snapshots(table)
        transform = self._transform(table, snapshots)

        path = table.path(self.settings)
        consumed = timeline.read(self.spark, path).last_consumed if exists(self.spark, path) else None
        reason = "--full-refresh" if full_refresh else _rebuild_reason(inputs, consumed)
        if not reason:
            pending = [i for i in table.inputs
                       if inputs[i.table.name].has_commits_after(consumed[i.table.name])]
            if not pending:
                return RunReport(table.name, "idle", seconds=time.monotonic() - began)
            try:
                changes_read, upserted, deleted = self._increment(
                    table, snapshots, transform, pending, consumed, ends)
                return RunReport(table.name, "incremental", changes_read, upserted, deleted,
                                 time.monotonic() - began)
            except UnreadableChanges as error:
                reason = str(error)
        written = self._rebuild(table, transform, ends)
        return RunReport(table.name, "full", upserted=written,
                         seconds=time.monotonic() - began, note=reason)

    def full_result(self, table: DerivedTable) -> DataFrame:
        """What `--full-refresh` writes: the transform over the inputs' whole snapshots."""
        return self._transform(table, self._snapshots(table))

    def _snapshots(self, table: DerivedTable) -> dict[str, DataFrame]:
        return {i.alias: snapshot(self.spark, i.table, self.settings) for i in table.inputs}

    def _transform(self, table: DerivedTable, views: dict[str, DataFrame]) -> DataFrame:
        """The transform over `views`; Spark resolves them now, so they can be replaced after."""
        for alias, frame in views.items():
            frame.createOrReplaceTempView(alias)
        return self.spark.sql(table.transform_sql())

    def _input_timeline(self, table: DerivedTable, source: Input) -> timeline.Timeline:
        path = source.table.path(self.settings)
        found = timeline.read(self.spark, path) if exists(self.spark, path) else None
        if found is None or found.latest is None:
            raise IncrementalError(
                f"{table.name}: input {source.table.qualified_name} has no data yet at {path}; "
                f"build it first (`lakehouse run` goes through the layers in order)")
        return found

    def _rebuild(self, table: DerivedTable, transform: DataFrame, ends: dict[str, str]) -> int:
        result = transform.withColumn(DELETED, F.lit(False)).persist()
        try:
            rows = result.count()
            _write(result, table, self.settings, "insert_overwrite_table", ends)
            return rows
        finally:
            result.unpersist()

    def _increment(self, table: DerivedTable, snapshots: dict[str, DataFrame],
                   transform: DataFrame, pending: list[Input], consumed: dict[str, str],
                   ends: dict[str, str]) -> tuple[int, int, int]:
        cached: list[DataFrame] = []

        def cache(frame: DataFrame) -> DataFrame:
            cached.append(frame.persist())
            return frame

        try:
            changes_read, affected = self._read_changes(table, pending, consumed, ends, cache)
            return (changes_read, *self._upsert_affected(table, snapshots, transform, affected,
                                                         ends, cache))
        finally:
            for frame in cached:
                frame.unpersist()

    def _read_changes(self, table: DerivedTable, pending: list[Input], consumed: dict[str, str],
                      ends: dict[str, str], cache) -> tuple[int, DataFrame]:
        changes_read, affected = 0, []
        for source in pending:
            columns = self.spark.table(source.alias).schema
            changed = cache(changed_images(self.spark, source.table, self.settings,
                                           consumed[source.table.name], ends[source.table.name],
                                           columns))
            try:
                changes_read += changed.count()
            except Py4JJavaError as error:
                # Seen after a writer died during inline compaction and its successor wrote
                # on top of the pending compaction: Hudi 1.2's CDC reader fails on that
                # commit. A rebuild from snapshots is always correct, so say so and do it.
                cause = str(error.java_exception).splitlines()[0][:300]
                raise UnreadableChanges(
                    f"changes of input {source.table.name} in ({consumed[source.table.name]}, "
                    f"{ends[source.table.name]}] are unreadable ({cause}); rebuilt from full "
                    f"snapshots") from None
            affected.append(affected_rows(self.spark, table, source, changed))
        return changes_read, cache(reduce(DataFrame.unionByName, affected).distinct())

    def _upsert_affected(self, table: DerivedTable, snapshots: dict[str, DataFrame],
                         transform: DataFrame, affected: DataFrame, ends: dict[str, str],
                         cache) -> tuple[int, int]:
        keys = list(table.record_key)
        scope = {column: [row[0] for row in affected.select(column).distinct().collect()]
                 for column in dict.fromkeys(i.prune[1] for i in table.inputs if i.prune)}
        pruned_views = {i.alias: _within(snapshots[i.alias], i.prune[0], scope[i.prune[1]])
                        if i.prune else snapshots[i.alias] for i in table.inputs}
        recomputed = self._transform(table, pruned_views).join(affected, keys, "left_semi")
        current = snapshot(self.spark, table, self.settings)
        if table.partitioning and table.partitioning.column in scope:
            current = _within(current, table.partitioning.column, scope[table.partitioning.column])
        current = current.join(affected, keys, "left_semi").select(recomputed.columns)

        upserts = recomputed.exceptAll(current).withColumn(DELETED, F.lit(False))
        deletes = current.join(recomputed.select(keys), keys, "left_anti")
        if any(column not in keys for column in scope):
            # A row missing from the pruned inputs may have moved out of the affected values
            # in an input commit newer than this run's end (snapshots can be newer). Only the
            # whole inputs can tell, so the few delete candidates are looked up there.
            deletes = cache(deletes)
            if deletes.count():
                deletes = deletes.join(transform.join(deletes.select(keys), keys, "left_semi"),
                                       keys, "left_anti")
        batch = cache(upserts.unionByName(deletes.withColumn(DELETED, F.lit(True))))
        upserted, deleted = batch.agg(F.count_if(~F.col(DELETED)), F.count_if(F.col(DELETED))).first()
        # Written even when empty: the commit moves the checkpoint past changes that turned
        # out not to affect this table.
        _write(batch, table, self.settings, "upsert", ends)
        return upserted, deleted
