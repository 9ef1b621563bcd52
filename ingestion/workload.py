"""The live OLTP workload of `lakehouse simulate`: orders, updates and deletes in Postgres.

Each operation is one transaction. The sequence of operations and their values are fixed
by the seed and the database's state at start (keys are picked from the id ranges found
then); timestamps are the wall clock, because this is a live source.
"""

# Why one module: the workload is one state machine over the id ranges it found at start; its
# operations read and update that state, so they stay beside it.

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg
import psycopg.errors

from ingestion import generators
from ingestion.seed import COLUMNS
from lakehouse import domain
from lakehouse.settings import ConfigurationError

RECENT_ORDERS = 300
# Each attempt reads the ids another writer took meanwhile; only a writer inserting faster
# than this workload re-reads could take the next id every time.
KEY_CONFLICT_ATTEMPTS = 5
# Products the bad-row mix references without creating them: far above the catalog's ids,
# which grow by one per new product.
UNKNOWN_PRODUCT_IDS = 10_000_000


@dataclass
class KeySpace:
    """Id ranges of the live tables, and sales keys deleted (to re-insert later)."""

    max_customer_id: int
    max_product_id: int
    max_order_id: int
    fix_after: timedelta = timedelta(0)
    deleted_lines: list[dict] = field(default_factory=list)
    # (when written, operation, key) of the bad rows written, for a later step to fix
    bad_rows: list[tuple[datetime, str, int]] = field(default_factory=list)

    @classmethod
    def load(cls, conn: psycopg.Connection) -> KeySpace:
        row = conn.execute(
            "SELECT (SELECT coalesce(max(customer_id), 0) FROM retail.customer_master),"
            " (SELECT coalesce(max(product_id), 0) FROM retail.product_catalog"
            f"  WHERE product_id < {UNKNOWN_PRODUCT_IDS}),"
            " (SELECT coalesce(max(order_id), 0) FROM retail.sales_transactions)"
        ).fetchone()
        return cls(*row)


def _insert(conn: psycopg.Connection, table: str, rows: list[dict]) -> None:
    columns = COLUMNS[table]
    conn.cursor().executemany(
        f"INSERT INTO retail.{table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})",
        [[r[c] for c in columns] for r in rows],
    )


def _prices(conn: psycopg.Connection, rng: random.Random, keys: KeySpace) -> list[tuple[int, Decimal]]:
    ids = sorted({rng.randint(1, keys.max_product_id) for _ in range(4)})
    return conn.execute(
        "SELECT product_id, unit_price FROM retail.product_catalog"
        " WHERE product_id = ANY(%s) ORDER BY product_id",
        (ids,),
    ).fetchall()


def _order_lines(conn, rng, keys, now) -> list[dict]:
    prices = _prices(conn, rng, keys)
    if not prices or not keys.max_customer_id:
        return []
    keys.max_order_id += 1
    return generators.order_lines(
        rng, keys.max_order_id, rng.randint(1, keys.max_customer_id), prices, now, "pending"
    )


def new_order(conn, rng, keys, now):
    lines = _order_lines(conn, rng, keys, now)
    if not lines:
        return "skipped"
    _insert(conn, "sales_transactions", lines)
    if rng.random() < 0.3:
        # The customer changes their mind before the transaction ends: one key changes
        # twice inside one transaction, and Debezium emits both events.
        conn.execute(
            "UPDATE retail.sales_transactions SET quantity = quantity + 1,"
            " updated_ts = %s WHERE order_id = %s AND line_item_id = 1",
            (now, keys.max_order_id),
        )
        conn.execute(
            "UPDATE retail.sales_transactions SET discount = 0, updated_ts = %s"
            " WHERE order_id = %s AND line_item_id = 1",
            (now, keys.max_order_id),
        )
    return "new_order"


def recent_order(rng: random.Random, keys: KeySpace) -> int:
    """Mostly one of the last few hundred orders, now and then an old one: orders are
    shipped, completed, returned or cancelled in the days after they are placed."""
    return max(1, keys.max_order_id - int(rng.expovariate(1 / RECENT_ORDERS)))


def status_change(conn, rng, keys, now):
    order_id = recent_order(rng, keys)
    status = rng.choices(domain.ORDER_STATUSES, weights=[5, 70, 15, 10])[0]
    conn.execute(
        "UPDATE retail.sales_transactions SET status = %s, updated_ts = %s WHERE order_id = %s",
        (status, now, order_id),
    )
    return "status_change"


def price_correction(conn, rng, keys, now):
    factor = Decimal(rng.choice(["0.90", "0.95", "1.05", "1.10"]))
    conn.execute(
        "UPDATE retail.product_catalog SET unit_price = round(unit_price * %s, 2),"
        " updated_ts = %s WHERE product_id = %s",
        (factor, now, rng.randint(1, keys.max_product_id)),
    )
    return "price_correction"


def customer_move(conn, rng, keys, now):
    place = generators.location(rng)
    conn.execute(
        "UPDATE retail.customer_master SET city = %(city)s, state = %(state)s,"
        " country = %(country)s, region = %(region)s, updated_ts = %(now)s"
        " WHERE customer_id = %(id)s",
        {**place, "now": now, "id": rng.randint(1, keys.max_customer_id)},
    )
    return "customer_move"


def product_recategorisation(conn, rng, keys, now):
    conn.execute(
        "UPDATE retail.product_catalog SET category = %s, updated_ts = %s WHERE product_id = %s",
        (rng.choice(sorted(generators.CATEGORIES)), now, rng.randint(1, keys.max_product_id)),
    )
    return "product_recategorisation"


def delete_line(conn, rng, keys, now):
    row = conn.execute(
        f"DELETE FROM retail.sales_transactions WHERE (order_id, line_item_id) = ("
        f" SELECT order_id, line_item_id FROM retail.sales_transactions WHERE order_id = %s"
        f" ORDER BY line_item_id LIMIT 1) RETURNING {', '.join(COLUMNS['sales_transactions'])}",
        (recent_order(rng, keys),),
    ).fetchone()
    if row is None:
        return "skipped"
    keys.deleted_lines.append(dict(zip(COLUMNS["sales_transactions"], row)))
    return "delete_line"


def reinsert_line(conn, rng, keys, now):
    """A deleted key comes back (an order restored), with new values."""
    if not keys.deleted_lines:
        return "skipped"
    line = keys.deleted_lines.pop(rng.randrange(len(keys.deleted_lines)))
    line |= {"quantity": line["quantity"] + 1, "status": "pending", "updated_ts": now}
    _insert(conn, "sales_transactions", [line])
    return "reinsert_line"


def new_customer(conn, rng, keys, now):
    keys.max_customer_id += 1
    _insert(conn, "customer_master", [generators.customer(rng, keys.max_customer_id, now)])
    return "new_customer"


def new_product(conn, rng, keys, now):
    keys.max_product_id += 1
    _insert(conn, "product_catalog", [generators.product(rng, keys.max_product_id, now)])
    return "new_product"


def _bad_order(kind: str, spoil: Callable[[dict, random.Random, KeySpace, datetime], None]):
    """A new order whose first line `spoil` breaks; remembered so that a later step fixes it."""

    def operation(conn, rng, keys, now):
        lines = _order_lines(conn, rng, keys, now)
        if not lines:
            return "skipped"
        spoil(lines[0], rng, keys, now)
        _insert(conn, "sales_transactions", lines)
        keys.bad_rows.append((now, kind, keys.max_order_id))
        return kind

    operation.__name__ = kind
    return operation


def _negative_quantity(line, rng, keys, now):
    line["quantity"] = -line["quantity"]


def _unknown_product(line, rng, keys, now):
    line["product_id"] = UNKNOWN_PRODUCT_IDS + rng.randrange(100)


def _future_timestamp(line, rng, keys, now):
    # A till with a wrong clock: its lines are dated days ahead.
    line["transaction_ts"] = now + timedelta(days=rng.randint(1, 30))


def malformed_email(conn, rng, keys, now):
    customer_id = rng.randint(1, keys.max_customer_id)
    conn.execute(
        "UPDATE retail.customer_master SET email = replace(email, '@', ' at '),"
        " updated_ts = %s WHERE customer_id = %s",
        (now, customer_id),
    )
    keys.bad_rows.append((now, "malformed_email", customer_id))
    return "malformed_email"


def fix_bad_row(conn, rng, keys, now):
    """Someone corrects a bad row at the source (or the missing product is created), once it
    is `fix_after` old: long enough, live, for the pipeline to quarantine it first."""
    ready = [row for row in keys.bad_rows if row[0] <= now - keys.fix_after]
    if not ready:
        return "skipped"
    keys.bad_rows.remove(written := rng.choice(ready))
    _, kind, key = written
    if kind == "malformed_email":
        conn.execute(
            "UPDATE retail.customer_master SET email = replace(email, ' at ', '@'),"
            " updated_ts = %s WHERE customer_id = %s",
            (now, key),
        )
    elif kind == "unknown_product":
        for (product_id,) in conn.execute(
            "SELECT DISTINCT product_id FROM retail.sales_transactions s WHERE order_id = %s"
            " AND NOT EXISTS (SELECT 1 FROM retail.product_catalog p"
            "                 WHERE p.product_id = s.product_id)",
            (key,),
        ).fetchall():
            _insert(conn, "product_catalog", [generators.product(rng, product_id, now)])
    else:
        conn.execute(
            "UPDATE retail.sales_transactions SET quantity = abs(quantity),"
            " transaction_ts = least(transaction_ts, %s), updated_ts = %s"
            " WHERE order_id = %s",
            (now, now, key),
        )
    return "fix_bad_row"


Operation = Callable[[psycopg.Connection, random.Random, KeySpace, datetime], str]
# Weights, in transactions per hundred. A retailer's dimensions change far less often than
# its orders: a customer moves (changes region) about once per hundred transactions, and
# merchandising recategorises a product about as rarely; each such change reaches that
# customer's or product's lines on every day they were sold.
OPERATIONS: dict[Operation, int] = {
    new_order: 40,
    status_change: 29,
    price_correction: 6,
    customer_move: 1,
    product_recategorisation: 1,
    delete_line: 6,
    reinsert_line: 3,
    new_customer: 8,
    new_product: 2,
    fix_bad_row: 4,
}
# What `--bad-rows` mixes in: rows the source accepts and the quality gates must catch.
BAD_OPERATIONS = {
    _bad_order("negative_quantity", _negative_quantity): 1,
    _bad_order("unknown_product", _unknown_product): 1,
    _bad_order("future_timestamp", _future_timestamp): 1,
    malformed_email: 1,
}


class OltpWorkload:
    """Runs one weighted-random operation per `step()` call, each in its own transaction."""

    def __init__(
        self, conn: psycopg.Connection, seed: int, bad_share: float = 0.0, fix_after: timedelta = timedelta(0)
    ):
        assert conn.autocommit, "each step must commit on its own"
        if not 0 <= bad_share <= 1:
            raise ConfigurationError(f"the share of bad rows must be between 0 and 1, got {bad_share}")
        self.conn, self.bad_share = conn, bad_share
        self.rng = random.Random(f"{seed}:oltp")
        self.keys = KeySpace.load(conn)
        self.keys.fix_after = fix_after
        if not (self.keys.max_customer_id and self.keys.max_product_id and self.keys.max_order_id):
            raise ConfigurationError("The retail tables are empty: run `lakehouse seed` first.")
        self.operations, self.weights = zip(*OPERATIONS.items())

    def reconnect(self, conn: psycopg.Connection) -> None:
        """Goes on over a new connection after the database restarted. The interrupted step
        may or may not have committed, so the id ranges are read again and the deleted lines
        kept for re-insertion are forgotten (their delete may have been rolled back)."""
        assert conn.autocommit, "each step must commit on its own"
        self.conn = conn
        self._read_id_ranges()
        self.keys.deleted_lines.clear()

    def _read_id_ranges(self) -> None:
        fresh = KeySpace.load(self.conn)
        self.keys.max_customer_id = fresh.max_customer_id
        self.keys.max_product_id = fresh.max_product_id
        self.keys.max_order_id = fresh.max_order_id

    def step(self) -> str:
        if self.bad_share and self.rng.random() < self.bad_share:
            operation = self.rng.choices(list(BAD_OPERATIONS), weights=list(BAD_OPERATIONS.values()))[0]
        else:
            operation = self.rng.choices(self.operations, weights=self.weights)[0]
        return self.run(operation)

    def run(self, operation: Operation) -> str:
        """One operation in its own transaction. Other clients write the same tables: where
        one took the next id this workload meant to use, the transaction rolled back whole,
        so the id ranges are read again and the operation tried anew."""
        attempts_left = KEY_CONFLICT_ATTEMPTS
        while True:
            try:
                with self.conn.transaction():
                    return operation(self.conn, self.rng, self.keys, datetime.now(UTC))
            except psycopg.errors.UniqueViolation:
                attempts_left -= 1
                if not attempts_left:
                    raise
                self._read_id_ranges()
