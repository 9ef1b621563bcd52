"""`lakehouse seed`: an initial data set, bulk-loaded with COPY: a year of history up to the
day it runs, the same for the same seed and day."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal

from ingestion import generators
from ingestion.database import connect
from lakehouse.settings import SOURCE_WRITER, Settings

COLUMNS = {
    "customer_master": [
        "customer_id",
        "first_name",
        "last_name",
        "email",
        "phone",
        "birth_date",
        "city",
        "state",
        "country",
        "region",
        "loyalty_tier",
        "created_at",
        "updated_ts",
    ],
    "product_catalog": [
        "product_id",
        "sku",
        "name",
        "description",
        "category",
        "brand",
        "unit_price",
        "active",
        "updated_ts",
    ],
    "sales_transactions": [
        "order_id",
        "line_item_id",
        "customer_id",
        "product_id",
        "quantity",
        "unit_price",
        "discount",
        "channel",
        "store_id",
        "status",
        "transaction_ts",
        "updated_ts",
    ],
}


@dataclass(frozen=True)
class SeedSize:
    sales_lines: int
    customers: int
    products: int

    @classmethod
    def for_lines(
        cls, sales_lines: int, customers: int | None = None, products: int | None = None
    ) -> SeedSize:
        """About ten lines per customer and fifty per product, as in a mid-size retailer."""
        return cls(
            sales_lines, customers or max(50, sales_lines // 10), products or max(20, sales_lines // 50)
        )


def today() -> date:
    """The day the seed runs, in UTC like every timestamp it writes."""
    return datetime.now(UTC).date()


def customers(seed: int, size: SeedSize, day: date) -> Iterator[dict]:
    rng, end = random.Random(f"{seed}:customers"), generators.history_end(day)
    for customer_id in range(1, size.customers + 1):
        yield generators.customer(rng, customer_id, generators.history_ts(rng, end))


def products(seed: int, size: SeedSize, day: date) -> Iterator[dict]:
    rng, end = random.Random(f"{seed}:products"), generators.history_end(day)
    for product_id in range(1, size.products + 1):
        yield generators.product(rng, product_id, generators.history_ts(rng, end))


def sales(
    seed: int,
    size: SeedSize,
    prices: list[tuple[int, Decimal]],
    day: date | None = None,
    first_order_id: int = 1,
    placed_at: datetime | None = None,
) -> Iterator[dict]:
    """Orders of 1-4 lines (2.5 on average) until `size.sales_lines` lines exist: spread over
    the history seeded on `day` (default today) in order-id order, or all placed at
    `placed_at` (a burst of new orders, for benchmarks)."""
    rng, end = random.Random(f"{seed}:sales"), generators.history_end(day or today())
    expected_orders = max(1, size.sales_lines * 2 // 5)
    emitted = 0
    for order_id in itertools.count(first_order_id):
        if emitted >= size.sales_lines:
            return
        position = min(1.0, (order_id - first_order_id) / expected_orders)
        status = "pending" if placed_at else generators.seeded_status(rng)
        lines = generators.order_lines(
            rng,
            order_id,
            rng.randint(1, size.customers),
            prices,
            placed_at or generators.history_ts(rng, end, position),
            status,
        )
        for line in lines[: size.sales_lines - emitted]:
            emitted += 1
            yield line


def copy_rows(conn, table: str, rows: Iterator[dict]) -> int:
    columns = COLUMNS[table]
    count = 0
    with conn.cursor().copy(f"COPY retail.{table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row([row[c] for c in columns])
            count += 1
    return count


def seed(
    settings: Settings, size: SeedSize, seed_value: int = 42, day: date | None = None
) -> dict[str, int] | None:
    """Loads the data set seeded on `day` (default today) into empty tables; returns row
    counts, or None if data exists."""
    day = day or today()
    with connect(settings, SOURCE_WRITER) as conn:
        existing = conn.execute(
            "SELECT (SELECT count(*) FROM retail.customer_master)"
            " + (SELECT count(*) FROM retail.product_catalog)"
            " + (SELECT count(*) FROM retail.sales_transactions)"
        ).fetchone()[0]
        if existing:
            return None
        catalog = list(products(seed_value, size, day))
        prices = [(p["product_id"], p["unit_price"]) for p in catalog]
        counts = {
            "customer_master": copy_rows(conn, "customer_master", customers(seed_value, size, day)),
            "product_catalog": copy_rows(conn, "product_catalog", iter(catalog)),
            "sales_transactions": copy_rows(conn, "sales_transactions", sales(seed_value, size, prices, day)),
        }
    return counts
