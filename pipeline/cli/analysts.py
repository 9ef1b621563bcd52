"""What analysts read: `lakehouse sql`, `query`, `history` and `tables`."""

from __future__ import annotations

import json
import sys

from pipeline.cli.arguments import POSITIVE_INT


def sql(subcommands) -> None:
    sql = subcommands.add_parser("sql", help="run a Spark SQL query over the catalog and print it")
    sql.add_argument("query", help="Spark SQL, tables named by layer: gold.hudi_daily_sales_gold")
    sql.add_argument("--limit", type=POSITIVE_INT, default=50, help="rows to print")
    sql.set_defaults(handler=_sql)


def _sql(args, settings):
    from medallion.tables import session

    session(settings, "sql", one_shot=True).sql(args.query).show(args.limit, truncate=False)
    return 0


def query(subcommands) -> None:
    query = subcommands.add_parser(
        "query", help="answer a SQL query over the tables without a JVM (hudi-rs and DataFusion; read-only)"
    )
    query.add_argument(
        "query", help="SQL in DataFusion's dialect, tables named as in Spark: gold.hudi_daily_sales_gold"
    )
    query.add_argument("--limit", type=POSITIVE_INT, default=50, help="rows to print as a table")
    query.add_argument("--format", choices=["table", "csv"], default="table", help="csv prints every row")
    query.set_defaults(handler=_query)


def _query(args, settings):
    from serving import fastpath

    result = fastpath.query(settings.warehouse, args.query)
    if args.format == "csv":
        from pyarrow import csv

        csv.write_csv(result.table, sys.stdout.buffer)
    else:
        print(fastpath.render(result.table, args.limit))
    return 0


def history(subcommands) -> None:
    history = subcommands.add_parser(
        "history", help="a table's commits: requested and completed times, operation, rows written (no JVM)"
    )
    history.add_argument("table", help="e.g. gold.hudi_daily_sales_gold")
    history.set_defaults(handler=_history)


def _history(args, settings):
    from serving import history

    print(history.render(history.history(settings.warehouse, args.table)))
    return 0


def tables(subcommands) -> None:
    tables = subcommands.add_parser(
        "tables",
        help="per table: data files, files a snapshot read "
        "opens, pending compactions, oldest retained commit",
    )
    tables.add_argument("target", nargs="*", help="layers or tables (default: every table)")
    tables.add_argument("--json", action="store_true", help="one JSON object per table")
    tables.set_defaults(handler=_tables)


def _tables(args, settings):
    from medallion.tables import declared_tables, select, session
    from operations import maintenance

    spark = session(settings, "tables", one_shot=True)
    found = [
        maintenance.files(spark, settings, t)
        for t in maintenance.existing(spark, settings, select(args.target, declared_tables()))
    ]
    if args.json:
        for table in found:
            print(json.dumps(table.as_dict()))
    else:
        print(maintenance.render(found))
    return 0


SUBCOMMANDS = {"sql": sql, "query": query, "history": history, "tables": tables}
