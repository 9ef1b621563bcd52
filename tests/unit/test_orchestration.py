"""The scheduled mode's Dagster definitions, derived from the declarations: loaded and
compared with them, without running a table."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest

from bronze.tables import BRONZE_TABLES
from gold.tables import DAILY_SALES
from lakehouse.rules import FAIL
from lakehouse.settings import load
from medallion.invocation import (
    EXIT_CONFIGURATION,
    EXIT_FAILURE,
    EXIT_QUALITY_GATE,
    EXIT_WRITER_BUSY,
    lakehouse,
)
from medallion.tables import derived_tables
from orchestration import assets, definitions, table_jobs
from silver.tables import UNIFIED_CUSTOMER_ORDERS

SETTINGS = load()
DEFS = definitions.build(SETTINGS)
GRAPH = DEFS.resolve_asset_graph()


def test_the_asset_graph_is_the_declarations_dependency_graph():
    declared = {
        assets.asset_key(t): {assets.asset_key(i.table) for i in getattr(t, "inputs", ())}
        for t in [*BRONZE_TABLES, *derived_tables()]
    }
    assert {key: set(GRAPH.get(key).parent_keys) for key in GRAPH.get_all_asset_keys()} == declared
    assert {key: GRAPH.get(key).group_name for key in GRAPH.get_all_asset_keys()} == {
        key: key.path[0] for key in declared
    }


def test_every_declared_rule_is_an_asset_check_and_a_fail_tier_one_blocks_downstream():
    specs = {(key.asset_key, key.name): GRAPH.get_check_spec(key) for key in GRAPH.asset_check_keys}
    for table in derived_tables():
        for rule in table.rules:
            spec = specs.pop((assets.asset_key(table), assets.check_name(rule)))
            assert spec.description == f"{rule.tier} tier: {rule.name}"
            assert spec.blocking == (rule.tier == FAIL)
    # What is left: one freshness check per derived table.
    assert set(specs) == {(assets.asset_key(t), assets.FRESHNESS_CHECK) for t in derived_tables()}


def test_a_newly_declared_table_is_on_the_graph_with_no_other_edit(monkeypatch):
    weekly = dataclasses.replace(DAILY_SALES, name="hudi_weekly_sales_gold")
    monkeypatch.setattr(assets, "derived_tables", lambda: [*derived_tables(), weekly])
    graph = definitions.build(SETTINGS).resolve_asset_graph()
    assert set(graph.get(assets.asset_key(weekly)).parent_keys) == {assets.asset_key(UNIFIED_CUSTOMER_ORDERS)}


def test_the_schedule_runs_every_table_on_the_configured_cron():
    every_table = DEFS.resolve_schedule_def(definitions.EVERY_TABLE_JOB)
    assert every_table.cron_schedule == SETTINGS.schedule_cron == "0 * * * *"
    assert every_table.default_status == dg.DefaultScheduleStatus.RUNNING
    tick = every_table.evaluate_tick(
        dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 25, 13, 0, tzinfo=UTC))
    )
    assert len(tick.run_requests) == 1 and every_table.job_name == definitions.EVERY_TABLE_JOB
    job = DEFS.resolve_job_def(definitions.EVERY_TABLE_JOB)
    assert set(job.asset_layer.executable_asset_keys) == set(GRAPH.get_all_asset_keys())
    half_hourly = definitions.build(dataclasses.replace(SETTINGS, schedule_cron="*/30 * * * *"))
    assert half_hourly.resolve_schedule_def(definitions.EVERY_TABLE_JOB).cron_schedule == "*/30 * * * *"


def test_table_services_run_on_their_own_schedule():
    maintenance = DEFS.resolve_schedule_def("maintenance")
    assert maintenance.cron_schedule == SETTINGS.maintenance_cron == "30 3 * * *"
    assert maintenance.default_status == dg.DefaultScheduleStatus.RUNNING
    job = DEFS.resolve_job_def(maintenance.job_name)
    assert [node.name for node in job.nodes] == ["maintain_every_table"]


def test_each_layer_has_a_job_of_its_tables():
    for layer in ("bronze", "silver", "gold"):
        job = DEFS.resolve_job_def(definitions.layer_job(layer))
        assert {key.path[0] for key in job.asset_layer.executable_asset_keys} == {layer}


def test_a_malformed_schedule_fails_at_start_with_what_to_fix(monkeypatch):
    from lakehouse.settings import ConfigurationError

    monkeypatch.setenv("SCHEDULE_CRON", "hourly")
    with pytest.raises(ConfigurationError, match=r"SCHEDULE_CRON='hourly' must be a cron expression of five"):
        load()


def test_freshness_compares_the_lag_behind_the_source_with_the_target():
    assert assets.freshness(50.0, timedelta(minutes=1)) == (
        True,
        "50 s behind the source: within its target of 60 s",
    )
    assert assets.freshness(10_800.0, timedelta(hours=2)) == (
        False,
        "10,800 s behind the source: over its target of 7,200 s",
    )
    assert assets.freshness(None, timedelta(hours=2)) == (
        False,
        "how far behind the source is unknown: Kafka does not answer",
    )


def test_each_asset_runs_its_tables_own_command_and_retries_only_what_can_pass_later():
    assert table_jobs.command(UNIFIED_CUSTOMER_ORDERS) == lakehouse(
        "silver", "--table", UNIFIED_CUSTOMER_ORDERS.name, "--json"
    )
    assert table_jobs.command(BRONZE_TABLES[0]) == lakehouse(
        "bronze", "--table", BRONZE_TABLES[0].name, "--json"
    )
    retryable = {
        status: table_jobs.TableJobFailed("t", status, "").retryable
        for status in (EXIT_FAILURE, EXIT_CONFIGURATION, EXIT_QUALITY_GATE, EXIT_WRITER_BUSY)
    }
    assert retryable == {1: True, 2: False, 3: False, 4: True}


def test_a_failure_message_is_the_commands_own_not_sparks_log():
    stderr = (
        "26/11/25 13:50:57 WARN HoodiePayloadConfig: something\n"
        'quality gate failed: t: rule "channel is known" (fail) failed for 1 of 3 rows\n'
        "  and more\n"
    )
    assert table_jobs._message(stderr) == (
        'quality gate failed: t: rule "channel is known" (fail) failed for 1 of 3 rows\n  and more'
    )


def _scope(method="POST", path="/graphql", query=b"", **headers):
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query,
        "headers": [
            (k.replace("_", "-").encode(), v.encode())
            for k, v in {"host": "localhost:3000", **headers}.items()
        ],
    }


MUTATION = b"query=mutation%7BwipeAssets%7D"


@pytest.mark.parametrize(
    "scope, reason",
    [
        (_scope(content_type="application/json"), None),
        (_scope(content_type="application/json", origin="http://localhost:3000"), None),
        (_scope("GET", "/", accept="text/html"), None),
        (_scope("GET", "/graphql", accept="text/html"), None),
        (
            _scope(content_type="application/json", origin="https://evil.example"),
            "a request from another site (https://evil.example)",
        ),
        (_scope(content_type="application/json", origin="null"), "a request from another site (null)"),
        (
            _scope(content_type="application/json", host="evil.example:3000"),
            "Host 'evil.example:3000' is not this machine's loopback address",
        ),
        (_scope("GET", "/graphql", MUTATION), "GraphQL in a GET's query string (POST it as JSON)"),
        (
            _scope("POST", "/graphql", MUTATION, content_type="application/x-www-form-urlencoded"),
            "GraphQL in a POST that is not JSON (send Content-Type: application/json)",
        ),
        (
            _scope("POST", "/graphql", MUTATION, content_type="text/plain"),
            "GraphQL in a POST that is not JSON (send Content-Type: application/json)",
        ),
        (
            {**_scope(origin="https://evil.example"), "type": "websocket"},
            "a request from another site (https://evil.example)",
        ),
    ],
    ids=[
        "json",
        "same origin",
        "page",
        "graphiql",
        "other site",
        "opaque origin",
        "rebound name",
        "get mutation",
        "form post",
        "text post",
        "websocket",
    ],
)
def test_the_scheduler_ui_refuses_what_another_site_could_make_a_browser_send(scope, reason):
    from orchestration.webserver import refusal

    assert refusal(scope) == reason
