"""The fixed cost of a small Hudi commit: 20 changed rows upserted into a table that already
holds a year of them, in Bronze (MERGE_ON_READ) and in Silver (COPY_ON_WRITE).

Each variant writes a fresh copy of a table declared like the real one (same keys, ordering,
partitioning and change log, so `hudi_options` gives it the same options), loads the base
rows, then times `commits` upserts of 20 rows of recent days, as live changes fall, and
reports the median and the slowest after the first two (which warm the JVM up). Variants
switch one lever at a time against the options the project writes with:
- cleaning planned after every commit (Hudi's default) against every tenth commit;
- Hudi's embedded timeline server with timeline-server-based markers (its defaults) against
  the direct markers and no server the project writes with;
- compaction planned over the partitions written since the last one (Hudi 1.2's incremental
  table services, on by default) against planning over every partition.
"""

from __future__ import annotations

import dataclasses
import shutil
import statistics
from collections.abc import Callable

from pyspark.sql import SparkSession

from benchmarks.layout import DAYS, sales_lines, write_lines
from benchmarks.report import header
from bronze.tables import SALES_TRANSACTIONS
from lakehouse.settings import Settings
from lakehouse.tables import Table, hudi_options
from silver.tables import UNIFIED_CUSTOMER_ORDERS

ROWS_PER_COMMIT = 20


def _tables(settings: Settings) -> dict[str, Table]:
    silver = UNIFIED_CUSTOMER_ORDERS
    return {
        "bronze": dataclasses.replace(SALES_TRANSACTIONS, name="bench_commit_sales_bronze"),
        "silver": Table(
            name="bench_commit_orders_silver",
            layer="silver",
            table_type=silver.table_type,
            record_key=silver.record_key,
            ordering=silver.ordering,
            partitioning=silver.partitioning,
            change_log=True,
            merge_mode=silver.merge_mode,
        ),
    }


# Cleaning is planned after every commit by Hudi's default; planning it every tenth commit
# was measured too, and made no difference.
VARIANTS: dict[str, Callable[[Table, Settings], dict[str, str] | None]] = {
    "bucket index, no metadata table (kept)": hudi_options,
    "bucket index, no metadata table, clean every 10 commits": lambda table, settings: (
        hudi_options(table, settings) | {"hoodie.clean.trigger.max.commits": "10"}
    ),
    "bucket index, no metadata table, embedded timeline server and its markers": (
        lambda table, settings: (
            hudi_options(table, settings)
            | {"hoodie.embed.timeline.server": "true", "hoodie.write.markers.type": "TIMELINE_SERVER_BASED"}
        )
    ),
    "bucket index, no metadata table, compaction planned over every partition": (
        lambda table, settings: (
            hudi_options(table, settings) | {"hoodie.table.services.incremental.enabled": "false"}
            if table.table_type == "MERGE_ON_READ"
            else None
        )
    ),
}


def _time_commits(
    spark: SparkSession, table: Table, options: dict[str, str], path: str, base_rows: int, commits: int
) -> list[float]:
    shutil.rmtree(path, ignore_errors=True)
    write_lines(sales_lines(spark, 0, base_rows, 1, DAYS), table, options, path)
    # Recent orders change: 20 lines of the last three days.
    return [
        write_lines(
            sales_lines(spark, commit * ROWS_PER_COMMIT * 3, ROWS_PER_COMMIT, commit + 2, 3),
            table,
            options,
            path,
        )
        for commit in range(commits)
    ]


def measure(spark: SparkSession, settings: Settings, base_rows: int, commits: int, report=print) -> dict:
    results = []
    for layer, table in _tables(settings).items():
        for variant, options_for in VARIANTS.items():
            options = options_for(table, settings)
            if options is None:  # the lever does not apply to this table type
                continue
            seconds = _time_commits(spark, table, options, table.path(settings), base_rows, commits)
            steady = seconds[2:]
            result = {
                "layer": layer,
                "table_type": table.table_type,
                "variant": variant,
                "commits": len(steady),
                "median_seconds": round(statistics.median(steady), 2),
                "max_seconds": round(max(steady), 2),
            }
            results.append(result)
            report(
                f"{layer} {variant}: median {result['median_seconds']} s, "
                f"max {result['max_seconds']} s over {len(steady)} commits"
            )
            shutil.rmtree(table.path(settings), ignore_errors=True)
    return {
        "base_rows": base_rows,
        "rows_per_commit": ROWS_PER_COMMIT,
        "compact_every_delta_commits": settings.compact_every_delta_commits,
        "results": results,
    }


def markdown(results: dict) -> str:
    lines = [
        *header("Fixed cost of a small Hudi commit", results),
        f"{results['rows_per_commit']} changed rows of recent days upserted into a table "
        f"holding {results['base_rows']:,} rows over {DAYS} days, laid out as declared; seconds per "
        f"commit (`df.write` to done), over {results['results'][0]['commits']} commits after "
        f"two warm-up ones. Bronze also compacts "
        f"inline every {results['compact_every_delta_commits']} delta commits, which the "
        f"slowest commit shows.",
        "",
        "| layer | variant | median s | max s |",
        "|---|---|---:|---:|",
    ]
    for r in results["results"]:
        lines.append(
            f"| {r['layer']} ({r['table_type']}) | {r['variant']} "
            f"| {r['median_seconds']} | {r['max_seconds']} |"
        )
    return "\n".join(lines) + "\n"
