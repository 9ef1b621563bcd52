"""The operational database: connections and the idempotent schema bootstrap."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg import sql

from lakehouse.settings import Settings

SCHEMA_FILE = Path(__file__).resolve().parent / "schema.sql"
SOURCE_TABLES = ("customer_master", "product_catalog", "sales_transactions")
DEBEZIUM_ROLE = "debezium"


def connect(settings: Settings, **overrides: str) -> psycopg.Connection:
    return psycopg.connect(**settings.pg_params(**overrides))


def create_database(settings: Settings) -> bool:
    """Creates $PGDATABASE if it is missing; True when it did."""
    with connect(settings, dbname="postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                        (settings.pg_database,)).fetchone():
            return False
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(settings.pg_database)))
        return True


def apply_schema(settings: Settings) -> None:
    """Schema, replica identity, publication, and Debezium's least-privileged role."""
    create_database(settings)
    with connect(settings) as conn:
        # ALTER TABLE waits for every open transaction on the table: fail clearly instead.
        conn.execute("SET lock_timeout = '15s'")
        conn.execute(SCHEMA_FILE.read_text())
        role = sql.Identifier(DEBEZIUM_ROLE)
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                              (DEBEZIUM_ROLE,)).fetchone()
        verb = sql.SQL("ALTER") if exists else sql.SQL("CREATE")
        # Replication (to stream the WAL) and SELECT on the captured tables (for the initial
        # snapshot): nothing more. The password is set on every run so .env stays the truth.
        conn.execute(sql.SQL("{} ROLE {} WITH LOGIN REPLICATION PASSWORD {}").format(
            verb, role, sql.Literal(settings.debezium_password)))
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(settings.pg_database), role))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA retail TO {}").format(role))
        tables = sql.SQL(", ").join(sql.Identifier("retail", t) for t in SOURCE_TABLES)
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(tables, role))


def replication_slot(settings: Settings, slot: str) -> dict | None:
    """The slot's state: whether Debezium is attached, how much WAL it holds back, and how
    much more PostgreSQL lets it hold (`max_slot_wal_keep_size`) before invalidating it."""
    with connect(settings) as conn:
        row = conn.execute(
            "SELECT active, wal_status, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint,"
            " safe_wal_size FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    if row is None:
        return None
    return dict(zip(("active", "wal_status", "held_bytes", "safe_bytes"), row))
