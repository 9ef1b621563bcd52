"""Which partition a row lies in, and the filters that let Hudi skip the others.

Pure functions of columns and DataFrames: a table's declared `Partitioning` names a column
and a granularity (the column itself, or its month), and the value Hudi partitions by is
derived from that column here, so a query filters by the date and still prunes.
"""

from __future__ import annotations

from datetime import date, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import Partitioning, Table

# A month partition's value: Spark's pattern, and the same in Python's (`within` writes its
# filter's values itself; tests/unit/test_partitions.py holds the two to each other).
MONTH_PATTERN, MONTH_FORMAT = "yyyy-MM", "%Y-%m"


def partition_value(partitioning: Partitioning, column: Column) -> Column:
    """The value Hudi partitions a row by, from the value of the partitioning's column."""
    return F.date_format(column, MONTH_PATTERN) if partitioning.by == "month" else column


def with_partition_field(frame: DataFrame, table: Table) -> DataFrame:
    """`frame` with the derived column the table is partitioned by, if it has one."""
    partitioning = table.partitioning
    if not (partitioning and partitioning.derives_field):
        return frame
    return frame.withColumn(partitioning.field, partition_value(partitioning, F.col(partitioning.column)))


def within(frame: DataFrame, table: Table, column: str, dates: list) -> DataFrame:
    """Rows of `table` whose `column` holds one of `dates` (dates, or their ISO text as a
    Bronze table's `dt` holds them; a null matches none). The dates are literals, so Hudi
    prunes partitions by them, and for a table partitioned by a column derived from theirs
    (their month, or a copy) its values are added as a filter of their own. Each filter is
    one SQL expression, parsed in one call into the JVM: a Column per date took several
    calls each, and a run whose changes span months of days spent seconds on them
    (CHANGELOG.md)."""
    days = sorted({date.fromisoformat(str(d)) for d in dates if d is not None})
    if not days:
        return frame.where(F.lit(False))
    literals = [f"DATE'{d.isoformat()}'" for d in days]
    kept = frame.where(_one_of(column, literals))
    partitioning = table.partitioning
    if partitioning and partitioning.column == column and partitioning.derives_field:
        if partitioning.by == "month":
            literals = sorted({f"'{d.strftime(MONTH_FORMAT)}'" for d in days})
        kept = kept.where(_one_of(partitioning.field, literals))
    return kept


def _one_of(column: str, literals: list[str]) -> Column:
    return F.expr(f"`{column}` IN ({', '.join(literals)})")


def reached(values: list, reach: timedelta) -> list:
    """`values` (dates) and every day up to `reach` before each: the input days an output
    pruned with that reach reads (lakehouse/tables.py, `Input.reach`). A null matches no
    partition filter, so it is dropped."""
    if not reach:
        return values
    return sorted({v - timedelta(days=d) for v in values if v is not None for d in range(reach.days + 1)})
