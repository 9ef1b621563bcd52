"""Schema changes at a CDC table's source, and what Bronze does with each (docs/operations.md,
"Schema changes at the source").

Debezium's JSON carries values without types (`value.converter.schemas.enable=false`), so the
source's own catalog says what a column is. Before each batch of a CDC table, Bronze reads the
source table's columns from `information_schema` and compares them with the declaration:

- A column added at the source is *carried*: Bronze lands it as a new nullable column, typed
  from the source (`spark_type`); Hudi adds it to the table on that write and rows written
  before it read as null. Carried columns are remembered by the table itself (its schema).
- A declared (or carried) column retyped so that its declared type still holds every value
  (`holds`: a wider integer, a longer decimal, anything to text) changes nothing.
- A declared column dropped, or retyped so that values may no longer fit, is a
  `SchemaChange`: the batch is not written, so its messages wait in Kafka until someone edits
  the declaration; the message says what changed and what to edit.

A carried column dropped at the source again lands as null: no transform can depend on it
without declaring it first. When the source cannot be reached (it is down, or being
restarted), the batch lands with the columns known so far, unless it holds fields those do
not cover, which wait for the source to answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg

from bronze.tables import BronzeTable
from ingestion import database
from lakehouse.settings import LAKEHOUSE_READER, Settings

_INTEGERS = ("smallint", "int", "bigint")
_DIGITS = {"smallint": 5, "int": 10, "bigint": 19}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


class SchemaChange(ValueError):
    """The source changed in a way Bronze cannot take by itself; says what and what to do."""


@dataclass(frozen=True)
class SourceColumn:
    source_type: str  # as Postgres names it: "numeric(14,4)", "text"
    spark_type: str  # what Bronze stores it as


def spark_type(data_type: str, precision: int | None = None, scale: int | None = None) -> str:
    """The Spark SQL type that holds a Postgres column's values as Debezium sends them
    (ingestion/debezium-postgres.json: decimals as exact strings, `timestamptz` as ISO-8601,
    `date` as days). Types Debezium sends as numbers of time units (`timestamp` without
    zone, `time`, `interval`) keep that number; any other type keeps its text, so nothing
    a new column brings is lost for want of a mapping."""
    if data_type == "numeric":
        # Unconstrained numerics can exceed any Spark decimal: their exact text is kept.
        return f"decimal({precision},{scale})" if precision and precision <= 38 else "string"
    return {
        "smallint": "smallint",
        "integer": "int",
        "bigint": "bigint",
        "real": "float",
        "double precision": "double",
        "boolean": "boolean",
        "date": "date",
        "timestamp with time zone": "timestamp",
        "timestamp without time zone": "bigint",
        "time without time zone": "bigint",
        "interval": "bigint",
    }.get(data_type, "string")


def holds(declared: str, source: str) -> bool:
    """Whether every value of Spark type `source` converts to `declared` without loss."""
    if declared == source or declared == "string":
        return True
    if declared in _INTEGERS and source in _INTEGERS:
        return _INTEGERS.index(source) <= _INTEGERS.index(declared)
    if declared == "double":
        return source in ("float", "smallint", "int")
    wide, narrow = _DECIMAL.fullmatch(declared), _DECIMAL.fullmatch(source)
    if wide and narrow:
        (p, s), (q, t) = map(int, wide.groups()), map(int, narrow.groups())
        return s >= t and p - s >= q - t
    if wide and source in _INTEGERS:
        p, s = map(int, wide.groups())
        return p - s >= _DIGITS[source]
    return False


def source_columns(settings: Settings, table: BronzeTable) -> dict[str, SourceColumn] | None:
    """The source table's columns, in order, or None when the source cannot be reached."""
    schema, name = table.source_table.split(".")
    try:
        with database.connect(settings, LAKEHOUSE_READER) as db:
            rows = db.execute(
                "SELECT column_name, data_type, numeric_precision, numeric_scale"
                " FROM information_schema.columns WHERE table_schema = %s AND table_name = %s"
                " ORDER BY ordinal_position",
                (schema, name),
            ).fetchall()
    except psycopg.OperationalError:
        return None
    return {
        column: SourceColumn(
            _source_type(data_type, precision, scale), spark_type(data_type, precision, scale)
        )
        for column, data_type, precision, scale in rows
    }


def _source_type(data_type: str, precision: int | None, scale: int | None) -> str:
    return f"{data_type}({precision},{scale})" if data_type == "numeric" and precision else data_type


def reconcile(table: BronzeTable, carried: dict[str, str], source: dict[str, SourceColumn]) -> dict[str, str]:
    """The columns Bronze carries beyond `table`'s declared ones once the source has
    `source`'s: `carried` plus the columns added at the source. Raises `SchemaChange` for a
    change it cannot take."""
    where = f"{table.source_table} (Bronze table {table.name})"
    if not source:
        raise SchemaChange(
            f"the source table {table.source_table} of Bronze table {table.name} "
            f"was not found: check PGDATABASE, or, if it was dropped, remove the "
            f"table from bronze/tables.py"
        )
    changes = [
        f"column {name} ({declared}) was dropped"
        for name, declared in table.columns.items()
        if name not in source
    ]
    changes += [
        f"column {name} changed type to {source[name].source_type}, which {kind} cannot "
        f"hold (Bronze would store it as {source[name].spark_type})"
        for name, kind in {**carried, **table.columns}.items()
        if name in source and not holds(kind, source[name].spark_type)
    ]
    if changes:
        raise SchemaChange(
            f"the source schema of {where} changed: {'; '.join(changes)}. Bronze stopped before "
            f"landing this batch, and its messages wait in Kafka. To take the change, edit the "
            f"table's `columns` in bronze/tables.py (drop a dropped column, declare a retyped "
            f"one with its new type) and every transform that reads them, then start again. "
            f"Hudi changes a column's type in place only to a wider one (int to bigint, float to "
            f"double, any to string); for other changes rebuild the table as docs/operations.md "
            f'says ("Schema changes at the source"). To undo the change instead, revert it at '
            f"the source."
        )
    added = {
        name: column.spark_type
        for name, column in source.items()
        if name not in table.columns and name not in carried
    }
    return {**carried, **added}


def unexplained_fields(declared: BronzeTable, landed: BronzeTable, field_lists: list[str]) -> str | None:
    """What the row images of a batch (each its comma-joined field names) have that the
    columns `landed` knows do not explain: fields it lacks, or declared fields they lack."""
    images = [set(names.split(",")) for names in field_lists]
    unknown = sorted(set().union(*images) - set(landed.columns))
    missing = sorted({name for image in images for name in declared.columns if name not in image})
    differences = ([f"fields {unknown} it does not know"] if unknown else []) + (
        [f"no declared fields {missing}"] if missing else []
    )
    return " and ".join(differences) or None
