"""Silver and Gold: one incremental pass after a change of a fixed number of sales lines,
against a full refresh of the same inputs, at growing base sizes.

For each size the sales table is grown to that many lines (with customers and products in
proportion, spread over the seeded history like the seed's own orders), one event per
`LINES_PER_EVENT` lines goes to the clickstream and inventory topics, and all of it is
landed in Bronze. Then, timing every derived table separately:
1. full refresh of every Silver and Gold table (the starting state);
2. `changed_lines` lines change in Postgres, whatever the base's size, as a shop's do: half
   of them new orders, the other half the most recent lines moving on in their life cycle
   (pending -> completed, completed -> returned, and so on), which is where an order
   system's updates fall; and one event per `LINES_PER_EVENT` changed lines arrives.
   Debezium captures the changes and Bronze lands both. (A share of the base, as this
   benchmark once changed, grows with it: at ten million lines 1% is a hundred times the
   rows of 1% at a hundred thousand, which measures the change's size, not the base's.)
3. one incremental pass (`lakehouse silver` then `lakehouse gold`);
4. a full refresh of the same inputs (`--full-refresh`), which is what the pass replaces.
"""

from __future__ import annotations

import random
import time

from kafka import KafkaProducer
from pyspark.sql import SparkSession

from benchmarks.bronze import BENCH_SEED, wait_for_capture
from benchmarks.changes import shop_changes
from bronze.job import BronzeJob
from bronze.tables import SALES_TRANSACTIONS
from ingestion import generators
from ingestion.database import connect
from ingestion.events import EventStreams
from ingestion.seed import SeedSize, copy_rows, sales, today
from ingestion.topics import messages_in
from lakehouse.incremental import InputNotReady, Runner
from lakehouse.settings import Settings
from medallion.tables import derived_tables

# The event streams at a twentieth of the sales lines: enough for the tables that read them
# (sessions, daily inventory, user-item interactions, demand) to have work at every size.
LINES_PER_EVENT = 20


def _grow_sources(settings: Settings, lines: int) -> int:
    """Adds customers, products and sales lines until the sales table has `lines`, each new
    line referencing an existing customer and product; returns the lines added."""
    target = SeedSize.for_lines(lines)
    rng = random.Random(f"{BENCH_SEED}:{lines}")
    with connect(settings) as conn:
        have_lines, last_order = conn.execute(
            "SELECT count(*), coalesce(max(order_id), 0) FROM retail.sales_transactions"
        ).fetchone()
        if have_lines >= lines:
            return 0
        for table, key, count, make in (
            ("customer_master", "customer_id", target.customers, generators.customer),
            ("product_catalog", "product_id", target.products, generators.product),
        ):
            taken = {row[0] for row in conn.execute(f"SELECT {key} FROM retail.{table}")}
            copy_rows(
                conn,
                table,
                (
                    make(rng, new_id, generators.history_ts(rng, generators.history_end(today())))
                    for new_id in range(1, count + 1)
                    if new_id not in taken
                ),
            )
        prices = conn.execute(
            "SELECT product_id, unit_price FROM retail.product_catalog"
            " WHERE product_id <= %s ORDER BY product_id",
            (target.products,),
        ).fetchall()
        added = SeedSize(lines - have_lines, target.customers, len(prices))
        return copy_rows(
            conn,
            "sales_transactions",
            sales(BENCH_SEED + lines, added, prices, first_order_id=last_order + 1),
        )


def _send_events(settings: Settings, count: int, seed: int) -> None:
    """`count` clickstream and inventory events, as the simulator sends them, about the
    source's customers and products."""
    with connect(settings) as conn:
        customer_ids = [row[0] for row in conn.execute("SELECT customer_id FROM retail.customer_master")]
        products = conn.execute("SELECT product_id, sku FROM retail.product_catalog").fetchall()
    producer = KafkaProducer(bootstrap_servers=settings.kafka_bootstrap)
    streams = EventStreams(producer, seed, customer_ids, [s for _, s in products], [p for p, _ in products])
    for _ in range(count):
        streams.step()
    producer.flush()
    producer.close()


def _land(spark: SparkSession, settings: Settings, expected_sales_events: int, since_offsets: int) -> float:
    """Drains Kafka into Bronze, again and again while Debezium still publishes the sales
    events (at millions of lines capturing and landing take minutes each, and overlap so),
    until all of them are landed."""
    target = since_offsets + expected_sales_events
    began = time.monotonic()
    timeout = max(120.0, expected_sales_events / 1000)
    while True:
        captured = messages_in(settings, SALES_TRANSACTIONS.topic) >= target
        BronzeJob(spark, settings).drain()
        if captured:
            return round(time.monotonic() - began, 1)
        if time.monotonic() - began > timeout:
            wait_for_capture(settings, SALES_TRANSACTIONS.topic, target, timeout=0)  # names the shortfall


def _pass(runner: Runner, full_refresh: bool, report) -> dict:
    tables = {}
    for table in derived_tables():
        try:
            outcome = runner.run(table, full_refresh)
        except InputNotReady as waiting:
            # The event streams (clicks, inventory) send nothing here: their tables wait.
            report(f"    {table.name}: waiting ({waiting})")
            continue
        report("    " + outcome.line())
        tables[table.name] = {
            "mode": outcome.mode,
            "changes_read": outcome.changes_read,
            "upserted": outcome.upserted,
            "deleted": outcome.deleted,
            "seconds": round(outcome.seconds, 1),
        }
    return {"seconds": round(sum(t["seconds"] for t in tables.values()), 1), "tables": tables}


def measure(
    spark: SparkSession, settings: Settings, sizes: list[int], changed_lines: int, report=print
) -> dict:
    runner = Runner(spark, settings, by_cost=False)
    results = []
    for lines in sizes:
        offsets = messages_in(settings, SALES_TRANSACTIONS.topic)
        added = _grow_sources(settings, lines)
        events = lines // LINES_PER_EVENT
        _send_events(settings, events, seed=lines)
        report(f"{lines:,} sales lines: {added:,} added, {events:,} events sent; landing them in Bronze")
        landing = _land(spark, settings, added, offsets)
        report(f"  landed in {landing} s; starting state: full refresh")
        _pass(runner, True, report)

        offsets = messages_in(settings, SALES_TRANSACTIONS.topic)
        new_lines = changed_lines // 2
        changed = shop_changes(settings, new_lines, changed_lines - new_lines, seed=BENCH_SEED + lines)
        new_events = max(1, changed_lines // LINES_PER_EVENT)
        _send_events(settings, new_events, seed=lines + 1)
        report(
            f"  {new_lines:,} new lines, {changed - new_lines:,} recent lines updated, {new_events:,} "
            f"events sent; landing them in Bronze"
        )
        _land(spark, settings, changed, offsets)
        report("  incremental pass")
        incremental = _pass(runner, False, report)
        report("  full refresh of the same inputs")
        full = _pass(runner, True, report)
        results.append(
            {
                "sales_lines": lines,
                "new_lines": new_lines,
                "updated_lines": changed - new_lines,
                "incremental": incremental,
                "full_refresh": full,
                "speedup": round(full["seconds"] / incremental["seconds"], 1),
            }
        )
        report(
            f"  incremental {incremental['seconds']} s, full refresh {full['seconds']} s, "
            f"{results[-1]['speedup']}x"
        )
    return {"changed_lines": changed_lines, "sizes": results}
