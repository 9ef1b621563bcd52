"""The Spark catalog: databases `bronze`, `silver`, `gold` holding every declared table.

The catalog is derived, not stored: each session registers the declared tables that exist
in the warehouse (a cheap read of each table's metadata), so `lakehouse sql` works from a
fresh process without a metastore service. A deployment with a Hive metastore can point
Spark at it instead; the table locations are the same.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from lakehouse import timeline
from lakehouse.settings import Settings
from lakehouse.tables import LAYERS, DerivedTable, Table, quality_results_table


def derived_tables() -> list[DerivedTable]:
    """Every Silver and Gold table, each after the tables it reads."""
    from gold.tables import GOLD_TABLES
    from silver.tables import SILVER_TABLES

    pending, ordered = list(SILVER_TABLES + GOLD_TABLES), []
    while pending:
        ready = [t for t in pending
                 if all(i.table in ordered or not isinstance(i.table, DerivedTable) for i in t.inputs)]
        if not ready:
            raise ValueError(f"tables {[t.name for t in pending]} read each other in a cycle")
        ordered += ready
        pending = [t for t in pending if t not in ready]
    return ordered


def declared_tables() -> list[Table]:
    from bronze.tables import BRONZE_TABLES

    derived = derived_tables()
    return ([t for bronze in BRONZE_TABLES for t in (bronze, bronze.quarantine)]
            + [t for table in derived for t in (table, table.quarantine)]
            + [quality_results_table(layer) for layer in sorted({t.layer for t in derived})])


def exists(spark: SparkSession, path: str) -> bool:
    """Whether a Hudi table at `path` holds data. A table whose first commit never completed
    (its writer was killed) does not: it has no schema yet, so the catalog could not register
    it, and its next writer rolls that commit back and starts it again."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(f"{path}/.hoodie/hoodie.properties")
    created = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path)
    return created and timeline.has_commits(spark, path)


def register(spark: SparkSession, settings: Settings, tables: list[Table] | None = None) -> list[str]:
    """Registers the tables that exist; returns their qualified names."""
    for layer in LAYERS:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {layer}")
    registered = []
    for table in tables if tables is not None else declared_tables():
        path = table.path(settings)
        if exists(spark, path):
            spark.sql(f"CREATE TABLE IF NOT EXISTS {table.qualified_name} USING hudi "
                      f"LOCATION '{path}'")
            registered.append(table.qualified_name)
    return registered
