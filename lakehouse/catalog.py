"""The Spark catalog: databases `bronze`, `silver`, `gold` holding every declared table.

The catalog is one Hive metastore shared by every process (infra/metastore.py). Its entries
are derived from the declarations, never written by hand: a writer registers a table right
after the commit that created it, and each pipeline or notebook session registers any declared
table that exists but is missing, so the JDBC server and notebooks see a new table without a
restart.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from lakehouse import timeline
from lakehouse.settings import ConfigurationError, Settings
from lakehouse.tables import LAYERS, DerivedTable, Table, quality_results_table


def derived_tables() -> list[DerivedTable]:
    """Every Silver and Gold table, each after the tables it reads, and depth first: a
    table that reads the one just placed comes next, one that nothing reads (the end of a
    chain, where analysts look) before one that others read. So in a continuous pass a
    sale reaches Gold's daily sales without waiting for the unrelated tables."""
    from gold.tables import GOLD_TABLES
    from silver.tables import SILVER_TABLES

    declared = SILVER_TABLES + GOLD_TABLES
    read = {i.table.name for t in declared for i in t.inputs}
    pending, ordered = list(declared), []
    while pending:
        ready = [t for t in pending
                 if all(i.table in ordered or not isinstance(i.table, DerivedTable) for i in t.inputs)]
        if not ready:
            raise ValueError(f"tables {[t.name for t in pending]} read each other in a cycle")
        follows = [t for t in ready if ordered and any(i.table is ordered[-1] for i in t.inputs)]
        following = sorted(follows, key=lambda t: t.name in read) or ready
        ordered.append(following[0])
        pending.remove(following[0])
    return ordered


def continuous_pass(tables: list[DerivedTable] | None = None) -> list[DerivedTable]:
    """One pass of the continuous pipeline over `tables` (all, in `derived_tables` order):
    every table once, and the tables with a freshness target, with the derived tables they
    read, again before each of the others. An urgent change then waits for one other
    table's run instead of a whole pass, at the price of the others running less often."""
    tables = derived_tables() if tables is None else tables
    urgent = {t.name for t in tables if t.fresh_within}
    for table in reversed(tables):  # readers come after their inputs
        if table.name in urgent:
            urgent |= {i.table.name for i in table.inputs if isinstance(i.table, DerivedTable)}
    chain = [t for t in tables if t.name in urgent]
    others = [t for t in tables if t.name not in urgent]
    return [t for other in others for t in (*chain, other)] or chain


def declared_tables() -> list[Table]:
    from bronze.tables import BRONZE_TABLES

    derived = derived_tables()
    return ([t for bronze in BRONZE_TABLES for t in (bronze, bronze.quarantine)]
            + [t for table in derived for t in (table, table.quarantine)]
            + [quality_results_table(layer) for layer in sorted({t.layer for t in derived})])


def main_tables() -> list[Table]:
    """The Bronze, Silver and Gold tables, without their quarantine and quality-result tables."""
    from bronze.tables import BRONZE_TABLES

    return [*BRONZE_TABLES, *derived_tables()]


def select(names: list[str] | None, tables: list[Table]) -> list[Table]:
    """The tables among `tables` that `names` pick, all of them when none is given. A name is
    a layer, `<layer>.<table>`, or a table's name."""
    if not names:
        return tables
    picked = []
    for name in names:
        found = [t for t in tables if name in (t.layer, t.qualified_name, t.name)]
        if not found:
            raise ConfigurationError(f"no table or layer {name!r}; known: "
                                     f"{', '.join(LAYERS)}, {', '.join(t.qualified_name for t in tables)}")
        picked += [t for t in found if t not in picked]
    return picked


def exists(spark: SparkSession, path: str) -> bool:
    """Whether a Hudi table at `path` holds data. A table whose first commit never completed
    (its writer was killed) does not: it has no schema yet, so the catalog could not register
    it, and its next writer rolls that commit back and starts it again."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(f"{path}/.hoodie/hoodie.properties")
    created = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path)
    return created and timeline.has_commits(spark, path)


def table_properties(spark: SparkSession, path: str) -> dict[str, str]:
    """The table's `.hoodie/hoodie.properties`."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(f"{path}/.hoodie/hoodie.properties")
    stream = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).open(hadoop_path)
    try:
        properties = jvm.java.util.Properties()
        properties.load(stream)
        return {str(key): str(properties.getProperty(key)) for key in properties.stringPropertyNames()}
    finally:
        stream.close()


def register(spark: SparkSession, settings: Settings, tables: list[Table] | None = None) -> list[str]:
    """Registers the declared tables that exist; returns their qualified names."""
    for layer in LAYERS:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {layer} LOCATION '{settings.warehouse}/{layer}'")
    registered = []
    for table in tables if tables is not None else declared_tables():
        if exists(spark, table.path(settings)):
            _register(spark, table, table.path(settings))
            registered.append(table.qualified_name)
    return registered


_known: set[tuple[str, str]] = set()


def ensure_registered(spark: SparkSession, settings: Settings, table: Table) -> None:
    """Registers a table its writer has just committed to, once per process."""
    if (table.qualified_name, table.path(settings)) not in _known:
        register(spark, settings, [table])


def forget(spark: SparkSession, table: Table) -> None:
    """Drops the catalog's entry of a table whose files were replaced (lakehouse/layout.py),
    so that the next registration describes the new ones. Only the entry goes."""
    if spark.catalog.tableExists(table.qualified_name):
        spark._jsparkSession.sharedState().externalCatalog().dropTable(
            table.layer, table.name, True, False)
    _known.difference_update({k for k in _known if k[0] == table.qualified_name})


def _register(spark: SparkSession, table: Table, path: str) -> None:
    name = table.qualified_name
    if spark.catalog.tableExists(name):
        registered_at = _location(spark, name)
        if registered_at.rstrip("/") == path.rstrip("/") or registered_at == f"file:{path}":
            _known.add((name, path))
            return
        # One metastore serves one warehouse; a warehouse that moved (or a test session's
        # fresh one) takes the name over. Only the entry goes: Hudi's files stay.
        print(f"catalog: {name} moves from {registered_at} to {path}", flush=True)
        forget(spark, table)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING hudi LOCATION '{path}'")
    _known.add((name, path))


def _location(spark: SparkSession, name: str) -> str:
    return next(row.data_type for row in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
                if row.col_name == "Location")
