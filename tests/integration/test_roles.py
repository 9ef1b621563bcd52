"""The Postgres roles against the real database: each may do its job and nothing else."""

from __future__ import annotations

import psycopg
import pytest

from ingestion import database
from lakehouse.settings import ERASER, LAKEHOUSE_READER, PG_ROLES, SOURCE_WRITER


def _refused(conn: psycopg.Connection, statement: str) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)


def test_each_role_may_do_its_job_and_nothing_else(services, db):
    with database.connect(services, SOURCE_WRITER, autocommit=True) as writer:
        writer.execute("UPDATE retail.sales_transactions SET status = status WHERE order_id = -1")
        _refused(writer, "DROP TABLE retail.sales_transactions")
        _refused(writer, "ALTER TABLE retail.customer_master ADD COLUMN x int")
        _refused(writer, "CREATE TABLE retail.mine (id int)")
    with database.connect(services, LAKEHOUSE_READER, autocommit=True) as reader:
        assert reader.execute("SELECT count(*) FROM retail.customer_master").fetchone()[0] > 0
        _refused(reader, "UPDATE retail.customer_master SET city = city WHERE customer_id = -1")
        _refused(reader, "DELETE FROM retail.sales_transactions WHERE order_id = -1")
    with database.connect(services, ERASER, autocommit=True) as eraser:
        eraser.execute(
            "UPDATE retail.customer_master SET email = email, phone = phone WHERE customer_id = -1"
        )
        _refused(eraser, "UPDATE retail.customer_master SET country = country WHERE customer_id = -1")
        _refused(eraser, "DELETE FROM retail.customer_master WHERE customer_id = -1")
        _refused(eraser, "SELECT count(*) FROM retail.sales_transactions")
    names = [role.name for role in PG_ROLES] + ["debezium", "metastore"]
    privileged = db.execute(
        "SELECT rolname FROM pg_roles WHERE rolname = ANY(%s) AND (rolsuper OR rolcreaterole OR rolcreatedb)",
        (names,),
    ).fetchall()
    assert privileged == []
