"""What the integration tests share, so that a test module imports its helpers from here and
never from another test module: running `lakehouse` commands as a user would (and killing one
mid-write), changing the source and draining Bronze until it equals it, running Silver and
Gold in process and checking them, and sending clicks. Fixtures stay in the conftest files.

Its assertions are rewritten by pytest as a test module's are (tests/conftest.py registers
it), so a failing one shows its values."""

# Why one module: pytest rewrites the assertions of this one registered module; helpers split
# across several would each need registering, and tests would hunt for them in more places.

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
import requests
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from bronze.job import BronzeJob
from bronze.tables import BRONZE_TABLES
from ingestion import connector
from ingestion.database import SOURCE_TABLES
from ingestion.events import encode
from ingestion.topics import CLICKSTREAM_TOPIC, event_key
from ingestion.workload import OltpWorkload
from lakehouse.catalog import exists
from lakehouse.hudi import snapshot
from lakehouse.incremental import Runner, utc_now
from lakehouse.network import port_open
from lakehouse.reports import RunReport
from lakehouse.settings import read_env_file
from lakehouse.tables import Table
from medallion import parallel, verify
from medallion.invocation import lakehouse
from medallion.tables import derived_tables
from silver.tables import UNIFIED_CUSTOMER_ORDERS

# The repository: where a user runs `lakehouse`, and where the notebooks are.
ROOT = Path(__file__).resolve().parents[1]
# The Bronze tables Debezium fills from Postgres, which Bronze must equal value for value.
CDC_TABLES = [table for table in BRONZE_TABLES if table.envelope == "debezium"]


# Commands in processes of their own.


def cli_env(settings) -> dict[str, str]:
    """The environment of a `lakehouse` command that must work on what this test process
    works on: this process's environment, which holds the secrets (tests/conftest.py), and
    `settings` as variables, which the command's `load()` reads back (the session's own
    warehouse, catalog and ports, not the demo's)."""
    return {**os.environ, **settings.environment()}


def served_assets(settings) -> set[tuple[str, ...]]:
    """The asset keys the scheduler's webserver on `settings`' port serves, from its GraphQL API."""
    answer = requests.post(
        f"http://localhost:{settings.scheduler_port}/graphql",
        timeout=30,
        json={"query": "{ assetNodes { assetKey { path } } }"},
    ).json()
    return {tuple(node["assetKey"]["path"]) for node in answer["data"]["assetNodes"]}


def run_lakehouse(settings, *arguments: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`lakehouse <arguments>` run to its end from the repository, as a user runs it: what a
    command prints and its exit status are part of what it promises."""
    return subprocess.run(
        lakehouse(*arguments),
        cwd=ROOT,
        env=cli_env(settings),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# How a write shows on a table's Hudi timeline, by table type: once completed, and while in
# flight (a COPY_ON_WRITE commit is in flight as `<instant>.inflight`, Hudi's older naming).
WRITES_ON_TIMELINE = {
    "MERGE_ON_READ": ("*_*.deltacommit", "*.deltacommit.inflight"),
    "COPY_ON_WRITE": ("*_*.commit", "*.inflight"),
}


def write_in_flight(table: Table, settings) -> bool:
    """Whether a write of `table` has begun and not completed: the moment a kill must hit
    for a test of recovery to prove anything."""
    completed_files, in_flight_files = WRITES_ON_TIMELINE[table.table_type]
    timeline = Path(table.path(settings)) / ".hoodie" / "timeline"
    completed = {p.name.split("_")[0] for p in timeline.glob(completed_files)}
    return any(p.name.split(".")[0] not in completed for p in timeline.glob(in_flight_files))


def kill_mid_write(settings, table: Table, *arguments: str) -> None:
    """Runs `lakehouse <arguments>`, which writes `table`, and kills it with all it started
    (SIGKILL to its process group) while a write of the table is in flight: the crash that
    the next run must recover from, losing and repeating nothing."""
    command = " ".join(arguments)
    job = subprocess.Popen(
        lakehouse(*arguments),
        cwd=ROOT,
        env=cli_env(settings),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while not write_in_flight(table, settings):
        assert job.poll() is None, f"`lakehouse {command}` finished before it could be killed mid-write"
        assert time.monotonic() < deadline, f"`lakehouse {command}` never started a write"
        time.sleep(0.05)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()


# The source and Bronze.


def run_workload(db, steps: int, seed: int, bad_share: float = 0.0) -> Counter:
    """The random workload plus edge cases; returns how often each operation ran. What a test
    changes at the source when it needs every kind of change Bronze, Silver and Gold must
    follow, reproducibly (`seed`); `bad_share` of the transactions write rows the gates must
    keep out, and later ones fix some."""
    workload = OltpWorkload(db, seed, bad_share)
    done = Counter(workload.step() for _ in range(steps))
    # Edge cases the random mix may not hit: a key changed three times in one transaction,
    # deleted and re-inserted, a customer moving country (partition) and back, and a line
    # re-dated to the day before (the bucket index leaves old copies unless deleted).
    with db.transaction():
        db.execute("UPDATE retail.sales_transactions SET status = 'shipped' WHERE order_id = 1")
        db.execute("UPDATE retail.sales_transactions SET quantity = quantity + 1 WHERE order_id = 1")
        db.execute("UPDATE retail.sales_transactions SET status = 'completed' WHERE order_id = 1")
    line = db.execute("SELECT * FROM retail.sales_transactions WHERE order_id = 2 LIMIT 1").fetchone()
    db.execute("DELETE FROM retail.sales_transactions WHERE order_id = %s AND line_item_id = %s", line[:2])
    db.execute(
        "INSERT INTO retail.sales_transactions VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now())",
        line[:11],
    )
    with db.transaction():
        db.execute(
            "UPDATE retail.customer_master SET country = 'JP', region = 'asia_pacific' WHERE customer_id = 5"
        )
        db.execute(
            "UPDATE retail.customer_master SET country = 'BR', region = 'latin_america' WHERE customer_id = 5"
        )
    db.execute(
        "UPDATE retail.sales_transactions SET transaction_ts = transaction_ts - interval '1 day'"
        " WHERE order_id = 3"
    )
    return done


def drain_until_equal(spark, settings, db, tables=tuple(CDC_TABLES), timeout=180.0):
    """Drains until every CDC table equals Postgres, failing with the differences after
    `timeout`: how a test knows Bronze holds what it changed at the source, since Debezium
    delivers within seconds but at no known moment. A duplicated row fails at once."""
    deadline = time.monotonic() + timeout
    while True:
        BronzeJob(spark, settings).drain()
        verdicts = [verify.bronze_against_postgres(spark, settings, db, table) for table in tables]
        assert not any(v.duplicated for v in verdicts), [v.line() for v in verdicts]
        if all(v.equal for v in verdicts):
            return
        if time.monotonic() > deadline:
            pytest.fail("Bronze differs from Postgres:\n" + "\n".join(v.line() for v in verdicts))
        # Debezium delivers a change within about a second; an idle drain costs a fraction.
        time.sleep(1)


# Silver and Gold.


def run_tables(spark, settings, tables=None, clock=utc_now) -> dict[str, RunReport]:
    """Runs `tables` (all by default) as `lakehouse run` does, side by side once their
    inputs are done, and records their validation results, but on the test session's
    SparkSession: a command of its own would start a JVM per run. Each table takes the
    incremental path whenever it can: which path a run's measured costs would pick varies
    with the machine's load, and a test of what a run computes must not
    (tests/integration/test_silver_gold.py tests the choice). A table without input data
    fails the call."""
    runner = Runner(spark, settings, clock, by_cost=False)
    try:
        return parallel.run_tables(runner, list(tables or derived_tables()), False, settings.tables_at_once)
    finally:
        runner.record_results()


def run_all(spark, settings) -> dict[str, str]:
    """Every derived table's run mode (full, incremental or idle) by name: brings Silver and
    Gold up to Bronze, for a test that starts from a warehouse caught up or checks how each
    table ran."""
    return {name: report.mode for name, report in run_tables(spark, settings).items()}


def assert_equals_full_rebuild(spark, settings, tables=None) -> None:
    """Every row a full rebuild promotes is in the table, and every row it keeps out is in the
    quarantine with the same rules, once: the check that an incremental run, whatever came
    before it, computed what it should."""
    verdicts = [
        v for t in tables or derived_tables() for v in verify.derived_against_rebuild(spark, settings, t)
    ]
    assert all(v.equal for v in verdicts), "\n".join(v.line() for v in verdicts)


def quarantined(spark, settings, table=UNIFIED_CUSTOMER_ORDERS) -> dict[tuple, tuple[list[str], str]]:
    """The table's quarantine: key -> (rules broken, held back or quarantined). What a test
    that wrote bad rows compares with the rules each one breaks."""
    if not exists(spark, table.quarantine.path(settings)):
        return {}
    return {
        tuple(r[k] for k in table.record_key): (list(r.quarantine_rules), r.quarantine_status)
        for r in snapshot(spark, table.quarantine, settings).collect()
    }


def rows(spark, settings, table) -> list:
    """The table's rows, without Hudi's own columns, in a stable order: to compare a table
    before and after an operation that must leave its data as it was (or bring it back)."""
    frame = snapshot(spark, table, settings)
    data = frame.select(*[c for c in frame.columns if not c.startswith("_hoodie")])
    return sorted(data.collect(), key=repr)


# Events.


def click(session_id: str, event_type: str, ts: datetime, n: int) -> dict:
    """The `n`th click of an anonymous session: for tests that need a session's events at
    times they choose (late, out of order, stale), which the simulator's streams do not send."""
    return {
        "event_id": f"{session_id}-{n}",
        "session_id": session_id,
        "customer_id": None,
        "event_type": event_type,
        "page_url": "/",
        "product_id": None,
        "search_query": None,
        "device": "mobile",
        "event_ts": ts,
    }


def send_clicks(producer: KafkaProducer, events: list[dict]) -> None:
    """Sends `events` keyed and encoded as the simulator sends clicks, and waits until Kafka
    holds them, so that the next drain lands them."""
    for event in events:
        producer.send(CLICKSTREAM_TOPIC, key=event_key(CLICKSTREAM_TOPIC, event), value=encode(event))
    producer.flush()


# A demo running beside the tests.


def demo_state(demo) -> dict | None:
    """What a demo running beside the test session holds and serves, read with the demo's
    own settings and `.env` (only read): whether each service answers and the connector
    runs; its source tables and databases; its topics' end offsets; its warehouse's files.
    None when no demo runs. A test session must leave all of it as it found it."""
    secrets = read_env_file(ROOT / ".env")
    if not port_open("localhost", demo.pg_port) or "PGPASSWORD" not in secrets:
        return None
    serving = {
        name: port_open("localhost", port)
        for name, port in (
            ("postgres", demo.pg_port),
            ("kafka", demo.kafka_port),
            ("connect", demo.connect_port),
            ("thrift", demo.thrift_port),
        )
    }
    serving["debezium"] = serving["connect"] and connector.is_running(connector.connector_status(demo))
    with psycopg.connect(**demo.pg_params(password=secrets["PGPASSWORD"])) as db:
        databases = sorted(name for (name,) in db.execute("SELECT datname FROM pg_database"))
        source = {
            table: db.execute(
                f"SELECT count(*), md5(string_agg(t::text, ',' ORDER BY t::text)) FROM retail.{table} t"
            ).fetchone()
            for table in SOURCE_TABLES
        }
    consumer = KafkaConsumer(bootstrap_servers=demo.kafka_bootstrap)
    try:
        partitions = [
            TopicPartition(topic, partition)
            for topic in sorted(consumer.topics())
            if not topic.startswith("_")
            for partition in sorted(consumer.partitions_for_topic(topic))
        ]
        topics = {
            f"{p.topic}/{p.partition}": offset for p, offset in consumer.end_offsets(partitions).items()
        }
    finally:
        consumer.close()
    warehouse = Path(demo.warehouse)
    files = {
        str(path.relative_to(warehouse)): path.stat().st_size
        for path in sorted(warehouse.rglob("*"))
        if path.is_file()
    }
    return {"serving": serving, "databases": databases, "source": source, "topics": topics, "files": files}
