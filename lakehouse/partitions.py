"""Which partition a row lies in, and the filters that let Hudi skip the others.

Pure functions of columns and DataFrames: a table's declared `Partitioning` names a column
and a granularity (the column itself, or its month), and the value Hudi partitions by is
derived from that column here, so a query filters by the date and still prunes.
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import Partitioning, Table


def partition_value(partitioning: Partitioning, column: Column) -> Column:
    """The value Hudi partitions a row by, from the value of the partitioning's column."""
    return F.date_format(column, "yyyy-MM") if partitioning.by == "month" else column


def with_partition_field(frame: DataFrame, table: Table) -> DataFrame:
    """`frame` with the derived column the table is partitioned by, if it has one."""
    partitioning = table.partitioning
    if not (partitioning and partitioning.derives_field):
        return frame
    return frame.withColumn(partitioning.field, partition_value(partitioning, F.col(partitioning.column)))


def within(frame: DataFrame, table: Table, column: str, values: list) -> DataFrame:
    """Rows of `table` whose `column` holds one of `values`. The values are literals, so Hudi
    prunes partitions by them, and for a table partitioned by a column derived from theirs
    (their month, or a copy) its values are added as a filter of their own (Spark folds
    them into literals too)."""
    kind = frame.schema[column].dataType
    literals = [F.lit(v).cast(kind) for v in values]
    kept = frame.where(F.col(column).isin(literals))
    partitioning = table.partitioning
    if partitioning and partitioning.column == column and partitioning.derives_field:
        kept = kept.where(
            F.col(partitioning.field).isin([partition_value(partitioning, literal) for literal in literals])
        )
    return kept


def reached(values: list, reach: timedelta) -> list:
    """`values` (dates) and every day up to `reach` before each: the input days an output
    pruned with that reach reads (lakehouse/tables.py, `Input.reach`). A null matches no
    partition filter, so it is dropped."""
    if not reach:
        return values
    return sorted({v - timedelta(days=d) for v in values if v is not None for d in range(reach.days + 1)})
