from datetime import UTC, date, datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from serving import fastpath, history


def test_the_tables_a_query_names_are_found_in_any_case_and_spacing():
    sql = (
        "select * from GOLD.hudi_daily_sales_gold d join silver . hudi_customer_profiles_silver p "
        "on true where d.region in (select region from gold.hudi_daily_sales_gold)"
    )
    assert fastpath.named_tables(sql) == [
        ("gold", "hudi_daily_sales_gold"),
        ("silver", "hudi_customer_profiles_silver"),
    ]


def test_an_unknown_table_is_named_with_the_tables_that_exist(tmp_path):
    (tmp_path / "gold" / "hudi_daily_sales_gold" / ".hoodie").mkdir(parents=True)
    (tmp_path / "gold" / "hudi_daily_sales_gold" / ".hoodie" / "hoodie.properties").touch()
    with pytest.raises(fastpath.QueryError) as raised:
        fastpath.query(str(tmp_path), "SELECT * FROM gold.nope")
    assert str(raised.value) == (
        f"unknown table gold.nope: no Hudi table at {tmp_path}/gold/nope (tables: gold.hudi_daily_sales_gold)"
    )


@pytest.mark.parametrize(
    "sql, refused",
    [
        ("COPY (SELECT 1 AS n) TO '{out}'", "DML not supported: COPY"),
        (
            "CREATE EXTERNAL TABLE e STORED AS CSV LOCATION '/etc/passwd'",
            "DDL not supported: CreateExternalTable",
        ),
        ("CREATE TABLE t AS SELECT 1", "DDL not supported: CreateMemoryTable"),
        ("SET datafusion.execution.batch_size = 1", "Statement not supported: SetVariable"),
    ],
)
def test_lakehouse_query_only_reads(tmp_path, sql, refused):
    out = tmp_path / "out.csv"
    with pytest.raises(fastpath.QueryError) as raised:
        fastpath.query(str(tmp_path), sql.format(out=out))
    assert str(raised.value) == (
        f"query refused: `lakehouse query` only reads (SELECT, WITH, EXPLAIN); {refused}"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM 'file:///etc/hostname'",
        "SELECT * FROM read_csv('/etc/passwd')",
    ],
)
def test_lakehouse_query_reads_no_file_by_path(tmp_path, sql):
    with pytest.raises(
        fastpath.QueryError,
        match=r"^query failed: Error during planning: "
        r"table (function )?'.*' not found$",
    ):
        fastpath.query(str(tmp_path), sql)


def test_a_table_without_a_completed_commit_says_it_has_no_data_yet(tmp_path):
    table = tmp_path / "gold" / "hudi_daily_sales_gold"
    (table / ".hoodie" / "timeline").mkdir(parents=True)
    (table / ".hoodie" / "hoodie.properties").write_text(
        "hoodie.table.name=hudi_daily_sales_gold\nhoodie.table.type=COPY_ON_WRITE\n"
        "hoodie.table.version=9\nhoodie.timeline.layout.version=2\n"
    )
    with pytest.raises(fastpath.QueryError, match="has no data yet|hudi-rs cannot read"):
        fastpath.query(str(tmp_path), "SELECT * FROM gold.hudi_daily_sales_gold")


def test_rows_render_as_an_aligned_table_with_exact_values():
    table = pa.table(
        {
            "day": [date(2025, 6, 1), None],
            "amount": pa.array([Decimal("10.50"), Decimal("2.00")], pa.decimal128(18, 2)),
            "at": [datetime(2025, 6, 1, 10, 0, tzinfo=UTC), None],
        }
    )
    assert fastpath.render(table, limit=1).splitlines() == [
        "+------------+--------+---------------------------+",
        "| day        | amount | at                        |",
        "+------------+--------+---------------------------+",
        "| 2025-06-01 | 10.50  | 2025-06-01 10:00:00+00:00 |",
        "+------------+--------+---------------------------+",
        "only the first 1 of 2 rows shown (--limit)",
    ]


def test_history_needs_a_layer_or_a_name_found_in_one_layer(tmp_path):
    with pytest.raises(fastpath.QueryError, match="name a table as <layer>.<table>"):
        history.history(str(tmp_path), "hudi_daily_sales_gold")


def test_a_notebook_run_without_the_stack_says_to_run_make_up(monkeypatch):
    from serving.notebooks import NotReady, open_lakehouse

    monkeypatch.setenv("PGPORT", "9")
    with pytest.raises(
        NotReady,
        match=r"^The stack is not up: Postgres, which holds the shared "
        r"catalog, does not answer at localhost:9\. Run `make up`",
    ):
        open_lakehouse("test")
