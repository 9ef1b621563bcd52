"""Bronze ingestion: how many change events per second, and how long until a change is visible.

Throughput. The sales table receives three bulk changes, one Postgres transaction each: N new
lines (COPY), an update of those N lines, and their deletion (which also leaves the source as
it was). For each, the benchmark times the two halves of the path separately, because they
run side by side in production and the slower one bounds the sustained rate:
- capture: Postgres commit -> all N Debezium events in Kafka;
- landing: `lakehouse bronze` (a drain, as a scheduled run does it) -> the events committed
  as upserts of the Bronze MERGE_ON_READ table.

Latency. The continuous job (`lakehouse bronze --continuous`, the trigger of `make up`) runs
in its own process while the simulator's live workload runs for a while. A change's latency
is the completion time of the Hudi commit that made it readable minus its commit time in
Postgres (Debezium's `source.ts_ms`, kept in `_source_ts`), split into the wait until the
micro-batch that picked it up started (`_ingested_at`) and that batch's write. Meanwhile the
CPU the Bronze process used (its Python driver and its JVM, user and system time) is read
before and after: cores used (CPU seconds per wall second) and CPU seconds per 1,000
messages. Both are read after a warm-up of the same workload: in its first minutes the JVM
compiles Spark's and Hudi's code paths and costs twice what it does for the hours after.
It runs at the demo's rate (`make up`'s workload) and at a tenfold one.

Why one module: throughput and latency share the bench settings, the Bronze job they start
and the timeline reading; each part alone is one function and its helpers.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from benchmarks.report import distribution
from bronze.job import BronzeJob
from bronze.tables import BRONZE_TABLES, DEBEZIUM, SALES_TRANSACTIONS, WEB_CLICKSTREAMS, BronzeTable
from infra.native.process import BackgroundProcess
from ingestion.database import connect
from ingestion.seed import SeedSize, copy_rows, sales
from ingestion.simulate import SimulationPlan, simulate
from ingestion.topics import messages_in
from lakehouse import hudi
from lakehouse.settings import Settings
from medallion.freshness import bronze_triggers
from medallion.invocation import lakehouse
from medallion.tables import derived_tables

BENCH_SEED = 99
COMPLETED_INSTANT = re.compile(r"(\d{17})_(\d{17})\.(deltacommit|commit|replacecommit)")


class BenchmarkError(RuntimeError):
    pass


def wait_for_capture(settings: Settings, topic: str, target: int, timeout: float) -> float:
    began = time.monotonic()
    while messages_in(settings, topic) < target:
        if time.monotonic() - began > timeout:
            raise BenchmarkError(
                f"Debezium delivered {messages_in(settings, topic)} of {target} "
                f"messages to {topic} within {timeout:.0f} s; is the connector "
                f"RUNNING (`make status`)?"
            )
        time.sleep(0.25)
    return time.monotonic() - began


def _bulk_changes(settings: Settings, changes: int):
    """The three bulk transactions, as (name, function applying it to a connection): a
    burst of today's orders, all of them completed, all of them deleted again."""
    with connect(settings) as conn:
        base = conn.execute("SELECT coalesce(max(order_id), 0) FROM retail.sales_transactions").fetchone()[0]
        prices = conn.execute(
            "SELECT product_id, unit_price FROM retail.product_catalog ORDER BY product_id LIMIT 500"
        ).fetchall()
        customers = conn.execute("SELECT count(*) FROM retail.customer_master").fetchone()[0]
    if not prices or not customers:
        raise BenchmarkError("retail tables are empty: run `lakehouse seed` first")
    size = SeedSize(changes, customers, len(prices))
    new_orders = sales(BENCH_SEED, size, prices, first_order_id=base + 1, placed_at=datetime.now(UTC))
    return [
        ("insert", lambda c: copy_rows(c, "sales_transactions", new_orders)),
        (
            "update",
            lambda c: (
                c.execute(
                    "UPDATE retail.sales_transactions SET status = 'completed', updated_ts = now()"
                    " WHERE order_id > %s",
                    (base,),
                ).rowcount
            ),
        ),
        (
            "delete",
            lambda c: (
                c.execute("DELETE FROM retail.sales_transactions WHERE order_id > %s", (base,)).rowcount
            ),
        ),
    ]


def throughput(spark: SparkSession, settings: Settings, changes: int, report=print) -> dict:
    began = time.monotonic()
    first = BronzeJob(spark, settings).drain()
    existing = sum(c.messages for c in first.values())
    result = {"first_drain": {"messages": existing, "seconds": round(time.monotonic() - began, 1)}}
    report(
        f"first drain: {existing} messages already in Kafka landed in "
        f"{result['first_drain']['seconds']} s (creates the five tables)"
    )
    topic = SALES_TRANSACTIONS.topic
    phases = []
    for name, apply in _bulk_changes(settings, changes):
        before = messages_in(settings, topic)
        began = time.monotonic()
        with connect(settings) as conn:
            events = apply(conn)
        postgres_seconds = time.monotonic() - began
        capture_seconds = wait_for_capture(
            settings, topic, before + events, timeout=max(120.0, events / 1000)
        )
        job = BronzeJob(spark, settings, (SALES_TRANSACTIONS,))
        began = time.monotonic()
        landed = job.drain()[SALES_TRANSACTIONS.name]
        landing_seconds = time.monotonic() - began
        if landed.messages != events:
            raise BenchmarkError(
                f"{name}: landed {landed.messages} messages, expected {events}; "
                f"is something else writing to Postgres (`make down` first)?"
            )
        phase = {
            "phase": name,
            "events": events,
            "postgres_seconds": round(postgres_seconds, 2),
            "capture_seconds": round(capture_seconds, 2),
            "capture_events_per_second": round(events / capture_seconds),
            "landing_seconds": round(landing_seconds, 2),
            "landing_batches": landed.batches,
            "landing_write_seconds": round(landed.seconds, 2),
            "landing_events_per_second": round(events / landing_seconds),
        }
        phases.append(phase)
        report(
            f"{name:>6}: {events} events; capture {capture_seconds:.1f} s "
            f"({phase['capture_events_per_second']}/s); landing {landing_seconds:.1f} s "
            f"({phase['landing_events_per_second']}/s, {landed.batches} batches)"
        )
    total = sum(p["events"] for p in phases)
    result |= {
        "phases": phases,
        "capture_events_per_second": round(total / sum(p["capture_seconds"] for p in phases)),
        "landing_events_per_second": round(total / sum(p["landing_seconds"] for p in phases)),
    }
    result["sustained_events_per_second"] = min(
        result["capture_events_per_second"], result["landing_events_per_second"]
    )
    return result


def _completion_times(table_path: str) -> dict[str, datetime]:
    """Requested instant -> completion time of every completed write on the timeline."""
    times = {}
    for entry in (Path(table_path) / ".hoodie" / "timeline").iterdir():
        match = COMPLETED_INSTANT.fullmatch(entry.name)
        if match:
            times[match[1]] = datetime.strptime(match[2], "%Y%m%d%H%M%S%f").replace(tzinfo=UTC)
    return times


def _samples(
    spark: SparkSession, settings: Settings, table: BronzeTable, since: datetime
) -> list[tuple[float, float, float]]:
    """(total, waiting for a batch, writing it) in seconds, for each row changed since `since`."""
    changed_at = "_source_ts" if table.envelope == DEBEZIUM else table.ordering[0]
    rows = (
        hudi.read(spark, table.path(settings))
        .where(F.col(changed_at) >= F.lit(since))
        .select("_hoodie_commit_time", F.col(changed_at).alias("changed_at"), "_ingested_at")
        .collect()
    )
    completed = _completion_times(table.path(settings))
    samples = []
    for row in rows:
        visible = completed[row._hoodie_commit_time]
        changed = row.changed_at.replace(tzinfo=UTC)
        started = row._ingested_at.replace(tzinfo=UTC)
        samples.append(
            (
                (visible - changed).total_seconds(),
                (started - changed).total_seconds(),
                (visible - started).total_seconds(),
            )
        )
    return samples


def _summary(samples: list[tuple[float, float, float]]) -> dict:
    if not samples:
        return {"rows": 0}
    total, waiting, writing = zip(*samples)
    return {
        "rows": len(total),
        **distribution(total),
        "median_wait_seconds": round(statistics.median(waiting), 1),
        "median_write_seconds": round(statistics.median(writing), 1),
    }


def latency(
    spark: SparkSession,
    settings: Settings,
    trigger_seconds: int,
    duration: float,
    transactions_per_second: float,
    events_per_second: float,
    warmup: float,
    report=print,
) -> dict:
    bench_dir = settings.state_dir / "bench"
    job = BackgroundProcess("bronze-continuous", bench_dir / "run", bench_dir / "logs")
    job.log.unlink(missing_ok=True)
    job.start(
        lakehouse("bronze", "--continuous", "--trigger-seconds", str(trigger_seconds)),
        env=settings.environment(),
    )
    try:
        deadline = time.monotonic() + 300
        while "streaming every" not in (job.log.read_text() if job.log.exists() else ""):
            if not job.running() or time.monotonic() > deadline:
                raise BenchmarkError(f"the continuous Bronze job did not start; see {job.log}")
            time.sleep(1)
        time.sleep(trigger_seconds + 5)  # its first, empty, micro-batches are done
        report(f"latency: {warmup:.0f} s of warm-up")
        warming = SimulationPlan(transactions_per_second, events_per_second, warmup, BENCH_SEED + 1)
        simulate(settings, warming, report=lambda line: None)
        since = datetime.now(UTC)
        cpu_before, threads_before, wall_before = (
            _cpu_seconds(job.pid),
            _jvm_threads(job.pid),
            time.monotonic(),
        )
        messages_before = sum(messages_in(settings, t.topic) for t in BRONZE_TABLES)
        report(
            f"latency: {duration:.0f} s of live workload ({transactions_per_second} "
            f"transactions/s, {events_per_second} events/s), trigger {trigger_seconds} s"
        )
        plan = SimulationPlan(transactions_per_second, events_per_second, duration, BENCH_SEED)
        simulate(settings, plan, report=lambda line: None)
        time.sleep(3 * trigger_seconds)  # the last changes' micro-batch commits
        cpu = _cpu_seconds(job.pid) - cpu_before
        threads = _jvm_threads(job.pid)
        wall = time.monotonic() - wall_before
        messages = sum(messages_in(settings, t.topic) for t in BRONZE_TABLES) - messages_before
    finally:
        job.stop(timeout=60)
    by_kind: dict[str, float] = {}
    for tid, (kind, seconds) in threads.items():
        by_kind[kind] = by_kind.get(kind, 0.0) + seconds - threads_before.get(tid, (kind, 0.0))[1]
    cpu_figures = {
        "cores": round(cpu / wall, 3),
        # Where the JVM's share went, by kind of thread (cores).
        "jvm_threads": {
            kind: round(seconds / wall, 3)
            for kind, seconds in sorted(by_kind.items(), key=lambda item: -item[1])
            if seconds / wall >= 0.005
        },
        "messages": messages,
        "cpu_seconds_per_1000_messages": round(1000 * cpu / max(messages, 1), 2),
    }
    report(f"  Bronze's process: {cpu_figures}")
    captured = [t for t in BRONZE_TABLES if t.envelope == DEBEZIUM]
    samples = {t.name: _samples(spark, settings, t, since) for t in [*captured, WEB_CLICKSTREAMS]}
    per_table = {name: _summary(values) for name, values in samples.items()}
    for name, figures in per_table.items():
        report(f"  {name:<34} {figures}")
    overall = _summary([s for values in samples.values() for s in values])
    # The tables the tightest freshness targets read, at the shortest trigger: a Postgres
    # change until Bronze shows it.
    changes = _summary([s for t in captured for s in samples[t.name]])
    for name, figures in (("all rows", overall), ("Postgres changes", changes)):
        report(f"  {name}: p50 {figures.get('p50_seconds')} s, p95 {figures.get('p95_seconds')} s")
    return {
        "trigger_seconds": trigger_seconds,
        # Each table's own, where its readers' freshness targets allow a longer one.
        "triggers": bronze_triggers(derived_tables(), trigger_seconds),
        "warmup_seconds": warmup,
        "duration_seconds": duration,
        "transactions_per_second": transactions_per_second,
        "events_per_second": events_per_second,
        "all": overall,
        "postgres_changes": changes,
        "tables": per_table,
        "cpu": cpu_figures,
    }


# JVM thread names, without the numbers that tell one thread of a kind from another.
THREAD_KINDS = (
    (re.compile(r"C\d CompilerThread"), "JIT compiler"),
    (re.compile(r"Executor task launch worker"), "Spark tasks"),
    (re.compile(r"stream execution thread"), "streaming queries (planning, Hudi's driver side)"),
    (re.compile(r"GC Thread|G1 "), "garbage collector"),
    (re.compile(r"dag-scheduler"), "Spark's scheduler"),
)


def _jvm_threads(pid: int | None) -> dict[int, tuple[str, float]]:
    """The Bronze JVM's threads: native id -> (kind of thread, CPU seconds so far)."""
    if pid is None:
        raise BenchmarkError("the continuous Bronze job stopped during the benchmark")
    jvm = next(p for p in psutil.Process(pid).children(recursive=True) if p.name() == "java")
    dump = subprocess.run(["jcmd", str(jvm.pid), "Thread.print"], capture_output=True, text=True).stdout
    names = {int(nid, 16): name for name, nid in re.findall(r'^"([^"]+)".*?nid=(0x[0-9a-f]+)', dump, re.M)}
    kinds = {}
    for thread in jvm.threads():
        name = names.get(thread.id, "")
        kind = next((kind for pattern, kind in THREAD_KINDS if pattern.match(name)), "other")
        kinds[thread.id] = (kind, thread.user_time + thread.system_time)
    return kinds


def _cpu_seconds(pid: int | None) -> float:
    """User and system CPU seconds the process and its children (the JVM) have used."""
    if pid is None:
        raise BenchmarkError("the continuous Bronze job stopped during the benchmark")
    root = psutil.Process(pid)
    return sum(p.cpu_times().user + p.cpu_times().system for p in [root, *root.children(recursive=True)])


def bench_settings(settings: Settings) -> Settings:
    """A warehouse and catalog of its own, so the benchmark measures empty tables and touches
    no demo data; and room for a full refresh of ten million lines, which caches its result."""
    warehouse = settings.state_dir / "bench" / "warehouse"
    return dataclasses.replace(
        settings,
        warehouse=str(warehouse),
        driver_memory="12g",
        checkpoints=str(warehouse / "_checkpoints"),
        spark_ui=False,
        metastore_database="metastore_bench",
    )
