"""Passes over the tables: Bronze landing what Kafka holds (or streaming it), each Silver
and Gold table brought up to date from its inputs' changes by the incremental runner, one
pass through every layer (`lakehouse run`), and the continuous pipeline's supervisor
(`lakehouse run --continuous`)."""

# Why one module over 300 lines: every pass takes the same writer locks, runner and report
# lines, and `lakehouse run` and the continuous supervisor are compositions of the Bronze
# and derived passes above them; the choice of what runs next lives apart
# (medallion/freshness.py), as does running tables side by side (medallion/parallel.py).

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack

from bronze.job import BronzeJob
from bronze.tables import BRONZE_TABLES, BronzeTable, bronze_table
from ingestion import connector
from lakehouse import costs, locks, quality
from lakehouse.incremental import InputNotReady, Runner, utc_now
from lakehouse.reports import RunReport
from lakehouse.rules import QualityGateFailed
from lakehouse.settings import ConfigurationError, Settings
from lakehouse.spark import POOLED, URGENT_POOL
from lakehouse.tables import DerivedTable
from medallion import freshness, parallel
from medallion.invocation import lakehouse
from medallion.tables import derived_tables, session
from monitoring.state import table_states


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
    register_in_background: bool = False,
) -> None:
    """Lands what Kafka holds now in the Bronze tables (`names`, or all), or with
    `continuous` keeps streaming until Ctrl-C: a micro-batch every `trigger_seconds`, less
    often for a table whose readers' freshness targets allow it (medallion/freshness.py).
    `register_in_background` as `medallion.tables.session` takes it: Bronze writes by path."""
    tables = bronze_tables(names)  # an unknown name is refused before the lock is taken
    with locks.exclusive_writer(settings, "bronze"):
        spark = session(
            settings, "bronze", one_shot=not continuous, register_in_background=register_in_background
        )
        job = BronzeJob(spark, settings, tables)
        if continuous:
            triggers = freshness.bronze_triggers(derived_tables(), trigger_seconds)
            every: dict[int, list[str]] = {}
            for table in tables:
                every.setdefault(triggers.get(table.name, trigger_seconds), []).append(table.name)
            groups = [f"every {seconds} s: {', '.join(landed)}" for seconds, landed in sorted(every.items())]
            print(f"bronze: streaming {'; '.join(groups)} (Ctrl-C stops)", flush=True)
            try:
                job.run_continuously(trigger_seconds, triggers=triggers)
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
    layer: str | None,
    names: list[str] | None = None,
    full_refresh: bool = False,
    as_json: bool = False,
    runner: Runner | None = None,
) -> None:
    """Brings the layer's tables (`names`, or all; every layer's without `layer`) up to date
    with their inputs' changes, or with `full_refresh` recomputes them from whole input
    snapshots, `TABLES_AT_ONCE` side by side (medallion/parallel.py). Their quality results
    are recorded at the end, failed or not."""
    layers = [layer] if layer else ["silver", "gold"]
    tables = [t for each in layers for t in layer_tables(each, names)]
    with ExitStack() as writers:
        for each in layers:
            writers.enter_context(locks.exclusive_writer(settings, each))
        runner = runner or Runner(session(settings, layer or "run", one_shot=True), settings)

        def done(table: DerivedTable, outcome: RunReport | InputNotReady) -> None:
            if isinstance(outcome, InputNotReady):
                # Nothing to build from yet (no event sent so far, say); the tables that
                # do not read this input go on.
                print(_waiting(table, outcome, as_json), flush=True)
            else:
                print(json.dumps(outcome.as_dict()) if as_json else outcome.line(), flush=True)

        began = time.monotonic()
        try:
            parallel.run_tables(runner, tables, full_refresh, settings.tables_at_once, done)
            if not as_json:
                print(
                    f"{', '.join(layers)}: {len(tables)} tables in {time.monotonic() - began:.1f} s, "
                    f"{settings.tables_at_once} at a time"
                )
        finally:
            # Once for every layer: each record builds the Data Docs index again.
            runner.record_results()


def _waiting(table: DerivedTable, waiting: InputNotReady, as_json: bool = False) -> str:
    if as_json:
        return json.dumps({"table": table.name, "mode": "waiting", "note": str(waiting)})
    return f"{table.name:<40} waiting: {waiting}"


def run(settings: Settings, full_refresh: bool = False) -> None:
    """One idempotent pass through every layer: Bronze drain, then Silver, then Gold."""
    quality.open_in_background(settings.quality_dir, settings.quality_in_memory_rows)
    # The derived pass's session call waits for the catalog's registration (and raises its error).
    bronze(settings, register_in_background=True)
    derived(settings, None, full_refresh=full_refresh)
    # The pass is exact for what Kafka held, but the source's changes since the connector
    # failed are in neither: a pass that exits 0 would say the lakehouse is current.
    if failed := connector.failure(settings):
        raise connector.ConnectorError(
            f"the Debezium connector is down, so no change at the source is captured: {failed}. "
            f"Its whole error: `lakehouse status` and {settings.state_dir}/logs/connect.log; "
            "`make services` restarts it."
        )


def run_continuously(settings: Settings, trigger_seconds: int, interval: int) -> None:
    """Bronze streams in a process of its own while this one keeps Silver and Gold within
    their freshness targets: it reads where every table stands against the source and runs
    the most overdue (after the derived tables it reads), `TABLES_AT_ONCE` such chains at a
    time and one more for the tightest target's (medallion/freshness.py). Between changes it
    waits, at most `interval` s at a time.

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
            f"Silver and Gold each within its freshness target (Ctrl-C stops)",
            flush=True,
        )
        try:
            runner = Runner(session(settings, "silver-gold", extra_config=POOLED), settings)
            # Opened while Bronze lands its first batch, which the first runs wait for anyway;
            # opened by the first run, it would be seconds of Python in front of the first Gold
            # rows. Not before the session: GX would make a session of its own, without the jars.
            quality.open_in_background(settings.quality_dir, settings.quality_in_memory_rows)
            _keep_fresh(settings, runner, interval, bronze_process)
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


# Quality results are written to their tables (one commit per layer) at most this often.
RESULTS_EVERY_SECONDS = 60


def _keep_fresh(settings: Settings, runner: Runner, interval: int, bronze_process: subprocess.Popen) -> None:
    """Up to `TABLES_AT_ONCE` chains of runs at once, each in a slot of its own: whenever a
    slot is free, the most overdue table that neither runs nor reads a running table starts
    there, after the derived tables it reads (`freshness.next_runs`). One more slot is kept
    for the chain to the tables with the tightest target, which runs in the urgent
    scheduler pool: on two cores those runs would otherwise wait for a slot, then share the
    cores with runs that have minutes to spare."""
    tables = derived_tables()
    urgent = freshness.tightest(tables)
    # A table whose run was refused (no input data yet, a quality gate) or found nothing to
    # take waits until one of its inputs commits again: retried before, it would stay the
    # most overdue forever. Those a quality gate blocked are also `blocked`.
    held: dict[str, tuple] = {}
    blocked: dict[str, tuple] = {}
    chains: dict[Future, list[DerivedTable]] = {}
    in_urgent_slot: set[Future] = set()
    # One runner (a Spark session) per slot, reused: a session for every chain would
    # pile up sessions in a process that runs for days.
    spare = queue.SimpleQueue()
    for _ in range(settings.tables_at_once + 1):
        spare.put(runner.alongside())
    results_written = time.monotonic()
    with ThreadPoolExecutor(settings.tables_at_once + 1, thread_name_prefix="slot") as slots:
        while bronze_process.poll() is None:
            states = {s.name: s for s in table_states(settings, storage=False)}
            held = {name: seen for name, seen in held.items() if _input_commits(states, name) == seen}
            blocked = {name: seen for name, seen in blocked.items() if name in held}
            standings = _standings(tables, states)
            pressing = freshness.pressing(tables, standings, set(blocked))
            while True:
                urgent_slot_free = not in_urgent_slot
                slot_free = len(chains) - len(in_urgent_slot) < settings.tables_at_once
                if not (slot_free or urgent_slot_free):
                    break
                # Copied whole (one step under the GIL): the slots take tables out meanwhile.
                running = {t.name for chain in chains.values() for t in list(chain)}
                busy = freshness.downstream(tables, running)
                plan = freshness.next_runs(
                    tables,
                    standings,
                    _expected_seconds(settings),
                    set(held) | busy,
                    only=None if slot_free else urgent,
                    at_least=pressing,
                )
                if not plan:
                    break
                takes_urgent_slot = urgent_slot_free and plan[-1].name in urgent
                for table in plan:
                    if over := standings[table.name].over_target(table):
                        print(
                            f"{table.name:<40} {standings[table.name].behind:.0f} s behind the source, "
                            f"over its {table.fresh_within.total_seconds():.0f} s target by {over:.0f} s",
                            flush=True,
                        )
                inputs_seen = {t.name: _input_commits(states, t.name) for t in plan}
                # The chain's tables still to run: one whose run has ended no longer holds
                # back the tables that read it (daily sales, once unified orders has
                # committed, while the same chain goes on to customer profiles).
                to_run = list(plan)
                pool = URGENT_POOL if takes_urgent_slot else None
                chain = slots.submit(_run_chain, spare, to_run, inputs_seen, pool)
                chains[chain] = to_run
                if takes_urgent_slot:
                    in_urgent_slot.add(chain)
            if not chains or time.monotonic() - results_written >= RESULTS_EVERY_SECONDS:
                runner.record_results()
                results_written = time.monotonic()
            pause = min(
                max(freshness.seconds_until_due(tables, standings, _expected_seconds(settings)), 1.0),
                interval,
            )
            if not chains:
                time.sleep(pause)
                continue
            finished, _ = wait(chains, timeout=pause, return_when=FIRST_COMPLETED)
            for future in finished:
                del chains[future]
                in_urgent_slot.discard(future)
                refused, gated = future.result()  # any other failure ends the loop
                held |= refused
                blocked |= gated


def _run_chain(
    spare: queue.SimpleQueue, to_run: list[DerivedTable], inputs_seen: dict[str, tuple], pool: str | None
) -> tuple[dict, dict]:
    """Runs the chain `to_run` in order on a spare runner, its Spark jobs in scheduler pool
    `pool`, taking each table out of it once its run has ended; returns the tables to hold,
    with their inputs' commits when the chain was planned, and those of them a quality gate
    blocked. A refused run stops the chain: the tables after it read it."""
    runner, held = spare.get(), {}
    runner.schedule_in(pool)
    try:
        for table in list(to_run):
            try:
                report = runner.run(table)
            except InputNotReady as waiting:
                # Bronze has not landed this input yet.
                print(_waiting(table, waiting), flush=True)
                return held | {table.name: inputs_seen[table.name]}, {}
            except QualityGateFailed as blocked:
                # Nothing was committed; the table stays blocked, the others go on, and it
                # is tried again once an input brings new commits (the rows fixed at the source).
                print(f"{table.name:<40} blocked: {blocked}", flush=True)
                gated = {table.name: inputs_seen[table.name]}
                return held | gated, gated
            print(report.line(), flush=True)
            if report.mode == "idle":
                held[table.name] = inputs_seen[table.name]
            to_run.remove(table)
        return held, {}
    finally:
        spare.put(runner)


def _standings(tables: list[DerivedTable], states: dict) -> dict[str, freshness.Standing]:
    now = utc_now()
    return {
        t.name: freshness.Standing(
            # With Kafka down the source cannot be asked; the lag behind the inputs still can.
            behind=states[t.name].source_lag(now) if states[t.name].source_known else states[t.name].lag(now),
            waiting=states[t.name].oldest_waiting is not None,
        )
        for t in tables
    }


def _input_commits(states: dict, name: str) -> tuple:
    table = next(t for t in derived_tables() if t.name == name)
    return tuple(states[i.table.name].last_commit for i in table.inputs)


def _expected_seconds(settings: Settings):
    return lambda name: costs.read(settings, name).expected_seconds
