"""The demo from an empty warehouse, as a new user meets it after `make clean` and `make up`:
how soon Gold has rows, how fresh it stays, and how fast it takes in a burst.

The demo's workers start as `make up` starts them (the simulator's live workload, the
continuous pipeline, the dashboard and the metrics) on a warehouse and catalog of their own,
empty, so the pipeline's first runs build every table from what Kafka holds while the
workload already runs. The benchmark times the first commit to `gold.hudi_daily_sales_gold`
from the workers' start. From `STEADY_AFTER` seconds on, probes are written to Postgres one
by one, a few seconds apart, in the middle of that workload: each a completed sales line
dated on a day of its own far in the past, so that exactly one daily sales row (that day,
category, region) exists because of it and no other change touches it. A probe's latency at
each layer is the completion time of the Hudi commit that first showed its row there minus
its commit time in Postgres (Debezium's `source.ts_ms`, kept in Bronze's `_source_ts`): in
Bronze the row's own `_hoodie_commit_time`; in Silver and Gold, which the pipeline may
rebuild (rewriting every row's commit time), the commit a query every `PROBE_LOOK_EVERY`
seconds first found it in.

Meanwhile: Bronze's latency over every row the workload changed, as the Bronze benchmark
measures it; every `LAG_EVERY` seconds, each Silver and Gold table's lag behind the source
(the age of the oldest source change it does not reflect), read as the metrics endpoint
reads it, against its freshness target; and the share of the machine's CPU left idle.

Then a burst, as a shop's busiest minute: new orders and updates to the most recent lines,
in two transactions. The benchmark follows every table until each reflects every source
change up to the burst's end and a minute more, and records how far behind each fell and
when it was back within its target. The probes are deleted from Postgres at the end.
"""

# Why one module: the watchers (probes, lags, CPU) and the burst all run against the one set
# of demo workers this part starts and stops, and its results page reads what all of them
# measured; the shop's changes it applies live apart (benchmarks/changes.py).

from __future__ import annotations

import dataclasses
import random
import shutil
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from benchmarks.bronze import (
    BENCH_SEED,
    BRONZE_TABLES,
    WEB_CLICKSTREAMS,
    BenchmarkError,
    _completion_times,
    _cpu_seconds,
    _samples,
    _summary,
    wait_for_capture,
)
from benchmarks.changes import shop_changes
from benchmarks.report import distribution, header
from bronze.tables import SALES_TRANSACTIONS
from gold.tables import DAILY_SALES
from infra import metastore
from infra.native.process import BackgroundProcess
from infra.workers import WORKERS
from ingestion.database import connect
from ingestion.topics import messages_in
from lakehouse import costs, hudi
from lakehouse.settings import Settings
from medallion.invocation import lakehouse
from medallion.tables import derived_tables, freshness_targets
from monitoring.state import table_states
from serving import fastpath
from silver.tables import UNIFIED_CUSTOMER_ORDERS

PROBE_ORDERS = 10**12  # far above the workload's order ids, which grow by one per order
FIRST_PROBE_DAY = datetime(2001, 1, 1, 12, tzinfo=UTC)
LAYERS = {"bronze": SALES_TRANSACTIONS, "silver": UNIFIED_CUSTOMER_ORDERS, "gold": DAILY_SALES}
LAG_EVERY = 15
PROBE_LOOK_EVERY = 2
# The steady state: probes from five minutes after the demo started.
STEADY_AFTER = 300
BURST_TIMEOUT = 1200
# How long a table must have reflected the burst before an over-target sample is the steady
# state's, not the burst's.
BURST_SETTLE = 60


class _LagSampler(threading.Thread):
    """Samples, until stopped, how far each derived table is behind the source: the age of
    the oldest source change it does not reflect yet."""

    def __init__(self, settings: Settings):
        super().__init__(daemon=True)
        self.settings, self.stopped = settings, threading.Event()
        self.lags: dict[str, list[float]] = defaultdict(list)

    def run(self) -> None:
        while not self.stopped.wait(LAG_EVERY):
            read_at = datetime.now(UTC).replace(tzinfo=None)
            for state in table_states(self.settings, storage=False):
                if state.layer in ("silver", "gold") and (behind := state.source_lag(read_at)) is not None:
                    self.lags[state.name].append(behind)

    def stop(self) -> dict[str, dict]:
        self.stopped.set()
        self.join()
        return {name: distribution(lags) for name, lags in self.lags.items()}


def _worker_cpu_seconds(workers: dict[str, BackgroundProcess]) -> dict[str, float]:
    """CPU seconds so far of each worker's processes, the pipeline's split into its Bronze
    streams and its Silver and Gold runs."""
    seconds = {}
    for name, process in workers.items():
        total = _cpu_seconds(process.pid)
        if name == "pipeline":
            streams = [c for c in psutil.Process(process.pid).children() if "bronze" in c.cmdline()]
            bronze = sum(_cpu_seconds(c.pid) for c in streams)
            seconds |= {"Bronze streams": bronze, "Silver and Gold runs": total - bronze}
        else:
            seconds[name] = total
    return seconds


class MachineCpu:
    """Where the machine's CPU went since this was made: the idle share, the cores each
    worker used (CPU seconds per wall second), the rest being the services', and the share
    the hypervisor gave other guests instead (steal time): runs of the same code an hour
    apart differed by more than 2x, and steal is the one sign of a busy host a guest sees."""

    def __init__(self, workers: dict[str, BackgroundProcess]):
        self.workers = workers
        self.began, self.began_at = psutil.cpu_times(), time.monotonic()
        self.workers_began = _worker_cpu_seconds(workers)

    def shares(self) -> dict:
        now, wall = psutil.cpu_times(), time.monotonic() - self.began_at
        idle = (now.idle + now.iowait) - (self.began.idle + self.began.iowait)
        total = sum(now) - sum(self.began)
        idle_share = idle / total
        busy = (1 - idle_share) * psutil.cpu_count()
        workers = {
            name: round((seconds - self.workers_began[name]) / wall, 2)
            for name, seconds in _worker_cpu_seconds(self.workers).items()
        }
        return {
            "idle_share": round(idle_share, 3),
            "cores_busy": round(busy, 2),
            "worker_cores": workers,
            "other_cores": round(busy - sum(workers.values()), 2),
            "stolen_share": round((now.steal - self.began.steal) / total, 3),
        }


def _demo_settings(settings: Settings) -> Settings:
    """A warehouse and catalog of the demo's own, empty as `make clean` leaves them."""
    warehouse = settings.state_dir / "bench" / "demo"
    return dataclasses.replace(
        settings,
        warehouse=str(warehouse),
        checkpoints=str(warehouse / "_checkpoints"),
        metastore_database="metastore_bench_demo",
    )


def _derived_lags(settings: Settings) -> dict[str, tuple[float | None, datetime | None]]:
    """Each Silver and Gold table's lag behind the source now, and its oldest source change
    not reflected yet."""
    read_at = datetime.now(UTC).replace(tzinfo=None)
    return {
        state.name: (state.source_lag(read_at), state.oldest_unreflected)
        for state in table_states(settings, storage=False)
        if state.layer in ("silver", "gold")
    }


def _over(lag: float | None, target: float) -> bool:
    """Whether a table is past its target: behind it, or not built yet."""
    return lag is None or lag > target


def recovered_after(
    samples: list[tuple[float, dict[str, float | None]]],
    reflected_at: dict[str, float],
    targets: dict[str, float],
    settle: float,
) -> dict[str, float]:
    """Per table, seconds from the burst until it was back within its target: its last
    sample over the target (or not built yet) up to `settle` seconds after it reflected the
    burst, 0 if it never was. Samples later than that are the steady state's: a table whose
    lag sits near its target crosses it now and then with or without a burst, and counting
    those would time the workload, not the recovery."""
    recovered = {}
    for name, target in targets.items():
        until = reflected_at[name] + settle
        over = [at for at, lags in samples if at <= until and _over(lags[name], target)]
        recovered[name] = max(over, default=0.0)
    return recovered


def _burst(settings: Settings, lines: int, updates: int, workers: dict, report) -> dict:
    """Applies the burst, then follows every table until each has reflected all of it and
    stayed a while; returns, per table, when it was back within its target and when it
    reflected the burst, and how far behind each fell meanwhile, in seconds from the burst."""
    before = messages_in(settings, SALES_TRANSACTIONS.topic)
    changed = shop_changes(settings, lines, updates, seed=BENCH_SEED + 1)
    applied = datetime.now(UTC).replace(tzinfo=None)
    began = time.monotonic()
    report(f"  burst: {lines:,} new sales lines and {updates:,} updated applied; following every table")
    # Until Debezium has published it, no table looks behind because of it.
    wait_for_capture(settings, SALES_TRANSACTIONS.topic, before + changed, timeout=300)
    targets = freshness_targets()
    samples: list[tuple[float, dict[str, float | None]]] = []
    reflected_at: dict[str, float] = {}

    def settled() -> bool:
        at, lags = time.monotonic() - began, _derived_lags(settings)
        samples.append((at, {name: lag for name, (lag, _) in lags.items()}))
        for name, (lag, oldest) in lags.items():
            if name not in reflected_at and lag is not None and (oldest is None or oldest > applied):
                reflected_at[name] = at
        return len(reflected_at) == len(targets) and at >= max(reflected_at.values()) + BURST_SETTLE

    _wait_until(settled, BURST_TIMEOUT, "every table reflecting the burst", workers, poll=LAG_EVERY / 3)
    recovered = recovered_after(samples, reflected_at, targets, BURST_SETTLE)
    within, reflected = round(max(recovered.values())), round(max(reflected_at.values()))
    report(f"  every table back within its target {within} s after the burst, reflected by {reflected} s")
    last_over = max(
        (at for at, lags in samples if any(_over(lag, targets[n]) for n, lag in lags.items())),
        default=0.0,
    )
    return {
        "new_lines": lines,
        "updated_lines": updates,
        "source_rows_changed": changed,
        "settle_seconds": BURST_SETTLE,
        "seconds_until_within_targets": within,
        "seconds_until_reflected": reflected,
        "seconds_until_last_over_any_target": round(last_over),
        "per_table": {
            name: {
                "back_within_target_seconds": round(recovered[name]),
                "reflected_seconds": round(reflected_at[name]),
                "max_lag_seconds": round(max((lags[name] or 0.0) for _, lags in samples), 1),
            }
            for name in targets
        },
    }


def _workers(settings: Settings) -> dict[str, BackgroundProcess]:
    bench_dir = settings.state_dir / "bench"
    return {
        name: BackgroundProcess(f"freshness-{name}", bench_dir / "run", bench_dir / "logs")
        for name in WORKERS
        # The supervisor watches the demo's own pid files, not these.
        if name not in ("data-docs", "supervisor")
    }


def _has_commits(table_path: str) -> bool:
    return (Path(table_path) / ".hoodie" / "timeline").is_dir() and bool(_completion_times(table_path))


def _remove_probes(settings: Settings) -> None:
    with connect(settings) as conn:
        conn.execute("DELETE FROM retail.sales_transactions WHERE order_id >= %s", (PROBE_ORDERS,))


def _probes_seen(settings: Settings, layer: str, count: int) -> set[int]:
    """The probes (by number) a query of the layer's table shows now."""
    if layer == "silver":
        sql = (
            f"SELECT order_id - {PROBE_ORDERS} AS probe FROM {UNIFIED_CUSTOMER_ORDERS.qualified_name} "
            f"WHERE order_id >= {PROBE_ORDERS} AND order_id < {PROBE_ORDERS + count}"
        )
    else:
        last = (FIRST_PROBE_DAY + timedelta(days=count)).date()
        sql = (
            f"SELECT DISTINCT order_date FROM {DAILY_SALES.qualified_name} WHERE order_date "
            f">= DATE '{FIRST_PROBE_DAY.date()}' AND order_date < DATE '{last}'"
        )
    try:
        found = fastpath.query(settings.warehouse, sql).table
    except fastpath.QueryError:
        return set()  # opened while a commit was in flight; the next look sees it
    if layer == "silver":
        return set(found.column("probe").to_pylist())
    return {(day - FIRST_PROBE_DAY.date()).days for day in found.column("order_date").to_pylist()}


class _ProbeWatcher(threading.Thread):
    """Looks at Silver and Gold every `PROBE_LOOK_EVERY` seconds, as a user's query would, and
    gives each probe, in each layer, the completion time of the commit that first showed it.

    Afterwards its rows cannot say: a rebuild rewrites every row, with its own commit time.
    A probe a look shows for the first time came with a commit completed after the newest
    one the look before had read, and at most when this look ended: the earliest such
    commit is taken (commits take longer than the interval between looks, so there is
    rarely more than one)."""

    def __init__(self, settings: Settings, count: int):
        super().__init__(daemon=True)
        self.settings, self.count, self.stopped = settings, count, threading.Event()
        self.first_shown: dict[str, dict[int, datetime]] = {"silver": {}, "gold": {}}

    def all_shown(self) -> bool:
        return all(len(shown) == self.count for shown in self.first_shown.values())

    def run(self) -> None:
        newest_read = dict.fromkeys(self.first_shown, datetime.min.replace(tzinfo=UTC))
        while not self.stopped.wait(PROBE_LOOK_EVERY):
            for layer, shown in self.first_shown.items():
                path = LAYERS[layer].path(self.settings)
                if not _has_commits(path):
                    continue
                before = max(_completion_times(path).values())
                new = _probes_seen(self.settings, layer, self.count) - shown.keys()
                if new:
                    after = _completion_times(path).values()
                    came_with = min((t for t in after if t > newest_read[layer]), default=max(after))
                    shown.update(dict.fromkeys(new, came_with))
                newest_read[layer] = before

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def _wait_until(
    condition, timeout: float, what: str, workers: dict[str, BackgroundProcess], poll: float = 2
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        stopped = [w.log for w in workers.values() if not w.running()]
        if stopped or time.monotonic() > deadline:
            raise BenchmarkError(
                f"{what} did not happen within {timeout:.0f} s"
                + (f"; a worker stopped, see {stopped[0]}" if stopped else "")
            )
        time.sleep(poll)


def _write_probes(settings: Settings, count: int, spacing: float, report) -> None:
    rng = random.Random(BENCH_SEED)
    with connect(settings, autocommit=True) as conn:
        customers = conn.execute("SELECT max(customer_id) FROM retail.customer_master").fetchone()[0]
        products = conn.execute(
            "SELECT product_id, unit_price FROM retail.product_catalog ORDER BY product_id LIMIT 100"
        ).fetchall()
        for number in range(count):
            product_id, price = rng.choice(products)
            now = datetime.now(UTC)
            conn.execute(
                "INSERT INTO retail.sales_transactions (order_id, line_item_id, customer_id,"
                " product_id, quantity, unit_price, discount, channel, status, transaction_ts,"
                " updated_ts) VALUES (%s, 1, %s, %s, 1, %s, 0, 'web', 'completed', %s, %s)",
                (
                    PROBE_ORDERS + number,
                    rng.randint(1, customers),
                    product_id,
                    price,
                    FIRST_PROBE_DAY + timedelta(days=number),
                    now,
                ),
            )
            time.sleep(rng.uniform(0.5, 1.5) * spacing)
    report(f"  {count} probes written")


def _probe_latencies(spark: SparkSession, settings: Settings, watcher: _ProbeWatcher) -> list[dict]:
    """Per probe: seconds from its Postgres commit to the commit that showed it in each layer.
    Bronze is never rebuilt, so its rows keep the commit that landed them."""
    probes = (
        hudi.read(spark, SALES_TRANSACTIONS.path(settings))
        .where(F.col("order_id").between(PROBE_ORDERS, PROBE_ORDERS + watcher.count - 1))
        .select("order_id", "_source_ts", "_hoodie_commit_time")
        .collect()
    )
    landed = _completion_times(SALES_TRANSACTIONS.path(settings))
    results = []
    for probe in sorted(probes, key=lambda p: p.order_id):
        number, written = probe.order_id - PROBE_ORDERS, probe._source_ts.replace(tzinfo=UTC)
        shown = {"bronze": landed[probe._hoodie_commit_time]} | {
            layer: first[number] for layer, first in watcher.first_shown.items() if number in first
        }
        if len(shown) == len(LAYERS):
            results.append(
                {"probe": number}
                | {layer: round((shown[layer] - written).total_seconds(), 1) for layer in LAYERS}
            )
    return results


def _steady_latencies(
    spark: SparkSession, settings: Settings, watcher: _ProbeWatcher, since: datetime, report
) -> tuple[list[dict], dict]:
    """Each probe's latency per layer, and Bronze's over every row changed since `since`."""
    latencies = _probe_latencies(spark, settings, watcher)
    if len(latencies) != watcher.count:
        raise BenchmarkError(f"found {len(latencies)} of {watcher.count} probes in all three layers")
    for layer in LAYERS:
        spread = distribution([p[layer] for p in latencies])
        report(f"  probes to {layer}: p50 {spread['p50_seconds']} s, p95 {spread['p95_seconds']} s")
    tables = [t for t in BRONZE_TABLES if t.envelope == "debezium"] + [WEB_CLICKSTREAMS]
    bronze_rows = _summary([s for t in tables for s in _samples(spark, settings, t, since)])
    report(f"  every Bronze row changed meanwhile: {bronze_rows}")
    return latencies, bronze_rows


def measure(
    spark: SparkSession,
    settings: Settings,
    probes: int,
    spacing: float,
    burst_lines: int,
    burst_updates: int,
    report=print,
) -> dict:
    demo = _demo_settings(settings)
    shutil.rmtree(demo.warehouse, ignore_errors=True)
    costs.forget(demo)
    metastore.ensure(demo)
    _remove_probes(demo)
    workers = _workers(demo)
    environment = demo.environment() | {"SPARK_UI": "false"}
    kafka_held = {t.topic: messages_in(demo, t.topic) for t in BRONZE_TABLES}
    for name, process in workers.items():
        process.log.unlink(missing_ok=True)
        process.start(lakehouse(*WORKERS[name]), env=environment)
    began = time.monotonic()
    report(f"freshness: the demo's workers ({', '.join(workers)}) started on an empty warehouse")
    try:
        _wait_until(lambda: _has_commits(DAILY_SALES.path(demo)), 900, "Gold's first rows", workers)
        first_gold = time.monotonic() - began
        report(f"  first Gold rows {first_gold:.0f} s after the start; probes from {STEADY_AFTER} s on")
        time.sleep(max(0.0, began + STEADY_AFTER - time.monotonic()))
        since = datetime.now(UTC)
        steady_began = time.monotonic()
        machine_cpu = MachineCpu(workers)
        sampler, watcher = _LagSampler(demo), _ProbeWatcher(demo, probes)
        sampler.start()
        watcher.start()
        _write_probes(demo, probes, spacing, report)
        _wait_until(watcher.all_shown, 600, f"all {probes} probes reaching Gold", workers)
        watcher.stop()
        steady_seconds = time.monotonic() - steady_began
        cpu = machine_cpu.shares()
        table_lag = sampler.stop()
        # Read before the burst, whose rows would count as the workload's, and whose new
        # orders take ids above the probes' while those are in the source.
        latencies, bronze_rows = _steady_latencies(spark, demo, watcher, since, report)
        _remove_probes(demo)
        # The tables with minutes of target are first built once due: the burst comes after,
        # so that what follows it is the burst's doing, not a first build.
        _wait_until(
            lambda: all(_has_commits(t.path(demo)) for t in derived_tables()),
            BURST_TIMEOUT,
            "every table's first build",
            workers,
        )
        all_built = time.monotonic() - began
        report(f"  every table built {all_built:.0f} s after the start")
        burst = _burst(demo, burst_lines, burst_updates, workers, report)
    finally:
        for process in workers.values():
            process.stop(timeout=60)
        _remove_probes(demo)
    summary = {layer: distribution([p[layer] for p in latencies]) for layer in LAYERS}
    return {
        "workers": {name: WORKERS[name] for name in workers},
        "kafka_messages_at_start": sum(kafka_held.values()),
        "first_gold_seconds": round(first_gold),
        "all_built_seconds": round(all_built),
        "steady_after_seconds": STEADY_AFTER,
        "probes": probes,
        "spacing_seconds": spacing,
        "seconds": round(steady_seconds),
        "machine_idle_share": cpu["idle_share"],
        "cpu": cpu,
        "targets_seconds": freshness_targets(),
        "probe_latency": summary,
        "table_lag": table_lag,
        "bronze_rows": bronze_rows,
        "burst": burst,
        "per_probe": latencies,
    }


def markdown(results: dict) -> str:
    workers = "; ".join(f"`lakehouse {' '.join(arguments)}`" for arguments in results["workers"].values())
    targets = results["targets_seconds"]
    lines = [
        *header("The demo from an empty warehouse", results),
        f"The demo's workers ({workers}) started on an empty warehouse, as after `make clean` "
        f"and `make up`, with the {results['kafka_messages_at_start']:,} messages Kafka held. "
        f"**First Gold rows {results['first_gold_seconds']} s after the start.** From "
        f"{results['steady_after_seconds']} s on, {results['probes']} probe sales written about "
        f"{results['spacing_seconds']:.0f} s apart, over {results['seconds']} s; meanwhile "
        f"**{results['machine_idle_share']:.0%} of the machine's CPU was idle**. Seconds from "
        f"a probe's commit in Postgres to the Hudi commit that made it readable:",
        "",
        "| layer | p50 s | p95 s | max s |",
        "|---|---:|---:|---:|",
    ]
    for layer, s in results["probe_latency"].items():
        lines.append(
            f"| {LAYERS[layer].qualified_name} | {s['p50_seconds']} | {s['p95_seconds']} "
            f"| {s['max_seconds']} |"
        )
    b, burst, cpu = results["bronze_rows"], results["burst"], results["cpu"]
    lines += [
        "",
        f"The machine's {cpu['cores_busy']} busy cores meanwhile, by worker (CPU seconds per "
        f"wall second): "
        + ", ".join(f"{name} {cores}" for name, cores in cpu["worker_cores"].items())
        + f"; the services (Postgres, Kafka, Connect, the Thrift server) and the benchmark "
        f"{cpu['other_cores']}. The hypervisor gave other guests {cpu['stolen_share']:.1%} of "
        f"the machine's CPU time (steal), a sign of how busy the host was.",
        "",
        f"Every row the workload changed in Bronze meanwhile ({b['rows']:,} rows): "
        f"p50 {b['p50_seconds']} s, p95 {b['p95_seconds']} s, max {b['max_seconds']} s.",
        "",
        f"How far each Silver and Gold table was behind the source, sampled every {LAG_EVERY} s "
        f"while the probes ran, against its freshness target (`fresh_within`); then, once "
        f"every table was built ({results['all_built_seconds']} s after the start), after a "
        f"burst of {burst['new_lines']:,} new sales lines and {burst['updated_lines']:,} "
        f"updated ones, how far behind it fell, when it reflected the burst (a table with "
        f"minutes of target runs once it is due) and when it was back within its target: its "
        f"last sample over the target until {burst['settle_seconds']} s after it reflected the "
        f"burst; later ones are the steady state's. **Every table was back within its target "
        f"{burst['seconds_until_within_targets']} s after the burst**, and every table "
        f"reflected it {burst['seconds_until_reflected']} s after it. Counting every sample "
        f"until then, steady-state ones included, the last over a target came "
        f"{burst['seconds_until_last_over_any_target']} s after the burst.",
        "",
        "| table | target s | p50 s | p95 s | max s | after the burst: max s | reflected at s "
        "| back within target at s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {targets[name]:.0f} | {s['p50_seconds']} | {s['p95_seconds']} "
            f"| {s['max_seconds']} | {burst['per_table'][name]['max_lag_seconds']} "
            f"| {burst['per_table'][name]['reflected_seconds']} "
            f"| {burst['per_table'][name]['back_within_target_seconds']} |"
            for name, s in results["table_lag"].items()
        ),
    ]
    return "\n".join(lines) + "\n"
