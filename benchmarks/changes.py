"""A shop's changes, as the benchmarks apply them to Postgres: new orders placed now, and
the most recent lines moving one step on in their life cycle, which is where an order
system's updates fall."""

from __future__ import annotations

from datetime import UTC, datetime

from ingestion.database import connect
from ingestion.seed import SeedSize, copy_rows, sales
from lakehouse.settings import Settings

NEXT_STATUS = {
    "pending": "completed",
    "completed": "returned",
    "returned": "completed",
    "cancelled": "pending",
}


def update_recent_lines(conn, count: int) -> int:
    """Moves the newest `count` sales lines one step on in their life cycle."""
    transitions = " ".join(f"WHEN '{old}' THEN '{new}'" for old, new in NEXT_STATUS.items())
    return conn.execute(
        f"""WITH recent AS (
                SELECT order_id, line_item_id FROM retail.sales_transactions
                ORDER BY order_id DESC, line_item_id DESC LIMIT %s)
            UPDATE retail.sales_transactions s
            SET status = CASE s.status {transitions} ELSE s.status END, updated_ts = now()
            FROM recent r
            WHERE s.order_id = r.order_id AND s.line_item_id = r.line_item_id""",
        (count,),
    ).rowcount


def shop_changes(settings: Settings, new_lines: int, updated_lines: int, seed: int) -> int:
    """Updates the newest `updated_lines` lines, then adds `new_lines` lines of new orders
    placed now by existing customers, each in a transaction of its own; returns the sales
    rows changed (and so the change events Debezium publishes)."""
    with connect(settings) as conn:
        updated = update_recent_lines(conn, updated_lines)
    with connect(settings) as conn:
        last_order = conn.execute(
            "SELECT coalesce(max(order_id), 0) FROM retail.sales_transactions"
        ).fetchone()[0]
        customers = conn.execute("SELECT count(*) FROM retail.customer_master").fetchone()[0]
        prices = conn.execute(
            "SELECT product_id, unit_price FROM retail.product_catalog ORDER BY product_id"
        ).fetchall()
        size = SeedSize(new_lines, customers, len(prices))
        added = copy_rows(
            conn,
            "sales_transactions",
            sales(seed, size, prices, first_order_id=last_order + 1, placed_at=datetime.now(UTC)),
        )
    return updated + added
