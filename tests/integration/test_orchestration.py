"""The scheduled mode against the real stack: the Dagster graph run in process gives what
`lakehouse run` gives, a fail-tier breach fails its table and skips what reads it, a busy
writer is refused by name, and the webserver serves the graph."""

from __future__ import annotations

import dataclasses
import socket

import dagster as dg
import pytest
import requests

from bronze.tables import BRONZE_TABLES, SALES_TRANSACTIONS
from gold.tables import DAILY_SALES
from ingestion.topics import cdc_topic
from lakehouse.locks import exclusive_writer
from medallion import verify
from medallion.tables import derived_tables
from orchestration import assets, definitions, service
from silver.tables import CUSTOMER_PROFILES, UNIFIED_CUSTOMER_ORDERS
from tests.support import drain_until_equal, run_tables, run_workload, served_assets


@pytest.fixture(scope="module")
def scheduled(services):
    """The test session's settings with one quick retry, so that failures end fast."""
    return dataclasses.replace(services, scheduler_retries=1, scheduler_retry_delay_seconds=1)


def _execute(settings, job_name: str, selection=None) -> dg.ExecuteInProcessResult:
    job = definitions.build(settings).resolve_job_def(job_name)
    return job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False, asset_selection=selection
    )


def _materialized(result: dg.ExecuteInProcessResult) -> dict[dg.AssetKey, dict]:
    return {
        event.asset_key: event.step_materialization_data.materialization.metadata
        for event in result.get_asset_materialization_events()
    }


# The shortest chain through each layer to a Gold table, from the sales stream: each asset is
# a JVM started by its command (half a minute apiece), and the other assets are built from
# their declarations the same way (tests/unit/test_orchestration.py compares the whole graph
# with the declarations).
CHAIN = (SALES_TRANSACTIONS, UNIFIED_CUSTOMER_ORDERS, DAILY_SALES)


def test_the_graph_in_process_gives_what_lakehouse_run_gives(scheduled, spark, db, topic_reader):
    customers = topic_reader(cdc_topic("customer_master"))
    run_workload(db, steps=40, seed=2100)
    # The last change captured means every earlier one is in Kafka (Debezium reads the WAL in
    # order), so the Bronze assets land the whole workload.
    marker = db.execute(
        "UPDATE retail.customer_master SET updated_ts = now() WHERE customer_id = "
        "(SELECT min(customer_id) FROM retail.customer_master) RETURNING customer_id,"
        " updated_ts"
    ).fetchone()
    customers.read_until(
        lambda messages: any(
            v and v["op"] == "u" and v["after"]["customer_id"] == marker[0] for _, v in messages
        ),
        timeout=60,
    )
    result = _execute(scheduled, definitions.EVERY_TABLE_JOB, [assets.asset_key(t) for t in CHAIN])
    assert result.success, [e.message for e in result.all_events if e.is_failure]

    materialized = _materialized(result)
    assert set(materialized) == {assets.asset_key(t) for t in CHAIN}
    orders = materialized[assets.asset_key(UNIFIED_CUSTOMER_ORDERS)]
    assert {
        "mode",
        "rows read",
        "rows upserted",
        "rows deleted",
        "rows quarantined",
        "rows held back",
        "seconds",
    } <= set(orders)
    checks = {(e.asset_key, e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    derived = CHAIN[1:]
    assert set(checks) == (
        {(assets.asset_key(t), assets.check_name(r)) for t in derived for r in t.rules}
        | {(assets.asset_key(t), assets.FRESHNESS_CHECK) for t in derived}
    )
    assert checks[(assets.asset_key(UNIFIED_CUSTOMER_ORDERS), "channel_is_known")]

    # Bronze holds the source and `lakehouse run` finds nothing left to do in the chain: the
    # graph left each table where `lakehouse run` would (which equals a full rebuild:
    # test_silver_gold).
    verdict = verify.bronze_against_postgres(spark, scheduled, db, SALES_TRANSACTIONS)
    assert verdict.equal, verdict.line()
    assert {report.mode for report in run_tables(spark, scheduled, list(derived)).values()} == {"idle"}


def test_a_fail_tier_breach_fails_its_table_with_the_rule_and_skips_what_reads_it(scheduled, spark, db):
    customer_id, product_id = db.execute(
        "SELECT customer_id, product_id FROM retail.sales_transactions LIMIT 1"
    ).fetchone()
    order_id = db.execute("SELECT max(order_id) + 1000 FROM retail.sales_transactions").fetchone()[0]
    db.execute(
        "INSERT INTO retail.sales_transactions VALUES (%s, 1, %s, %s, 1, 9.99, 0, 'kiosk', "
        "NULL, 'completed', now(), now())",
        (order_id, customer_id, product_id),
    )
    try:
        drain_until_equal(spark, scheduled, db)
        chain = [UNIFIED_CUSTOMER_ORDERS, CUSTOMER_PROFILES, DAILY_SALES]
        result = _execute(scheduled, definitions.EVERY_TABLE_JOB, [assets.asset_key(t) for t in chain])
        assert not result.success
        failures = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
        assert [e.step_key for e in failures] == ["silver__hudi_unified_customer_orders_silver"]
        message = failures[0].event_specific_data.error.message
        assert (
            f'{UNIFIED_CUSTOMER_ORDERS.name}: rule "channel is known" (fail) failed for 1 of' in message
            and '"channel": "kiosk"' in message
            and f'"order_id": {order_id}' in message
        ), message
        # Not retried: a breach needs a person, not a second try.
        assert not [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
        assert _materialized(result) == {}
        started = {e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_START}
        assert started == {"silver__hudi_unified_customer_orders_silver"}  # what reads it never ran
        failed_checks = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
        assert "channel_is_known" in failed_checks
    finally:
        db.execute("DELETE FROM retail.sales_transactions WHERE order_id = %s", (order_id,))
        drain_until_equal(spark, scheduled, db)


def test_a_table_whose_layer_is_being_written_is_refused_with_the_writer_named(scheduled):
    with exclusive_writer(scheduled, "gold"):
        result = _execute(scheduled, definitions.layer_job("gold"), [assets.asset_key(DAILY_SALES)])
    assert not result.success
    retries = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
    assert len(retries) == scheduled.scheduler_retries  # it waited, with backoff, then gave up
    failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE)
    assert "the gold tables are being written by pid" in failure.event_specific_data.error.message


def _free_port() -> int:
    """A port no process listens on now, from the system's ephemeral range: a fixed one
    beside the session's own was once found taken, by a process never identified."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_scheduler_serves_the_graph_and_stops(services, tmp_path):
    settings = dataclasses.replace(services, state_dir=tmp_path, scheduler_port=_free_port())
    service.start(settings, report=lambda _: None)
    try:
        assert requests.get(f"http://localhost:{settings.scheduler_port}/server_info", timeout=5).ok
        assert served_assets(settings) == {(t.layer, t.name) for t in [*BRONZE_TABLES, *derived_tables()]}
        # What a page on another site could make the user's browser send is refused.
        graphql = f"http://localhost:{settings.scheduler_port}/graphql"
        wipe = "mutation { wipeAssets(assetPartitionRanges: []) { __typename } }"
        for refused in (
            requests.get(graphql, params={"query": wipe}, timeout=30),
            requests.post(graphql, data={"query": wipe}, timeout=30),
            requests.post(
                graphql, json={"query": wipe}, timeout=30, headers={"Origin": "https://evil.example"}
            ),
        ):
            assert refused.status_code == 403
            assert refused.text.startswith("refused by the RetailMax scheduler's guard: ")
    finally:
        service.stop(settings, report=lambda _: None)
    assert not service.answers(settings)
