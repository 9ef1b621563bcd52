"""Table layout: what partition granularity, Parquet codec and key bloom filters cost, at the
demo's size and at millions of sales lines, in Bronze (MERGE_ON_READ) and Silver
(COPY_ON_WRITE).

For each base size and granularity, a fresh copy of Bronze sales and of Silver unified
orders, declared like the real ones but for their partitioning, is loaded with that many
sales lines spread over a year (as wide as the real rows), then:
- `commits` small upserts of 20 lines of the last three days, as the live demo writes them
  (median seconds, after two warm-up commits);
- one upsert of 1% of the lines, the most recent ones, as the Silver/Gold benchmark
  changes them;
- a full read (count), a read of one month's lines (pruned by the partition filter) and a
  lookup of one order (which only Parquet's row-group and page statistics can narrow);
- the table's data files, bytes and partitions afterwards.
Then, at `variant_lines` and the declared granularity, the file format lever by lever
(`VARIANTS`): the Parquet codec (Hudi's default gzip, snappy, zstd), the key bloom filter
Hudi writes into every base file by default, row-group and page sizes, and Hudi's file
sizing (the largest base file, and the size below which new rows are packed into an
existing file).
"""

# Why one module: both halves load, change and read the same two tables with the same
# helpers, and one results file and one page of the docs report them together.

from __future__ import annotations

import dataclasses
import shutil
import statistics
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.report import header
from bronze.decode import lineage_columns
from bronze.tables import SALES_TRANSACTIONS
from lakehouse import hudi
from lakehouse.files import storage
from lakehouse.partitions import with_partition_field
from lakehouse.settings import Settings
from lakehouse.tables import Partitioning, Table, hudi_options
from silver.tables import UNIFIED_CUSTOMER_ORDERS

DAYS = 365
ROWS_PER_SMALL_COMMIT = 20
CHANGE_SHARE = 0.01
GRANULARITIES = ("none", "month", "day")
DECLARED = "declared: zstd, no bloom filter, Hudi's sizes (120 MiB row groups and files, 1 MiB pages)"
VARIANTS = {
    DECLARED: {},
    "gzip (Hudi's default codec)": {"hoodie.parquet.compression.codec": "gzip"},
    "snappy": {"hoodie.parquet.compression.codec": "snappy"},
    "gzip and the key bloom filter (Hudi's defaults)": {
        "hoodie.parquet.compression.codec": "gzip",
        "hoodie.parquet.bloom.filter.enabled": "true",
    },
    "row groups of 4 MiB": {"hoodie.parquet.block.size": str(4 * 2**20)},
    "pages of 64 KiB": {"hoodie.parquet.page.size": str(64 * 2**10)},
    "files of at most 8 MiB, packed below 4 MiB": {
        "hoodie.parquet.max.file.size": str(8 * 2**20),
        "hoodie.parquet.small.file.limit": str(4 * 2**20),
    },
}


def sales_lines(spark: SparkSession, first: int, count: int, version: int, days: int) -> DataFrame:
    """`count` sales lines from order `first` on, as Silver holds them (Bronze's columns are
    a subset), spread evenly over the last `days` days; `version` is their ordering value."""
    day = F.date_sub(F.current_date(), (F.col("id") % days).cast("int"))
    ts = F.to_timestamp(day) + F.make_interval(secs=(F.col("id") * 7919) % 86400)

    def pick(values):
        return F.element_at(F.array(*map(F.lit, values)), (F.col("id") % len(values) + 1).cast("int"))

    return spark.range(first, first + count).select(
        F.col("id").alias("order_id"),
        (F.col("id") % 3 + 1).cast("int").alias("line_item_id"),
        (F.col("id") % 50_000).alias("customer_id"),
        (F.col("id") % 2_000).alias("product_id"),
        (F.col("id") % 4 + 1).cast("int").alias("quantity"),
        ((F.col("id") % 90_000) / 100 + 1).cast("decimal(12,2)").alias("unit_price"),
        F.lit(0).cast("decimal(12,2)").alias("discount"),
        ((F.col("id") % 90_000) / 100 + 1).cast("decimal(14,2)").alias("line_total"),
        pick(["web", "mobile_app", "store", "marketplace"]).alias("channel"),
        F.format_string("ST-%03d", F.col("id") % 20 + 1).alias("store_id"),
        pick(["completed", "pending", "returned", "cancelled"]).alias("status"),
        ts.alias("transaction_ts"),
        F.date_format(day, "yyyy-MM-dd").alias("dt"),
        day.alias("order_date"),
        pick(["north_america", "europe", "asia_pacific", "latin_america"]).alias("region"),
        pick(["US", "GB", "DE", "JP", "BR", "FR"]).alias("country"),
        pick(["bronze", "silver", "gold", "platinum"]).alias("loyalty_tier"),
        F.format_string("SKU-%06d", F.col("id") % 2_000).alias("sku"),
        F.format_string("Product %d", F.col("id") % 2_000).alias("product_name"),
        pick(["electronics", "apparel", "sports", "grocery"]).alias("product_category"),
        pick(["Voltix", "Casa", "Stride", "Lumen"]).alias("brand"),
        F.lit("c").alias("_op"),
        (F.col("id") * 10 + version).alias("_source_lsn"),
        ts.alias("_source_ts"),
        F.current_timestamp().alias("_ingested_at"),
        F.lit("retailmax.retail.sales_transactions").alias("_kafka_topic"),
        F.lit(0).alias("_kafka_partition"),
        F.col("id").alias("_kafka_offset"),
        ts.alias("updated_ts"),
        F.current_timestamp().alias("last_updated_ts"),
        F.lit(False).alias("_hoodie_is_deleted"),
    )


def _columns(spark: SparkSession, table: Table) -> list[str]:
    """The table's columns but its derived partition column, which the write adds: Bronze's
    as declared, Silver's as its transform makes them (read off a run over empty inputs),
    with the delete marker every write carries."""
    if table.layer == "bronze":
        derived = table.partition_field if table.partitioning.derives_field else None
        return [c for c in (*table.columns, *lineage_columns(table)) if c != derived]
    for source in UNIFIED_CUSTOMER_ORDERS.inputs:
        schema = ", ".join(f"{name} {kind}" for name, kind in source.table.columns.items())
        spark.createDataFrame([], schema).createOrReplaceTempView(source.alias)
    return [*spark.sql(UNIFIED_CUSTOMER_ORDERS.transform_sql()).columns, hudi.DELETED]


def _tables(by: str) -> list[Table]:
    return [
        dataclasses.replace(
            SALES_TRANSACTIONS,
            name="bench_layout_sales_bronze",
            partitioning=Partitioning("dt", by=by, from_ts="transaction_ts"),
        ),
        Table(
            name="bench_layout_orders_silver",
            layer="silver",
            table_type="COPY_ON_WRITE",
            record_key=UNIFIED_CUSTOMER_ORDERS.record_key,
            ordering=UNIFIED_CUSTOMER_ORDERS.ordering,
            partitioning=Partitioning("order_date", by=by),
            change_log=True,
            merge_mode=UNIFIED_CUSTOMER_ORDERS.merge_mode,
        ),
    ]


def _files(path: str) -> dict:
    root = Path(path)
    found = storage([(str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file()])
    return {
        "data_files": found.files,
        "bytes": found.bytes,
        "partitions": found.partitions,
        "average_file_bytes": found.average_bytes,
    }


def write_lines(frame: DataFrame, table: Table, options: dict[str, str], path: str) -> float:
    """Upserts sales lines into `table` at `path` with `options`; returns the seconds taken."""
    began = time.monotonic()
    with_partition_field(frame.select(_columns(frame.sparkSession, table)), table).write.format(
        "hudi"
    ).options(**options).mode("append").save(path)
    return time.monotonic() - began


def _timed(action) -> float:
    began = time.monotonic()
    action()
    return time.monotonic() - began


def _one_table(
    spark: SparkSession, settings: Settings, table: Table, lines: int, commits: int, options: dict[str, str]
) -> dict:
    path = table.path(settings)
    shutil.rmtree(path, ignore_errors=True)
    seconds = write_lines(sales_lines(spark, 0, lines, 1, DAYS), table, options, path)
    result = {"load_seconds": round(seconds, 1)}
    small = []
    for commit in range(commits):
        recent = sales_lines(
            spark, lines - (commit + 1) * ROWS_PER_SMALL_COMMIT * 5, ROWS_PER_SMALL_COMMIT, commit + 2, 3
        )
        small.append(write_lines(recent, table, options, path))
    if small:
        result["small_commit_median_seconds"] = round(statistics.median(small[2:]), 2)
    changed = max(1, round(lines * CHANGE_SHARE))
    result["change_commit_seconds"] = round(
        write_lines(sales_lines(spark, lines - changed, changed, commits + 2, 30), table, options, path), 1
    )
    result["full_read_seconds"] = round(_timed(lambda: hudi.read(spark, path).count()), 2)
    month = F.date_format(F.add_months(F.current_date(), -6), "yyyy-MM")
    result["month_read_seconds"] = round(
        _timed(lambda: _month(hudi.read(spark, path), table, month).count()), 2
    )
    order = lines // 2
    result["order_read_seconds"] = round(
        _timed(lambda: hudi.read(spark, path).where(F.col("order_id") == order).count()), 2
    )
    return result | _files(path)


def _month(frame: DataFrame, table: Table, month) -> DataFrame:
    """One month's lines, filtered as the runner filters: by the column, and by the month
    itself where the table is partitioned by it."""
    partitioning = table.partitioning
    kept = frame.where(F.date_format(F.col(partitioning.column), "yyyy-MM") == month)
    return kept.where(F.col(partitioning.field) == month) if partitioning.derives_field else kept


def measure(
    spark: SparkSession,
    settings: Settings,
    sizes: list[int],
    commits: int,
    variant_lines: int,
    report=print,
) -> dict:
    results = []
    for lines in sizes:
        for by in GRANULARITIES:
            for table in _tables(by):
                found = _one_table(spark, settings, table, lines, commits, hudi_options(table, settings))
                results.append(
                    {
                        "sales_lines": lines,
                        "granularity": by,
                        "layer": table.layer,
                        "table_type": table.table_type,
                        **found,
                    }
                )
                report(f"{lines:,} lines, {table.layer} by {by}: {found}")
                shutil.rmtree(table.path(settings), ignore_errors=True)
    variants = []
    for table in _tables("month"):
        for variant, extra in VARIANTS.items():
            options = hudi_options(table, settings) | extra
            found = _one_table(spark, settings, table, variant_lines, 0, options)
            variants.append({"layer": table.layer, "variant": variant, **found})
            report(f"{variant_lines:,} lines, {table.layer} {variant}: {found}")
            shutil.rmtree(table.path(settings), ignore_errors=True)
    return {
        "days": DAYS,
        "small_commit_rows": ROWS_PER_SMALL_COMMIT,
        "commits": commits,
        "change_share": CHANGE_SHARE,
        "granularities": results,
        "variants_at": variant_lines,
        "variants": variants,
    }


def markdown(results: dict) -> str:
    lines = [
        *header("Table layout", results),
        f"Sales lines spread over {results['days']} days, loaded into a fresh Bronze sales "
        f"(MERGE_ON_READ) and Silver unified orders (COPY_ON_WRITE) table of each "
        f"granularity; then {results['commits']} commits of "
        f"{results['small_commit_rows']} recent lines (median after two), one commit "
        f"changing the newest {results['change_share']:.0%}, a full read, a read of one "
        f"month and a lookup of one order. Files and bytes are every data file on storage "
        f"afterwards.",
        "",
        "| sales lines | layer | granularity | load s | small commit s | 1% commit s "
        "| full read s | month read s | order read s | partitions | data files | MiB "
        "| average file KiB |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["granularities"]:
        lines.append(
            f"| {r['sales_lines']:,} | {r['layer']} | {r['granularity']} "
            f"| {r['load_seconds']} | {r['small_commit_median_seconds']} "
            f"| {r['change_commit_seconds']} | {r['full_read_seconds']} "
            f"| {r['month_read_seconds']} | {r['order_read_seconds']} | {r['partitions']:,} "
            f"| {r['data_files']:,} "
            f"| {r['bytes'] / 2**20:,.1f} | {r['average_file_bytes'] / 2**10:,.0f} |"
        )
    lines += [
        "",
        f"File format, lever by lever, {results['variants_at']:,} lines by month (a load, the "
        f"{results['change_share']:.0%} commit, then the reads):",
        "",
        "| layer | variant | load s | 1% commit s | full read s | month read s | order read s "
        "| data files | MiB | average file KiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["variants"]:
        lines.append(
            f"| {r['layer']} | {r['variant']} | {r['load_seconds']} | {r['change_commit_seconds']} "
            f"| {r['full_read_seconds']} | {r['month_read_seconds']} | {r['order_read_seconds']} "
            f"| {r['data_files']:,} | {r['bytes'] / 2**20:,.2f} | {r['average_file_bytes'] / 2**10:,.0f} |"
        )
    return "\n".join(lines) + "\n"
