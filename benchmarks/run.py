"""A scheduled `lakehouse run` after a burst of source changes, timed as its caller waits.

First one pass over everything the sources hold (the seed, and a few transactions with their
events), which builds every table (as the first `lakehouse run` of the demo does), and a pass
after a few transactions (which measures each table's incremental path); then the simulator
runs its mix at the demo's proportions until it has written `changes` transactions to
Postgres (new orders, status changes, price corrections, customer moves, deletes ...) and
four events per transaction to the two event topics; once Debezium has published them,
`lakehouse run` runs as its own process, JVM start included, and its output says where the
time went: the Bronze drain, each Silver and Gold table, and the rest (starting Python and
the JVM, the catalog, the quality results commit). Last, what the warehouse holds on
storage against its source: the data files of every table, and Bronze sales plus Silver
unified orders against Postgres' `sales_transactions` with its indexes.

It runs on services of its own, seeded from empty (`source_of_its_own`): the demo's source
grows for as long as the demo runs, and a run's cost grows with it, so figures measured on
it would not compare from one day to the next.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator

import psutil

from benchmarks.bronze import BENCH_SEED, BenchmarkError
from benchmarks.freshness import MachineCpu
from benchmarks.report import header
from bronze.tables import SALES_TRANSACTIONS
from infra import stack
from ingestion.database import connect
from ingestion.seed import SeedSize, seed
from ingestion.simulate import SimulationPlan, simulate
from ingestion.topics import messages_in, source_topics
from lakehouse.files import listed
from lakehouse.settings import Settings
from medallion.invocation import lakehouse
from medallion.tables import main_tables
from silver.tables import UNIFIED_CUSTOMER_ORDERS

TRANSACTIONS_PER_SECOND = 20
EVENTS_PER_TRANSACTION = 4  # as in `make up`: 5 transactions and 20 events a second
SMALL_PASS_TRANSACTIONS = 10
CPU_LOOK_EVERY = 0.5
# Above the demo's ports, apart from a test session's and the Compose tests' (a unit test
# checks), so that a running demo, stopped workers and all, keeps its services.
SOURCE_PORT_OFFSET = 15_000

TABLE_LINE = re.compile(
    r"^(hudi_\w+)\s+(incremental|full refresh|no new input).*?([\d.]+) s\)?"
    r"(?:  \(.*\))?$"
)  # a full refresh ends with its reason
DRAINED = re.compile(r"^bronze: drained in ([\d.]+) s")
DERIVED = re.compile(r"^silver, gold: \d+ tables in ([\d.]+) s, (\d+) at a time")


@contextlib.contextmanager
def source_of_its_own(settings: Settings, sales_lines: int, report=print) -> Iterator[Settings]:
    """`settings` moved to services of their own (native, on SOURCE_PORT_OFFSET), seeded
    with `sales_lines` from empty, stopped and deleted at the end."""
    own = stack.isolated(settings, settings.state_dir / "bench-source", SOURCE_PORT_OFFSET)
    stack.stop(own, report=lambda line: None)  # what an interrupted benchmark left
    shutil.rmtree(own.state_dir, ignore_errors=True)
    stack.start(own, "native", report=lambda line: None)
    try:
        report(f"services of its own, seeded: {seed(own, SeedSize.for_lines(sales_lines))}")
        yield own
    finally:
        stack.stop(own, report=lambda line: None)
        shutil.rmtree(own.state_dir, ignore_errors=True)


class _TreeCpu(threading.Thread):
    """CPU seconds of a process and every process under it (its JVM), read every
    `CPU_LOOK_EVERY` s until it exits: a child's time counts in its parent's only once the
    parent waits for it, and pyspark's JVM is not waited for."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.root, self.seconds = psutil.Process(pid), {}

    def run(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):  # the run exited and was waited for
            while self.root.status() != psutil.STATUS_ZOMBIE:
                for process in [self.root, *self.root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        times = process.cpu_times()
                        self.seconds[process.pid] = times.user + times.system
                time.sleep(CPU_LOOK_EVERY)


def _lakehouse_run(settings: Settings) -> dict:
    """Times one `lakehouse run` as its caller waits, and reads where the time went: its
    output's parts, and the cores it used against what the machine had."""
    began, machine = time.monotonic(), MachineCpu({})
    process = subprocess.Popen(
        lakehouse("run"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | settings.environment(),
    )
    cpu = _TreeCpu(process.pid)
    cpu.start()
    stdout, stderr = process.communicate()
    seconds = time.monotonic() - began
    cpu.join()
    busy = machine.shares()["cores_busy"]
    if process.returncode:
        raise BenchmarkError(f"lakehouse run failed ({process.returncode}): {stderr[-2000:]}")
    tables, bronze, derived, at_once = {}, 0.0, 0.0, 1
    for line in stdout.splitlines():
        if found := DRAINED.match(line):
            bronze = float(found[1])
        elif found := DERIVED.match(line):
            derived, at_once = float(found[1]), int(found[2])
        elif found := TABLE_LINE.match(line):
            tables[found[1]] = {"mode": found[2], "seconds": float(found[3])}
    return {
        "seconds": round(seconds, 1),
        "bronze_seconds": bronze,
        "derived_seconds": derived,
        "tables_at_once": at_once,
        "tables": tables,
        "other_seconds": round(seconds - bronze - derived, 1),
        "cores": round(sum(cpu.seconds.values()) / seconds, 2),
        "machine_cores_busy": busy,
    }


def _wait_for_capture(settings: Settings, quiet_seconds: float = 5.0, timeout: float = 300) -> int:
    """Waits until Debezium has published for `quiet_seconds` nothing new; returns the
    messages the source topics hold."""
    began, last, since = time.monotonic(), -1, time.monotonic()
    while time.monotonic() - since < quiet_seconds:
        if time.monotonic() - began > timeout:
            raise BenchmarkError(
                "Debezium kept publishing for 5 minutes: is the demo's simulator running (`make down` first)?"
            )
        now = sum(messages_in(settings, topic) for topic in source_topics())
        if now != last:
            last, since = now, time.monotonic()
        time.sleep(0.5)
    return last


def _simulate(settings: Settings, transactions: int) -> dict[str, int]:
    plan = SimulationPlan(
        TRANSACTIONS_PER_SECOND,
        TRANSACTIONS_PER_SECOND * EVENTS_PER_TRANSACTION,
        transactions / TRANSACTIONS_PER_SECOND,
        BENCH_SEED,
    )
    return dict(simulate(settings, plan, report=lambda line: None))


def _storage(settings: Settings) -> dict:
    """Data files and bytes of every table, and the sales pair against its Postgres source."""
    with connect(settings) as conn:
        source = conn.execute("SELECT pg_total_relation_size('retail.sales_transactions')").fetchone()[0]
    tables = {}
    for table in main_tables():
        if found := listed(table.path(settings)):
            tables[table.qualified_name] = {
                "files": found.files,
                "bytes": found.bytes,
                "partitions": found.partitions,
            }
    sales = sum(tables[t.qualified_name]["bytes"] for t in (SALES_TRANSACTIONS, UNIFIED_CUSTOMER_ORDERS))
    return {
        "postgres_sales_bytes": source,
        "sales_tables_bytes": sales,
        "sales_ratio": round(sales / source, 2),
        "tables": tables,
    }


def measure(settings: Settings, changes: int, report=print) -> dict:
    with connect(settings) as conn:
        lines = conn.execute("SELECT count(*) FROM retail.sales_transactions").fetchone()[0]
    report(f"run: one pass over everything the sources hold ({lines:,} sales lines)")
    # The seed writes no events: a few transactions with theirs give every table input, so
    # the first pass builds all nine.
    _simulate(settings, SMALL_PASS_TRANSACTIONS)
    _wait_for_capture(settings)
    first = _lakehouse_run(settings)
    report(
        f"  first pass {first['seconds']} s: Bronze {first['bronze_seconds']} s, other "
        f"{first['other_seconds']} s, "
        + ", ".join(f"{name} {t['seconds']} s" for name, t in first["tables"].items())
    )
    # A few transactions and a pass, as the continuous pipeline or a schedule runs between
    # bursts: it measures each table's incremental path, which the timed run's choice
    # between the two paths (lakehouse/costs.py) weighs against the first pass's rebuilds.
    _simulate(settings, SMALL_PASS_TRANSACTIONS)
    _wait_for_capture(settings)
    small = _lakehouse_run(settings)
    report(f"  a pass after {SMALL_PASS_TRANSACTIONS} transactions {small['seconds']} s")
    before = _wait_for_capture(settings)
    operations = _simulate(settings, changes)
    events = _wait_for_capture(settings) - before
    report(f"  {operations} -> {events} messages")
    incremental = _lakehouse_run(settings)
    report(
        f"  lakehouse run {incremental['seconds']} s: Bronze {incremental['bronze_seconds']} s, "
        f"other {incremental['other_seconds']} s, "
        + ", ".join(f"{name} {t['seconds']} s" for name, t in incremental["tables"].items())
    )
    stored = _storage(settings)
    report(
        f"  Bronze sales + Silver unified orders {stored['sales_tables_bytes'] / 2**20:.1f} MiB, "
        f"{stored['sales_ratio']}x Postgres' sales_transactions "
        f"({stored['postgres_sales_bytes'] / 2**20:.1f} MiB); at most "
        f"{max(t['files'] for t in stored['tables'].values())} data files in a table"
    )
    return {
        "sales_lines": lines,
        "transactions": changes,
        "operations": operations,
        "change_events": events,
        "first_pass": first,
        "small_pass": small,
        "incremental": incremental,
        "storage": stored,
    }


def markdown(results: dict) -> str:
    first, run = results["first_pass"], results["incremental"]
    lines = [
        *header(
            f"`lakehouse run`: the first, and after {results['transactions']} source transactions", results
        ),
        f"Source: {results['sales_lines']:,} sales lines. The first run reads everything Kafka "
        f"holds and builds every table. Then the simulator's mix "
        f"({', '.join(f'{k} {v}' for k, v in sorted(results['operations'].items()))}) made "
        f"{results['change_events']:,} messages in the source topics, which the timed run "
        f"takes, each table by the cheaper path (lakehouse/costs.py). Between the two, a pass "
        f"after {SMALL_PASS_TRANSACTIONS} transactions ({results['small_pass']['seconds']} s) "
        f"measured each table's incremental path, as the continuous pipeline or a schedule "
        f"does between bursts.",
        "",
        "| part of `lakehouse run` | first run s | after the transactions s |",
        "|---|---:|---:|",
        f"| **whole run, process start to exit** | **{first['seconds']}** | **{run['seconds']}** |",
        f"| Bronze drain (five topics) | {first['bronze_seconds']} | {run['bronze_seconds']} |",
        f"| Silver and Gold, {run['tables_at_once']} tables at a time "
        f"| {first['derived_seconds']} | {run['derived_seconds']} |",
    ]
    for name, t in run["tables"].items():
        built = first["tables"].get(name, {})
        lines.append(
            f"| &nbsp;&nbsp;{name} ({built.get('mode', '-')}, then {t['mode']}) "
            f"| {built.get('seconds', '-')} | {t['seconds']} |"
        )
    lines += [
        f"| the rest: Python and JVM start, catalog, quality results "
        f"| {first['other_seconds']} | {run['other_seconds']} |",
        f"| cores the run's processes used (CPU s per wall s), of {os.cpu_count()} "
        f"| {first['cores']} | {run['cores']} |",
        f"| cores the machine was busy meanwhile (the run, the services) "
        f"| {first['machine_cores_busy']} | {run['machine_cores_busy']} |",
    ]
    stored = results["storage"]
    lines += [
        "",
        f"On storage after both runs: Bronze sales and Silver unified orders hold "
        f"{stored['sales_tables_bytes'] / 2**20:.2f} MiB of data files, "
        f"**{stored['sales_ratio']}x** Postgres' `sales_transactions` with its indexes "
        f"({stored['postgres_sales_bytes'] / 2**20:.2f} MiB).",
        "",
        "| table | data files | MiB | partitions |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {t['files']} | {t['bytes'] / 2**20:.2f} | {t['partitions']} |"
            for name, t in stored["tables"].items()
        ),
    ]
    return "\n".join(lines) + "\n"
