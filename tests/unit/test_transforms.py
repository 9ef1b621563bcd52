"""Each Silver and Gold transform on a few rows: the SQL alone, no Hudi and no runner."""

# Why one module: the transforms' tests share the builders of Bronze rows; one test per case
# of each Silver and Gold transform, read together as the transforms' specification.

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from decimal import Decimal

from bronze.tables import (
    CUSTOMER_MASTER,
    INVENTORY_UPDATES,
    PRODUCT_CATALOG,
    SALES_TRANSACTIONS,
    WEB_CLICKSTREAMS,
)
from gold.tables import (
    CUSTOMER_SEGMENTATION_FEATURES,
    CUSTOMER_SEGMENTS,
    DAILY_SALES,
    DEMAND_FORECASTING_TS,
    PRODUCT_RECOMMENDATION_USER_ITEM,
)
from silver.tables import (
    CUSTOMER_PROFILES,
    PRODUCT_DAILY_INVENTORY,
    SESSIONIZED_CLICKSTREAMS,
    UNIFIED_CUSTOMER_ORDERS,
)

T0 = datetime(2026, 3, 1, 9, 0)


def bronze_rows(spark, table, rows: list[dict]):
    schema = ", ".join(f"{name} {kind}" for name, kind in table.columns.items())
    return spark.createDataFrame([tuple(row.get(c) for c in table.columns) for row in rows], schema)


def run(spark, table, **inputs):
    """The table's transform over the given input frames, by alias; rows keyed by record key."""
    for alias, frame in inputs.items():
        frame.createOrReplaceTempView(alias)
    result = spark.sql(table.transform_sql())
    return result, {tuple(getattr(r, k) for k in table.record_key): r for r in result.collect()}


def customer(customer_id, region="europe", updated=T0, **more):
    return {
        "customer_id": customer_id,
        "first_name": "Ada",
        "last_name": "L",
        "email": "a@b.c",
        "country": "GB",
        "region": region,
        "loyalty_tier": "gold",
        "updated_ts": updated,
    } | more


def product(product_id, category="toys", updated=T0):
    return {
        "product_id": product_id,
        "sku": f"SKU-{product_id}",
        "name": "Robot",
        "category": category,
        "brand": "Kidoodle",
        "unit_price": Decimal("10.00"),
        "updated_ts": updated,
    }


def line(
    order_id,
    line_item_id,
    customer_id,
    product_id,
    quantity=1,
    price="10.00",
    discount="0.00",
    status="completed",
    ts=T0,
    updated=T0,
):
    return {
        "order_id": order_id,
        "line_item_id": line_item_id,
        "customer_id": customer_id,
        "product_id": product_id,
        "quantity": quantity,
        "unit_price": Decimal(price),
        "discount": Decimal(discount),
        "channel": "web",
        "status": status,
        "transaction_ts": ts,
        "updated_ts": updated,
    }


def orders(spark, lines, customers, products):
    frame, _ = run(
        spark,
        UNIFIED_CUSTOMER_ORDERS,
        sales=bronze_rows(spark, SALES_TRANSACTIONS, lines),
        customers=bronze_rows(spark, CUSTOMER_MASTER, customers),
        products=bronze_rows(spark, PRODUCT_CATALOG, products),
    )
    return frame


def test_unified_orders_join_current_attributes_and_leave_a_missing_customer_empty(spark):
    _, rows = run(
        spark,
        UNIFIED_CUSTOMER_ORDERS,
        sales=bronze_rows(
            spark,
            SALES_TRANSACTIONS,
            [
                line(
                    1,
                    1,
                    10,
                    100,
                    quantity=3,
                    price="19.99",
                    discount="1.50",
                    ts=datetime(2026, 3, 1, 23, 59, 59),
                ),
                line(2, 1, 99, 100),
            ],
        ),
        customers=bronze_rows(
            spark, CUSTOMER_MASTER, [customer(10, "asia_pacific", updated=datetime(2026, 3, 5))]
        ),
        products=bronze_rows(spark, PRODUCT_CATALOG, [product(100, "toys")]),
    )
    assert set(rows) == {(1, 1), (2, 1)}
    waiting = rows[(2, 1)]
    assert (waiting.region, waiting.sku) == (None, "SKU-100"), (
        "customer 99 has not arrived: no attributes, which the rule 'customer exists' holds back"
    )
    row = rows[(1, 1)]
    assert row.line_total == Decimal("58.47")
    assert row.order_date == date(2026, 3, 1)
    assert (row.region, row.product_category, row.sku) == ("asia_pacific", "toys", "SKU-100")
    assert row.last_updated_ts == T0, "the line's own, not its customer's"


def test_customer_profiles_count_completed_orders_only(spark):
    order_rows = orders(
        spark,
        [
            line(1, 1, 10, 100, quantity=2, price="10.00", ts=datetime(2026, 1, 1)),
            line(1, 2, 10, 100, quantity=1, price="5.00", ts=datetime(2026, 1, 1)),
            line(2, 1, 10, 100, quantity=1, price="15.00", ts=datetime(2026, 2, 1)),
            line(3, 1, 10, 100, quantity=9, price="99.00", status="cancelled"),
        ],
        [customer(10), customer(11)],
        [product(100)],
    )
    _, rows = run(
        spark,
        CUSTOMER_PROFILES,
        orders=order_rows,
        customers=bronze_rows(spark, CUSTOMER_MASTER, [customer(10), customer(11)]),
    )
    buyer, idle = rows[(10,)], rows[(11,)]
    assert (buyer.lifetime_value, buyer.order_count, buyer.average_order_value) == (
        Decimal("40.00"),
        2,
        Decimal("20.00"),
    )
    assert (buyer.first_order_ts, buyer.last_order_ts) == (datetime(2026, 1, 1), datetime(2026, 2, 1))
    assert (idle.lifetime_value, idle.order_count, idle.average_order_value, idle.first_order_ts) == (
        Decimal("0.00"),
        0,
        None,
        None,
    )


def test_sessions_are_built_from_events_in_any_order(spark):
    def click(n, event_type, ts, device="mobile"):
        return {
            "event_id": f"e{n}",
            "session_id": "s1",
            "customer_id": 10 if n == 2 else None,
            "event_type": event_type,
            "device": device,
            "event_ts": ts,
        }

    _, rows = run(
        spark,
        SESSIONIZED_CLICKSTREAMS,
        clicks=bronze_rows(
            spark,
            WEB_CLICKSTREAMS,
            [
                click(3, "purchase", datetime(2026, 3, 2, 0, 10), device="desktop"),
                click(1, "page_view", datetime(2026, 3, 1, 23, 55)),
                click(2, "add_to_cart", datetime(2026, 3, 2, 0, 0)),
                click(4, "teleport", datetime(2026, 3, 2, 0, 5)),
            ],
        ),
    )
    session = rows[("s1",)]
    assert (session.session_start_ts, session.session_end_ts, session.duration_seconds) == (
        datetime(2026, 3, 1, 23, 55),
        datetime(2026, 3, 2, 0, 10),
        900.0,
    )
    assert (
        session.event_count,
        session.page_views,
        session.add_to_carts,
        session.purchases,
        session.other_events,
    ) == (4, 1, 1, 1, 1)
    assert session.converted and session.device == "desktop" and session.customer_id == 10
    assert session.session_date == date(2026, 3, 1)


def test_daily_inventory_groups_positions_by_the_day_of_their_latest_report(spark):
    def stock(location, on_hand, change, ts):
        return {
            "sku": "SKU-1",
            "location_id": location,
            "quantity_on_hand": on_hand,
            "change_qty": change,
            "update_ts": ts,
        }

    _, rows = run(
        spark,
        PRODUCT_DAILY_INVENTORY,
        inventory=bronze_rows(
            spark,
            INVENTORY_UPDATES,
            [
                stock("WH-1", 40, -2, datetime(2026, 3, 1, 8)),
                stock("WH-2", 0, -1, datetime(2026, 3, 1, 9)),
                stock("WH-3", 7, 5, datetime(2026, 3, 2, 8)),
            ],
        ),
    )
    first = rows[("SKU-1", date(2026, 3, 1))]
    assert (
        first.locations_reported,
        first.quantity_on_hand,
        first.last_change_qty,
        first.locations_out_of_stock,
        first.last_checked_ts,
    ) == (2, 40, -3, 1, datetime(2026, 3, 1, 9))
    assert rows[("SKU-1", date(2026, 3, 2))].quantity_on_hand == 7


def test_daily_sales_sum_completed_lines_per_day_category_and_region(spark):
    order_rows = orders(
        spark,
        [
            line(1, 1, 10, 100, quantity=2, price="10.00"),
            line(1, 2, 10, 100, quantity=1, price="0.99"),
            line(2, 1, 11, 100, quantity=1, price="5.00"),
            line(3, 1, 10, 100, quantity=4, price="7.00", status="returned"),
            line(4, 1, 10, 101, quantity=1, price="3.00"),
        ],
        [customer(10, "europe"), customer(11, "europe")],
        [product(100, "toys"), product(101, "grocery")],
    )
    _, rows = run(spark, DAILY_SALES, orders=order_rows)
    toys = rows[(date(2026, 3, 1), "toys", "europe")]
    assert (toys.total_sales_amount, toys.total_orders, toys.units_sold, toys.line_count) == (
        Decimal("25.99"),
        2,
        4,
        3,
    )
    assert toys.order_month == "2026-03"
    assert rows[(date(2026, 3, 1), "grocery", "europe")].total_sales_amount == Decimal("3.00")


def test_segments_follow_the_profile_rules_in_order(spark):
    profiles = spark.createDataFrame(
        [
            (1, 0, "0.00", None),
            (2, 5, "2500.00", "500.00"),
            (3, 2, "900.00", "450.00"),
            (4, 3, "300.00", "100.00"),
            (5, 1, "50.00", "50.00"),
            (6, 2, "60.00", "30.00"),
        ],
        "customer_id long, order_count long, lifetime_value string, average_order_value string",
    ).selectExpr(
        "customer_id",
        "'europe' AS region",
        "'gold' AS loyalty_tier",
        "CAST(lifetime_value AS DECIMAL(18, 2)) AS lifetime_value",
        "order_count",
        "CAST(average_order_value AS DECIMAL(18, 2)) AS average_order_value",
        "TIMESTAMP'2026-03-01 00:00:00' AS last_updated_ts",
    )
    _, rows = run(spark, CUSTOMER_SEGMENTS, profiles=profiles)
    assert {k[0]: r.segment for k, r in rows.items()} == {
        1: "prospect",
        2: "champion",
        3: "big_spender",
        4: "loyal",
        5: "one_time",
        6: "occasional",
    }
    assert rows[(1,)].segmentation_ts == datetime(2026, 3, 1)


def test_segmentation_features_score_buyers_by_quintile_as_of_the_newest_order(spark):
    people = [
        customer(1, birth_date=date(1990, 6, 1), created_at=datetime(2025, 3, 1)),
        customer(2, birth_date=date(2005, 1, 1), created_at=datetime(2026, 2, 1)),
        customer(3, created_at=datetime(2026, 3, 5)),  # no birth date; signed up after as_of
        customer(4, birth_date=date(1950, 1, 1), created_at=datetime(2024, 1, 1)),
    ]
    order_rows = orders(
        spark,
        [
            line(1, 1, 1, 100, price="10.00"),
            line(1, 2, 1, 101, price="30.00"),
            line(2, 1, 2, 100, price="10.00", ts=T0 - timedelta(days=10)),
            line(3, 1, 3, 100, price="5.00", ts=T0 - timedelta(days=20)),
            line(4, 1, 3, 100, price="5.00", ts=T0 - timedelta(days=1)),
            line(5, 1, 4, 100, price="99.00", status="returned"),
        ],
        people,
        [product(100, "toys"), product(101, "grocery")],
    )
    customers = bronze_rows(spark, CUSTOMER_MASTER, people)
    profiles, _ = run(spark, CUSTOMER_PROFILES, orders=order_rows, customers=customers)
    _, rows = run(
        spark, CUSTOMER_SEGMENTATION_FEATURES, profiles=profiles, customers=customers, orders=order_rows
    )

    def features(customer_id):
        r = rows[(customer_id,)]
        return (r.recency_days, r.frequency, r.monetary, r.rfm_segment, r.preferred_category, r.age_band)

    # Three buyers. Recency 0, 10 and 1 days: the most recent scores 5, the least 2 (the
    # lowest third of them is at or below 5 x 1/3). Customers 1 and 2 share the lowest
    # frequency and 2 and 3 the lowest monetary value: two thirds of buyers, score 4 each.
    assert features(1) == (0, 1, Decimal("40.00"), "545", "grocery", "35-44")
    assert features(2) == (10, 1, Decimal("10.00"), "244", "toys", "under 25")
    assert features(3) == (1, 2, Decimal("10.00"), "454", "toys", "unknown")
    assert features(4) == (None, 0, Decimal("0.00"), None, None, "65 and over"), "never bought"
    assert {r.as_of_date for r in rows.values()} == {date(2026, 3, 1)}
    assert [rows[(i,)].tenure_days for i in (1, 2, 3)] == [365, 28, 0]


def test_user_item_interactions_count_known_customers_events_and_completed_purchases(spark):
    def event(n, customer_id, event_type, product_id):
        return {
            "event_id": f"e{n}",
            "session_id": f"s{customer_id}",
            "customer_id": customer_id,
            "event_type": event_type,
            "product_id": product_id,
            "device": "mobile",
            "event_ts": T0 + timedelta(minutes=n),
        }

    clicks = bronze_rows(
        spark,
        WEB_CLICKSTREAMS,
        [
            event(1, 10, "product_view", 100),
            event(2, 10, "product_view", 100),
            event(3, 10, "add_to_cart", 100),
            event(4, None, "product_view", 100),  # anonymous
            event(5, 10, "search", None),  # about no product
            event(6, 11, "remove_from_cart", 101),
        ],
    )
    order_rows = orders(
        spark,
        [
            line(1, 1, 10, 100, quantity=2, ts=T0 + timedelta(hours=1)),
            line(2, 1, 11, 100, status="returned"),
        ],
        [customer(10), customer(11)],
        [product(100), product(101)],
    )
    _, rows = run(spark, PRODUCT_RECOMMENDATION_USER_ITEM, clicks=clicks, orders=order_rows)
    assert set(rows) == {(10, 100), (11, 101)}
    bought = rows[(10, 100)]
    assert (bought.views, bought.cart_adds, bought.purchases, bought.units_purchased) == (2, 1, 1, 2)
    assert bought.last_interaction_ts == T0 + timedelta(hours=1)
    assert bought.implicit_rating == round(math.log(1 + 2 + 3 * 1 + 10 * 1), 6)
    assert (rows[(11, 101)].cart_removes, rows[(11, 101)].implicit_rating) == (1, 0.0)


def test_demand_features_read_only_earlier_days(spark):
    day = T0.date()

    def sold(order_id, days_before, quantity):
        return line(order_id, 1, 10, 100, quantity=quantity, ts=T0 - timedelta(days=days_before))

    order_rows = orders(
        spark,
        [
            sold(1, 0, 2),
            sold(2, 1, 3),
            sold(3, 7, 4),
            sold(4, 30, 5),  # beyond the 28 days the features reach
            sold(5, -1, 100),  # the next day: no feature of `day` may see it
        ],
        [customer(10)],
        [product(100)],
    )
    inventory = spark.createDataFrame(
        [("SKU-100", day, 50), ("SKU-100", day - timedelta(days=3), 70)],
        "sku string, date date, quantity_on_hand bigint",
    )
    _, rows = run(spark, DEMAND_FORECASTING_TS, orders=order_rows, inventory=inventory)
    today = rows[("SKU-100", day)]
    assert (today.units_sold, today.revenue, today.stock_on_hand) == (2, Decimal("20.00"), 50)
    assert (
        today.units_lag_1,
        today.units_lag_7,
        today.units_rolling_7,
        today.units_rolling_28,
        today.revenue_rolling_28,
    ) == (3, 4, 7, 7, Decimal("70.00"))
    assert today.stock_last_reported == 70, "the day's own report is not a feature of the day"
    reported_only = rows[("SKU-100", day - timedelta(days=3))]
    assert (reported_only.units_sold, reported_only.stock_on_hand, reported_only.units_rolling_7) == (
        0,
        70,
        4,
    )
