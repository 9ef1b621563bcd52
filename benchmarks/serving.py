"""Query latency of the three read paths over Gold (benchmarks/queries.py), p50 and p95:

- `lakehouse query` (hudi-rs + DataFusion, no JVM): a new process per question, as a user
  or a script runs it;
- the JDBC server, warm: one connection kept open, as a BI tool keeps it;
- `lakehouse sql`, cold: a new process and JVM per question.

Runs over the benchmark's own warehouse after its Silver and Gold part, i.e. Gold built from
a million sales lines; the JDBC server it measures is one of its own on that catalog.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.queries import GOLD_QUERIES
from benchmarks.report import distribution, header
from infra import metastore
from infra.native.thrift import NativeThriftServer
from lakehouse.settings import Settings
from serving import fastpath, jdbc

LAKEHOUSE = Path(sys.executable).parent / "lakehouse"


def _summary(seconds: list[float]) -> dict:
    return {"runs": len(seconds), **distribution(seconds, digits=3)}


def _timed_command(settings: Settings, *arguments: str) -> float:
    began = time.perf_counter()
    result = subprocess.run(
        [str(LAKEHOUSE), *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, **settings.environment()},
    )
    elapsed = time.perf_counter() - began
    if result.returncode != 0:
        raise RuntimeError(f"`lakehouse {' '.join(arguments)}` failed:\n{result.stderr[-2000:]}")
    return elapsed


def measure(settings: Settings, runs: int, cold_jvm_runs: int, report=print) -> dict:
    missing = [
        name
        for name in ("gold.hudi_daily_sales_gold", "gold.hudi_customer_segments_gold")
        if name not in fastpath.existing_tables(settings.warehouse)
    ]
    if missing:
        raise RuntimeError(
            f"{', '.join(missing)} missing in {settings.warehouse}: run the Silver "
            f"and Gold part of the benchmark first (`python -m benchmarks --only derived`)"
        )
    daily_rows = (
        fastpath.query(settings.warehouse, "SELECT count(*) AS n FROM gold.hudi_daily_sales_gold")
        .table.column("n")[0]
        .as_py()
    )
    # A port of its own: the demo's JDBC server serves the demo's catalog.
    server = NativeThriftServer(dataclasses.replace(settings, thrift_port=settings.thrift_port + 2))
    report(f"query latency over Gold ({daily_rows:,} daily-sales rows): starting a JDBC server")
    metastore.ensure(server.settings)
    server.start()
    paths: dict[str, dict] = {"lakehouse query": {}, "jdbc (warm)": {}, "lakehouse sql": {}}
    try:
        with jdbc.connect(server.settings) as connection:
            cursor = connection.cursor()
            for name, sql in GOLD_QUERIES.items():
                cursor.execute(sql)  # warm-up: the first query plans and caches the table
                cursor.fetchall()
                seconds = []
                for _ in range(runs):
                    began = time.perf_counter()
                    cursor.execute(sql)
                    cursor.fetchall()
                    seconds.append(time.perf_counter() - began)
                paths["jdbc (warm)"][name] = _summary(seconds)
    finally:
        server.stop()
    for name, sql in GOLD_QUERIES.items():
        paths["lakehouse query"][name] = _summary(
            [_timed_command(settings, "query", sql) for _ in range(runs)]
        )
        paths["lakehouse sql"][name] = _summary(
            [_timed_command(settings, "sql", sql) for _ in range(cold_jvm_runs)]
        )
    for path, by_query in paths.items():
        for name, summary in by_query.items():
            report(f"  {path:<16} {name:<28} p50 {summary['p50_seconds']} s, p95 {summary['p95_seconds']} s")
    return {"daily_sales_rows": daily_rows, "queries": GOLD_QUERIES, "paths": paths}


def markdown(results: dict) -> str:
    lines = [
        *header("Query latency over Gold", results),
        f"Gold built from the benchmark's largest source ({results['daily_sales_rows']:,} rows "
        f"in hudi_daily_sales_gold). Seconds per question, end to end as the user waits:",
        "",
        "| path | query | runs | p50 s | p95 s | max s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for path, by_query in results["paths"].items():
        for name, s in by_query.items():
            lines.append(
                f"| {path} | {name} | {s['runs']} | {s['p50_seconds']} "
                f"| {s['p95_seconds']} | {s['max_seconds']} |"
            )
    lines += ["", "Queries:", ""] + [f"- `{name}`: `{sql}`" for name, sql in results["queries"].items()]
    return "\n".join(lines) + "\n"
