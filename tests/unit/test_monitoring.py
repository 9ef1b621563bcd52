"""The metrics of one reading of the pipeline's state, as Prometheus parses them."""

from __future__ import annotations

from datetime import datetime

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector, CollectorRegistry

from lakehouse.costs import Measured, PathCosts
from monitoring.metrics import CommitCounts, PipelineState, families
from monitoring.state import TableState
from serving.history import Commit

NOW = datetime(2026, 11, 25, 12, 0, 0)


def at(minute: int) -> str:
    """The Hudi instant of 11:<minute> today."""
    return f"2026112511{minute:02d}00000"


def commit(requested: str, completed: str, operation="UPSERT", inserted=0, updated=0, deleted=0):
    return Commit(
        requested, completed, "deltacommit", operation, inserted + updated, inserted, updated, deleted
    )


def state(commits: list[Commit], waiting: int = 0) -> PipelineState:
    return PipelineState(
        read_at=NOW,
        tables=[
            TableState(
                "bronze",
                "hudi_sales_transactions_bronze",
                datetime(2026, 11, 25, 11, 59),
                oldest_waiting=datetime(2026, 11, 25, 11, 58, 30) if waiting else None,
                waiting=waiting,
            ),
            TableState(
                "gold", "hudi_daily_sales_gold", None, oldest_unreflected=datetime(2026, 11, 25, 11, 59, 15)
            ),
        ],
        commits={"hudi_sales_transactions_bronze": commits},
        quarantine=[("hudi_unified_customer_orders_silver", "held back", 3)],
        rule_results=[
            {
                "table_name": "hudi_unified_customer_orders_silver",
                "rule": "quantity is positive",
                "tier": "quarantine",
                "success": False,
                "unexpected_count": 2,
            }
        ],
        services=[("postgres", True), ("kafka", False)],
        seconds=0.5,
        path_costs={
            "hudi_daily_sales_gold": PathCosts(Measured(6.0, 40), Measured(3.5, 0), last="full"),
            "hudi_customer_segments_gold": PathCosts(),
        },
    )


def scrape(reading: PipelineState, counts: CommitCounts) -> dict[tuple, float]:
    class Once(Collector):
        def collect(self):
            return iter(families(reading, counts))

    registry = CollectorRegistry()
    registry.register(Once())
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_counters_add_only_commits_completed_since_the_last_reading_and_skip_compactions():
    counts = CommitCounts()
    first = [commit(at(0), at(5), inserted=10), commit(at(10), at(15), updated=4, deleted=1)]
    sales = {"layer": "bronze", "table": "hudi_sales_transactions_bronze"}
    samples = scrape(state(first, waiting=7), counts)
    assert value(samples, "retailmax_rows_written_total", **sales) == 14
    assert value(samples, "retailmax_rows_deleted_total", **sales) == 1
    assert value(samples, "retailmax_commits_total", **sales) == 2
    assert (
        value(
            samples,
            "retailmax_kafka_consumer_lag_messages",
            table=sales["table"],
            topic="retailmax.retail.sales_transactions",
        )
        == 7
    )
    assert value(samples, "retailmax_table_lag_seconds", **sales) == 90.0
    # Daily sales has taken all of its input, and is 45 s behind the source, 15 past its target.
    gold = {"layer": "gold", "table": "hudi_daily_sales_gold"}
    assert value(samples, "retailmax_table_lag_seconds", **gold) == 0
    assert value(samples, "retailmax_table_source_lag_seconds", **gold) == 45.0
    assert value(samples, "retailmax_table_freshness_target_seconds", **gold) == 30
    assert value(samples, "retailmax_table_over_freshness_target_seconds", **gold) == 15.0
    assert value(samples, "retailmax_last_commit_duration_seconds", **sales) == 300

    # The oldest commit was archived meanwhile; a compaction and an upsert completed.
    later = [
        first[1],
        commit(at(20), at(25), operation="COMPACT", updated=500),
        commit(at(30), at(35), inserted=2),
    ]
    samples = scrape(state(later), counts)
    assert value(samples, "retailmax_rows_written_total", **sales) == 16
    assert value(samples, "retailmax_commits_total", **sales) == 4
    assert value(samples, "retailmax_table_lag_seconds", **sales) == 0.0
    assert value(samples, "retailmax_last_commit_rows", kind="inserted", **sales) == 2


def test_quarantine_quality_and_services_are_labelled_by_table_rule_and_service():
    samples = scrape(state([]), CommitCounts())
    orders = {"layer": "silver", "table": "hudi_unified_customer_orders_silver"}
    assert value(samples, "retailmax_quarantine_rows", status="held_back", **orders) == 3
    rule = {"rule": "quantity is positive", "tier": "quarantine", **orders}
    assert value(samples, "retailmax_quality_rule_failing", **rule) == 1
    assert value(samples, "retailmax_quality_rule_unexpected_rows", **rule) == 2
    assert value(samples, "retailmax_service_up", service="kafka") == 0
    # A Gold table without a commit has no commit time to report, and no lag behind anything.
    gold = {"layer": "gold", "table": "hudi_daily_sales_gold"}
    assert ("retailmax_table_last_commit_timestamp_seconds", tuple(sorted(gold.items()))) not in samples
    assert value(samples, "retailmax_table_lag_seconds", **gold) == 0.0


def test_each_paths_last_cost_and_whether_the_newest_run_rebuilt_are_labelled_by_table():
    samples = scrape(state([]), CommitCounts())
    gold = {"layer": "gold", "table": "hudi_daily_sales_gold"}
    assert value(samples, "retailmax_run_path_seconds", path="incremental", **gold) == 6.0
    assert value(samples, "retailmax_run_path_seconds", path="full", **gold) == 3.5
    assert value(samples, "retailmax_run_rebuilt", **gold) == 1.0
    # A table that has not run yet measured neither path.
    segments = {"layer": "gold", "table": "hudi_customer_segments_gold"}
    assert not [key for key in samples if dict(key[1]).get("table") == segments["table"]]
