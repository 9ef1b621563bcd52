"""`lakehouse query`: SQL over the lakehouse's tables without a JVM.

hudi-rs (PyPI `hudi`) reads the Hudi tables (a MERGE_ON_READ table's base and log files
merged, deletes applied) into Arrow, and DataFusion runs the SQL, reading through hudi-rs'
table provider, which prunes partitions and files by the query's filters. Tables are named
as in Spark (`gold.hudi_daily_sales_gold`) and found where every layer writes them,
`<warehouse>/<layer>/<table>` (lakehouse/tables.py, which the declarations build on and
which, like this module, imports no PySpark): a question costs a Python start, not a JVM
start.

Only the tables a query names are opened. hudi-rs reads Hudi table versions 6, 8 and 9; a
table it cannot read fails the query with hudi-rs' reason, never a partial answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from datafusion import SessionContext, SQLOptions
from hudi import HudiDataFusionDataSource, HudiTable

from lakehouse.tables import LAYERS, table_path

_TABLE_NAME = re.compile(r"\b(bronze|silver|gold)\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)\b", re.IGNORECASE)


class QueryError(RuntimeError):
    """The query cannot be answered; the message says why in one line."""


@dataclass(frozen=True)
class Result:
    table: pa.Table
    tables_read: tuple[str, ...]


def named_tables(sql: str) -> list[tuple[str, str]]:
    """The (layer, table) names a query refers to, in order of first mention."""
    found: list[tuple[str, str]] = []
    for layer, name in _TABLE_NAME.findall(sql):
        if (layer.lower(), name.lower()) not in found:
            found.append((layer.lower(), name.lower()))
    return found


def existing_tables(warehouse: str) -> list[str]:
    """The qualified names of the Hudi tables in a local warehouse."""
    if "://" in warehouse:
        return []
    return sorted(
        f"{layer}.{path.parent.parent.name}"
        for layer in LAYERS
        for path in Path(warehouse, layer).glob("*/.hoodie/hoodie.properties")
    )


def _open(warehouse: str, layer: str, name: str) -> HudiDataFusionDataSource:
    path = table_path(warehouse, layer, name)
    if "://" not in warehouse and not Path(path, ".hoodie", "hoodie.properties").exists():
        known = existing_tables(warehouse)
        raise QueryError(
            f"unknown table {layer}.{name}: no Hudi table at {path} (tables: "
            f"{', '.join(known) if known else 'none yet; run `lakehouse run`'})"
        )
    try:
        HudiTable(path).get_timeline().get_latest_commit_timestamp()
        return HudiDataFusionDataSource(path)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - hudi-rs raises its own errors and Rust panics
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "no completed commit" in reason.lower():
            raise QueryError(
                f"table {layer}.{name} has no data yet: its first commit has not "
                f"completed (run `lakehouse run`)"
            ) from None
        raise QueryError(f"hudi-rs cannot read {layer}.{name} at {path}: {reason}") from None


# Documented as read-only, so it is: no COPY ... TO a file, no INSERT, no CREATE, no SET.
READ_ONLY = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)
REFUSED = re.compile(r"(DDL|DML|Statement) not supported: \w+")


def query(warehouse: str, sql: str) -> Result:
    """Runs one SQL statement (DataFusion's dialect) over the tables it names."""
    context = SessionContext()
    for layer in LAYERS:
        context.sql(f"CREATE SCHEMA {layer}")
    tables = named_tables(sql)
    for layer, name in tables:
        context.register_table(f"{layer}.{name}", _open(warehouse, layer, name))
    try:
        frame = context.sql_with_options(sql, READ_ONLY)
        result = frame.to_arrow_table()
    except Exception as error:  # noqa: BLE001 - DataFusion's errors carry the reason in their text
        message = " ".join(str(error).split())
        if refused := REFUSED.search(message):
            raise QueryError(
                f"query refused: `lakehouse query` only reads (SELECT, WITH, EXPLAIN); {refused[0]}"
            ) from None
        raise QueryError(f"query failed: {message}") from None
    return Result(result, tuple(f"{layer}.{name}" for layer, name in tables))


def render(table: pa.Table, limit: int) -> str:
    """Rows as an aligned text table, at most `limit` of them."""
    shown = table.slice(0, limit).to_pylist()
    header = table.column_names
    cells = [[_cell(row[column]) for column in header] for row in shown]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [rule, _line(header, widths), rule, *(_line(r, widths) for r in cells), rule]
    if table.num_rows > limit:
        lines.append(f"only the first {limit} of {table.num_rows} rows shown (--limit)")
    else:
        lines.append(f"{table.num_rows} row{'s' if table.num_rows != 1 else ''}")
    return "\n".join(lines)


def _cell(value) -> str:
    if value is None:
        return "NULL"
    if hasattr(value, "isoformat"):
        return value.isoformat(sep=" ") if hasattr(value, "hour") else value.isoformat()
    return str(value)


def _line(values: list[str], widths: list[int]) -> str:
    return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"
