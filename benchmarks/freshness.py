"""How fresh Gold is while the demo runs: a sale written in Postgres, until Gold shows it.

Every table is first brought up to date with what the sources hold (ten seconds of the
demo's workload, then one Bronze drain and one pass, as a scheduled run would), so that
what follows is not a catch-up. Then the demo's workers run as `make up` starts them (the
simulator's live workload and the continuous pipeline), with the benchmark's warehouse.
Once the pipeline has committed to Gold twice (its first runs, in a fresh JVM and with the
backlog of its start, are slower than the ones that follow: the transient of a restart,
not the steady state the target is about), probes are written to Postgres one by one, a
few seconds apart, in the middle of that workload: each a completed sales line dated on a
day of its own far in the past, so that exactly one `gold.hudi_daily_sales_gold` row (that
day, category, region) exists because of it and no other change touches it. A probe's
latency at each layer is the completion time of the Hudi commit that wrote its row there
(`_hoodie_commit_time` on the timeline) minus its commit time in Postgres (Debezium's
`source.ts_ms`, kept in Bronze's `_source_ts`).

Bronze's latency is also measured over every row the workload changed meanwhile, as the
Bronze benchmark does, since that is the demo's load and not a probe's. And every
`LAG_EVERY` seconds from the first probe on, how far each Silver and Gold table trails its
inputs, read as the metrics endpoint reads it (`retailmax_table_lag_seconds`): a table that
runs once a pass shows how long the pass is.
The probes are deleted from Postgres at the end.
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from benchmarks.bronze import (
    BENCH_SEED,
    BRONZE_TABLES,
    WEB_CLICKSTREAMS,
    BenchmarkError,
    _completion_times,
    _samples,
    _summary,
)
from benchmarks.report import distribution, header
from bronze.job import BronzeJob
from bronze.tables import SALES_TRANSACTIONS
from gold.tables import DAILY_SALES
from infra.native.process import BackgroundProcess
from infra.workers import WORKERS
from ingestion.database import connect
from ingestion.simulate import SimulationPlan, simulate
from lakehouse import hudi
from lakehouse.incremental import Runner
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


def _workers(settings: Settings) -> dict[str, BackgroundProcess]:
    bench_dir = settings.state_dir / "bench"
    return {
        name: BackgroundProcess(f"freshness-{name}", bench_dir / "run", bench_dir / "logs")
        for name in WORKERS
        # The supervisor watches the demo's own pid files, not these.
        if name not in ("data-docs", "supervisor")
    }


def _remove_probes(settings: Settings) -> None:
    with connect(settings) as conn:
        conn.execute("DELETE FROM retail.sales_transactions WHERE order_id >= %s", (PROBE_ORDERS,))


def _probe_dates_in_gold(settings: Settings, count: int) -> set:
    last = (FIRST_PROBE_DAY + timedelta(days=count)).date()
    try:
        found = fastpath.query(
            settings.warehouse,
            (
                f"SELECT DISTINCT order_date FROM gold.hudi_daily_sales_gold WHERE order_date "
                f">= DATE '{FIRST_PROBE_DAY.date()}' AND order_date < DATE '{last}'"
            ),
        ).table
    except fastpath.QueryError:
        return set()  # opened while a commit was in flight; the next look sees it
    return set(found.column("order_date").to_pylist())


def _wait_until(condition, timeout: float, what: str, workers: dict[str, BackgroundProcess]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        stopped = [w.log for w in workers.values() if not w.running()]
        if stopped or time.monotonic() > deadline:
            raise BenchmarkError(
                f"{what} did not happen within {timeout:.0f} s"
                + (f"; a worker stopped, see {stopped[0]}" if stopped else "")
            )
        time.sleep(2)


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


def _probe_latencies(spark: SparkSession, settings: Settings) -> list[dict]:
    """Per probe: seconds from its Postgres commit to the commit that wrote it in each layer."""
    bronze = hudi.read(spark, SALES_TRANSACTIONS.path(settings))
    silver = hudi.read(spark, UNIFIED_CUSTOMER_ORDERS.path(settings))
    gold = hudi.read(spark, DAILY_SALES.path(settings))
    probes = (
        bronze.where(F.col("order_id") >= PROBE_ORDERS)
        .select("order_id", "_source_ts", F.col("_hoodie_commit_time").alias("bronze"))
        .join(
            silver.select("order_id", "order_date", F.col("_hoodie_commit_time").alias("silver")), "order_id"
        )
        .join(gold.select("order_date", F.col("_hoodie_commit_time").alias("gold")), "order_date")
        .collect()
    )
    completed = {layer: _completion_times(table.path(settings)) for layer, table in LAYERS.items()}
    results = []
    for probe in sorted(probes, key=lambda p: p.order_id):
        written = probe._source_ts.replace(tzinfo=UTC)
        results.append(
            {"order_date": str(probe.order_date)}
            | {
                layer: round((completed[layer][probe[layer]] - written).total_seconds(), 1)
                for layer in LAYERS
            }
        )
    return results


def measure(spark: SparkSession, settings: Settings, probes: int, spacing: float, report=print) -> dict:
    _remove_probes(settings)
    report("freshness: bringing every table up to date first")
    # Some workload first, as a running demo has had: every source then holds data.
    simulate(settings, SimulationPlan(5, 20, 10, BENCH_SEED), report=lambda line: None)
    BronzeJob(spark, settings).drain()
    runner = Runner(spark, settings)
    for table in derived_tables():
        runner.run(table)
    runner.record_results()
    built = max(_completion_times(DAILY_SALES.path(settings)))
    workers = _workers(settings)
    environment = settings.environment() | {"SPARK_UI": "false"}
    for name, process in workers.items():
        process.log.unlink(missing_ok=True)
        process.start(lakehouse(*WORKERS[name]), env=environment)
    report(
        f"freshness: the demo's workers ({', '.join(workers)}) started; waiting for their second Gold commit"
    )
    try:
        _wait_until(
            lambda: sum(t > built for t in _completion_times(DAILY_SALES.path(settings))) >= 2,
            900,
            "the pipeline's second commit to Gold",
            workers,
        )
        since = datetime.now(UTC)
        began = time.monotonic()
        sampler = _LagSampler(settings)
        sampler.start()
        _write_probes(settings, probes, spacing, report)
        _wait_until(
            lambda: len(_probe_dates_in_gold(settings, probes)) == probes,
            600,
            f"all {probes} probes reaching Gold",
            workers,
        )
        seconds = time.monotonic() - began
        table_lag = sampler.stop()
    finally:
        for process in workers.values():
            process.stop(timeout=60)
        _remove_probes(settings)
    latencies = _probe_latencies(spark, settings)
    if len(latencies) != probes:
        raise BenchmarkError(f"found {len(latencies)} of {probes} probes in all three layers")
    summary = {layer: distribution([p[layer] for p in latencies]) for layer in LAYERS}
    report(
        "  probes, Postgres commit -> "
        + "; ".join(
            f"{layer} p50 {s['p50_seconds']} s p95 {s['p95_seconds']} s" for layer, s in summary.items()
        )
    )
    tables = [t for t in BRONZE_TABLES if t.envelope == "debezium"] + [WEB_CLICKSTREAMS]
    bronze_rows = _summary([s for t in tables for s in _samples(spark, settings, t, since)])
    report(f"  every Bronze row changed meanwhile: {bronze_rows}")
    return {
        "workers": {name: WORKERS[name] for name in workers},
        "probes": probes,
        "spacing_seconds": spacing,
        "seconds": round(seconds),
        "targets_seconds": freshness_targets(),
        "probe_latency": summary,
        "table_lag": table_lag,
        "bronze_rows": bronze_rows,
        "per_probe": latencies,
    }


def markdown(results: dict) -> str:
    workers = "; ".join(f"`lakehouse {' '.join(arguments)}`" for arguments in results["workers"].values())
    lines = [
        *header("Freshness while the demo runs", results),
        f"The demo's workers ({workers}) with {results['probes']} probe sales written about "
        f"{results['spacing_seconds']:.0f} s apart. Seconds from the probe's commit in "
        f"Postgres to the Hudi commit that made it readable:",
        "",
        "| layer | p50 s | p95 s | max s |",
        "|---|---:|---:|---:|",
    ]
    for layer, s in results["probe_latency"].items():
        lines.append(
            f"| {LAYERS[layer].qualified_name} | {s['p50_seconds']} | {s['p95_seconds']} "
            f"| {s['max_seconds']} |"
        )
    b = results["bronze_rows"]
    targets = results.get("targets_seconds", {})
    lines += [
        "",
        f"Every row the workload changed in Bronze meanwhile ({b['rows']:,} rows): "
        f"p50 {b['p50_seconds']} s, p95 {b['p95_seconds']} s, max {b['max_seconds']} s.",
        "",
        f"How far each Silver and Gold table was behind the source, sampled every {LAG_EVERY} s "
        f"meanwhile, against its freshness target (`fresh_within`):",
        "",
        "| table | target s | p50 s | p95 s | max s |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {name} | {targets.get(name, '—')} | {s['p50_seconds']} | {s['p95_seconds']} "
            f"| {s['max_seconds']} |"
            for name, s in results["table_lag"].items()
        ),
    ]
    return "\n".join(lines) + "\n"
