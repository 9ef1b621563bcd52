"""What analysts use: the shared catalog, the JDBC server (beeline and a Python DB-API client),
the JVM-free `lakehouse query`, `lakehouse history` and time travel, against the real stack."""

# Why one module: the tests of what analysts use share the clients they drive (beeline, the
# DB-API connection, `lakehouse query`) and their helpers; each test is short and reads the
# session's built warehouse.

from __future__ import annotations

import csv
import io
import json
import os
import pwd
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.queries import GOLD_QUERIES
from bronze.tables import SALES_TRANSACTIONS
from gold.tables import CUSTOMER_SEGMENTATION_FEATURES, CUSTOMER_SEGMENTS, DAILY_SALES
from infra.native.postgres import NativePostgres
from infra.native.thrift import NativeThriftServer
from lakehouse.catalog import exists
from lakehouse.settings import ENV_FILE
from medallion.tables import derived_tables
from serving import fastpath, history, jdbc
from silver.tables import UNIFIED_CUSTOMER_ORDERS
from tests.support import ROOT, cli_env, drain_until_equal, run_all, run_workload

BIN = Path(sys.executable).parent


def _normalized(value):
    """One value as every client can agree on it: timestamps as naive UTC."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _rows(rows) -> list[tuple]:
    return sorted(
        (tuple(_normalized(v) for v in row) for row in rows),
        key=lambda row: tuple((v is None, str(v)) for v in row),
    )


def _spark_rows(spark, sql: str) -> list[tuple]:
    return _rows(tuple(r) for r in spark.sql(sql).collect())


def _beeline(settings, sql: str, password_file: Path) -> list[list[str]]:
    # The password from a file, as a user would give it: a command line is visible to `ps`.
    password_file.write_text(settings.analyst_password)
    password_file.chmod(0o600)
    result = subprocess.run(
        [
            str(BIN / "beeline"),
            "-u",
            jdbc.jdbc_url(settings),
            "-n",
            settings.analyst_user,
            "-w",
            str(password_file),
            "--silent=true",
            "--outputformat=csv2",
            "--showHeader=false",
            "-e",
            sql,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Silent beeline still echoes its prompt before the first row.
    lines = [
        line.split("> ", 1)[-1]
        for line in result.stdout.splitlines()
        if line.strip() and not line.rstrip().endswith(">")
    ]
    return sorted(list(row) for row in csv.reader(io.StringIO("\n".join(lines))) if row)


def _as_text(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return (
            value.isoformat(sep=" ").rstrip("0").rstrip(".")
            if value.microsecond
            else value.isoformat(sep=" ")
        )
    return str(value)


@pytest.mark.parametrize("name", sorted(GOLD_QUERIES))
def test_jdbc_clients_and_the_fast_path_answer_what_spark_sql_answers(built, spark, name, tmp_path):
    sql = GOLD_QUERIES[name]
    expected = _spark_rows(spark, sql)
    assert expected, f"{name} returned no rows: the test would prove nothing"

    with jdbc.connect(built) as connection:
        cursor = connection.cursor()
        cursor.execute(sql)
        assert _rows(cursor.fetchall()) == expected

    answered = _beeline(built, sql, tmp_path / "password")
    assert answered == sorted([_as_text(v) for v in row] for row in expected)

    assert (
        _rows(tuple(r.values()) for r in fastpath.query(built.warehouse, sql).table.to_pylist()) == expected
    )


@pytest.mark.parametrize(
    "table", [t for d in derived_tables() for t in (d, d.quarantine)], ids=lambda t: t.name
)
def test_the_fast_path_reads_every_silver_and_gold_table_exactly(built, spark, table):
    sql = f"SELECT * FROM {table.qualified_name}"
    if not spark.catalog.tableExists(table.qualified_name):
        # A quarantine exists from the first row its gates keep out; until then both paths
        # must agree that there is no table, the fast path without a partial answer.
        with pytest.raises(fastpath.QueryError, match=table.qualified_name):
            fastpath.query(built.warehouse, sql)
        return
    frame = spark.sql(sql)
    fast = fastpath.query(built.warehouse, sql).table
    assert sorted(fast.column_names) == sorted(frame.columns)
    columns = sorted(frame.columns)
    assert _rows(tuple(r[c] for c in columns) for r in fast.to_pylist()) == _rows(
        tuple(r[c] for c in columns) for r in frame.collect()
    )


def test_time_travel_and_history_show_gold_as_of_a_past_commit(built, spark, db):
    table = "gold.hudi_daily_sales_gold"
    totals = f"SELECT count(*), sum(total_sales_amount), sum(units_sold) FROM {table}"
    before = _spark_rows(spark, totals)
    commits_before = history.history(built.warehouse, table)

    run_workload(db, steps=60, seed=901)
    drain_until_equal(spark, built, db)
    run_all(spark, built)
    commits = history.history(built.warehouse, table)
    assert commits[: len(commits_before)] == commits_before
    latest, past = commits[-1], commits_before[-1]
    assert latest.completed > past.completed and latest.rows_written > 0
    assert _spark_rows(spark, totals) != before, "the workload changed no Gold total"

    as_of = f"{totals} TIMESTAMP AS OF '{past.completed}'"
    assert _spark_rows(spark, as_of) == before
    with jdbc.connect(built) as connection:
        cursor = connection.cursor()
        cursor.execute(as_of)
        assert _rows(cursor.fetchall()) == before
    changed = spark.sql(
        f"SELECT DISTINCT _hoodie_commit_time FROM hudi_table_changes("
        f"'{table}', 'latest_state', '{past.completed}')"
    ).collect()
    assert {r[0] for r in changed} == {c.requested for c in commits if c.completed > past.completed}

    printed = subprocess.run(
        [str(BIN / "lakehouse"), "history", table],
        capture_output=True,
        text=True,
        env=cli_env(built),
        timeout=60,
    )
    assert printed.returncode == 0, printed.stderr
    assert latest.completed in printed.stdout and past.completed in printed.stdout


def _lakehouse_query(settings, sql: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "lakehouse"), "query", sql],
        capture_output=True,
        text=True,
        env=cli_env(settings),
        timeout=60,
    )


def test_lakehouse_query_prints_rows_and_names_what_is_wrong(built):
    answered = _lakehouse_query(built, "SELECT count(*) AS n FROM gold.hudi_customer_segments_gold")
    assert answered.returncode == 0, answered.stderr
    assert "| n " in answered.stdout and "1 row" in answered.stdout

    unknown = _lakehouse_query(built, "SELECT * FROM gold.hudi_no_such_gold")
    assert unknown.returncode == 1
    assert unknown.stderr.strip().splitlines() == [
        f"error: unknown table gold.hudi_no_such_gold: no Hudi table at "
        f"{built.warehouse}/gold/hudi_no_such_gold (tables: "
        f"{', '.join(fastpath.existing_tables(built.warehouse))})"
    ]

    syntax = _lakehouse_query(built, "SELEC count(*) FROM gold.hudi_daily_sales_gold")
    assert syntax.returncode == 1
    assert len(syntax.stderr.strip().splitlines()) == 1
    assert syntax.stderr.startswith("error: query failed: SQL error: ParserError")


def test_a_jdbc_server_that_is_down_is_named_in_one_line(built):
    import dataclasses

    nowhere = dataclasses.replace(built, thrift_port=9)
    with pytest.raises(
        jdbc.ServerDown,
        match=r"^the JDBC server at localhost:9 does not answer: "
        r"start it with `make services`",
    ):
        jdbc.connect(nowhere)


def test_the_jdbc_server_signs_in_only_the_analyst_account(built):
    for user, password in (
        (built.analyst_user, "wrong"),
        ("root", built.analyst_password),
        (built.analyst_user, ""),
    ):
        with pytest.raises(
            jdbc.SignInRefused,
            match=(
                rf"^the JDBC server at localhost:{built.thrift_port} refused user '{user}' "
                r"and its password: the analyst account is ANALYST_USER / ANALYST_PASSWORD in "
                r"\.env"
            ),
        ):
            jdbc.connect(built, user=user, password=password)


GOLD = "gold.hudi_daily_sales_gold"
READ_ONLY = re.escape(
    "refused: the RetailMax JDBC server only reads (SELECT, WITH, SHOW, "
    "DESCRIBE, EXPLAIN, USE, SET to read a setting); not allowed: "
)
# Each statement an analyst might send to do more than read, and what the server answers.
REFUSED = {
    "script transform": (
        f"SELECT TRANSFORM(region) USING 'cat /etc/shadow' AS (line) FROM {GOLD}",
        READ_ONLY + r"script transforms \(SELECT TRANSFORM",
    ),
    "reflection": (
        "SELECT reflect('java.lang.System', 'getenv', 'METASTORE_PASSWORD')",
        READ_ONLY + r"reflect\(\) and java_method\(\)",
    ),
    "reflection in a subquery": (
        f"SELECT count(*) FROM {GOLD} WHERE region IN "
        f"(SELECT java_method('java.lang.System', 'getProperty', 'user.home'))",
        READ_ONLY + r"reflect\(\) and java_method\(\)",
    ),
    "host file": ("SELECT * FROM text.`file:///etc/passwd`", "TABLE_OR_VIEW_NOT_FOUND"),
    "file view": (
        "CREATE TEMPORARY VIEW passwd USING text OPTIONS (path '/etc/passwd')",
        READ_ONLY + "CreateTempViewUsing",
    ),
    "create table": ("CREATE TABLE gold.mine (id INT) USING parquet", READ_ONLY + r"Create\w*Table"),
    "drop table": (f"DROP TABLE {GOLD}", READ_ONLY + "DropTable"),
    "insert": (f"INSERT INTO {GOLD} SELECT * FROM {GOLD}", READ_ONLY + "InsertInto"),
    "delete": (f"DELETE FROM {GOLD}", READ_ONLY + r"Delete\w*"),
    "change a setting": ("SET spark.sql.runSQLOnFiles=true", READ_ONLY + "SetCommand"),
    "add jar": ("ADD JAR /tmp/anything.jar", READ_ONLY + "AddJarsCommand"),
    "call a procedure": (f"CALL show_commits(table => '{GOLD}')", READ_ONLY),
}


@pytest.mark.skipif(
    os.geteuid() != 0, reason="started by anyone but root, the server runs as whoever started it"
)
def test_the_jdbc_server_runs_as_an_account_that_reads_the_warehouse_and_no_secret(built):
    """If a statement ever got past the guard, it would act as this account."""
    account = pwd.getpwnam(built.thrift_os_user)
    status = Path(f"/proc/{NativeThriftServer(built).process.pid}/status").read_text()
    assert re.search(rf"^Uid:\s+{account.pw_uid}\s", status, re.M) and account.pw_uid != 0

    def may(test: str, path: Path) -> bool:
        return (
            subprocess.run(["runuser", "-u", account.pw_name, "--", "test", test, str(path)]).returncode == 0
        )

    gold_table = Path(built.warehouse) / "gold" / "hudi_daily_sales_gold"
    assert may("-r", gold_table / ".hoodie" / "hoodie.properties")
    assert not may("-w", gold_table)
    # The session's own secrets live in its memory; the demo's `.env` is there in CI, which
    # runs the tests beside the demo's services.
    demo_secrets = [ENV_FILE.resolve()] if ENV_FILE.exists() else []
    for secret in (*demo_secrets, NativePostgres(built).data / "PG_VERSION"):
        assert secret.exists() and not may("-r", secret), secret


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_jdbc_server_refuses_whatever_does_more_than_read(built, spark, name):
    statement, message = REFUSED[name]
    totals = f"SELECT count(*), sum(total_sales_amount) FROM {GOLD}"
    before = _spark_rows(spark, totals)
    with jdbc.connect(built) as connection:
        cursor = connection.cursor()
        with pytest.raises(Exception) as refused:
            cursor.execute(statement)
        assert re.search(message, str(refused.value)), str(refused.value)[:500]
        # The connection stays usable, and the table is as it was.
        cursor.execute(totals)
        assert _rows(cursor.fetchall()) == before


def test_the_jdbc_server_answers_what_reads_the_catalog(built):
    with jdbc.connect(built) as connection:
        cursor = connection.cursor()
        cursor.execute("SHOW TABLES IN gold")
        assert "hudi_daily_sales_gold" in {row[1] for row in cursor.fetchall()}
        cursor.execute(f"DESCRIBE {GOLD}")
        assert "total_sales_amount" in {row[0] for row in cursor.fetchall()}
        cursor.execute("SET spark.sql.session.timeZone")
        assert cursor.fetchall() == [("spark.sql.session.timeZone", "UTC")]
        cursor.execute(f"EXPLAIN SELECT count(*) FROM {GOLD}")
        assert "Physical Plan" in cursor.fetchall()[0][0]
        cursor.execute("USE silver")
        cursor.execute("SHOW TABLES")
        assert {row[0] for row in cursor.fetchall()} == {"silver"}


# What each notebook shows, as an expression over its variables that a cell appended to it
# prints, so that the test can compare it with the same figures read another way (SHOWN_AS).
SHOWN = {
    "01_explore_gold": (
        "{'segments': dict(zip(segments.segment.tolist(), segments.customers.tolist())),"
        " 'sales_by_category': totals.to_dict()}"
    ),
    "02_incremental_and_time_travel": (
        "{'first': first.completed, 'totals': totals_as_of.astype(float).values.tolist()}"
    ),
    "03_data_quality": "counts",
    "04_train_models": "{'commit': commit, 'buyers': segmentation.trained.rows}",
}


def _read(spark, built, table, as_of: str | None = None):
    """A table read by path with Spark's DataFrame reader, not through the catalog the
    notebooks query; as of a commit's completion time when given."""
    reader = spark.read.format("hudi")
    if as_of:
        reader = reader.option("as.of.instant", as_of)
    return reader.load(table.path(built))


def _count_and_sums(frame, *columns: str) -> list[float]:
    from pyspark.sql import functions as F

    return [float(v or 0) for v in frame.agg(F.count(F.lit(1)), *(F.sum(c) for c in columns)).first()]


def _shown_as(spark, built, stem: str, shown: dict) -> dict:
    """The figures `shown` by notebook `stem`, read independently of it."""
    if stem == "01_explore_gold":
        segments = _read(spark, built, CUSTOMER_SEGMENTS).groupBy("segment").count()
        sales = _read(spark, built, DAILY_SALES).groupBy("product_category").sum("total_sales_amount")
        return {
            "segments": {r[0]: r[1] for r in segments.collect()},
            "sales_by_category": pytest.approx({r[0]: float(r[1]) for r in sales.collect()}, abs=0.005),
        }
    if stem == "02_incremental_and_time_travel":
        measures = ("total_sales_amount", "units_sold")
        return {
            "first": shown["first"],
            "totals": [
                _count_and_sums(_read(spark, built, DAILY_SALES, as_of=shown["first"]), *measures),
                _count_and_sums(_read(spark, built, DAILY_SALES), *measures),
            ],
        }
    if stem == "03_data_quality":
        quarantine = UNIFIED_CUSTOMER_ORDERS.quarantine
        kept = _read(spark, built, quarantine) if exists(spark, quarantine.path(built)) else None
        statuses = dict(kept.groupBy("quarantine_status").count().collect()) if kept else {}
        return {
            "bronze_lines": _read(spark, built, SALES_TRANSACTIONS).count(),
            "promoted": _read(spark, built, UNIFIED_CUSTOMER_ORDERS).count(),
            "quarantined": statuses.get("quarantined", 0),
            "held_back": statuses.get("held back", 0),
        }
    features = _read(spark, built, CUSTOMER_SEGMENTATION_FEATURES, as_of=shown["commit"])
    return {"commit": shown["commit"], "buyers": features.where("frequency > 0").count()}


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_notebook_runs_top_to_bottom_and_shows_what_the_tables_hold(built, spark, path):
    import nbformat
    from nbclient import NotebookClient

    book = nbformat.read(path, as_version=4)
    assert not any(cell.get("outputs") for cell in book.cells), f"{path.name} was saved with outputs"
    book.cells.append(nbformat.v4.new_code_cell(f"import json\nprint(json.dumps({SHOWN[path.stem]}))"))
    # A failing cell raises CellExecutionError with the cell and its traceback.
    NotebookClient(
        book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute(env={**os.environ, **built.environment()})
    shown = json.loads(book.cells[-1].outputs[0]["text"])
    assert shown == _shown_as(spark, built, path.stem, shown)
