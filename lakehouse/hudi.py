"""Reading and writing Hudi tables: the pipeline's one module that spells Hudi's data source
(the layout benchmark writes its variants itself, with the options it compares).

Every layer reads and writes through these functions: Bronze's streaming batches, the
runner's commits and change-log reads, erasure's rewrites and the checks that compare
tables. A write derives the table's Hudi options from its declaration
(`lakehouse.tables.hudi_options`) and registers the table in the catalog, so no caller
spells an option or a path.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakehouse import catalog
from lakehouse.partitions import with_partition_field
from lakehouse.settings import Settings
from lakehouse.tables import Table, hudi_options

# The column a row written with `True` is deleted by, in an upsert.
DELETED = "_hoodie_is_deleted"


def read(spark: SparkSession, path: str) -> DataFrame:
    """The table at `path` as stored: its rows with Hudi's bookkeeping columns."""
    return spark.read.format("hudi").load(path)


def snapshot(spark: SparkSession, table: Table, settings: Settings) -> DataFrame:
    """The table's current rows, without Hudi's bookkeeping columns."""
    frame = read(spark, table.path(settings))
    return frame.select([c for c in frame.columns if not c.startswith("_hoodie_")])


def write(
    frame: DataFrame,
    table: Table,
    settings: Settings,
    operation: str,
    metadata: dict[str, str] | None = None,
    path: str | None = None,
) -> None:
    """One Hudi commit of `frame` into `table` (at `path`, when not the table's own), with
    `metadata` added to the commit's (its keys start with `_`, Hudi's prefix for them)."""
    options = hudi_options(table, settings) | {"hoodie.datasource.write.operation": operation}
    with_partition_field(frame, table).write.format("hudi").options(**options, **(metadata or {})).mode(
        "append"
    ).save(path or table.path(settings))
    if path is None:
        catalog.ensure_registered(frame.sparkSession, settings, table)


def change_log(spark: SparkSession, path: str, start: str, end: str | None = None) -> DataFrame:
    """The change log of the commits completed in (start, end] (to the newest without `end`):
    one row per changed row with its operation (`op`) and its `before` and `after` images as
    JSON text."""
    if end is None:
        return spark.sql("SELECT * FROM hudi_table_changes(?, 'cdc', ?)", args=[path, start])
    return spark.sql("SELECT * FROM hudi_table_changes(?, 'cdc', ?, ?)", args=[path, start, end])


def changed_images(log: DataFrame, columns: T.StructType, reads: tuple[str, ...] | None = None) -> DataFrame:
    """Before- and after-images of the rows a change log (`change_log`) holds, one row per
    image; with `reads`, of the rows inserted, deleted, or updated in one of those columns.

    The CDC log stores images as JSON in Avro's encoding: timestamps as epoch microseconds,
    dates as epoch days, and (in Hudi 1.2) decimals as an unusable object. Images are only
    used to find keys, never values, so decimals are left out and the rest converted back
    (an update of a decimal column that `reads` names therefore always counts).
    """
    as_read = T.StructType(
        [
            T.StructField(
                f.name,
                T.LongType()
                if isinstance(f.dataType, T.TimestampType)
                else T.IntegerType()
                if isinstance(f.dataType, T.DateType)
                else f.dataType,
            )
            for f in columns
            if not isinstance(f.dataType, T.DecimalType)
        ]
    )
    restored = [
        F.timestamp_micros(F.col(f"image.{f.name}")).alias(f.name)
        if isinstance(f.dataType, T.TimestampType)
        else F.date_from_unix_date(F.col(f"image.{f.name}")).alias(f.name)
        if isinstance(f.dataType, T.DateType)
        else F.col(f"image.{f.name}")
        for f in columns
        if not isinstance(f.dataType, T.DecimalType)
    ]
    log = log.select("op", "before", "after")
    if reads and all(name in as_read.names for name in reads):
        watched = T.StructType([as_read[name] for name in reads])
        unchanged = F.from_json("before", watched).eqNullSafe(F.from_json("after", watched))
        log = log.where((F.col("op") != "u") | ~unchanged)
    # A delete's missing after-image comes as SQL NULL or as the JSON text "null", which
    # would parse into a row of nulls.
    images = log.select(F.explode(F.array("before", "after")).alias("json")).where(
        "json IS NOT NULL AND trim(json) <> 'null'"
    )
    return images.select(F.from_json("json", as_read).alias("image")).select(restored)
