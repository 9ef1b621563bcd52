"""Does the lakehouse hold exactly what its sources hold? (docs/architecture.md, "What the
lakehouse promises": convergence, and nothing vanishes)

- A Bronze CDC table equals its Postgres table, row for row and value for value.
- A Bronze event table holds every valid message of its topic once per key, and its
  quarantine every malformed one, and every valid one that failed its batch alone, by Kafka
  position.
- A Silver or Gold table equals the rows a full rebuild from its inputs promotes, and its
  quarantine the rows the rebuild keeps out, each once.

Each check returns a `Verdict` (rows checked, missing, extra, duplicated keys) rather than
raising, so the tests assert on it and the fault matrix (`make chaos`) reports it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC

import psycopg
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bronze.decode import OVERSIZED, UNLANDABLE, Plausible, classify, split
from bronze.tables import DEBEZIUM, KAFKA_POSITION, BronzeTable
from ingestion import topics
from lakehouse.catalog import exists
from lakehouse.hudi import snapshot
from lakehouse.incremental import Runner
from lakehouse.settings import Settings
from lakehouse.tables import DerivedTable


@dataclass(frozen=True)
class Verdict:
    table: str
    rows: int  # rows the source side holds, i.e. rows checked
    missing: int = 0
    extra: int = 0
    duplicated: int = 0  # keys held more than once
    sample: str = ""
    # Why rows differ, where the lakehouse knows: a change kept out at capture, say.
    explained: tuple[str, ...] = ()

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.duplicated)

    def line(self) -> str:
        state = (
            "equal"
            if self.equal
            else (
                f"DIFFERS: {self.missing} missing, {self.extra} extra, "
                f"{self.duplicated} duplicated keys; {self.sample}"
                + "".join(f"; {reason}" for reason in self.explained)
            )
        )
        return f"{self.table:<48} {self.rows:>9} rows  {state}"


def _text(value) -> str | None:
    """A Postgres value as the string Spark's formatting in `bronze_rows` gives it."""
    if value is None:
        return None
    if hasattr(value, "tzinfo") and hasattr(value, "hour"):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def postgres_rows(db: psycopg.Connection, table: BronzeTable) -> list[tuple]:
    rows = db.execute(f"SELECT {', '.join(table.columns)} FROM {table.source_table}").fetchall()
    return [tuple(_text(v) for v in row) for row in rows]


def bronze_rows(spark: SparkSession, settings: Settings, table: BronzeTable) -> list[tuple]:
    frame = snapshot(spark, table, settings)
    columns = [
        F.date_format(name, "yyyy-MM-dd HH:mm:ss.SSSSSS").alias(name)
        if kind == "timestamp"
        else F.col(name).cast("string").alias(name)
        for name, kind in table.columns.items()
    ]
    return [tuple(row) for row in frame.select(*columns).collect()]


def bronze_against_postgres(
    spark: SparkSession, settings: Settings, db: psycopg.Connection, table: BronzeTable
) -> Verdict:
    expected = set(postgres_rows(db, table))
    actual = bronze_rows(spark, settings, table)
    key_positions = [list(table.columns).index(k) for k in table.record_key]
    keys = Counter(tuple(row[i] for i in key_positions) for row in actual)
    missing, extra = expected - set(actual), set(actual) - expected
    differing = {tuple(row[i] for i in key_positions) for row in missing | extra}
    kept_out = _oversized_changes(spark, settings, table) if differing else {}
    return Verdict(
        table.name,
        len(expected),
        len(missing),
        len(extra),
        sum(1 for n in keys.values() if n > 1),
        f"missing e.g. {_abridged(sorted(missing)[:2])}, extra e.g. {_abridged(sorted(extra)[:2])}",
        tuple(
            f"{', '.join(f'{k}={v}' for k, v in zip(table.record_key, key, strict=True))} "
            f"kept out at capture: {kept_out[key]}"
            for key in sorted(differing)
            if key in kept_out
        ),
    )


def _abridged(rows: list[tuple], longest: int = 80) -> list[tuple]:
    """Rows with each long value cut (a row may hold megabytes of text)."""
    return [
        tuple(
            v[:longest] + f"...({len(v):,} characters)" if isinstance(v, str) and len(v) > longest else v
            for v in row
        )
        for row in rows
    ]


def _oversized_changes(spark: SparkSession, settings: Settings, table: BronzeTable) -> dict[tuple, str]:
    """The newest change of each row that Bronze quarantined as too large to capture, by key
    (as text, like `postgres_rows`): the reason such a row differs from its source."""
    quarantine = table.quarantine
    if not exists(spark, quarantine.path(settings)):
        return {}
    changes = (
        snapshot(spark, quarantine, settings)
        .where(F.col("error").startswith(OVERSIZED))
        .orderBy(*KAFKA_POSITION)
        .select("raw_key", "error")
        .collect()
    )
    newest = {}
    for change in changes:
        key = json.loads(change.raw_key)
        newest[tuple(_text(key.get(k)) for k in table.record_key)] = change.error
    return newest


def _compare(name: str, expected: DataFrame, actual: DataFrame, keys: list[str]) -> Verdict:
    """`actual` against `expected` as multisets of rows, and `actual`'s keys held more than
    once: one Spark job counts each distinct row on both sides, and a second, only when they
    differ, fetches examples."""
    side = F.col("_side")
    counted = (
        expected.withColumn("_side", F.lit(1))
        .unionByName(actual.select(expected.columns).withColumn("_side", F.lit(-1)))
        .groupBy(*expected.columns)
        .agg(F.count_if(side == 1).alias("_expected"), F.count_if(side == -1).alias("_actual"))
    )
    missing, extra = F.col("_expected") - F.col("_actual"), F.col("_actual") - F.col("_expected")
    rows, missing_rows, extra_rows, duplicated = (
        counted.groupBy(*keys)
        .agg(
            F.sum("_expected").alias("rows"),
            F.sum(F.greatest(missing, F.lit(0))).alias("missing"),
            F.sum(F.greatest(extra, F.lit(0))).alias("extra"),
            F.sum("_actual").alias("held"),
        )
        .agg(
            F.sum("rows"),
            F.sum("missing"),
            F.sum("extra"),
            F.count_if(F.col("held") > 1),
        )
        .first()
    )
    sample = ""
    if missing_rows or extra_rows:
        differing = counted.where(missing != 0).limit(20).collect()
        sample = (
            f"missing e.g. {[r[:-2] for r in differing if r._expected > r._actual][:2]}, "
            f"extra e.g. {[r[:-2] for r in differing if r._actual > r._expected][:2]}"
        )
    return Verdict(name, rows or 0, missing_rows or 0, extra_rows or 0, duplicated, sample)


def bronze_against_topic(spark: SparkSession, settings: Settings, table: BronzeTable) -> list[Verdict]:
    """An event table's keys against the valid messages its topic holds, and its quarantine
    against the malformed ones (read in one batch, with Bronze's own decoder)."""
    raw = topics.spark_reader(spark, settings, table.topic).option("endingOffsets", "latest").load()
    classified = classify(raw, table, Plausible.of(settings)).cache()
    try:
        valid, malformed = split(classified, table)
        position = list(KAFKA_POSITION)
        quarantine = table.quarantine
        held = (
            snapshot(spark, quarantine, settings).select(*position, "error")
            if exists(spark, quarantine.path(settings))
            else malformed.select(*position).withColumn("error", F.lit(None).cast("string")).limit(0)
        )
        # A valid message whose batch failed on it (bronze/job.py isolates it) is kept out
        # with that error instead of landing.
        unlandable = valid.join(held.where(F.col("error").startswith(UNLANDABLE)), position, "left_semi")
        keys = list(table.record_key)
        landable = valid.join(unlandable.select(position), position, "left_anti")
        return [
            _compare(
                table.name,
                landable.select(keys).distinct(),
                snapshot(spark, table, settings).select(keys),
                keys,
            ),
            _compare(
                quarantine.name,
                malformed.select(position).unionByName(unlandable.select(position)),
                held.select(position),
                position,
            ),
        ]
    finally:
        classified.unpersist()


def bronze(
    spark: SparkSession, settings: Settings, db: psycopg.Connection, tables: tuple[BronzeTable, ...]
) -> list[Verdict]:
    verdicts = []
    for table in tables:
        if table.envelope == DEBEZIUM:
            verdicts.append(bronze_against_postgres(spark, settings, db, table))
        else:
            verdicts += bronze_against_topic(spark, settings, table)
    return verdicts


def derived_against_rebuild(spark: SparkSession, settings: Settings, table: DerivedTable) -> list[Verdict]:
    """The table against the rows a full rebuild promotes, and its quarantine against the rows
    the rebuild keeps out, rules and status included: apart, so a row on the wrong side shows."""
    keys = list(table.record_key)
    quarantine = table.quarantine
    with Runner(spark, settings).full_result(table) as (promoted, kept_out):
        held = (
            snapshot(spark, quarantine, settings).select(kept_out.columns)
            if exists(spark, quarantine.path(settings))
            else kept_out.limit(0)
        )
        return [
            _compare(table.name, promoted, snapshot(spark, table, settings), keys),
            _compare(quarantine.name, kept_out, held, keys),
        ]
