"""Silver and Gold: incremental runs equal a full rebuild, through updates, deletes, moves
between groups, late dimensions, out-of-order events and a kill -9 mid-write."""

# Why one module over 300 lines: every test here runs unified orders and daily sales on the
# session's built warehouse and checks them against a full rebuild; split, the modules
# would share those steps and their order.

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from gold.tables import DAILY_SALES
from infra.native.process import BackgroundProcess, group_alive, tail
from ingestion.events import EventStreams
from lakehouse import costs, domain
from lakehouse.costs import Measured
from lakehouse.hudi import snapshot
from lakehouse.incremental import Runner
from lakehouse.reports import RunReport
from medallion.invocation import lakehouse
from serving import fastpath
from silver.tables import CUSTOMER_PROFILES, SESSIONIZED_CLICKSTREAMS, UNIFIED_CUSTOMER_ORDERS
from tests.support import (
    assert_equals_full_rebuild,
    click,
    drain_until_equal,
    kill_mid_write,
    quarantined,
    run_all,
    run_tables,
    run_workload,
    send_clicks,
)


def lines_bad_at_source(db) -> set[tuple]:
    """The sales lines that break a quarantine rule of unified orders, as Postgres sees them."""
    return set(
        db.execute(
            "SELECT s.order_id, s.line_item_id FROM retail.sales_transactions s"
            " LEFT JOIN retail.customer_master c ON c.customer_id = s.customer_id"
            " LEFT JOIN retail.product_catalog p ON p.product_id = s.product_id"
            " WHERE c.customer_id IS NULL OR p.product_id IS NULL OR s.quantity <= 0"
            " OR s.unit_price < 0 OR s.discount < 0 OR s.quantity * s.unit_price < s.discount"
            " OR s.transaction_ts > now() OR NOT s.status = ANY(%s)",
            (list(domain.ORDER_STATUSES),),
        ).fetchall()
    )


def test_incremental_runs_equal_a_full_rebuild(services, spark, db, producer):
    customer_ids = [r[0] for r in db.execute("SELECT customer_id FROM retail.customer_master")]
    products = db.execute("SELECT product_id, sku FROM retail.product_catalog").fetchall()
    streams = EventStreams(producer, 11, customer_ids, [s for _, s in products], [p for p, _ in products])
    # A session whose events arrive out of order over two runs, its first event last and
    # on the previous day, so the session moves to another session_date partition.
    # Yesterday's noon: today's lies in the future before midday, where "session_end_ts is
    # not in the future" would rightly quarantine the session.
    noon = (datetime.now(UTC) - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    late_session = [
        [
            click("late-session", "purchase", noon + timedelta(minutes=5), 3),
            click("late-session", "page_view", noon, 2),
        ],
        [click("late-session", "page_view", noon - timedelta(hours=13), 1)],
    ]
    operations = Counter()
    run_all(spark, services)  # whatever earlier modules left: from here on, every run is incremental
    for round_number, clicks in enumerate(late_session):
        # A tenth of the transactions write rows the gates must catch, and later ones fix them.
        operations += run_workload(db, steps=180, seed=300 + round_number, bad_share=0.1)
        for _ in range(200):
            streams.step()
        send_clicks(producer, clicks)
        drain_until_equal(spark, services, db)
        modes = run_all(spark, services)  # each run's reconciliation adds up, or it raises
        # A run that fell back to a full rebuild would pass the comparison below by itself.
        assert set(modes.values()) == {"incremental"}, modes
        assert_equals_full_rebuild(spark, services)
        assert set(quarantined(spark, services)) == lines_bad_at_source(db)
        malformed = {
            (customer_id,)
            for customer_id, email in db.execute("SELECT customer_id, email FROM retail.customer_master")
            if domain.email_problem(email)
        }
        assert set(quarantined(spark, services, CUSTOMER_PROFILES)) == malformed
    assert all(
        operations[kind]
        for kind in (
            "negative_quantity",
            "unknown_product",
            "future_timestamp",
            "malformed_email",
            "fix_bad_row",
        )
    )

    session = snapshot(spark, SESSIONIZED_CLICKSTREAMS, services).where("session_id = 'late-session'")
    assert [(r.event_count, r.converted, str(r.session_date)) for r in session.collect()] == [
        (3, True, str((noon - timedelta(hours=13)).date()))
    ]
    assert set(run_all(spark, services).values()) == {"idle"}, "a run without new input committed"

    before = snapshot(spark, DAILY_SALES, services)
    Runner(spark, services).run(DAILY_SALES, full_refresh=True)
    after = snapshot(spark, DAILY_SALES, services)
    assert before.exceptAll(after).count() == 0 and after.exceptAll(before).count() == 0


def test_a_run_rebuilds_when_its_waiting_changes_would_cost_more_and_says_why(services, spark, db):
    run_all(spark, services)
    # As if measured on a loaded machine: one change took 30 s incrementally, a rebuild 1 s.
    costs.record(services, RunReport(DAILY_SALES.name, "incremental", changes_read=1, seconds=30.0))
    costs.record(services, RunReport(DAILY_SALES.name, "full", seconds=1.0))
    run_workload(db, steps=20, seed=41)
    drain_until_equal(spark, services, db)
    run_tables(spark, services, [UNIFIED_CUSTOMER_ORDERS])
    runner = Runner(spark, services)
    try:
        report = runner.run(DAILY_SALES)
    finally:
        runner.record_results()
    assert report.mode == "full", report.line()
    said = re.fullmatch(
        r"rebuilt: (\d+) changes would take about (\d+) s incrementally \(1 took 30\.0 s\), "
        r"a rebuild took 1\.0 s",
        report.note,
    )
    assert said and int(said[2]) == 30 * int(said[1]), report.note

    # Rebuilds that together took far more than twice any such estimate: the next run measures
    # the incremental path again, says so, and stays exact.
    for seconds in (1e6, 1.0):  # the newest rebuild still the cheap one
        costs.record(services, RunReport(DAILY_SALES.name, "full", seconds=seconds))
    run_workload(db, steps=5, seed=42)
    drain_until_equal(spark, services, db)
    run_tables(spark, services, [UNIFIED_CUSTOMER_ORDERS])
    try:
        report = runner.run(DAILY_SALES)
    finally:
        runner.record_results()
    assert report.mode == "incremental", report.line()
    assert re.fullmatch(
        r"incremental to measure it again: the rebuilds since the last incremental run took "
        r"\d+ s, \d+ changes were estimated at \d+ s",
        report.note,
    ), report.note
    assert costs.read(services, DAILY_SALES.name).incremental == Measured(
        round(report.seconds, 2), report.changes_read
    )
    assert_equals_full_rebuild(spark, services, [UNIFIED_CUSTOMER_ORDERS, DAILY_SALES])


def test_a_run_whose_input_was_rebuilt_rebuilds_too_and_says_why(services, spark, db):
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    # As if its incremental path were nearly free: the input's change log still holds every
    # row of it, which the run reads faster as a snapshot.
    costs.record(services, RunReport(DAILY_SALES.name, "incremental", changes_read=10**9, seconds=1.0))
    costs.record(services, RunReport(DAILY_SALES.name, "full", seconds=30.0))
    runner = Runner(spark, services)
    try:
        assert runner.run(UNIFIED_CUSTOMER_ORDERS, full_refresh=True).mode == "full"
        report = runner.run(DAILY_SALES)
    finally:
        runner.record_results()
    assert (report.mode, report.note) == (
        "full",
        f"rebuilt: input {UNIFIED_CUSTOMER_ORDERS.name} was rebuilt since this table's last run",
    ), report.line()
    assert costs.read(services, DAILY_SALES.name).full == Measured(round(report.seconds, 2), 0)
    assert_equals_full_rebuild(spark, services, [UNIFIED_CUSTOMER_ORDERS, DAILY_SALES])


def test_a_run_whose_input_changes_cannot_be_read_rebuilds_and_says_why(services, spark, db):
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    before = _change_log_files(services, UNIFIED_CUSTOMER_ORDERS)
    # A promoted line changes at the source, so unified orders' next commit updates a row
    # and writes change-log files.
    line = snapshot(spark, UNIFIED_CUSTOMER_ORDERS, services).select("order_id", "line_item_id").first()
    db.execute(
        "UPDATE retail.sales_transactions SET quantity = quantity + 1, updated_ts = now()"
        " WHERE order_id = %s AND line_item_id = %s",
        (line.order_id, line.line_item_id),
    )
    drain_until_equal(spark, services, db)
    runner = Runner(spark, services, by_cost=False)
    try:
        assert runner.run(UNIFIED_CUSTOMER_ORDERS).mode == "incremental"
        written = _change_log_files(services, UNIFIED_CUSTOMER_ORDERS) - before
        assert written, "the update wrote no change-log file"
        for path in written:
            path.unlink()
        report = runner.run(DAILY_SALES)
    finally:
        runner.record_results()
    assert report.mode == "full", report.line()
    assert re.fullmatch(
        rf"changes of input {UNIFIED_CUSTOMER_ORDERS.name} in \(\d+, \d+\] are unreadable "
        r"\(.*FileNotFoundException.*\); rebuilt from full snapshots",
        report.note,
    ), report.note
    assert_equals_full_rebuild(spark, services, [UNIFIED_CUSTOMER_ORDERS, DAILY_SALES])


def _change_log_files(settings, table) -> set[Path]:
    return set(Path(table.path(settings)).rglob("*.cdc"))


def _gold_total(spark, settings, order_date, category, region):
    rows = (
        snapshot(spark, DAILY_SALES, settings)
        .where(f"order_date = DATE'{order_date}' AND product_category = '{category}' AND region = '{region}'")
        .collect()
    )
    return rows[0].total_sales_amount if rows else None


def test_gold_follows_deletes_region_moves_and_late_customers(services, spark, db):
    # Fresh keys and names, so the test also passes against a database that ran it before.
    product, order, customer = (
        db.execute(f"SELECT max({key}) + 1 FROM retail.{table}").fetchone()[0]
        for key, table in (
            ("product_id", "product_catalog"),
            ("order_id", "sales_transactions"),
            ("customer_id", "customer_master"),
        )
    )
    customer += 1000
    category, new_region = f"test_category_{product}", f"test_region_{product}"
    db.execute(
        f"INSERT INTO retail.product_catalog (product_id, sku, name, category, brand,"
        f" unit_price, active, updated_ts) VALUES ({product}, 'SKU-TEST-{product}', "
        f"'Probe', '{category}', 'Probe', 10.00, true, now())"
    )
    # A line alone in its Gold group, and a line whose customer does not exist yet.
    db.execute(
        f"INSERT INTO retail.sales_transactions VALUES ({order}, 1, 1, {product}, 2, 10.00, "
        f"0, 'web', NULL, 'completed', '2025-06-01 10:00+00', now())"
    )
    db.execute(
        f"INSERT INTO retail.sales_transactions VALUES ({order + 1}, 1, {customer}, {product}, "
        f"3, 10.00, 1.00, 'web', NULL, 'completed', '2025-06-02 10:00+00', now())"
    )
    mover, old_region = db.execute(
        "SELECT c.customer_id, c.region FROM retail.customer_master c JOIN retail.sales_transactions s "
        "USING (customer_id) WHERE s.status = 'completed' AND s.product_id <> %s "
        "GROUP BY 1, 2 ORDER BY count(*) DESC LIMIT 1",
        (product,),
    ).fetchone()
    drain_until_equal(spark, services, db)
    run_all(spark, services)

    region_of_1 = db.execute("SELECT region FROM retail.customer_master WHERE customer_id = 1").fetchone()[0]
    assert _gold_total(spark, services, "2025-06-01", category, region_of_1) == 20
    orders = snapshot(spark, UNIFIED_CUSTOMER_ORDERS, services)
    assert orders.where(f"order_id = {order + 1}").count() == 0, "a line without its customer was promoted"
    mover_lines = orders.where(f"customer_id = {mover} AND status = 'completed'").collect()
    groups = {(str(line.order_date), line.product_category) for line in mover_lines}
    totals_before = {g: _gold_total(spark, services, *g, old_region) for g in groups}

    db.execute(f"DELETE FROM retail.sales_transactions WHERE order_id = {order}")
    db.execute(
        f"INSERT INTO retail.customer_master VALUES ({customer}, 'Late', 'Arrival', "
        f"'late@example.com', NULL, NULL, 'Oslo', 'OS', 'NO', 'europe', 'bronze', now(), now())"
    )
    db.execute(
        f"UPDATE retail.customer_master SET region = '{new_region}', updated_ts = now() "
        f"WHERE customer_id = {mover}"
    )
    drain_until_equal(spark, services, db)
    run_all(spark, services)

    assert _gold_total(spark, services, "2025-06-01", category, region_of_1) is None, (
        "a group whose only line was deleted is still in Gold"
    )
    assert _gold_total(spark, services, "2025-06-02", category, "europe") == 29
    for group in groups:
        moved = sum(
            line.line_total for line in mover_lines if (str(line.order_date), line.product_category) == group
        )
        assert _gold_total(spark, services, *group, new_region) == moved
        left = _gold_total(spark, services, *group, old_region)
        assert (left or 0) == totals_before[group] - moved
    assert_equals_full_rebuild(spark, services)


@pytest.mark.long
def test_kill_minus_nine_during_a_silver_write_neither_loses_nor_double_counts(services, spark, db):
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    run_workload(db, steps=150, seed=401)
    drain_until_equal(spark, services, db)
    kill_mid_write(services, UNIFIED_CUSTOMER_ORDERS, "silver", "--table", UNIFIED_CUSTOMER_ORDERS.name)

    reports = run_all(spark, services)
    assert reports[UNIFIED_CUSTOMER_ORDERS.name] == "incremental"
    assert_equals_full_rebuild(spark, services)


def test_the_continuous_pipeline_brings_a_sale_to_gold_and_stops_with_its_bronze_process(
    services, spark, db, tmp_path
):
    """`make up`'s pipeline worker: Bronze streams in a child process while Silver and Gold
    follow in passes; a sale written meanwhile reaches Gold, and stopping the worker stops
    both processes."""
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    day = date(2002, 3, 4)  # a day of its own: its Gold row exists because of this sale only
    order_id = db.execute("SELECT max(order_id) + 1 FROM retail.sales_transactions").fetchone()[0]
    pipeline = BackgroundProcess("pipeline", tmp_path, tmp_path)
    pipeline.start(
        lakehouse("run", "--continuous", "--interval", "5", "--trigger-seconds", "3"),
        env=services.environment(),
    )
    leader = pipeline.pid
    try:
        db.execute(
            "INSERT INTO retail.sales_transactions (order_id, line_item_id, customer_id,"
            " product_id, quantity, unit_price, discount, channel, status, transaction_ts,"
            " updated_ts) VALUES (%s, 1, (SELECT min(customer_id) FROM retail.customer_master),"
            " (SELECT min(product_id) FROM retail.product_catalog), 2, 10.00, 0, 'web',"
            " 'completed', %s, now())",
            (order_id, datetime(day.year, day.month, day.day, 12, tzinfo=UTC)),
        )
        deadline = time.monotonic() + 300
        while not (units := _units_sold_on(services, day)):
            assert pipeline.running(), f"the pipeline stopped:\n{tail(pipeline.log)}"
            assert time.monotonic() < deadline, f"no Gold row for {day} in 300 s:\n{tail(pipeline.log)}"
            time.sleep(2)
        assert units == [2]
        assert "bronze: streaming every 3 s" in pipeline.log.read_text()
    finally:
        pipeline.stop(timeout=60)
        db.execute("DELETE FROM retail.sales_transactions WHERE order_id = %s", (order_id,))
    assert not group_alive(leader), "a process of the pipeline (its Bronze streams) outlived it"


def _units_sold_on(settings, day: date) -> list[int]:
    try:
        found = fastpath.query(
            settings.warehouse,
            f"SELECT units_sold FROM gold.hudi_daily_sales_gold WHERE order_date = DATE '{day}'",
        ).table
    except fastpath.QueryError:
        return []  # a commit in flight while the table was opened; the next look sees it
    return found.column("units_sold").to_pylist()
