"""Every table of the lakehouse, from the layers' declarations (bronze/, silver/, gold/
tables.py): the order derived tables run in, the tables a command names,
and a Spark session whose catalog holds them all (lakehouse/catalog.py registers them)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from pyspark.sql import SparkSession

from bronze.tables import BRONZE_TABLES
from gold.tables import GOLD_TABLES
from lakehouse.settings import ConfigurationError, Settings
from lakehouse.tables import LAYERS, DerivedTable, Table, quality_results_table
from silver.tables import SILVER_TABLES


def derived_tables() -> list[DerivedTable]:
    """Every Silver and Gold table, each after the tables it reads, and depth first: a
    table that reads the one just placed comes next, one that nothing reads (the end of a
    chain, where analysts look) before one that others read. So in a continuous pass a
    sale reaches Gold's daily sales without waiting for the unrelated tables."""
    declared = SILVER_TABLES + GOLD_TABLES
    read = {i.table.name for t in declared for i in t.inputs}
    pending, ordered = list(declared), []
    while pending:
        ready = [
            t
            for t in pending
            if all(i.table in ordered or not isinstance(i.table, DerivedTable) for i in t.inputs)
        ]
        if not ready:
            raise ValueError(f"tables {[t.name for t in pending]} read each other in a cycle")
        follows = [t for t in ready if ordered and any(i.table is ordered[-1] for i in t.inputs)]
        following = sorted(follows, key=lambda t: t.name in read) or ready
        ordered.append(following[0])
        pending.remove(following[0])
    return ordered


def freshness_targets() -> dict[str, float]:
    """Each Silver and Gold table's freshness target (`fresh_within`) in seconds, by name."""
    return {t.name: t.fresh_within.total_seconds() for t in derived_tables()}


def declared_tables() -> list[Table]:
    derived = derived_tables()
    return (
        [t for bronze in BRONZE_TABLES for t in (bronze, bronze.quarantine)]
        + [t for table in derived for t in (table, table.quarantine)]
        + [quality_results_table(layer) for layer in sorted({t.layer for t in derived})]
    )


def main_tables() -> list[Table]:
    """The Bronze, Silver and Gold tables, without their quarantine and quality-result tables."""
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
            raise ConfigurationError(
                f"no table or layer {name!r}; known: "
                f"{', '.join(LAYERS)}, {', '.join(t.qualified_name for t in tables)}"
            )
        picked += [t for t in found if t not in picked]
    return picked


_registering: dict[int, Future] = {}


def session(
    settings: Settings,
    app_name: str,
    one_shot: bool = False,
    register_in_background: bool = False,
    extra_config: dict[str, str] | None = None,
) -> SparkSession:
    """The process's SparkSession (later calls get the first one), with the declared tables
    registered in the catalog once; `one_shot` and `extra_config` as `lakehouse.spark.session`
    takes them.

    With `register_in_background` the registration overlaps what the caller does next, which
    must not read the catalog by name: a process's first metastore call costs about 3 s, as
    much as `lakehouse run`'s Bronze drain with nothing to land. The next call waits for it,
    and raises what it raised."""
    from lakehouse import catalog, spark

    started = spark.session(settings, app_name, extra_config, one_shot)
    if id(started) not in _registering:
        pool = ThreadPoolExecutor(1, thread_name_prefix="catalog")
        _registering[id(started)] = pool.submit(catalog.register, started, settings, declared_tables())
        pool.shutdown(wait=False)
        if register_in_background:
            return started
    _registering[id(started)].result()
    return started
