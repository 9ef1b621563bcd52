"""Kafka messages -> Bronze rows, and the messages that cannot be decoded -> quarantine.

Pure functions of DataFrames: no I/O, no checkpoints. Every message ends in exactly one of
the two outputs of `split`. Values are parsed with every field as a string and then cast column by
column, so that one field of the wrong type is reported by name instead of nulling the
whole record.

Debezium encodings (ingestion/debezium-postgres.json): decimals arrive as exact strings,
`date` as days since 1970-01-01, `timestamptz` as ISO-8601 strings in UTC.

Strict by design: a message is one JSON object and nothing after it, with no field twice;
an integer column takes only integers and a decimal column only values that fit its
precision and scale (Spark's casts would truncate 7.9 to 7, or round a third decimal); a
change's key in Kafka must be its row's key. Each of these is quarantined with its reason.
"""

# Why one module: decoding is one contract (what a message must be to become a row, and the
# reason it goes to quarantine otherwise); the checks read each other's columns in one
# select, and splitting JSON, types and keys apart would scatter the order they are judged in.

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, StringType, StructField, StructType

from bronze.tables import DEBEZIUM, BronzeTable
from lakehouse.partitions import partition_value, with_partition_field
from lakehouse.settings import Settings

CDC_OPS = ("c", "r", "u", "d")
# A change event larger than Kafka takes comes without its row images and with this field
# instead (its size and the limit), from the connector's guard
# (ingestion/jvm/org/retailmax/ingestion/OversizedChangeGuard.java); its error starts with
# OVERSIZED.
OVERSIZED_FIELD = "oversized"
OVERSIZED = "oversized change"
MOVED_FROM = "_moved_from"
# When the batch lands (its rows' `_ingested_at`, its quarantined messages' `_quarantined_at`).
LANDED_AT = "_landed_at"
# The field names of a CDC message's row image, sorted and comma-joined: how a batch shows
# fields that the declaration lacks or that the message lacks (bronze/schema.py).
IMAGE_FIELDS = "_image_fields"
# A Debezium message's Kafka key, parsed (a JSON object of its row's key columns).
PARSED_KEY = "_key"
CORRUPT_RECORD = "_corrupt_record"
QUARANTINE_COLUMNS = (
    "_kafka_topic",
    "_kafka_partition",
    "_kafka_offset",
    "_kafka_ts",
    "raw_key",
    "raw_value",
    "error",
    "_quarantined_at",
)


def _as_strings(columns) -> StructType:
    return StructType([StructField(name, StringType()) for name in columns])


INTEGRAL_TYPES = ("tinyint", "smallint", "int", "bigint")
INTEGER = r"^-?[0-9]+$"


def exact_pattern(spark_type: str) -> str | None:
    """The text an integral, decimal or boolean column accepts, exactly (null when a cast
    would have to truncate, round or guess); None for the other types."""
    if spark_type in INTEGRAL_TYPES:
        return INTEGER
    if spark_type == "boolean":  # Spark's cast would also take yes, y, t and 1
        return "^(true|false)$"
    decimal = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", spark_type)
    if decimal is None:
        return None
    precision, scale = map(int, decimal.groups())
    fraction = rf"(\.[0-9]{{1,{scale}}})?" if scale else ""
    return rf"^-?[0-9]{{1,{max(precision - scale, 1)}}}{fraction}$"


def _typed(text: Column, spark_type: str) -> Column:
    if spark_type == "date":
        days = F.date_add(F.lit("1970-01-01").cast("date"), text.cast("int"))
        return F.when(text.rlike(INTEGER), days).otherwise(text.cast("date"))
    if pattern := exact_pattern(spark_type):
        return F.when(text.rlike(pattern), text.cast(spark_type))
    return text.cast(spark_type)


@dataclass(frozen=True)
class Plausible:
    """The times a change may carry: from `earliest` (a date) to `ahead_seconds` after it
    lands (BRONZE_EARLIEST_PLAUSIBLE, BRONZE_MAX_AHEAD_SECONDS). A clock that far off, or a
    forged message, would otherwise order the row ahead of every later real change (and a
    time beyond Spark's range would fail the whole batch)."""

    earliest: str = "2000-01-01"
    ahead_seconds: int = 24 * 3600
    # The source's WAL position when the batch was read: no real change can lie beyond it,
    # and a forged one that did would win against every later real change of its row.
    latest_lsn: int | None = None
    landed_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def of(cls, settings: Settings, latest_lsn: int | None = None) -> Plausible:
        return cls(settings.bronze_earliest_plausible, settings.bronze_max_ahead_seconds, latest_lsn)

    def batch(self, spark: SparkSession) -> DataFrame:
        """The batch's own facts, as a one-row table: `_landed_at` and `_latest_lsn`."""
        return spark.sql(
            "SELECT * FROM VALUES (:landed_at, CAST(:latest_lsn AS BIGINT))"
            f" AS batch({LANDED_AT}, _latest_lsn)",
            args={"landed_at": self.landed_at, "latest_lsn": self.latest_lsn},
        )

    def instant(self, instant: Column) -> Column:
        latest = F.col(LANDED_AT) + F.expr(f"INTERVAL {self.ahead_seconds} SECONDS")
        return instant.between(F.lit(self.earliest).cast("timestamp"), latest)

    def millis(self, text: Column) -> Column:
        """Whether a text holds epoch milliseconds of a plausible instant. Checked before
        any conversion: converting an out-of-range value raises, it does not give null."""
        earliest = F.unix_millis(F.lit(self.earliest).cast("timestamp"))
        latest = F.unix_millis(F.col(LANDED_AT)) + self.ahead_seconds * 1000
        return text.rlike(r"^[0-9]{1,15}$") & text.cast("long").between(earliest, latest)


def _first_error(checks: list[tuple[Column, Column]]) -> Column:
    """The message of the first failing check, or null when all pass."""
    return F.coalesce(*(F.when(failed, message) for failed, message in checks))


def _field_checks(image: Column, table: BronzeTable) -> list[tuple[Column, Column]]:
    checks = [(image[key].isNull(), F.lit(f"missing key field {key}")) for key in table.record_key]
    if table.partitioning and table.partitioning.from_ts:
        source = table.partitioning.from_ts
        checks.append((image[source].isNull(), F.lit(f"missing field {source}")))
    required = [c for c in table.columns if c not in (*table.record_key, *table.nullable)]
    if table.envelope == DEBEZIUM:
        # A field the image lacks altogether is a schema change (bronze/schema.py), not a
        # bad row; a field it has as null breaks the source's NOT NULL.
        checks += [
            (F.map_contains_key(image, name) & image[name].isNull(), F.lit(f"null in NOT NULL column {name}"))
            for name in required
        ]
    else:
        checks += [(image[name].isNull(), F.lit(f"missing field {name}")) for name in required]
    for name, spark_type in table.columns.items():
        checks.append(
            (
                image[name].isNotNull() & _typed(image[name], spark_type).isNull(),
                F.concat(F.lit(f"wrong type for {name} ({spark_type}): '"), image[name], F.lit("'")),
            )
        )
    return checks


# The strict JSON check: org.retailmax.bronze.JsonDefect (bronze/jvm/), in the project's jar
# every session loads (lakehouse/jvm.py). In the JVM, since a Python function would start a
# Python worker for every task of every batch.
JSON_DEFECT = "retailmax_json_defect"


def _register_json_defect(session: SparkSession) -> None:
    # Once per session (each stream runs in a session of its own): registering again
    # replaces the function and logs a warning on every batch.
    if not session.catalog.functionExists(JSON_DEFECT):
        session.udf.registerJavaFunction(JSON_DEFECT, "org.retailmax.bronze.JsonDefect", StringType())


def _key_checks(raw_key: Column, image: Column, table: BronzeTable) -> list[tuple[Column, Column]]:
    """Kafka keeps one key's messages in order on one partition: a message whose key is not
    its own would be ordered against other rows' changes. Debezium keys each change by its
    row's key (a JSON object of the key columns); an event's producer by the table's
    `kafka_key` fields, joined by '|'."""
    if table.envelope == DEBEZIUM:
        key = F.col(PARSED_KEY)
        agrees = F.size(key) == len(table.record_key)
        for name in table.record_key:
            agrees = agrees & key[name].eqNullSafe(image[name])
        owner = "the row's key"
    else:
        agrees = raw_key == F.concat_ws("|", *(image[name] for name in table.kafka_key))
        owner = f"the event's {'|'.join(table.kafka_key)}"
    return [
        (raw_key.isNull(), F.lit("missing Kafka key")),
        (
            ~F.coalesce(agrees, F.lit(False)),
            F.concat(F.lit("Kafka key '"), raw_key, F.lit(f"' is not {owner}")),
        ),
    ]


def _parse(raw_value: Column, fields: list[StructField]) -> Column:
    """from_json that keeps input which is not a JSON object in `_corrupt_record` (by
    default it would become a struct of nulls, indistinguishable from `{}`)."""
    schema = StructType([*fields, StructField(CORRUPT_RECORD, StringType())])
    return F.from_json(raw_value, schema, {"columnNameOfCorruptRecord": CORRUPT_RECORD})


# One step of decoding a batch: a DataFrame to the next (bronze.decode.Decoder).
Step = Callable[[DataFrame], DataFrame]


def _parse_checked(name: str, fields: list[StructField]) -> list[Step]:
    """The steps that add `_defect` (why a value is not exactly one JSON object) and, for the
    values without one, their parse as column `name`: Spark's parser never sees what the
    strict check refused (a value nested deeper than its parser allows would fail the batch)."""
    defect = F.call_udf(JSON_DEFECT, F.col("raw_value"))
    parsed = F.when(F.col("_defect").isNull(), _parse(F.col("raw_value"), fields))
    return [_with_column("_defect", defect), _with_column(name, parsed)]


def _with_column(name: str, column: Column) -> Step:
    return lambda frame: frame.withColumn(name, column)


def _select(*columns: Column | str) -> Step:
    return lambda frame: frame.select(*columns)


def _not_an_object(parsed: Column) -> Column:
    return parsed.isNull() | parsed[CORRUPT_RECORD].isNotNull()


KAFKA_COLUMNS = ("raw_key", "raw_value", "_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_ts")


def _kafka_columns() -> list[Column]:
    return [
        # Decoded, not cast: a cast keeps bytes that are not UTF-8 inside the string, which
        # fails whatever reads it next (Arrow, for the strict JSON check). Decoding replaces
        # them (U+FFFD), so the text stays readable and searchable in the quarantine, and the
        # message is known not to be UTF-8, which JSON must be, when re-encoding differs.
        F.decode(F.col("key"), "UTF-8").alias("raw_key"),
        F.decode(F.col("value"), "UTF-8").alias("raw_value"),
        (F.encode(F.decode(F.col("value"), "UTF-8"), "UTF-8") == F.col("value")).alias("_utf8"),
        F.col("topic").alias("_kafka_topic"),
        F.col("partition").alias("_kafka_partition"),
        F.col("offset").alias("_kafka_offset"),
        F.col("timestamp").alias("_kafka_ts"),
    ]


def _partition_column(image: Column, table: BronzeTable) -> Column:
    """The partitioning column's value for a row image (its string fields, as parsed)."""
    partitioning = table.partitioning
    if partitioning.from_ts:
        return F.date_format(image[partitioning.from_ts].cast("timestamp"), "yyyy-MM-dd")
    return _typed(image[partitioning.column], table.columns[partitioning.column])


def _debezium(table: BronzeTable, plausible: Plausible) -> list[Step]:
    # Images are parsed as maps, not structs of the declared columns, so that the fields a
    # message has beyond them are seen too.
    image_type = MapType(StringType(), StringType())
    envelope = [
        StructField("before", image_type),
        StructField("after", image_type),
        StructField("op", StringType()),
        StructField("source", _as_strings(["lsn", "ts_ms"])),
        StructField(OVERSIZED_FIELD, _as_strings(["bytes", "limit", "left_out"])),
    ]
    op = F.col("_m.op")
    oversized = F.col(f"_m.{OVERSIZED_FIELD}")
    # A delete carries the old row (REPLICA IDENTITY FULL); every other op the new one.
    image = F.when(op == "d", F.col("_m.before")).otherwise(F.col("_m.after"))
    source_ms = F.col("_m.source.ts_ms")
    checks = [
        (~F.col("_utf8"), F.lit("not UTF-8 text")),
        (F.col("_defect").isNotNull(), F.col("_defect")),
        # Valid JSON that Spark cannot read as an envelope: a field of another JSON type.
        (_not_an_object(F.col("_m")), F.lit("before, after and source must be JSON objects")),
        (
            # Without its before-image, an update still lands where it cannot have moved
            # its row to another partition.
            oversized.isNotNull() & ((oversized.left_out != "before") | F.lit(bool(table.partition_field))),
            F.concat(
                F.lit(f"{OVERSIZED}: its event of "),
                oversized.bytes,
                F.lit(" bytes is over the connector's limit of "),
                oversized.limit,
                F.when(
                    oversized.left_out == "before",
                    F.lit(
                        ", so it came without its before-image, and a move between partitions would go unseen"
                    ),
                ).otherwise(F.lit(", so it was captured without its row")),
                F.lit("; the row's next change that fits lands it"),
            ),
        ),
        (op.isNull(), F.lit("missing field op")),
        (~op.isin(*CDC_OPS), F.concat(F.lit("unknown op '"), op, F.lit("'"))),
        (
            ~F.coalesce(
                F.col("_m.source.lsn").rlike(r"^[0-9]+$") & F.col("_m.source.lsn").cast("long").isNotNull(),
                F.lit(False),
            ),
            F.lit("missing or non-numeric source.lsn"),
        ),
        (
            F.col("_m.source.lsn").cast("long") > F.col("_latest_lsn"),
            F.concat(
                F.lit("implausible source.lsn '"),
                F.col("_m.source.lsn"),
                F.lit("' (beyond the source's WAL position "),
                F.col("_latest_lsn").cast("string"),
                F.lit(")"),
            ),
        ),
        (
            source_ms.isNotNull() & ~plausible.millis(source_ms),
            F.concat(F.lit("implausible source.ts_ms '"), source_ms, F.lit("'")),
        ),
        (
            F.col("_image").isNull(),
            F.concat(F.lit("missing "), F.when(op == "d", "before").otherwise("after"), F.lit(" image")),
        ),
        *_field_checks(F.col("_image"), table),
        *_key_checks(F.col("raw_key"), F.col("_image"), table),
    ]
    # An update that changes the partition value leaves a copy in the old partition unless
    # the write deletes it there: the bucket index only looks in the row's new partition.
    moved_from = []
    if table.partition_field:
        before, after = (_partition_column(F.col(image), table) for image in ("_m.before", "_image"))
        moved = ~partition_value(table.partitioning, before).eqNullSafe(
            partition_value(table.partitioning, after)
        )
        moved_from = [F.when((op == "u") & moved, before).alias(MOVED_FROM)]
    return [
        *_parse_checked("_m", envelope),
        _with_column("_image", image),
        # Parsed in a step of its own: Spark compiles no step that parses JSON into a whole
        # stage, and the checks that read the key would be generated anew for every task.
        _with_column(PARSED_KEY, F.from_json("raw_key", MapType(StringType(), StringType()))),
        _select(
            *KAFKA_COLUMNS,
            LANDED_AT,
            "_image",
            *moved_from,
            # sort_array, not array_sort: Spark compiles no step with a lambda function into
            # a whole stage, so this step's every check was generated anew for each task of
            # each batch (a tenth of the Bronze process's CPU in a profile).
            F.array_join(F.sort_array(F.map_keys("_image")), ",").alias(IMAGE_FIELDS),
            _first_error(checks).alias("error"),
            op.alias("_op"),
            F.col("_m.source.lsn").cast("long").alias("_source_lsn"),
            F.when(plausible.millis(source_ms), F.timestamp_millis(source_ms.cast("long"))).alias(
                "_source_ts"
            ),
            (op == "d").alias("_hoodie_is_deleted"),
        ),
    ]


def _json_event(table: BronzeTable, plausible: Plausible) -> list[Step]:
    checks = [
        (~F.col("_utf8"), F.lit("not UTF-8 text")),
        (F.col("_defect").isNotNull(), F.col("_defect")),
        (_not_an_object(F.col("_image")), F.lit("not a JSON object")),
        *_field_checks(F.col("_image"), table),
        *_key_checks(F.col("raw_key"), F.col("_image"), table),
        *[
            (
                ~plausible.instant(_typed(F.col("_image")[name], "timestamp")),
                F.concat(F.lit(f"implausible {name} '"), F.col("_image")[name], F.lit("'")),
            )
            for name in table.ordering
            if table.columns.get(name) == "timestamp"
        ],
    ]
    return [
        *_parse_checked("_image", _as_strings(table.columns).fields),
        _select(
            *KAFKA_COLUMNS,
            LANDED_AT,
            "_image",
            _first_error(checks).alias("error"),
            F.lit(False).alias("_hoodie_is_deleted"),
        ),
    ]


# Decoders by table (as it lands) and plausible limits: see `Decoder.of`.
_DECODERS: dict[tuple[str, str, int], Decoder] = {}


class Decoder:
    """What `classify` does to one table's messages, as steps over a batch's DataFrame. The
    steps' column expressions are built once per process (`Decoder.of`): building them takes
    about a thousand calls from Python into the JVM, half a second for a CDC table, which
    every batch paid when each built its own.

    Only the limits of `plausible` shape the expressions; the batch's own facts (when it
    lands, the source's WAL position) are data that `classify` joins in."""

    @classmethod
    def of(cls, table: BronzeTable, plausible: Plausible | None = None) -> Decoder:
        """The process's decoder for `table` (as it lands, carried columns included) and the
        limits of `plausible`: a drain starts its streams anew, and each would build the same."""
        plausible = plausible or Plausible()
        key = (repr(table), plausible.earliest, plausible.ahead_seconds)
        if key not in _DECODERS:
            _DECODERS[key] = cls(table, plausible)
        return _DECODERS[key]

    def __init__(self, table: BronzeTable, plausible: Plausible):
        self.kafka_columns = _kafka_columns()
        self.steps = [
            *(_debezium if table.envelope == DEBEZIUM else _json_event)(table, plausible),
            self._flattened(table),
        ]

    @staticmethod
    def _flattened(table: BronzeTable) -> Step:
        columns = [
            _typed(F.col("_image")[name], spark_type).alias(name)
            for name, spark_type in table.columns.items()
        ]
        if table.partitioning and table.partitioning.from_ts:
            columns.append(_partition_column(F.col("_image"), table).alias(table.partitioning.column))
        # The raw message is only kept for quarantine; for good rows it would be dead weight.
        failed = F.col("error").isNotNull()
        raw_columns = [F.when(failed, F.col(name)).alias(name) for name in ("raw_key", "raw_value")]

        def flatten(decoded: DataFrame) -> DataFrame:
            kept = [name for name in decoded.columns if name not in ("_image", "raw_key", "raw_value")]
            return decoded.select(*raw_columns, *kept, *columns)

        return flatten

    def classify(self, raw: DataFrame, plausible: Plausible | None = None) -> DataFrame:
        """See `classify`; `plausible` carries the batch's facts."""
        plausible = plausible or Plausible()
        session = raw.sparkSession
        _register_json_defect(session)
        # What differs from batch to batch joins as data, not as literals: Spark writes
        # literals into the Java code it generates for a plan, so every batch would miss the
        # cache of generated classes and compile its plans anew (Janino, then the JIT).
        messages = raw.select(*self.kafka_columns).crossJoin(F.broadcast(plausible.batch(session)))
        return functools.reduce(lambda decoded, step: step(decoded), self.steps, messages)


def classify(raw: DataFrame, table: BronzeTable, plausible: Plausible | None = None) -> DataFrame:
    """Raw Kafka records (key, value, topic, partition, offset, timestamp) of `table`'s topic,
    each decoded into the table's typed columns and lineage, with its `error` (null when it
    decodes). Flat columns only: it is cached per batch, and Spark caches nested structs
    far more slowly than flat columns."""
    return Decoder.of(table, plausible).classify(raw, plausible)


def lineage_columns(table: BronzeTable) -> tuple[str, ...]:
    """The columns of a Bronze row besides the source's: its partition columns when derived,
    where the change came from, and when it landed."""
    partitioning = table.partitioning
    derived = (partitioning.column, partitioning.field) if partitioning else ()
    partition = tuple(dict.fromkeys(c for c in derived if c and c not in table.columns))
    cdc = ("_op", "_source_lsn", "_source_ts") if table.envelope == DEBEZIUM else ()
    return (
        *partition,
        *cdc,
        "_ingested_at",
        "_kafka_topic",
        "_kafka_partition",
        "_kafka_offset",
        "_hoodie_is_deleted",
    )


UNLANDABLE = "could not be landed"


def unlandable(raw: DataFrame, reason: str) -> DataFrame:
    """Raw Kafka records as quarantine rows, decoding nothing, for messages whose decoding
    or writing itself fails (bronze/job.py): their error is UNLANDABLE and the reason."""
    return raw.select(*_kafka_columns()).select(
        *QUARANTINE_COLUMNS[:-2],
        F.lit(f"{UNLANDABLE}: {reason}").alias("error"),
        F.current_timestamp().alias("_quarantined_at"),
    )


def split(classified: DataFrame, table: BronzeTable) -> tuple[DataFrame, DataFrame]:
    """(Bronze rows, quarantined messages) of a `classify` result. An update that moved its
    row to another partition brings a second row: the delete of the copy in the old one,
    with the update's source position (so it loses to nothing older and to nothing newer).

    Callers that use both halves should cache `classified` first: filtering on `error`
    otherwise makes Spark push the filter below the parse and repeat the JSON parsing for
    every field the checks read.
    """
    now = F.col(LANDED_AT)
    decoded = with_partition_field(classified.where(F.col("error").isNull()), table)
    rows = decoded.select(
        *table.columns,
        *(now.alias(name) if name == "_ingested_at" else name for name in lineage_columns(table)),
    )
    if MOVED_FROM in classified.columns:
        old_copies = (
            with_partition_field(
                decoded.where(F.col(MOVED_FROM).isNotNull()).withColumn(
                    table.partitioning.column, F.col(MOVED_FROM)
                ),
                table,
            )
            .withColumn("_ingested_at", now)
            .withColumn("_hoodie_is_deleted", F.lit(True))
        )
        rows = rows.unionByName(old_copies.select(rows.columns))
    quarantined = classified.where(F.col("error").isNotNull()).select(
        *QUARANTINE_COLUMNS[:-1], now.alias("_quarantined_at")
    )
    return rows, quarantined
