"""Passes over the tables: Bronze landing what Kafka holds (or streaming it), each Silver
and Gold table brought up to date from its inputs' changes by the incremental runner, one
pass through every layer (`lakehouse run`), and the continuous pipeline's supervisor
(`lakehouse run --continuous`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from contextlib import ExitStack

from bronze.job import BronzeJob
from bronze.tables import BRONZE_TABLES, BronzeTable, bronze_table
from ingestion import connector
from lakehouse import locks, quality
from lakehouse.incremental import InputNotReady, Runner
from lakehouse.rules import QualityGateFailed
from lakehouse.settings import ConfigurationError, Settings
from lakehouse.tables import DerivedTable
from medallion.invocation import lakehouse
from medallion.tables import continuous_pass, derived_tables, session


def bronze_tables(names: list[str] | None) -> tuple[BronzeTable, ...]:
    return tuple(bronze_table(t) for t in names) if names else BRONZE_TABLES


def layer_tables(layer: str, names: list[str] | None) -> list[DerivedTable]:
    """The layer's derived tables that `names` pick (all of them when none is given), in
    the order they run."""
    tables = [t for t in derived_tables() if t.layer == layer]
    unknown = set(names or ()) - {t.name for t in tables}
    if unknown:
        raise ConfigurationError(
            f"no {layer} table {', '.join(sorted(unknown))}; known: {', '.join(t.name for t in tables)}"
        )
    return [t for t in tables if not names or t.name in names]


def print_landed(counts, as_json: bool = False) -> None:
    for name, c in counts.items():
        if as_json:
            print(
                json.dumps(
                    {
                        "table": name,
                        "messages": c.messages,
                        "rows": c.rows,
                        "quarantined": c.quarantined,
                        "batches": c.batches,
                        "seconds": round(c.seconds, 3),
                    }
                ),
                flush=True,
            )
        else:
            print(
                f"{name:<34} {c.messages:>9} messages  {c.rows:>9} rows  "
                f"{c.quarantined:>6} quarantined  {c.batches:>3} batches  {c.seconds:6.1f} s"
            )


def bronze(
    settings: Settings,
    names: list[str] | None = None,
    continuous: bool = False,
    trigger_seconds: int | None = None,
    as_json: bool = False,
) -> None:
    """Lands what Kafka holds now in the Bronze tables (`names`, or all), or with
    `continuous` keeps streaming a micro-batch every `trigger_seconds` until Ctrl-C."""
    tables = bronze_tables(names)  # an unknown name is refused before the lock is taken
    with locks.exclusive_writer(settings, "bronze"):
        job = BronzeJob(session(settings, "bronze"), settings, tables)
        if continuous:
            print(f"bronze: streaming every {trigger_seconds} s (Ctrl-C stops)", flush=True)
            try:
                job.run_continuously(trigger_seconds)
            except KeyboardInterrupt:
                pass
        else:
            began = time.monotonic()
            job.drain()
            if not as_json:
                print(f"bronze: drained in {time.monotonic() - began:.1f} s")
        print_landed(job.counts, as_json)


def derived(
    settings: Settings,
    layer: str,
    names: list[str] | None = None,
    full_refresh: bool = False,
    as_json: bool = False,
    runner: Runner | None = None,
) -> None:
    """Brings the layer's tables (`names`, or all) up to date with their inputs' changes, or
    with `full_refresh` recomputes them from whole input snapshots."""
    tables = layer_tables(layer, names)
    with locks.exclusive_writer(settings, layer):
        runner = runner or Runner(session(settings, layer), settings)
        try:
            for table in tables:
                try:
                    report = runner.run(table, full_refresh)
                except InputNotReady as waiting:
                    # Nothing to build from yet (no event sent so far, say); the tables that
                    # do not read this input go on.
                    print(_waiting(table, waiting, as_json), flush=True)
                    continue
                print(json.dumps(report.as_dict()) if as_json else report.line(), flush=True)
        finally:
            runner.record_results()


def _waiting(table: DerivedTable, waiting: InputNotReady, as_json: bool = False) -> str:
    if as_json:
        return json.dumps({"table": table.name, "mode": "waiting", "note": str(waiting)})
    return f"{table.name:<40} waiting: {waiting}"


def run(settings: Settings, full_refresh: bool = False) -> None:
    """One idempotent pass through every layer: Bronze drain, then Silver, then Gold."""
    quality.import_in_background()
    bronze(settings)
    # One runner for both layers: its quality gate (a Great Expectations context) takes
    # seconds to set up.
    runner = Runner(session(settings, "run"), settings)
    for layer in ("silver", "gold"):
        derived(settings, layer, full_refresh=full_refresh, runner=runner)
    # The pass is exact for what Kafka held, but the source's changes since the connector
    # failed are in neither: a pass that exits 0 would say the lakehouse is current.
    if failed := connector.failure(settings):
        raise connector.ConnectorError(
            f"the Debezium connector is down, so no change at the source is captured: {failed}. "
            f"Its whole error: `lakehouse status` and {settings.state_dir}/logs/connect.log; "
            "`make services` restarts it."
        )


def run_continuously(settings: Settings, trigger_seconds: int, interval: int) -> None:
    """Bronze streams in a process of its own while this one brings Silver and Gold up to
    date in passes, a pass starting every `interval` s (at once when the last took longer);
    a pass runs the tables with a freshness target between the others while it is on time
    to end within CONTINUOUS_PASS_SECONDS (medallion.tables.continuous_pass).

    Two JVMs rather than one: within one Spark application a Silver or Gold job holds the
    cores until it ends, so the streams' micro-batches (and everything downstream of them)
    waited behind it. The Bronze process is this one's child, in its process group: stopping
    or killing the group stops both, and this one stops when Bronze does."""
    with ExitStack() as writers:
        for layer in ("silver", "gold"):
            writers.enter_context(locks.exclusive_writer(settings, layer))
        bronze_process = subprocess.Popen(
            lakehouse("bronze", "--continuous", "--trigger-seconds", str(trigger_seconds))
        )
        # A SIGTERM to this process alone (not its group) must not leave Bronze running.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        print(
            f"run: Bronze streaming every {trigger_seconds} s (process {bronze_process.pid}), "
            f"Silver and Gold every {interval} s (Ctrl-C stops)",
            flush=True,
        )
        try:
            runner = Runner(session(settings, "silver-gold"), settings)
            while bronze_process.poll() is None:
                began = time.monotonic()
                for table in continuous_pass(
                    lambda: time.monotonic() - began, settings.continuous_pass_seconds
                ):
                    try:
                        print(runner.run(table).line(), flush=True)
                    except InputNotReady as waiting:
                        # Bronze has not landed this input yet: the next pass tries again.
                        print(_waiting(table, waiting), flush=True)
                    except QualityGateFailed as blocked:
                        # Nothing was committed; the table stays blocked, the others go on,
                        # and each pass retries it until the rows are fixed at the source.
                        print(f"{table.name:<40} blocked: {blocked}", flush=True)
                runner.record_results()
                time.sleep(max(0.0, interval - (time.monotonic() - began)))
        except KeyboardInterrupt:
            pass
        finally:
            if bronze_process.poll() is None:
                bronze_process.terminate()
                bronze_process.wait()
        if bronze_process.returncode not in (0, -15):
            raise RuntimeError(
                f"the Bronze streams stopped (exit {bronze_process.returncode}); their error is printed above"
            )
