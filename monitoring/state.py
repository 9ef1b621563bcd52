"""The pipeline's state, read without a JVM and without asking the writers anything: every
table's timeline and the changes waiting for it (Kafka's end offsets past Bronze's stream
checkpoints, input commits past a derived table's last run), the quarantine and
quality-result tables through the JVM-free read path (serving/fastpath.py), and the health
of the services. The dashboard's pipeline page, the metrics endpoint and `lakehouse status`
all read it here, so they show the same numbers.

The tables come from the declarations, so a declared table is read with no edit here. A
reader that cannot answer raises `Unavailable` with one line saying why, which the page
shows in place of the panel.
"""

# Why one module: every reader answers with the same `Unavailable` contract, and the
# dashboard, the metrics and the status read them as one source; split, each would restate it.

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import psycopg
import requests
from hudi import HudiTable

from bronze.decode import OVERSIZED, UNLANDABLE
from bronze.job import checkpoint_location
from bronze.tables import BRONZE_TABLES, BronzeTable
from infra import stack, workers
from lakehouse.files import Storage, listed
from lakehouse.network import port_open
from lakehouse.settings import Settings
from lakehouse.tables import DerivedTable, Table, quality_results_table
from lakehouse.timeline import CONSUMED_KEY, OLDEST_CHANGE_KEY, TABLE_SERVICES, instant_time
from medallion.tables import derived_tables
from serving import fastpath
from serving.history import completed_instants, history

WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")


class Unavailable(RuntimeError):
    """A panel's data cannot be read now; the message says why in one line."""


def query(settings: Settings, sql: str) -> pd.DataFrame:
    try:
        return fastpath.query(settings.warehouse, sql).table.to_pandas()
    except fastpath.QueryError as error:
        raise Unavailable(str(error)) from None


@dataclass(frozen=True)
class TableState:
    """One table as its timeline and its input (Kafka or upstream tables) show it."""

    layer: str
    name: str
    last_commit: datetime | None
    # When the oldest change this table has not taken yet reached its input (a Kafka
    # message's timestamp, an input table's commit); None when it has taken every change.
    oldest_waiting: datetime | None = None
    waiting: int | None = None  # Bronze: messages in Kafka past its checkpoint
    lag_known: bool = True  # false when the input could not be asked (Kafka down)
    storage: Storage | None = None  # its data files, when storage could be listed
    # When the oldest source change this table does not reflect yet was made (a Postgres
    # commit, an event's arrival in Kafka), whichever table between holds it; None when it
    # reflects every change Kafka has. The lag per hop (`oldest_waiting`) cannot show a
    # table as current while its input trails.
    oldest_unreflected: datetime | None = None
    source_known: bool = True  # false when a Bronze table it depends on could not be asked

    def lag(self, now: datetime) -> float | None:
        """Seconds behind its input; None when unknown."""
        return _age(now, self.oldest_waiting) if self.lag_known else None

    def source_lag(self, now: datetime) -> float | None:
        """Seconds behind the source; None when unknown."""
        return _age(now, self.oldest_unreflected) if self.source_known else None


def _age(now: datetime, since: datetime | None) -> float:
    return max((now - since).total_seconds(), 0.0) if since else 0.0


def quality_results(settings: Settings, limit: int = 500) -> pd.DataFrame:
    """The newest `limit` validation results of every layer that has a results table."""
    layers = sorted({t.layer for t in derived_tables()})
    parts = [
        f"SELECT table_name, rule, tier, success, unexpected_count, sample_values, "
        f"validated_at FROM {quality_results_table(layer).qualified_name}"
        for layer in layers
        if written(settings, quality_results_table(layer))
    ]
    if not parts:
        return pd.DataFrame(
            columns=[
                "table_name",
                "rule",
                "tier",
                "success",
                "unexpected_count",
                "sample_values",
                "validated_at",
            ]
        )
    return query(settings, " UNION ALL ".join(parts) + f" ORDER BY validated_at DESC LIMIT {limit}")


def quarantine_rows(settings: Settings) -> pd.DataFrame:
    """(table, status, rows) for every quarantine table written so far."""
    frames = []
    for table in [*BRONZE_TABLES, *derived_tables()]:
        quarantine = table.quarantine
        if not written(settings, quarantine):
            continue
        # A Bronze message is quarantined by a check, because it failed its batch
        # (bronze/job.py: a fault no check foresaw, worth a look), or because its row was
        # too large to capture (a row the source still holds that Bronze lacks).
        status = (
            "quarantine_status"
            if isinstance(table, DerivedTable)
            else f"CASE WHEN error LIKE '{UNLANDABLE}%' THEN 'not landable' "
            f"WHEN error LIKE '{OVERSIZED}%' THEN 'oversized' ELSE 'quarantined' END"
        )
        frames.append(
            query(
                settings,
                f"SELECT '{table.name}' AS \"table\", {status} AS status, "
                f'count(*) AS "rows" FROM {quarantine.qualified_name} '
                f"GROUP BY 1, 2",
            )
        )
    return (
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["table", "status", "rows"])
    )


def bronze_commits(settings: Settings) -> pd.DataFrame:
    """(table, completed, rows_written) of each Bronze delta commit on the active timeline:
    what the streams landed, without the compactions that rewrite it."""
    rows = [
        (table.name, instant_time(commit.completed), commit.rows_written)
        for table in BRONZE_TABLES
        if written(settings, table)
        for commit in history(settings.warehouse, table.qualified_name)
        if commit.action == "deltacommit" and commit.completed
    ]
    return pd.DataFrame(rows, columns=["table", "completed", "rows_written"])


def table_states(settings: Settings, storage: bool = True) -> list[TableState]:
    """Every declared Bronze, Silver and Gold table, in pipeline order, with its last commit,
    the oldest change waiting for it, the oldest source change it does not reflect and
    (with `storage`) its data files."""
    completions = {table.name: _completions(settings, table) for table in [*BRONZE_TABLES, *derived_tables()]}
    states: dict[str, TableState] = {}
    with _kafka_positions(settings) as positions:
        for table in BRONZE_TABLES:
            if positions is None:  # the broker is down: how far behind is unknown
                lag = {"lag_known": False, "source_known": False}
            else:
                oldest, waiting = positions(table.topic, _checkpoint_offsets(settings, table))
                lag = {"oldest_waiting": oldest, "waiting": waiting, "oldest_unreflected": oldest}
            states[table.name] = TableState(
                table.layer,
                table.name,
                _latest(completions[table.name]),
                storage=listed(table.path(settings)) if storage else None,
                **lag,
            )
    for table in derived_tables():
        consumed = _consumed(settings, table) or {}
        waiting = [
            completed
            for i in table.inputs
            for completed in completions[i.table.name]
            if completed > consumed.get(i.table.name, "")
        ]
        # What it lacks: the changes of its inputs' commits since its run, and whatever
        # each input lacks itself.
        unreflected = [
            *(states[i.table.name].oldest_unreflected for i in table.inputs),
            *(_oldest_change(settings, i.table, consumed.get(i.table.name, "")) for i in table.inputs),
        ]
        states[table.name] = TableState(
            table.layer,
            table.name,
            _latest(completions[table.name]),
            oldest_waiting=instant_time(min(waiting)) if waiting else None,
            source_known=all(states[i.table.name].source_known for i in table.inputs),
            storage=listed(table.path(settings)) if storage else None,
            oldest_unreflected=min(filter(None, unreflected), default=None),
        )
    return list(states.values())


def _oldest_change(settings: Settings, table: Table, after: str) -> datetime | None:
    """The oldest source change among the table's commits completed after `after` (the
    `oldest_change` each commit records, or its requested time for a commit written before
    tables recorded it); compactions and clustering change no row and are left out."""
    path = table.path(settings)
    later = [key for key, done in _commit_completions(path).items() if done > after]
    changes = [
        facts.oldest_change or requested
        for (requested, _), facts in _commit_facts(path, later).items()
        if facts.changes_rows
    ]
    return instant_time(min(changes)) if changes else None


@dataclass(frozen=True)
class _CommitFacts:
    """What one completed commit's metadata tells the readers here."""

    changes_rows: bool  # false for compaction and clustering
    consumed: str | None  # a derived run's checkpoint (CONSUMED_KEY)
    oldest_change: str | None  # OLDEST_CHANGE_KEY


# A completed commit's metadata never changes, so each is read once per process: the
# pipeline's loop, the dashboard and the metrics read the state every few seconds. Per
# table, only the commits still on its active timeline are kept.
_FACTS: dict[str, dict[tuple[str, str], _CommitFacts]] = {}


def _commit_completions(path: str) -> dict[tuple[str, str], str]:
    """(requested, action) -> completion time of the table's completed write commits."""
    return {key: done for key, done in completed_instants(path).items() if key[1] in WRITE_ACTIONS}


def _commit_facts(path: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], _CommitFacts]:
    known, wanted = _FACTS.get(path, {}), set(keys)
    if not wanted <= known.keys():
        timeline = HudiTable(path).get_timeline()
        for instant in (
            timeline.get_completed_commits()
            + timeline.get_completed_deltacommits()
            + timeline.get_completed_replacecommits()
        ):
            key = (instant.timestamp, instant.action)
            if key in wanted and key not in known:
                metadata = json.loads(timeline.get_instant_metadata_in_json(instant))
                extra = metadata.get("extraMetadata") or {}
                service = metadata.get("compacted") or metadata.get("operationType") in TABLE_SERVICES
                known[key] = _CommitFacts(not service, extra.get(CONSUMED_KEY), extra.get(OLDEST_CHANGE_KEY))
        active = _commit_completions(path)
        _FACTS[path] = known = {key: facts for key, facts in known.items() if key in active}
    return {key: known[key] for key in keys if key in known}


@contextmanager
def _kafka_positions(settings: Settings):
    """Gives a function of (topic, offsets landed per partition) returning the timestamp of
    the oldest message not landed yet and how many are waiting; None when Kafka does not
    answer."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaTimeoutError

    host, _, port = settings.kafka_bootstrap.split(",")[0].rpartition(":")
    try:
        # kafka-python waits 30 s for a broker that is down; the port answers at once.
        if not port_open(host, int(port)):
            raise KafkaTimeoutError(settings.kafka_bootstrap)
        consumer = KafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False, request_timeout_ms=5000
        )
    except KafkaTimeoutError:
        yield None
        return

    def positions(topic: str, landed: dict[int, int]) -> tuple[datetime | None, int]:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        ends = consumer.end_offsets(partitions) if partitions else {}
        behind = {tp: end - landed.get(tp.partition, 0) for tp, end in ends.items()}
        stamps = [
            _timestamp_at(consumer, tp, landed.get(tp.partition, 0)) for tp, n in behind.items() if n > 0
        ]
        return min((s for s in stamps if s), default=None), sum(max(n, 0) for n in behind.values())

    try:
        yield positions
    finally:
        consumer.close()


def _timestamp_at(consumer, partition, offset: int) -> datetime | None:
    consumer.assign([partition])
    consumer.seek(partition, offset)
    for records in consumer.poll(timeout_ms=3000, max_records=1).values():
        for record in records:
            return datetime.fromtimestamp(record.timestamp / 1000, UTC).replace(tzinfo=None)
    return None


def _checkpoint_offsets(settings: Settings, table: BronzeTable) -> dict[int, int]:
    """The Kafka offsets up to which Bronze has landed the topic: those of the stream's
    newest committed batch (Spark writes `commits/<batch>` after the batch's Hudi commit)."""
    location = Path(checkpoint_location(settings, table))
    batches = [int(p.name) for p in (location / "commits").glob("[0-9]*") if p.name.isdigit()]
    if not batches:
        return {}
    offsets = (location / "offsets" / str(max(batches))).read_text().splitlines()[2]
    return {int(partition): offset for partition, offset in json.loads(offsets).get(table.topic, {}).items()}


def written(settings: Settings, table: Table) -> bool:
    return bool(_completions(settings, table))


def _completions(settings: Settings, table: Table) -> list[str]:
    """Completion times of the table's write commits (compactions and clustering included:
    an input's change reader sees them too)."""
    return sorted(
        completed
        for (_, action), completed in completed_instants(table.path(settings)).items()
        if action in WRITE_ACTIONS
    )


def _latest(completions: list[str]) -> datetime | None:
    return instant_time(completions[-1]) if completions else None


def _consumed(settings: Settings, table: DerivedTable) -> dict[str, str] | None:
    """The input completion times the table's newest run read up to, which every run writes
    into its commit's metadata (lakehouse/timeline.py)."""
    path = table.path(settings)
    facts = _commit_facts(path, list(_commit_completions(path)))
    for key in sorted(facts, reverse=True):  # newest first
        if facts[key].consumed:
            return json.loads(facts[key].consumed)
    return None


def services(settings: Settings) -> list[stack.ServiceStatus]:
    """The services, and the demo's workers (the simulator, the pipeline...) while it runs."""
    try:
        return stack.status(settings) + workers.processes(settings)
    except (psycopg.Error, requests.RequestException) as error:
        # A service answers on its port but refuses the question (a changed password...).
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise Unavailable(f"the services' status cannot be read: {reason}") from None


def pages(settings: Settings) -> list[stack.ServiceStatus]:
    """The other pages users open (Data Docs, Spark UIs, the scheduler), up or not."""
    return [page for page in workers.pages(settings) if page.name != "dashboard"]
