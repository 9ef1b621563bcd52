"""The operational database: connections and the idempotent schema bootstrap."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg import sql

from lakehouse.settings import ERASER, LAKEHOUSE_READER, SOURCE_WRITER, PgRole, Settings

SCHEMA_FILE = Path(__file__).resolve().parent / "schema.sql"
SOURCE_TABLES = ("customer_master", "product_catalog", "sales_transactions")
DEBEZIUM_ROLE = "debezium"


def connect(settings: Settings, role: PgRole | None = None, **overrides: str) -> psycopg.Connection:
    """A connection as `role`; the owner's (setup only) without one."""
    return psycopg.connect(**settings.pg_params(role, **overrides))


def create_database(settings: Settings) -> bool:
    """Creates $PGDATABASE if it is missing; True when it did."""
    with connect(settings, dbname="postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (settings.pg_database,)).fetchone():
            return False
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(settings.pg_database)))
        return True


def apply_schema(settings: Settings, personal: dict[str, tuple[str, ...]]) -> None:
    """Schema, replica identity, publication, and one least-privileged role per purpose.
    `personal` names each source table's personal columns (the declarations' PersonalData),
    the only ones the eraser may change."""
    create_database(settings)
    with connect(settings) as conn:
        # ALTER TABLE waits for every open transaction on the table: fail clearly instead.
        conn.execute("SET lock_timeout = '15s'")
        conn.execute(SCHEMA_FILE.read_text())
        tables = sql.SQL(", ").join(sql.Identifier("retail", t) for t in SOURCE_TABLES)
        # Replication (to stream the WAL) and SELECT on the captured tables (for the initial
        # snapshot): nothing more.
        _role(
            conn,
            settings,
            DEBEZIUM_ROLE,
            settings.debezium_password,
            [sql.SQL("GRANT SELECT ON {} TO {}").format(tables, sql.Identifier(DEBEZIUM_ROLE))],
            replication=True,
        )
        writer, reader, eraser = (sql.Identifier(r.name) for r in (SOURCE_WRITER, LAKEHOUSE_READER, ERASER))
        _role(
            conn,
            settings,
            SOURCE_WRITER.name,
            settings.password(SOURCE_WRITER),
            [sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(tables, writer)],
        )
        _role(
            conn,
            settings,
            LAKEHOUSE_READER.name,
            settings.password(LAKEHOUSE_READER),
            [sql.SQL("GRANT SELECT ON {} TO {}").format(tables, reader)],
        )
        # Reading the rows to find a person's values, and overwriting the personal columns.
        _role(
            conn,
            settings,
            ERASER.name,
            settings.password(ERASER),
            [
                sql.SQL("GRANT SELECT, UPDATE ({}) ON {} TO {}").format(
                    sql.SQL(", ").join(map(sql.Identifier, columns)),
                    sql.Identifier(*table.split(".")),
                    eraser,
                )
                for table, columns in personal.items()
            ],
        )


def _role(
    conn: psycopg.Connection,
    settings: Settings,
    name: str,
    password: str,
    grants: list[sql.Composable],
    replication: bool = False,
) -> None:
    """Creates or updates a login role, with its password from .env (set on every run, so
    .env stays the truth), the connection to the database and the schema, and `grants`."""
    role = sql.Identifier(name)
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone()
    conn.execute(
        sql.SQL("{} ROLE {} WITH LOGIN {} PASSWORD {}").format(
            sql.SQL("ALTER" if exists else "CREATE"),
            role,
            sql.SQL("REPLICATION" if replication else "NOREPLICATION"),
            sql.Literal(password),
        )
    )
    conn.execute(
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(settings.pg_database), role)
    )
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA retail TO {}").format(role))
    for grant in grants:
        conn.execute(grant)


def current_wal_lsn(settings: Settings) -> int | None:
    """The source's WAL position now, as Debezium numbers it; None when it cannot be asked."""
    try:
        with connect(settings, LAKEHOUSE_READER) as conn:
            return int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])
    except psycopg.OperationalError:
        return None


def replication_slot(settings: Settings, slot: str) -> dict | None:
    """The slot's state: whether Debezium is attached, how much WAL it holds back, and how
    much more PostgreSQL lets it hold (`max_slot_wal_keep_size`) before invalidating it."""
    with connect(settings, LAKEHOUSE_READER) as conn:
        row = conn.execute(
            "SELECT active, wal_status, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint,"
            " safe_wal_size FROM pg_replication_slots WHERE slot_name = %s",
            (slot,),
        ).fetchone()
    if row is None:
        return None
    return dict(zip(("active", "wal_status", "held_bytes", "safe_bytes"), row))
