"""The Silver tables: one declaration each, plus its transform in silver/transforms/.

Silver tables are COPY_ON_WRITE, cleansed and conformed, recomputed incrementally from
Bronze by lakehouse/incremental.py. Each keeps Hudi's change log so that Gold (and anyone
downstream) reads it incrementally too. Column lists are the transforms' SELECTs.
"""

from __future__ import annotations

from datetime import timedelta

from bronze.tables import (
    CUSTOMER_MASTER,
    INVENTORY_UPDATES,
    PRODUCT_CATALOG,
    SALES_TRANSACTIONS,
    WEB_CLICKSTREAMS,
)
from lakehouse import rules as expect
from lakehouse.domain import CHANNELS, ORDER_STATUSES, email_problem
from lakehouse.tables import DerivedTable, Input, Partitioning

UNIFIED_CUSTOMER_ORDERS = DerivedTable(
    name="hudi_unified_customer_orders_silver",
    layer="silver",
    description="Grain: one sales line (order_id, line_item_id), with its customer's region, "
    "country and loyalty tier and its product's sku, name, category and brand as "
    "they are now; line_total = quantity * unit_price - discount; order_date = "
    "UTC date of transaction_ts. Lines whose customer or product has not arrived "
    "are held back in the quarantine table until it does.",
    record_key=("order_id", "line_item_id"),
    ordering=("last_updated_ts",),
    partitioning=Partitioning("order_date", by="month"),
    change_log=True,
    inputs=(
        # A line's order_date is its Bronze day: a run reads the days its changes fall on.
        Input(
            SALES_TRANSACTIONS,
            "sales",
            prune=("dt", "order_date"),
            affects="""
            SELECT order_id, line_item_id, dt AS order_date FROM changed""",
        ),
        # A customer or product change reaches every line that references it, including
        # lines held back until now for want of it; only changes of the attributes a line
        # carries count (a new e-mail address or a price correction leaves lines as they were).
        Input(
            CUSTOMER_MASTER,
            "customers",
            reads=("region", "country", "loyalty_tier"),
            affects="""
            SELECT s.order_id, s.line_item_id, s.dt AS order_date FROM sales s
            JOIN changed c ON c.customer_id = s.customer_id""",
        ),
        Input(
            PRODUCT_CATALOG,
            "products",
            reads=("sku", "name", "category", "brand"),
            affects="""
            SELECT s.order_id, s.line_item_id, s.dt AS order_date FROM sales s
            JOIN changed p ON p.product_id = s.product_id""",
        ),
    ),
    transform="unified_customer_orders",
    # Daily sales reads it, so it runs before daily sales whenever that one is due.
    fresh_within=timedelta(minutes=1),
    expectations=(
        expect.exists("customer", "region", waits_for="customers"),
        expect.exists("product", "sku", waits_for="products"),
        expect.between("quantity", 1, name="quantity > 0"),
        expect.between("unit_price", 0, name="unit_price >= 0"),
        expect.between("discount", 0, name="discount >= 0"),
        expect.between("line_total", 0, name="discount <= line amount"),
        expect.in_set("status", ORDER_STATUSES),
        # A channel nobody modelled is a change in the business, not a bad row: channel
        # reports would silently miss it, so promotion stops until someone decides.
        expect.in_set("channel", CHANNELS, tier=expect.FAIL),
        expect.not_in_future("transaction_ts"),
        expect.row_count(minimum=1),
        expect.fresh("last_updated_ts", within=timedelta(days=1)),
    ),
)

CUSTOMER_PROFILES = DerivedTable(
    name="hudi_customer_profiles_silver",
    layer="silver",
    description="Grain: one current customer. Contact and region attributes, and over "
    "completed lines: lifetime_value, order_count (distinct orders), "
    "first_order_ts, last_order_ts, average_order_value.",
    record_key=("customer_id",),
    ordering=("last_updated_ts",),
    change_log=True,
    inputs=(Input(CUSTOMER_MASTER, "customers"), Input(UNIFIED_CUSTOMER_ORDERS, "orders")),
    transform="customer_profiles",
    fresh_within=timedelta(minutes=5),
    expectations=(
        expect.satisfies("email", email_problem, "email is a valid address"),
        expect.between("lifetime_value", 0, name="lifetime_value >= 0"),
        expect.fresh("last_updated_ts", within=timedelta(days=1)),
    ),
)

SESSIONIZED_CLICKSTREAMS = DerivedTable(
    name="hudi_sessionized_clickstreams_silver",
    layer="silver",
    description="Grain: one web session. Start, end and duration, event counts by type, "
    "converted = the session has a purchase, device of its last event, "
    "session_date = UTC date of its first event, other_events = events of a "
    "type outside the known ones.",
    record_key=("session_id",),
    ordering=("session_end_ts",),
    partitioning=Partitioning("session_date", by="month"),
    change_log=True,
    inputs=(Input(WEB_CLICKSTREAMS, "clicks"),),
    transform="sessionized_clickstreams",
    fresh_within=timedelta(minutes=5),
    expectations=(
        expect.between("other_events", maximum=0, name="event types are known"),
        expect.not_in_future("session_end_ts"),
        expect.fresh("session_end_ts", within=timedelta(hours=1)),
    ),
)

PRODUCT_DAILY_INVENTORY = DerivedTable(
    name="hudi_product_daily_inventory_silver",
    layer="silver",
    description="Grain: one sku and day, over the stock positions whose latest report fell "
    "on that day: locations reported, quantity on hand, their last change, "
    "locations out of stock, last_checked_ts.",
    record_key=("sku", "date"),
    ordering=("last_checked_ts",),
    partitioning=Partitioning("date", by="month"),
    change_log=True,
    inputs=(
        Input(
            INVENTORY_UPDATES,
            "inventory",
            prune=("dt", "date"),
            affects="""
        SELECT sku, to_date(update_ts) AS date FROM changed""",
        ),
    ),
    transform="product_daily_inventory",
    fresh_within=timedelta(minutes=5),
    expectations=(
        expect.between("quantity_on_hand", 0, name="quantity_on_hand >= 0"),
        expect.not_in_future("last_checked_ts"),
    ),
)

SILVER_TABLES = (
    UNIFIED_CUSTOMER_ORDERS,
    CUSTOMER_PROFILES,
    SESSIONIZED_CLICKSTREAMS,
    PRODUCT_DAILY_INVENTORY,
)
