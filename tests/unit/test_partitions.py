"""The filters a pruned run reads partitions by: the rows `within` keeps, and the partition
values it writes itself, which must be those Spark derives when the rows are written."""

from __future__ import annotations

from datetime import date

from lakehouse.partitions import MONTH_FORMAT, partition_value, with_partition_field, within
from lakehouse.tables import Partitioning, Table

DAYS = [date(2025, 12, 31), date(2026, 1, 1), date(2026, 2, 28), date(2026, 3, 1)]


def table(by: str) -> Table:
    return Table(
        name="orders",
        layer="silver",
        table_type="COPY_ON_WRITE",
        record_key=("order_id",),
        ordering=("order_date",),
        partitioning=Partitioning("order_date", by=by),
    )


def orders(spark, by: str):
    rows = [(n, day) for n, day in enumerate(DAYS)] + [(len(DAYS), None)]
    return with_partition_field(spark.createDataFrame(rows, "order_id int, order_date date"), table(by))


def test_a_months_value_written_in_python_is_the_one_spark_derives(spark):
    months = orders(spark, "month").select("order_date", "order_date_month").collect()
    assert [r.order_date_month for r in months if r.order_date] == [d.strftime(MONTH_FORMAT) for d in DAYS]
    derived = orders(spark, "month").select(partition_value(table("month").partitioning, "order_date"))
    assert [r[0] for r in derived.collect()][: len(DAYS)] == [d.strftime(MONTH_FORMAT) for d in DAYS]


def test_within_keeps_the_rows_of_the_dates_and_filters_the_partition_field_too(spark):
    for by in ("month", "value", "day", "none"):
        frame = orders(spark, by)
        # Dates, or their ISO text as a Bronze table's `dt` holds them, a null and a repeat.
        kept = within(frame, table(by), "order_date", [DAYS[0], DAYS[1].isoformat(), None, DAYS[1]])
        assert sorted(r.order_id for r in kept.collect()) == [0, 1], by
        filters = [
            line for line in kept._jdf.queryExecution().analyzed().toString().splitlines() if "Filter" in line
        ]
        field = table(by).partitioning.field
        if table(by).partitioning.derives_field:
            assert any(f"{field}#" in line for line in filters), (by, filters)


def test_within_no_dates_keeps_no_row(spark):
    assert within(orders(spark, "month"), table("month"), "order_date", [None]).count() == 0
    assert within(orders(spark, "month"), table("month"), "order_date", []).count() == 0
