"""The Gold tables: one declaration each, plus its transform in gold/transforms/.

Business aggregates for analysts, COPY_ON_WRITE, recomputed incrementally from Silver by
lakehouse/incremental.py.
"""

from __future__ import annotations

from datetime import timedelta

from lakehouse import rules as expect
from lakehouse.tables import DerivedTable, Input, Partitioning
from silver.tables import CUSTOMER_PROFILES, UNIFIED_CUSTOMER_ORDERS

DAILY_SALES = DerivedTable(
    name="hudi_daily_sales_gold",
    layer="gold",
    description="Grain: order_date x product_category x customer region, over completed "
    "lines: total_sales_amount = sum(line_total), total_orders = distinct "
    "orders, units_sold, line_count, aggregation_ts = newest input change. A "
    "group without completed lines does not exist.",
    record_key=("order_date", "product_category", "region"),
    ordering=("aggregation_ts",),
    partitioning=Partitioning("order_date", by="none"),
    # A changed line's old and new (date, category, region) are both affected: its
    # before-image names the group it leaves, its after-image the one it joins.
    inputs=(Input(UNIFIED_CUSTOMER_ORDERS, "orders", prune=("order_date", "order_date")),),
    transform="daily_sales",
    # The sales numbers people watch during the day: a sale should show here within a
    # minute of its commit in Postgres while `make up` runs.
    fresh_within=timedelta(minutes=1),
    expectations=(
        expect.between("total_sales_amount", 0, name="total_sales_amount >= 0"),
        expect.between("units_sold", 1, name="units_sold > 0"),
        expect.row_count(minimum=1),
    ),
)

CUSTOMER_SEGMENTS = DerivedTable(
    name="hudi_customer_segments_gold",
    layer="gold",
    description="Grain: one customer. segment from the profile alone: prospect (no "
    "completed order), champion (5+ orders and 2,500+ spent), big_spender "
    "(average order 400+), loyal (3+ orders), one_time, occasional.",
    record_key=("customer_id",),
    ordering=("segmentation_ts",),
    partitioning=Partitioning("segment", by="none"),
    inputs=(Input(CUSTOMER_PROFILES, "profiles"),),
    transform="customer_segments",
    expectations=(
        # The transform's CASE names every segment; anything else is a bug in it.
        expect.in_set(
            "segment",
            ("prospect", "champion", "big_spender", "loyal", "one_time", "occasional"),
            tier=expect.FAIL,
        ),
    ),
)

GOLD_TABLES = (DAILY_SALES, CUSTOMER_SEGMENTS)
