"""The quality gates end to end: bad rows written to Postgres and bad events sent to Kafka
are landed in Bronze and kept out of Silver with their reasons; good rows beside them are
promoted; a fail-tier breach commits nothing; a fix at the source promotes; Gold checks its
own contract on what Silver hands it; a rebuild rewrites the quarantine only when what it
keeps out changed."""

# Why one module over 300 lines: every test here writes bad rows through the same helpers
# (`insert_line`, `_write_negative_line`), in the order ids this module reserves and its
# `clean_source` fixture removes; split, the modules would share those and could collide.

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import functions as F

from gold.tables import DAILY_SALES
from ingestion.events import encode
from ingestion.topics import INVENTORY_TOPIC, event_key
from lakehouse import timeline
from lakehouse.hudi import DELETED, snapshot, write
from lakehouse.incremental import Runner, utc_now
from lakehouse.tables import quality_results_table
from medallion.invocation import EXIT_QUALITY_GATE
from pipeline import cli
from silver.tables import (
    CUSTOMER_PROFILES,
    PRODUCT_DAILY_INVENTORY,
    SESSIONIZED_CLICKSTREAMS,
    SILVER_TABLES,
    UNIFIED_CUSTOMER_ORDERS,
)
from tests.support import cli_env, click, drain_until_equal, quarantined, run_tables, send_clicks

ORDERS = UNIFIED_CUSTOMER_ORDERS
FIRST_ORDER = 9_100_000  # far above the seeded and simulated order ids
UNKNOWN_PRODUCT = 9_100_001
BAD_EMAIL_CUSTOMER = 9_100_002
# How far ahead the future-dated line is. Kept short: moving the runner's clock past it also
# promotes any other line dated within that span, which the shared dev database may hold.
AHEAD = timedelta(minutes=15)
ORDERS_AND_PROFILES = (ORDERS, CUSTOMER_PROFILES)


def insert_line(
    db,
    order_id,
    line_item_id,
    customer_id,
    product_id,
    quantity=2,
    unit_price="10.00",
    discount="0.00",
    channel="web",
    status="completed",
    transaction_ts=None,
):
    db.execute(
        "INSERT INTO retail.sales_transactions VALUES (%s, %s, %s, %s, %s, %s, %s, %s, NULL, %s, %s, now())",
        (
            order_id,
            line_item_id,
            customer_id,
            product_id,
            quantity,
            unit_price,
            discount,
            channel,
            status,
            transaction_ts or datetime.now(UTC),
        ),
    )


def promoted_keys(spark, settings, table=ORDERS) -> set[tuple]:
    keys = list(table.record_key)
    return {tuple(r) for r in snapshot(spark, table, settings).select(keys).collect()}


@pytest.fixture
def clean_source(db):
    """The dev database outlives test sessions: remove this module's rows before and after."""

    def remove():
        with db.transaction():
            db.execute(
                "DELETE FROM retail.sales_transactions WHERE order_id IN (%s, %s)",
                (FIRST_ORDER, FIRST_ORDER + 1),
            )
            db.execute("DELETE FROM retail.product_catalog WHERE product_id = %s", (UNKNOWN_PRODUCT,))
            db.execute("DELETE FROM retail.customer_master WHERE customer_id = %s", (BAD_EMAIL_CUSTOMER,))

    remove()
    yield
    remove()


def stock_report(sku: str, quantity_on_hand: int, ts: datetime) -> dict:
    return {
        "sku": sku,
        "location_id": "WH-TEST",
        "quantity_on_hand": quantity_on_hand,
        "change_qty": 0,
        "reason": "adjustment",
        "update_ts": ts,
    }


def test_bad_rows_and_events_are_kept_out_with_their_reason_and_promoted_once_fixed(
    services, spark, db, producer, clean_source
):
    drain_until_equal(spark, services, db)
    # Takes in what earlier tests left, so that the next batches are this test's alone.
    run_tables(spark, services, SILVER_TABLES)
    customer_id, product_id = db.execute(
        "SELECT s.customer_id, s.product_id FROM retail.sales_transactions s LIMIT 1"
    ).fetchone()
    db.execute(
        "INSERT INTO retail.customer_master SELECT %s, first_name, last_name, "
        "'not-an-email', phone, birth_date, city, state, country, region, loyalty_tier, "
        "created_at, now() FROM retail.customer_master WHERE customer_id = %s",
        (BAD_EMAIL_CUSTOMER, customer_id),
    )
    now = datetime.now(UTC)
    bad = {  # line -> the rules it breaks (a negative quantity makes a negative amount, too)
        (FIRST_ORDER, 2): ["discount <= line amount", "quantity > 0"],
        (FIRST_ORDER, 3): ["product exists"],
        (FIRST_ORDER, 4): ["transaction_ts not in the future"],
        (FIRST_ORDER, 5): ["status is known"],
        (FIRST_ORDER, 6): ["discount <= line amount"],
    }
    with db.transaction():
        insert_line(db, FIRST_ORDER, 1, customer_id, product_id)  # good, beside the bad ones
        insert_line(db, FIRST_ORDER, 2, customer_id, product_id, quantity=-2)
        insert_line(db, FIRST_ORDER, 3, customer_id, UNKNOWN_PRODUCT)
        insert_line(db, FIRST_ORDER, 4, customer_id, product_id, transaction_ts=now + AHEAD)
        insert_line(db, FIRST_ORDER, 5, customer_id, product_id, status="lost")
        insert_line(db, FIRST_ORDER, 6, customer_id, product_id, discount="25.00")
    tag, three_hours_ago = uuid.uuid4().hex[:8], now - timedelta(hours=3)
    send_clicks(
        producer,
        [
            click(f"stale-{tag}", "page_view", three_hours_ago, 1),
            click(f"odd-{tag}", "page_view", three_hours_ago, 1),
            click(f"odd-{tag}", "teleport", three_hours_ago, 2),
        ],
    )
    negative_stock = stock_report(f"SKU-NEGATIVE-{tag}", -3, now)
    producer.send(
        INVENTORY_TOPIC, key=event_key(INVENTORY_TOPIC, negative_stock), value=encode(negative_stock)
    )
    producer.flush()
    drain_until_equal(spark, services, db)
    reports = run_tables(spark, services, SILVER_TABLES)

    held = quarantined(spark, services)
    assert {key: rules for key, (rules, _) in held.items() if key[0] == FIRST_ORDER} == bad
    assert held[(FIRST_ORDER, 3)][1] == "held back"
    assert held[(FIRST_ORDER, 2)][1] == "quarantined"
    orders = promoted_keys(spark, services)
    assert (FIRST_ORDER, 1) in orders and not orders & set(bad)
    assert quarantined(spark, services, CUSTOMER_PROFILES)[(BAD_EMAIL_CUSTOMER,)][0] == [
        "email is a valid address"
    ]
    assert (BAD_EMAIL_CUSTOMER,) not in promoted_keys(spark, services, CUSTOMER_PROFILES)
    counts = reports[ORDERS.name].reconciliation
    assert counts.rows_in == counts.promoted + counts.quarantined + counts.held_back + counts.removed
    assert counts.quarantined >= 4
    assert counts.held_back >= 1
    results = snapshot(spark, quality_results_table("silver"), services).where(
        (F.col("table_name") == ORDERS.name) & (F.col("rule") == "quantity > 0") & ~F.col("success")
    )
    assert results.where(F.col("sample_values").contains("-2")).count() >= 1

    # From the event streams: an unknown event type quarantines its session, a negative
    # stock its sku and day; a batch three hours old is only warned about, and promoted.
    sessions = SESSIONIZED_CLICKSTREAMS
    assert quarantined(spark, services, sessions)[(f"odd-{tag}",)] == (
        ["event types are known"],
        "quarantined",
    )
    assert (f"stale-{tag}",) in promoted_keys(spark, services, sessions)
    freshness = "newest session_end_ts at most 1 hour old"
    assert any(
        b.startswith(f'{sessions.name}: rule "{freshness}" (warn) failed')
        for b in reports[sessions.name].breaches
    ), reports[sessions.name].breaches
    recorded = snapshot(spark, quality_results_table("silver"), services).where(
        (F.col("table_name") == sessions.name)
        & (F.col("rule") == freshness)
        & ~F.col("success")
        & (F.col("rows_checked") == 2)
    )
    assert recorded.count() >= 1
    stock_day = (negative_stock["sku"], now.date())
    assert quarantined(spark, services, PRODUCT_DAILY_INVENTORY)[stock_day] == (
        ["quantity_on_hand >= 0"],
        "quarantined",
    )

    # Fixed at the source: each line is corrected, the product arrives, the e-mail is fixed,
    # a new count replaces the negative stock. The future-dated line is left alone: once
    # its time has come (the runner's clock is moved on past it) it passes as it is.
    with db.transaction():
        db.execute(
            "UPDATE retail.sales_transactions SET quantity = 2, status = 'completed', "
            "discount = 0 WHERE order_id = %s AND line_item_id <> 4",
            (FIRST_ORDER,),
        )
        db.execute(
            "INSERT INTO retail.product_catalog (product_id, sku, name, description, "
            "category, brand, unit_price, active, updated_ts) SELECT %s, 'SKU-LATE-1', name, "
            "description, category, brand, unit_price, active, now() "
            "FROM retail.product_catalog WHERE product_id = %s",
            (UNKNOWN_PRODUCT, product_id),
        )
        db.execute(
            "UPDATE retail.customer_master SET email = 'fixed@example.com', "
            "updated_ts = now() WHERE customer_id = %s",
            (BAD_EMAIL_CUSTOMER,),
        )
    recount = stock_report(negative_stock["sku"], 7, now + timedelta(seconds=1))
    producer.send(INVENTORY_TOPIC, key=event_key(INVENTORY_TOPIC, recount), value=encode(recount))
    producer.flush()
    drain_until_equal(spark, services, db)
    run_tables(spark, services, SILVER_TABLES, clock=lambda: utc_now() + AHEAD)
    assert not [key for key in quarantined(spark, services) if key[0] == FIRST_ORDER]
    assert set(bad) <= promoted_keys(spark, services)
    assert (BAD_EMAIL_CUSTOMER,) in promoted_keys(spark, services, CUSTOMER_PROFILES)
    assert (BAD_EMAIL_CUSTOMER,) not in quarantined(spark, services, CUSTOMER_PROFILES)
    assert stock_day in promoted_keys(spark, services, PRODUCT_DAILY_INVENTORY)
    assert stock_day not in quarantined(spark, services, PRODUCT_DAILY_INVENTORY)


def test_a_fail_tier_breach_commits_nothing_and_exits_non_zero(
    services, spark, db, clean_source, capsys, monkeypatch
):
    drain_until_equal(spark, services, db)
    run_tables(spark, services, ORDERS_AND_PROFILES)
    customer_id, product_id = db.execute(
        "SELECT customer_id, product_id FROM retail.sales_transactions LIMIT 1"
    ).fetchone()
    insert_line(db, FIRST_ORDER + 1, 1, customer_id, product_id, channel="kiosk")
    drain_until_equal(spark, services, db)
    path = ORDERS.path(services)
    before = timeline.read(spark, path)
    rows_before = snapshot(spark, ORDERS, services).count()

    for name, value in cli_env(services).items():
        monkeypatch.setenv(name, value)
    code = cli.main(["silver", "--table", ORDERS.name])
    error = capsys.readouterr().err
    assert code == EXIT_QUALITY_GATE
    assert (
        f'{ORDERS.name}: rule "channel is known" (fail) failed for 1 of' in error
        and '"channel": "kiosk"' in error
        and f'"order_id": {FIRST_ORDER + 1}' in error
    ), error
    after = timeline.read(spark, path)
    assert (after.latest, after.last_consumed) == (before.latest, before.last_consumed)
    assert snapshot(spark, ORDERS, services).count() == rows_before

    # Deleting the line at the source unblocks the table.
    db.execute("DELETE FROM retail.sales_transactions WHERE order_id = %s", (FIRST_ORDER + 1,))
    drain_until_equal(spark, services, db)
    assert run_tables(spark, services, ORDERS_AND_PROFILES)[ORDERS.name].mode == "incremental"


def _write_negative_line(spark, services):
    """Writes a line with a negative amount straight into Silver, in a category of its own;
    returns the line and the daily sales group it makes negative."""
    category = f"gate_probe_{uuid.uuid4().hex[:8]}"
    columns = snapshot(spark, ORDERS, services).schema
    probe = (
        snapshot(spark, ORDERS, services)
        .where("status = 'completed'")
        .limit(1)
        .withColumn("order_id", F.lit(FIRST_ORDER + 2).cast(columns["order_id"].dataType))
        .withColumn("product_category", F.lit(category))
        .withColumn("quantity", F.lit(-1).cast(columns["quantity"].dataType))
        .withColumn("line_total", F.lit(-10).cast(columns["line_total"].dataType))
    )
    line = spark.createDataFrame(probe.collect(), probe.schema)
    write(line.withColumn(DELETED, F.lit(False)), ORDERS, services, "upsert")
    order_date, region = line.select("order_date", "region").first()
    return line, (order_date, category, region)


def test_gold_keeps_out_a_group_that_breaks_its_rules(services, spark, db):
    """Silver's rules keep negative lines out, so Gold's own rules are the last line of
    defence: a line written straight into Silver (as a bug or a hand edit would) makes a
    negative group, which Gold quarantines; once the line is gone, so is the group."""
    drain_until_equal(spark, services, db)
    run_tables(spark, services, (ORDERS, DAILY_SALES))
    line, group = _write_negative_line(spark, services)

    report = run_tables(spark, services, (DAILY_SALES,))[DAILY_SALES.name]
    assert quarantined(spark, services, DAILY_SALES)[group] == (
        ["total_sales_amount >= 0", "units_sold > 0"],
        "quarantined",
    )
    assert group not in promoted_keys(spark, services, DAILY_SALES)
    assert report.reconciliation.quarantined == 1

    write(line.withColumn(DELETED, F.lit(True)), ORDERS, services, "upsert")
    report = run_tables(spark, services, (DAILY_SALES,))[DAILY_SALES.name]
    assert group not in quarantined(spark, services, DAILY_SALES)
    assert group not in promoted_keys(spark, services, DAILY_SALES)
    assert report.reconciliation.removed == 1


def test_a_rebuild_rewrites_the_quarantine_only_when_what_it_keeps_out_changed(services, spark, db):
    """A rebuild decides the whole quarantine, and its write there records a fingerprint of
    the rows it kept out: the next rebuild that keeps out the same rows commits nothing to
    the quarantine, and one that keeps out other rows still brings it in line."""
    drain_until_equal(spark, services, db)
    run_tables(spark, services, (ORDERS, DAILY_SALES))
    line, group = _write_negative_line(spark, services)
    runner = Runner(spark, services, by_cost=False)
    quarantine = DAILY_SALES.quarantine.path(services)

    runner.run(DAILY_SALES, full_refresh=True)
    assert group in quarantined(spark, services, DAILY_SALES)
    stamped = timeline.read(spark, quarantine).latest
    report = runner.run(DAILY_SALES, full_refresh=True)
    assert timeline.read(spark, quarantine).latest == stamped
    assert quarantined(spark, services, DAILY_SALES)[group] == (
        ["total_sales_amount >= 0", "units_sold > 0"],
        "quarantined",
    )
    assert report.reconciliation.quarantined == len(quarantined(spark, services, DAILY_SALES))

    write(line.withColumn(DELETED, F.lit(True)), ORDERS, services, "upsert")
    runner.run(DAILY_SALES, full_refresh=True)
    assert group not in quarantined(spark, services, DAILY_SALES)
    assert group not in promoted_keys(spark, services, DAILY_SALES)
