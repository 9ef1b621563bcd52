"""The scheduled mode's own cost: each table's command run directly against the same command
materialized as a Dagster asset (in process, on an ephemeral instance), and a whole pass
as one `lakehouse run` against the `every_table` job, after the same burst of changes.

Per table, both sides run with nothing new to read, so the difference is what Dagster adds
around the subprocess (its step, the check results read from the results table, the event
log). The whole pass shows the price of the design on top: a JVM per table instead of one.
"""

from __future__ import annotations

import statistics
import time

import dagster as dg

from benchmarks.report import header
from benchmarks.run import _lakehouse_run, _simulate, _wait_for_capture
from lakehouse.settings import Settings
from orchestration import assets, definitions
from orchestration.table_jobs import run_table


def _materialize(job: dg.JobDefinition, keys: list[dg.AssetKey] | None = None) -> float:
    began = time.monotonic()
    result = job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), asset_selection=keys, raise_on_error=False
    )
    if not result.success:
        failed = [e.message for e in result.all_events if e.is_failure]
        raise RuntimeError(f"the scheduled run failed: {failed}")
    return time.monotonic() - began


def _timed(work) -> float:
    began = time.monotonic()
    work()
    return time.monotonic() - began


def measure(settings: Settings, runs: int, changes: int, report=print) -> dict:
    job = definitions.build(settings).resolve_job_def(definitions.EVERY_TABLE_JOB)
    report("scheduler: one pass to build every table")
    _simulate(settings, changes)
    _wait_for_capture(settings)
    _lakehouse_run(settings)

    per_table = {}
    for table in assets.tables():
        direct = [_timed(lambda: run_table(table, settings)) for _ in range(runs)]
        scheduled = [_materialize(job, [assets.asset_key(table)]) for _ in range(runs)]
        per_table[table.name] = {
            "direct_seconds": round(statistics.median(direct), 2),
            "dagster_seconds": round(statistics.median(scheduled), 2),
            "overhead_seconds": round(statistics.median(scheduled) - statistics.median(direct), 2),
        }
        report(f"  {table.name}: {per_table[table.name]}")

    _simulate(settings, changes)
    _wait_for_capture(settings)
    direct_pass = _lakehouse_run(settings)["seconds"]
    _simulate(settings, changes)
    _wait_for_capture(settings)
    scheduled_pass = round(_materialize(job), 1)
    overheads = [t["overhead_seconds"] for t in per_table.values()]
    return {
        "runs": runs,
        "changes": changes,
        "tables": per_table,
        "median_overhead_seconds": round(statistics.median(overheads), 2),
        "pass": {"lakehouse_run_seconds": direct_pass, "every_table_job_seconds": scheduled_pass},
    }


def markdown(results: dict) -> str:
    lines = [
        *header("Scheduled mode benchmark", results),
        f"Each table's own command with nothing new to read, run directly and as a Dagster "
        f"asset (in process), median of {results['runs']} runs each:",
        "",
        "| table | direct s | as an asset s | overhead s |",
        "|---|---:|---:|---:|",
    ]
    for name, t in results["tables"].items():
        lines.append(f"| {name} | {t['direct_seconds']} | {t['dagster_seconds']} | {t['overhead_seconds']} |")
    one_pass = results["pass"]
    lines += [
        "",
        f"Median overhead per asset: **{results['median_overhead_seconds']} s**.",
        "",
        f"A whole pass after {results['changes']} source transactions: `lakehouse run` (one "
        f"JVM) {one_pass['lakehouse_run_seconds']} s, the `every_table` job (a JVM per "
        f"table) {one_pass['every_table_job_seconds']} s.",
    ]
    return "\n".join(lines) + "\n"
