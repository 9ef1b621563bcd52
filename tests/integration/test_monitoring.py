"""The Prometheus endpoint on the real stack: scraped and parsed as Prometheus would, its
values move when data flows; a table's lag is measured from the source, not per hop."""

from __future__ import annotations

import dataclasses
import subprocess
import time

import requests
from prometheus_client.parser import text_string_to_metric_families

from bronze.tables import SALES_TRANSACTIONS
from gold.tables import DAILY_SALES
from lakehouse.network import port_open
from medallion.invocation import lakehouse
from monitoring.metrics import CACHE_SECONDS
from silver.tables import UNIFIED_CUSTOMER_ORDERS
from tests.support import cli_env, drain_until_equal, run_all, run_lakehouse, run_workload


def scrape(port: int) -> dict[tuple, float]:
    time.sleep(CACHE_SECONDS + 0.5)  # past the endpoint's cache: a fresh reading
    text = requests.get(f"http://localhost:{port}/metrics", timeout=60).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def table(t) -> tuple:
    return tuple(sorted({"layer": t.layer, "table": t.name}.items()))


def test_metrics_move_when_data_flows(services, spark, db):
    settings = dataclasses.replace(services, metrics_port=services.metrics_port + 1)
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    server = subprocess.Popen(lakehouse("metrics"), env=cli_env(settings))
    try:
        deadline = time.monotonic() + 60
        while not port_open("127.0.0.1", settings.metrics_port):
            assert server.poll() is None and time.monotonic() < deadline, "the endpoint did not start"
            time.sleep(0.5)
        sales, lag = (
            table(SALES_TRANSACTIONS),
            (("table", SALES_TRANSACTIONS.name), ("topic", SALES_TRANSACTIONS.topic)),
        )
        before = scrape(settings.metrics_port)
        assert before[("retailmax_kafka_consumer_lag_messages", lag)] == 0
        assert before[("retailmax_service_up", (("service", "postgres"),))] == 1
        assert (
            "retailmax_quality_rule_failing",
            (
                ("layer", "silver"),
                ("rule", "channel is known"),
                ("table", UNIFIED_CUSTOMER_ORDERS.name),
                ("tier", "fail"),
            ),
        ) in before

        run_workload(db, steps=30, seed=2001)
        deadline = time.monotonic() + 60
        while (waiting := scrape(settings.metrics_port))[("retailmax_kafka_consumer_lag_messages", lag)] == 0:
            assert time.monotonic() < deadline, "Kafka's new messages never showed as consumer lag"
        assert waiting[("retailmax_table_lag_seconds", sales)] > 0

        drain_until_equal(spark, services, db)
        gold = table(DAILY_SALES)
        trailing = scrape(settings.metrics_port)
        # Unified orders has not taken Bronze's new commits yet: daily sales has taken all of
        # its own input, and is behind the source all the same.
        assert trailing[("retailmax_table_lag_seconds", gold)] == 0
        assert trailing[("retailmax_table_source_lag_seconds", gold)] > 0
        assert trailing[("retailmax_table_freshness_target_seconds", gold)] == 30

        run_all(spark, services)
        after = scrape(settings.metrics_port)
        assert after[("retailmax_table_source_lag_seconds", gold)] == 0
        status = run_lakehouse(settings, "status", timeout=120).stdout
        (line,) = [line for line in status.splitlines() if f" {DAILY_SALES.name} " in line]
        expected = f"table ok {DAILY_SALES.name} 0 s behind the source (target 30 s)"
        assert line.split() == expected.split()
        assert after[("retailmax_kafka_consumer_lag_messages", lag)] == 0
        assert after[("retailmax_table_lag_seconds", sales)] == 0
        for t in (SALES_TRANSACTIONS, UNIFIED_CUSTOMER_ORDERS, DAILY_SALES):
            for name in (
                "retailmax_rows_written_total",
                "retailmax_commits_total",
                "retailmax_table_last_commit_timestamp_seconds",
            ):
                assert after[(name, table(t))] > before[(name, table(t))], (name, t.name)
    finally:
        server.terminate()
        server.wait(timeout=30)
