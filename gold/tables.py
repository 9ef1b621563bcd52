"""The Gold tables: one declaration each, plus its transform in gold/transforms/.

COPY_ON_WRITE, recomputed incrementally by lakehouse/incremental.py: business aggregates for
analysts, and feature tables for models (the `_features`, `_user_item` and `_ts` tables),
which ml/ reads as of a recorded commit.
"""

from __future__ import annotations

from datetime import timedelta

from bronze.tables import CUSTOMER_MASTER, WEB_CLICKSTREAMS
from lakehouse import rules as expect
from lakehouse.tables import DerivedTable, Input, Partitioning
from silver.tables import CUSTOMER_PROFILES, PRODUCT_DAILY_INVENTORY, UNIFIED_CUSTOMER_ORDERS

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
    # The sales numbers people watch during the day, the tightest target: a sale shows
    # here within half a minute of its commit in Postgres while `make up` runs.
    fresh_within=timedelta(seconds=30),
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
    fresh_within=timedelta(minutes=10),
    expectations=(
        # The transform's CASE names every segment; anything else is a bug in it.
        expect.in_set(
            "segment",
            ("prospect", "champion", "big_spender", "loyal", "one_time", "occasional"),
            tier=expect.FAIL,
        ),
    ),
)

CUSTOMER_SEGMENTATION_FEATURES = DerivedTable(
    name="hudi_customer_segmentation_features_gold",
    layer="gold",
    description="Grain: one customer with a profile. As of as_of_date, the day of the newest "
    "completed order of anyone: recency_days since the customer's last completed "
    "order, frequency = completed orders, monetary = their total; r/f/m_score 1-5 = "
    "the quintile of buyers at or below the customer's value (recency: the more "
    "recent, the higher), null for customers who never bought; rfm_segment = the "
    "three digits; preferred_category = most spent on (ties: first by name); "
    "tenure_days since signup; age_band from the birth date (unknown when erased).",
    record_key=("customer_id",),
    ordering=("as_of_date",),
    inputs=(
        # Scores rank each customer among all buyers, and as_of_date is everyone's: a
        # profile whose order figures changed recomputes every customer, and only the rows
        # whose values changed are written.
        Input(
            CUSTOMER_PROFILES,
            "profiles",
            reads=("region", "order_count", "lifetime_value", "average_order_value", "last_order_ts"),
            affects="""
            SELECT customer_id FROM changed UNION SELECT customer_id FROM profiles""",
        ),
        # Silver's profile leaves out the birth date and signup time; the customer's own
        # Bronze row has them (and erasure blanks the birth date there).
        Input(CUSTOMER_MASTER, "customers", reads=("birth_date", "created_at")),
        Input(
            UNIFIED_CUSTOMER_ORDERS,
            "orders",
            reads=("customer_id", "product_category", "status", "line_total"),
        ),
    ),
    transform="customer_segmentation_features",
    # Models train on it daily: minutes behind cost nothing.
    fresh_within=timedelta(minutes=15),
    # A score or recency out of range, or an age band the CASE does not name, is a bug in the
    # transform, not a bad row.
    expectations=tuple(
        expect.between(score, 1, 5, tier=expect.FAIL, nullable=True)
        for score in ("r_score", "f_score", "m_score")
    )
    + (
        expect.between("recency_days", 0, tier=expect.FAIL, nullable=True),
        expect.in_set(
            "age_band",
            ("under 25", "25-34", "35-44", "45-54", "55-64", "65 and over", "unknown"),
            tier=expect.FAIL,
        ),
    ),
)

PRODUCT_RECOMMENDATION_USER_ITEM = DerivedTable(
    name="hudi_product_recommendation_user_item_gold",
    layer="gold",
    description="Grain: one known customer and product they interacted with. views, "
    "cart_adds and cart_removes count their clickstream events about it, "
    "purchases their completed orders of it (units_purchased the units); "
    "last_interaction_ts is the newest of those; implicit_rating = ln(1 + views + "
    "3 x cart_adds + 10 x purchases).",
    record_key=("customer_id", "product_id"),
    ordering=("last_interaction_ts",),
    inputs=(
        # Sessions in Silver are counts per session and carry no product: the events do.
        Input(
            WEB_CLICKSTREAMS,
            "clicks",
            reads=("customer_id", "product_id", "event_type", "event_ts"),
            affects="""
            SELECT customer_id, product_id FROM changed
            WHERE customer_id IS NOT NULL AND product_id IS NOT NULL""",
        ),
        Input(
            UNIFIED_CUSTOMER_ORDERS,
            "orders",
            reads=("customer_id", "product_id", "status", "quantity", "transaction_ts"),
        ),
    ),
    transform="product_recommendation_user_item",
    fresh_within=timedelta(minutes=15),
    expectations=(expect.between("implicit_rating", 0, name="implicit_rating >= 0"),),
)

# How many days back the demand features reach: a change on day d moves the features of the
# sku's days d to d + HISTORY_DAYS (the frames in gold/transforms/demand_forecasting_ts.sql).
HISTORY_DAYS = 28

DEMAND_FORECASTING_TS = DerivedTable(
    name="hudi_demand_forecasting_ts_gold",
    layer="gold",
    description="Grain: one sku and day with a completed sale or a stock report. units_sold "
    "and revenue are the day's (the targets); stock_on_hand = quantity at the "
    "locations whose latest report fell on the day. Features from earlier days "
    "only: units_lag_1 and units_lag_7 (the units 1 and 7 days before), "
    "units_rolling_7 and units_rolling_28 (the 7 and 28 days before), "
    "revenue_rolling_28, stock_last_reported (newest stock report in the 28 days "
    "before), day_of_week (1 = Sunday).",
    record_key=("sku", "date"),
    ordering=("date",),
    # It grows by a row per sku and selling day, and a change reaches its sku's next
    # HISTORY_DAYS days only: by month, a run rewrites the newest months' files, not the
    # whole history (docs/benchmarks.md, "Silver and Gold").
    partitioning=Partitioning("date", by="month"),
    inputs=(
        # A day's row reads its sku's lines of that day and the HISTORY_DAYS before.
        Input(
            UNIFIED_CUSTOMER_ORDERS,
            "orders",
            prune=("order_date", "date"),
            reach=timedelta(days=HISTORY_DAYS),
            reads=("sku", "order_date", "status", "quantity", "line_total"),
            affects=f"""
            SELECT sku, explode(sequence(order_date, date_add(order_date, {HISTORY_DAYS}))) AS date
            FROM changed""",
        ),
        Input(
            PRODUCT_DAILY_INVENTORY,
            "inventory",
            prune=("date", "date"),
            reach=timedelta(days=HISTORY_DAYS),
            affects=f"""
            SELECT sku, explode(sequence(date, date_add(date, {HISTORY_DAYS}))) AS date
            FROM changed""",
        ),
    ),
    transform="demand_forecasting_ts",
    fresh_within=timedelta(minutes=15),
    expectations=(
        expect.between("units_sold", 0, name="units_sold >= 0"),
        expect.between("stock_on_hand", 0, name="stock_on_hand >= 0", nullable=True),
    ),
)

GOLD_TABLES = (
    DAILY_SALES,
    CUSTOMER_SEGMENTS,
    CUSTOMER_SEGMENTATION_FEATURES,
    PRODUCT_RECOMMENDATION_USER_ITEM,
    DEMAND_FORECASTING_TS,
)
