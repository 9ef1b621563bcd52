"""Lands every Bronze topic with Spark Structured Streaming, one query per topic.

Exactly once, without a second source of truth: each query's Spark checkpoint records the
Kafka offset range of a micro-batch *before* the batch is written, and the batch is written
as one Hudi upsert (plus one upsert of its quarantined messages). If the process dies
anywhere in between, the restarted query replays the same range: Hudi rolls back the
unfinished commit, and rewriting a committed batch is a no-op because rows are upserted by
key with event-time ordering (the same change has the same source position) and quarantine
rows are keyed by their Kafka position. So a crash can neither lose nor duplicate a message.

`drain` reads what Kafka holds now and stops (scheduled runs, tests); `run_continuously`
keeps polling on a trigger interval (what `make up` runs).
"""

# Why one module over 300 lines: each query's lifecycle (start, write a batch, drain, stream,
# and the failures it recovers from: a refused schema change, a recreated topic) turns on
# the same query, checkpoint and counts, and is read top to bottom as one job. What it
# builds on lives apart: decoding (bronze/decode.py), schema checks (bronze/schema.py), the
# table declarations (bronze/tables.py).

from __future__ import annotations

import dataclasses
import functools
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery, StreamingQueryException

from bronze.decode import IMAGE_FIELDS, Decoder, Plausible, lineage_columns, split, unlandable
from bronze.schema import SchemaChange, SourceColumn, reconcile, source_columns, unexplained_fields
from bronze.tables import BRONZE_TABLES, DEBEZIUM, BronzeTable
from ingestion import database, topics
from lakehouse import catalog, hudi, layout
from lakehouse.settings import Settings
from lakehouse.timeline import OLDEST_CHANGE_KEY, instant

# How long a continuously streamed table whose batch was refused waits before trying again.
REFUSED_RETRY_SECONDS = 60
# A batch that fails to land for another reason is tried again after this long, once; then
# its messages are landed in halves, down to the ones that fail alone, which are quarantined.
FAILED_BATCH_RETRY_SECONDS = 5


class BronzeError(RuntimeError):
    """A Bronze query failed; the message says which table and what to do."""


@dataclass
class LandedCounts:
    messages: int = 0
    rows: int = 0
    quarantined: int = 0
    batches: int = 0
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, messages: int, rows: int, quarantined: int, seconds: float) -> None:
        with self.lock:
            self.messages += messages
            self.rows += rows
            self.quarantined += quarantined
            self.batches += 1
            self.seconds += seconds


def checkpoint_location(settings: Settings, table: BronzeTable) -> str:
    return f"{settings.checkpoints.rstrip('/')}/bronze/{table.name}"


class Landing:
    """Lands the batches of one Bronze table, carrying the columns its source has added
    beyond the declared ones (bronze/schema.py)."""

    def __init__(self, spark: SparkSession, table: BronzeTable, settings: Settings):
        self.declared, self.settings = table, settings
        for landed in (table, table.quarantine):
            relaid = layout.ensure(spark, settings, landed)
            if relaid:
                print(relaid, flush=True)
        # The table's own schema remembers what earlier batches carried, so a restart (or a
        # batch while the source is down) writes every column the table has.
        self.carried = carried_columns(spark, table, settings)

    def land(self, raw: DataFrame) -> tuple[int, int, int]:
        """Decodes one batch of Kafka records and upserts it; returns (messages, rows,
        quarantined)."""
        cdc = self.declared.envelope == DEBEZIUM
        source = source_columns(self.settings, self.declared) if cdc else None
        table = self._as_landed(source)
        # Read after the batch's messages were: every real change in it lies before.
        latest_lsn = database.current_wal_lsn(self.settings) if cdc else None
        # Parsed once and cached: the counts and both writes read it, and Hudi's upsert reads
        # its input more than once.
        plausible = Plausible.of(self.settings, latest_lsn)
        classified = Decoder.of(table, plausible).classify(raw, plausible).persist()
        try:
            # A change was made when Postgres committed it; an event, when it reached Kafka.
            made = F.coalesce("_source_ts", "_kafka_ts") if cdc else F.col("_kafka_ts")
            messages, bad_count, field_lists, oldest = classified.agg(
                F.count("*"),
                F.count_if(F.col("error").isNotNull()),
                F.collect_set(F.when(F.col("error").isNull(), F.col(IMAGE_FIELDS))) if cdc else F.array(),
                F.min(made),
            ).first()
            if messages == 0:
                return 0, 0, 0
            unexplained = cdc and source is None and unexplained_fields(self.declared, table, field_lists)
            if unexplained:
                # Only the source can say whether its schema changed: the batch waits for it.
                raise BronzeError(
                    f"Bronze table {table.name}: messages have {unexplained}, and the source "
                    f"{table.source_table} cannot be reached to tell whether its schema "
                    f"changed. The batch waits in Kafka; start again once the source is up."
                )
            row_count = messages - bad_count
            rows, quarantined = split(classified, table)
            if row_count:
                hudi.write(rows, table, self.settings, "upsert", {OLDEST_CHANGE_KEY: instant(oldest)})
            if bad_count:
                hudi.write(quarantined, table.quarantine, self.settings, "upsert")
            return messages, row_count, bad_count
        finally:
            classified.unpersist()

    def land_or_isolate(self, raw: DataFrame) -> tuple[int, int, int]:
        """`land`, and when a batch fails for a reason that is not a refusal (a message that
        breaks decoding or the write in a way no check foresaw), no single message stops
        the stream: the batch is tried again once, then landed in halves, down to the
        messages that fail on their own, which go to quarantine with the error."""
        try:
            return self.land(raw)
        except BronzeError:
            raise
        except Exception:  # noqa: BLE001 - whatever Spark or Hudi raised; retried, then isolated
            time.sleep(FAILED_BATCH_RETRY_SECONDS)
        try:
            return self.land(raw)
        except BronzeError:
            raise
        except Exception:  # noqa: BLE001
            positions = sorted(tuple(r) for r in raw.select("partition", "offset").collect())
            return self._isolate(raw, positions)

    def _isolate(self, raw: DataFrame, positions: list[tuple[int, int]]) -> tuple[int, int, int]:
        position = F.struct("partition", "offset")
        first, last = (
            F.struct(F.lit(p).cast("int").alias("partition"), F.lit(o).cast("long").alias("offset"))
            for p, o in (positions[0], positions[-1])
        )
        part = raw.where(position.between(first, last))
        try:
            return self.land(part)
        except BronzeError:
            raise
        except Exception as error:  # noqa: BLE001 - isolated below, or quarantined with it
            if len(positions) > 1:
                middle = len(positions) // 2
                return tuple(
                    map(
                        sum,
                        zip(self._isolate(raw, positions[:middle]), self._isolate(raw, positions[middle:])),
                    )
                )
            reason = next((line for line in str(error).splitlines() if line.strip()), "")
            hudi.write(unlandable(part, reason[:500]), self.declared.quarantine, self.settings, "upsert")
            return 1, 0, 1

    def _as_landed(self, source: dict[str, SourceColumn] | None) -> BronzeTable:
        """The table as a batch lands it: its declared columns and the carried ones, which
        take in what the source added when its schema is known."""
        if source is not None:
            try:
                self.carried = reconcile(self.declared, self.carried, source)
            except SchemaChange as change:
                raise BronzeError(str(change)) from None
        if not self.carried:
            return self.declared
        return dataclasses.replace(self.declared, columns={**self.declared.columns, **self.carried})


def carried_columns(spark: SparkSession, table: BronzeTable, settings: Settings) -> dict[str, str]:
    """The columns a Bronze table holds beyond its declared ones and lineage: those its
    source added (or the declaration has since dropped), with their Spark types."""
    if not catalog.exists(spark, table.path(settings)):
        return {}
    known = {*table.columns, *lineage_columns(table)}
    schema = hudi.read(spark, table.path(settings)).schema
    return {
        f.name: f.dataType.simpleString()
        for f in schema
        if f.name not in known and not f.name.startswith("_hoodie_")
    }


class BronzeJob:
    def __init__(
        self, spark: SparkSession, settings: Settings, tables: tuple[BronzeTable, ...] = BRONZE_TABLES
    ):
        self.spark, self.settings, self.tables = spark, settings, tables
        self.counts = {table.name: LandedCounts() for table in tables}
        self.refusals: dict[str, BronzeError] = {}

    def _start(self, table: BronzeTable, trigger: dict) -> StreamingQuery:
        landing = Landing(self.spark, table, self.settings)

        def write(batch: DataFrame, batch_id: int) -> None:
            began = time.monotonic()
            try:
                landed = landing.land_or_isolate(batch)
            except BronzeError as refusal:
                # Spark reports it wrapped in a Python traceback; the caller gets it as is.
                self.refusals[table.name] = refusal
                raise
            self.counts[table.name].add(*landed, time.monotonic() - began)

        source = (
            topics.spark_reader(self.spark, self.settings, table.topic, streaming=True)
            .option("failOnDataLoss", "true")
            .option("maxOffsetsPerTrigger", self.settings.bronze_max_offsets_per_batch)
            .load()
        )
        return (
            source.writeStream.queryName(table.name)
            .foreachBatch(write)
            .option("checkpointLocation", checkpoint_location(self.settings, table))
            .trigger(**trigger)
            .start()
        )

    def _await(self, queries: list[StreamingQuery], timeout: float | None = None) -> None:
        """Waits for the queries to end (stopping those still running after `timeout`), then
        raises the first one's failure."""
        failures = []
        for query in queries:
            try:
                query.awaitTermination(timeout)
            except StreamingQueryException as error:
                failures.append((query.name, error))
        for query in queries:
            if query.isActive:
                query.stop()
        if failures:
            name, error = failures[0]
            raise self.refusals.get(name) or BronzeError(_explain(name, error))

    def drain(self) -> dict[str, LandedCounts]:
        """Lands everything the topics hold now, then stops."""
        pending = self.tables
        while pending:
            queries = {table.name: self._start(table, {"availableNow": True}) for table in pending}
            for query in queries.values():
                try:
                    query.awaitTermination()
                except StreamingQueryException:
                    pass
            failed = [t for t in pending if queries[t.name].exception() is not None]
            pending = tuple(
                t for t in failed if t.name not in self.refusals and self.took_up_recreated_topic(t)
            )
            self._await([queries[t.name] for t in failed if t not in pending])
        return self.counts

    def took_up_recreated_topic(
        self, table: BronzeTable, report=functools.partial(print, flush=True)
    ) -> bool:
        """Whether the table's topic was deleted and created again since its query last
        landed a batch: its end offsets went back below that batch's. If so, the query's
        checkpoint is set aside, so that it starts again on the new topic's first offset
        (failOnDataLoss stops it otherwise, for good), and the user is told what went with
        the old topic."""
        location = checkpoint_location(self.settings, table)
        landed = _landed_offsets(self.spark, location, table.topic)
        current = topics.end_offsets(self.settings, table.topic)
        went_back = {
            p: (offset, current.get(p, 0)) for p, offset in landed.items() if current.get(p, 0) < offset
        }
        if not went_back:
            return False
        kept = f"{location}.before-{time.strftime('%Y%m%dT%H%M%S')}"
        _rename(self.spark, location, kept)
        lost = (
            "Changes the old topic held beyond them are gone: compare Bronze with Postgres, and "
            "re-snapshot the connector if they differ."
            if table.envelope == DEBEZIUM
            else "Messages the old topic held beyond them are gone."
        )
        report(
            f"Bronze table {table.name}: topic {table.topic} was recreated: its end offsets went "
            f"back below those Bronze had read to (partition: read to -> now "
            f"{', '.join(f'{p}: {old} -> {new}' for p, (old, new) in sorted(went_back.items()))}). "
            f"Landing the new topic from its first offset; the old checkpoint is kept at {kept}. {lost}"
        )
        return True

    def run_continuously(
        self,
        trigger_seconds: int,
        report=functools.partial(print, flush=True),
        triggers: Mapping[str, int] | None = None,
    ) -> None:
        """Streams every table, a micro-batch every `trigger_seconds` (or every `triggers[name]`
        s for a table named there), until one fails unexpectedly (or Ctrl-C). A table whose
        batch was refused (a schema change at its source, or a source that cannot say) stops
        alone and is started again every `REFUSED_RETRY_SECONDS`: it resumes by itself once
        the source is back, and otherwise says again what to fix."""

        def trigger(table: BronzeTable) -> dict:
            return {"processingTime": f"{(triggers or {}).get(table.name, trigger_seconds)} seconds"}

        queries = {table.name: self._start(table, trigger(table)) for table in self.tables}
        retry_at: dict[str, float] = {}
        try:
            while True:
                try:
                    self.spark.streams.awaitAnyTermination(REFUSED_RETRY_SECONDS / 4)
                except StreamingQueryException:
                    pass
                self.spark.streams.resetTerminated()
                for table in self.tables:
                    name = table.name
                    if name in retry_at:
                        if time.monotonic() >= retry_at[name]:
                            del retry_at[name]
                            queries[name] = self._start(table, trigger(table))
                    elif not queries[name].isActive and name in self.refusals:
                        report(f"{self.refusals.pop(name)} Trying again in {REFUSED_RETRY_SECONDS} s.")
                        retry_at[name] = time.monotonic() + REFUSED_RETRY_SECONDS
                    elif queries[name].exception() is not None and self.took_up_recreated_topic(
                        table, report
                    ):
                        queries[name] = self._start(table, trigger(table))
                if not all(q.isActive for name, q in queries.items() if name not in retry_at):
                    break
        finally:
            self._await([q for name, q in queries.items() if name not in retry_at], timeout=0.1)


def _landed_offsets(spark: SparkSession, location: str, topic: str) -> dict[int, int]:
    """The offsets of `topic` that the query's newest committed batch read up to, from its
    checkpoint: `commits/<batch>` marks a batch landed, and `offsets/<batch>` holds its end
    offsets (a version line, the batch's metadata, then one JSON line per source); none
    before its first batch. Not the newest planned batch: the batch that fails on a
    recreated topic was planned, and its offsets written, from the new topic's ends."""
    jvm = spark.sparkContext._jvm
    files = jvm.org.apache.hadoop.fs.Path(location).getFileSystem(
        spark.sparkContext._jsc.hadoopConfiguration()
    )
    commits = jvm.org.apache.hadoop.fs.Path(f"{location}/commits")
    if not files.exists(commits):
        return {}
    batches = [
        int(f.getPath().getName()) for f in files.listStatus(commits) if f.getPath().getName().isdigit()
    ]
    if not batches:
        return {}
    stream = files.open(jvm.org.apache.hadoop.fs.Path(f"{location}/offsets/{max(batches)}"))
    try:
        text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()
    offsets = json.loads(text.strip().splitlines()[-1]).get(topic, {})
    return {int(partition): int(offset) for partition, offset in offsets.items()}


def _rename(spark: SparkSession, source: str, target: str) -> None:
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path
    files = path(source).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not files.rename(path(source), path(target)):
        raise BronzeError(f"could not move the checkpoint {source} to {target}")


def _explain(query_name: str, error: StreamingQueryException) -> str:
    text = str(error)
    if "failOnDataLoss" in text or "OffsetOutOfRange" in text or "data may have been lost" in text:
        return (
            f"Bronze table {query_name}: Kafka no longer holds offsets this table still "
            f"needs (the topic's retention deleted them), so continuing would skip changes. "
            f"Rebuild the table from a fresh snapshot: stop the pipeline, delete the table "
            f"and its checkpoint, and re-snapshot the connector. Kafka said: "
            f"{text.splitlines()[0][:500]}"
        )
    return f"Bronze table {query_name} failed: {text[:2000]}"
