"""Silver and Gold: one incremental pass after 1% of the sales lines changed, against a full
refresh of the same inputs, at growing base sizes.

For each size the sales table is grown to that many lines (with customers and products in
proportion, spread over the seeded history like the seed's own orders), one event per
`LINES_PER_EVENT` lines goes to the clickstream and inventory topics, and all of it is
landed in Bronze. Then, timing every derived table separately:
1. full refresh of every Silver and Gold table (the starting state);
2. 1% of the lines change in Postgres, in one transaction: the most recent lines move on in
   their life cycle (pending -> completed, completed -> returned, and so on), which is where
   an order system's updates fall, and 1% as many events as before arrive; Debezium
   captures the changes and Bronze lands both;
3. one incremental pass (`lakehouse silver` then `lakehouse gold`);
4. a full refresh of the same inputs (`--full-refresh`), which is what the pass replaces.
"""

from __future__ import annotations

import random
import time

from kafka import KafkaProducer
from pyspark.sql import SparkSession

from benchmarks.bronze import BENCH_SEED, wait_for_capture
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

NEXT_STATUS = {
    "pending": "completed",
    "completed": "returned",
    "returned": "completed",
    "cancelled": "pending",
}


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


def _change_recent_lines(settings: Settings, share: float) -> int:
    """Moves the newest `share` of the sales lines one step on in their life cycle."""
    transitions = " ".join(f"WHEN '{old}' THEN '{new}'" for old, new in NEXT_STATUS.items())
    with connect(settings) as conn:
        total = conn.execute("SELECT count(*) FROM retail.sales_transactions").fetchone()[0]
        return conn.execute(
            f"""WITH recent AS (
                    SELECT order_id, line_item_id FROM retail.sales_transactions
                    ORDER BY order_id DESC, line_item_id DESC LIMIT %s)
                UPDATE retail.sales_transactions s
                SET status = CASE s.status {transitions} ELSE s.status END, updated_ts = now()
                FROM recent r
                WHERE s.order_id = r.order_id AND s.line_item_id = r.line_item_id""",
            (round(total * share),),
        ).rowcount


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
    """Waits for Debezium to publish the sales events, then drains Kafka into Bronze."""
    wait_for_capture(
        settings,
        SALES_TRANSACTIONS.topic,
        since_offsets + expected_sales_events,
        timeout=max(120.0, expected_sales_events / 1000),
    )
    began = time.monotonic()
    BronzeJob(spark, settings).drain()
    return round(time.monotonic() - began, 1)


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
    spark: SparkSession, settings: Settings, sizes: list[int], change_share: float, report=print
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
        changed = _change_recent_lines(settings, change_share)
        new_events = round(events * change_share)
        _send_events(settings, new_events, seed=lines + 1)
        report(f"  {changed:,} recent lines changed, {new_events:,} events sent; landing them in Bronze")
        _land(spark, settings, changed, offsets)
        report("  incremental pass")
        incremental = _pass(runner, False, report)
        report("  full refresh of the same inputs")
        full = _pass(runner, True, report)
        results.append(
            {
                "sales_lines": lines,
                "changed_lines": changed,
                "incremental": incremental,
                "full_refresh": full,
                "speedup": round(full["seconds"] / incremental["seconds"], 1),
            }
        )
        report(
            f"  incremental {incremental['seconds']} s, full refresh {full['seconds']} s, "
            f"{results[-1]['speedup']}x"
        )
    return {"change_share": change_share, "sizes": results}
