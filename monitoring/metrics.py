"""`lakehouse metrics`: the pipeline's Prometheus endpoint on http://localhost:9108/metrics
(METRICS_PORT), served beside the pipeline by `make up` (and by Compose's `metrics`).

It reads what the dashboard reads (monitoring/state.py), without a JVM and without asking
the writers anything: each table's timeline and commit metadata, Bronze's stream checkpoints
and Kafka's end offsets, the quarantine and quality-result tables, and the services' health.
So it sees the same numbers whether the continuous pipeline, a scheduled job or a person
wrote the tables, and it stays up while they restart. A scrape reads everything afresh,
unless the last one was under `CACHE_SECONDS` ago.

Counters (`*_total`) count the commits this process has seen on the tables' timelines: the
first scrape counts every commit still on the active timeline, later ones add what
completed since. Prometheus takes a restart of this process as a counter reset, which
`rate()` and `increase()` handle.
"""

# Why one module: the endpoint is one reading of the pipeline's state turned into metric
# families; the reading, the counters kept between readings and the families are read
# together to see what each metric means. What it reads lives apart (monitoring/state.py).

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from bronze.tables import BRONZE_TABLES
from lakehouse import costs
from lakehouse.costs import PathCosts
from lakehouse.settings import Settings
from medallion.tables import derived_tables, freshness_targets
from monitoring.state import (
    TableState,
    Unavailable,
    instant_time,
    quality_results,
    quarantine_rows,
    services,
    table_states,
    written,
)
from serving.history import Commit, history

PREFIX = "retailmax"
CACHE_SECONDS = 5.0


@dataclass(frozen=True)
class PipelineState:
    """One reading of everything the metrics report."""

    read_at: datetime
    tables: list[TableState]
    commits: dict[str, list[Commit]]  # per table name, oldest first
    quarantine: list[tuple[str, str, int]]  # (table, status, rows)
    rule_results: list[dict]  # the newest result of each (table, rule)
    services: list[tuple[str, bool]]
    seconds: float
    path_costs: dict[str, PathCosts] = field(default_factory=dict)  # per derived table


def read_state(settings: Settings) -> PipelineState:
    began = time.monotonic()
    tables = [*BRONZE_TABLES, *derived_tables()]
    commits = {
        t.name: history(settings.warehouse, t.qualified_name) if written(settings, t) else [] for t in tables
    }
    return PipelineState(
        read_at=datetime.now(UTC).replace(tzinfo=None),
        tables=table_states(settings),
        commits=commits,
        quarantine=_or_nothing(lambda: [tuple(r) for r in quarantine_rows(settings).itertuples(index=False)]),
        rule_results=_or_nothing(lambda: _newest_results(settings)),
        services=_or_nothing(lambda: [(s.name, s.healthy) for s in services(settings)]),
        seconds=time.monotonic() - began,
        path_costs={t.name: costs.read(settings, t.name) for t in derived_tables()},
    )


def _newest_results(settings: Settings) -> list[dict]:
    results = quality_results(settings)
    newest = results.sort_values("validated_at", ascending=False).drop_duplicates(["table_name", "rule"])
    return newest.to_dict("records")


def _or_nothing(read) -> list:
    """A part that cannot be read now is left out of this scrape; the others still report."""
    try:
        return read()
    except Unavailable:
        return []


@dataclass
class CommitCounts:
    """Rows and commits per table, over the commits seen so far (see the module's doc)."""

    seen_until: dict[str, str] = field(default_factory=dict)
    commits: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)

    def add(self, table: str, commits: list[Commit]) -> None:
        new = [c for c in commits if c.completed > self.seen_until.get(table, "")]
        # Compactions rewrite rows without changing them: they are commits, not rows written.
        changed = [c for c in new if c.operation != "COMPACT"]
        self.commits[table] = self.commits.get(table, 0) + len(new)
        self.written[table] = self.written.get(table, 0) + sum(c.inserted + c.updated for c in changed)
        self.deleted[table] = self.deleted.get(table, 0) + sum(c.deleted for c in changed)
        if new:
            self.seen_until[table] = max(c.completed for c in new)


def families(state: PipelineState, counts: CommitCounts) -> list:
    """The metric families of one reading; `counts` takes the reading's new commits."""
    layers = {t.name: t.layer for t in [*BRONZE_TABLES, *derived_tables()]}
    table_labels = ["layer", "table"]

    def gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=labels)

    lag = gauge(
        "table_lag_seconds",
        "How long the oldest change the table has not taken yet "
        "has waited in its input (Kafka, or an input table); 0 when it has taken all.",
        table_labels,
    )
    last_commit = gauge(
        "table_last_commit_timestamp_seconds",
        "When the table's newest commit completed (Unix time).",
        table_labels,
    )
    source_lag = gauge(
        "table_source_lag_seconds",
        "How long ago the oldest source change the table does not reflect yet was made "
        "(a Postgres commit, an event's arrival in Kafka), whichever table between holds it.",
        table_labels,
    )
    target = gauge(
        "table_freshness_target_seconds",
        "The table's declared freshness target (`fresh_within`): how far behind the source it may be.",
        table_labels,
    )
    over_target = gauge(
        "table_over_freshness_target_seconds",
        "How far the table's lag behind the source is past its freshness target; 0 within it.",
        table_labels,
    )
    targets = freshness_targets()
    kafka_lag = gauge(
        "kafka_consumer_lag_messages",
        "Messages in the topic past the Bronze stream's checkpoint.",
        ["topic", "table"],
    )
    topics = {t.name: t.topic for t in BRONZE_TABLES}
    for s in state.tables:
        if (behind_input := s.lag(state.read_at)) is not None:
            lag.add_metric([s.layer, s.name], behind_input)
        if (behind := s.source_lag(state.read_at)) is not None:
            source_lag.add_metric([s.layer, s.name], behind)
            if s.name in targets:
                over_target.add_metric([s.layer, s.name], max(0.0, behind - targets[s.name]))
        if s.name in targets:
            target.add_metric([s.layer, s.name], targets[s.name])
        if s.last_commit is not None:
            last_commit.add_metric([s.layer, s.name], s.last_commit.replace(tzinfo=UTC).timestamp())
        if s.waiting is not None:
            kafka_lag.add_metric([topics[s.name], s.name], s.waiting)

    data_files = gauge(
        "table_data_files",
        "Data files of the table on storage (base, log and "
        "change-log files of every version the cleaner keeps).",
        table_labels,
    )
    data_bytes = gauge("table_data_bytes", "Bytes of the table's data files.", table_labels)
    average = gauge(
        "table_average_file_bytes",
        "Average size of the table's data files: small-file trouble shows here first.",
        table_labels,
    )
    partitions = gauge("table_partitions", "Partitions holding the table's data files.", table_labels)
    for s in state.tables:
        if s.storage is not None:
            for family, value in (
                (data_files, s.storage.files),
                (data_bytes, s.storage.bytes),
                (average, s.storage.average_bytes),
                (partitions, s.storage.partitions),
            ):
                family.add_metric([s.layer, s.name], value)

    commits = CounterMetricFamily(
        f"{PREFIX}_commits", "Commits of the table (compactions included).", labels=table_labels
    )
    written = CounterMetricFamily(
        f"{PREFIX}_rows_written", "Rows inserted or updated by the table's commits.", labels=table_labels
    )
    deleted = CounterMetricFamily(
        f"{PREFIX}_rows_deleted", "Rows deleted by the table's commits.", labels=table_labels
    )
    duration = gauge(
        "last_commit_duration_seconds",
        "From the table's newest commit being requested to its completion.",
        table_labels,
    )
    last_rows = gauge(
        "last_commit_rows",
        "Rows the table's newest commit inserted, updated or deleted (Hudi's commit metadata).",
        [*table_labels, "kind"],
    )
    for table, found in state.commits.items():
        counts.add(table, found)
        labels = [layers[table], table]
        commits.add_metric(labels, counts.commits.get(table, 0))
        written.add_metric(labels, counts.written.get(table, 0))
        deleted.add_metric(labels, counts.deleted.get(table, 0))
        newest = [c for c in found if c.completed]
        if newest:
            latest = newest[-1]
            duration.add_metric(
                labels,
                (instant_time(latest.completed) - instant_time(latest.requested)).total_seconds(),
            )
            for kind, rows in (
                ("inserted", latest.inserted),
                ("updated", latest.updated),
                ("deleted", latest.deleted),
            ):
                last_rows.add_metric([*labels, kind], rows)

    kept_out = gauge(
        "quarantine_rows",
        "Rows in the table's quarantine: held back (waiting for "
        "an input row), quarantined (breaking a rule), not_landable (a Bronze message that "
        "failed its batch) or oversized (a source row too large to capture).",
        [*table_labels, "status"],
    )
    for table, status, rows in state.quarantine:
        kept_out.add_metric([layers.get(table, ""), table, status.replace(" ", "_")], rows)

    failing = gauge(
        "quality_rule_failing", "1 when the rule's newest validation failed.", [*table_labels, "rule", "tier"]
    )
    unexpected = gauge(
        "quality_rule_unexpected_rows",
        "Rows breaking the rule in its newest validation.",
        [*table_labels, "rule", "tier"],
    )
    for result in state.rule_results:
        labels = [layers.get(result["table_name"], ""), result["table_name"], result["rule"], result["tier"]]
        failing.add_metric(labels, 0.0 if result["success"] else 1.0)
        unexpected.add_metric(labels, float(result["unexpected_count"] or 0))

    path_seconds = gauge(
        "run_path_seconds",
        "What each path of the table's run (incremental, or full: a rebuild) cost the last "
        "time it took it; a run takes the cheaper one for the changes waiting.",
        [*table_labels, "path"],
    )
    rebuilt = gauge("run_rebuilt", "1 when the table's newest run rebuilt it in full.", table_labels)
    for table, measured in state.path_costs.items():
        labels = [layers[table], table]
        for path in (costs.INCREMENTAL, costs.FULL):
            if found := getattr(measured, path):
                path_seconds.add_metric([*labels, path], found.seconds)
        if measured.last:
            rebuilt.add_metric(labels, 1.0 if measured.last == costs.FULL else 0.0)

    up = gauge("service_up", "1 when the service answers its health check.", ["service"])
    for name, healthy in state.services:
        up.add_metric([name], 1.0 if healthy else 0.0)
    read = gauge("metrics_read_seconds", "How long reading the pipeline's state took.", [])
    read.add_metric([], state.seconds)
    return [
        lag,
        source_lag,
        target,
        over_target,
        last_commit,
        kafka_lag,
        data_files,
        data_bytes,
        average,
        partitions,
        commits,
        written,
        deleted,
        duration,
        last_rows,
        kept_out,
        failing,
        unexpected,
        path_seconds,
        rebuilt,
        up,
        read,
    ]


class PipelineCollector(Collector):
    def __init__(self, settings: Settings):
        self.settings = settings
        self.counts = CommitCounts()
        self._lock = threading.Lock()
        self._last: tuple[float, list] | None = None

    def describe(self):
        # Without it the registry would read the whole state once just to learn the names.
        return []

    def collect(self):
        with self._lock:
            if self._last is None or time.monotonic() - self._last[0] > CACHE_SECONDS:
                self._last = (time.monotonic(), families(read_state(self.settings), self.counts))
            return iter(self._last[1])


def serve(settings: Settings) -> None:
    from prometheus_client import start_http_server
    from prometheus_client.registry import CollectorRegistry

    registry = CollectorRegistry()
    registry.register(PipelineCollector(settings))
    server, thread = start_http_server(settings.metrics_port, addr="127.0.0.1", registry=registry)
    print(f"metrics on http://localhost:{settings.metrics_port}/metrics (Ctrl-C stops)", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()
