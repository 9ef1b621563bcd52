"""Derived tables run side by side: each starts once the tables it reads (among those being
run) have finished, at most `at_once` at a time, in the order given (medallion/tables.py:
depth first, so the chain to Gold's daily sales starts first).

Why: a table's run is a chain of small steps one after another (a few Spark jobs, Hudi's
commit steps on the driver, the quality gate), each waiting on the last. On two cores a
`lakehouse run` used 0.7 of a core on average, one table at a time: a second table's steps
fill the gaps the first one leaves. Each run gets a Spark session of its own, as the
runner's temporary views are per session (`Runner.alongside`).

A failure stops new tables from starting; those already running finish, and the first
failure is raised after them, as a pass one table at a time stopped at its first failure.
A table waiting for input data (`InputNotReady`) is no failure: the tables that read it run,
and say they wait too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from lakehouse.incremental import InputNotReady, Runner
from lakehouse.reports import RunReport
from lakehouse.tables import DerivedTable


def run_tables(
    runner: Runner,
    tables: list[DerivedTable],
    full_refresh: bool,
    at_once: int,
    done: Callable[[DerivedTable, RunReport | InputNotReady], None] | None = None,
) -> dict[str, RunReport]:
    """Runs `tables` with `runner` and returns their reports by name. `done` gets each
    table's report, or why it waits, as it finishes, on the calling thread; without it, a
    table that waits fails the call."""
    names, reports = {t.name for t in tables}, {}
    pending, finished = list(tables), set()
    running: dict[Future, DerivedTable] = {}
    failures: list[tuple[DerivedTable, BaseException]] = []

    def ready(table: DerivedTable) -> bool:
        return all(i.table.name in finished for i in table.inputs if i.table.name in names)

    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="table") as pool:
        while running or (pending and not failures):
            if not failures:
                for table in [t for t in pending if ready(t)][: at_once - len(running)]:
                    pending.remove(table)
                    running[pool.submit(runner.alongside().run, table, full_refresh)] = table
            if not running:
                raise ValueError(f"tables {[t.name for t in pending]} read each other in a cycle")
            for future in wait(running, return_when=FIRST_COMPLETED).done:
                table = running.pop(future)
                finished.add(table.name)
                outcome = future.exception() or future.result()
                if isinstance(outcome, RunReport):
                    reports[table.name] = outcome
                if done and isinstance(outcome, RunReport | InputNotReady):
                    done(table, outcome)
                elif isinstance(outcome, BaseException):
                    failures.append((table, outcome))
    for table, later in failures[1:]:
        print(f"{table.name} failed too: {later}", file=sys.stderr, flush=True)
    if failures:
        raise failures[0][1]
    return reports
