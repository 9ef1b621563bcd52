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

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery, StreamingQueryException

from bronze.decode import classify, split
from bronze.tables import BRONZE_TABLES, BronzeTable
from lakehouse import catalog
from lakehouse.settings import Settings
from lakehouse.tables import hudi_options


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


def write_upserts(frame: DataFrame, table, settings: Settings) -> None:
    frame.write.format("hudi").options(**hudi_options(table, settings)).mode("append").save(
        table.path(settings))
    catalog.ensure_registered(frame.sparkSession, settings, table)


def land_batch(raw: DataFrame, table: BronzeTable, settings: Settings) -> tuple[int, int, int]:
    """Decodes one batch of Kafka records and upserts it; returns (messages, rows, quarantined)."""
    # Parsed once and cached: the counts and both writes read it, and Hudi's upsert reads
    # its input more than once.
    classified = classify(raw, table).persist()
    try:
        messages, bad_count = classified.agg(
            F.count("*"), F.count_if(F.col("error").isNotNull())).first()
        if messages == 0:
            return 0, 0, 0
        row_count = messages - bad_count
        rows, quarantined = split(classified, table)
        if row_count:
            write_upserts(rows, table, settings)
        if bad_count:
            write_upserts(quarantined, table.quarantine, settings)
        return messages, row_count, bad_count
    finally:
        classified.unpersist()


class BronzeJob:
    def __init__(self, spark: SparkSession, settings: Settings,
                 tables: tuple[BronzeTable, ...] = BRONZE_TABLES):
        self.spark, self.settings, self.tables = spark, settings, tables
        self.counts = {table.name: LandedCounts() for table in tables}

    def _start(self, table: BronzeTable, trigger: dict) -> StreamingQuery:
        def write(batch: DataFrame, batch_id: int) -> None:
            began = time.monotonic()
            landed = land_batch(batch, table, self.settings)
            self.counts[table.name].add(*landed, time.monotonic() - began)

        source = (self.spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", self.settings.kafka_bootstrap)
                  .option("subscribe", table.topic)
                  .option("startingOffsets", "earliest")
                  .option("failOnDataLoss", "true")
                  .option("maxOffsetsPerTrigger", self.settings.bronze_max_offsets_per_batch)
                  .load())
        return (source.writeStream.queryName(table.name).foreachBatch(write)
                .option("checkpointLocation", checkpoint_location(self.settings, table))
                .trigger(**trigger).start())

    def _await(self, queries: list[StreamingQuery], timeout: float | None = None) -> None:
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
            raise BronzeError(_explain(name, error))

    def drain(self) -> dict[str, LandedCounts]:
        """Lands everything the topics hold now, then stops."""
        self._await([self._start(table, {"availableNow": True}) for table in self.tables])
        return self.counts

    def run_continuously(self, trigger_seconds: int, report=print) -> None:
        queries = [self._start(table, {"processingTime": f"{trigger_seconds} seconds"})
                   for table in self.tables]
        try:
            self.spark.streams.awaitAnyTermination()
        except StreamingQueryException:
            pass
        finally:
            self._await(queries, timeout=0.1)


def _explain(query_name: str, error: StreamingQueryException) -> str:
    text = str(error)
    if "failOnDataLoss" in text or "OffsetOutOfRange" in text or "data may have been lost" in text:
        return (f"Bronze table {query_name}: Kafka no longer holds offsets this table still "
                f"needs (the topic's retention deleted them), so continuing would skip changes. "
                f"Rebuild the table from a fresh snapshot: stop the pipeline, delete the table "
                f"and its checkpoint, and re-snapshot the connector. Kafka said: "
                f"{text.splitlines()[0][:500]}")
    return f"Bronze table {query_name} failed: {text[:2000]}"
