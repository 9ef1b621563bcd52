"""Schema changes at the source, end to end (bronze/schema.py): a column added in Postgres
reaches Bronze and a Silver table that selects it; a column dropped or retyped so that its
declared type cannot hold it stops the table's Bronze job, and its messages wait in Kafka.

Each test leaves retail.product_catalog as it found it, for the modules after this one."""

from __future__ import annotations

import dataclasses
import shutil
import threading
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from bronze import job as bronze_job
from bronze.job import BronzeError, BronzeJob
from bronze.tables import PRODUCT_CATALOG
from infra.native.process import wait_until
from ingestion.topics import cdc_topic
from lakehouse import catalog
from lakehouse.hudi import snapshot
from lakehouse.tables import DerivedTable, Input
from tests.support import drain_until_equal, run_lakehouse, run_tables


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScratchTable(DerivedTable):
    """A Silver table whose transform is a file the test edits."""

    sql: Path

    @property
    def transform_path(self) -> Path:
        return self.sql


def product_row(spark, settings, product_id: int, table=PRODUCT_CATALOG):
    return snapshot(spark, table, settings).where(f"product_id = {product_id}").first()


def wait_for_change(reader, product_id: int) -> None:
    """Returns once Debezium has published a change of the product (so a drain sees it).
    `reader` reads the topic from where it stood before the change was made: opened after,
    it would miss a change Debezium published within milliseconds."""
    reader.read_until(
        lambda messages: any(
            isinstance(value, dict) and (value.get("after") or {}).get("product_id") == product_id
            for _, value in messages
        ),
        timeout=180,
    )


@pytest.fixture
def weights_table(services, spark, tmp_path):
    sql = tmp_path / "product_weights.sql"
    sql.write_text("SELECT product_id, sku, updated_ts AS last_updated_ts FROM products")
    table = ScratchTable(
        name="hudi_product_weights_silver",
        layer="silver",
        sql=sql,
        record_key=("product_id",),
        ordering=("last_updated_ts",),
        inputs=(Input(PRODUCT_CATALOG, "products"),),
        transform="product_weights",
        fresh_within=timedelta(minutes=5),
    )
    yield table
    spark.sql(f"DROP TABLE IF EXISTS {table.qualified_name}")
    shutil.rmtree(table.path(services).removeprefix("file:"), ignore_errors=True)


def test_a_column_added_at_the_source_reaches_bronze_and_a_silver_table_that_selects_it(
    services, spark, db, topic_reader, weights_table
):
    drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
    assert run_tables(spark, services, [weights_table])[weights_table.name].mode == "full"
    light, heavy, untouched = [
        row[0]
        for row in db.execute(
            "SELECT product_id FROM retail.product_catalog ORDER BY product_id LIMIT 3"
        ).fetchall()
    ]
    changes = topic_reader(cdc_topic("product_catalog"))
    try:
        db.execute("ALTER TABLE retail.product_catalog ADD COLUMN weight_grams integer")
        db.execute(
            "UPDATE retail.product_catalog SET weight_grams = 250, updated_ts = now() WHERE product_id = %s",
            (light,),
        )
        db.execute(
            "UPDATE retail.product_catalog SET weight_grams = 9000, updated_ts = now() WHERE product_id = %s",
            (heavy,),
        )
        wait_for_change(changes, heavy)
        # No restart, no rewrite: the next batch carries the column, old rows read null.
        drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
        weights = {
            row.product_id: row.weight_grams for row in snapshot(spark, PRODUCT_CATALOG, services).collect()
        }
        assert (weights[light], weights[heavy], weights[untouched]) == (250, 9000, None)
        assert set(weights.values()) == {250, 9000, None}

        # Analysts see it through the catalog, in a new process.
        result = run_lakehouse(
            services, "sql", "SELECT sum(weight_grams) AS total FROM bronze.hudi_product_catalog_bronze"
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert "9250" in [line.strip("| ") for line in result.stdout.splitlines()], result.stdout

        # The Silver table ran before and after the change without selecting the column;
        # once its transform selects it, the next run rebuilds it, then goes on incrementally.
        assert run_tables(spark, services, [weights_table])[weights_table.name].mode == "incremental"
        weights_table.sql.write_text(
            "SELECT product_id, sku, weight_grams, updated_ts AS last_updated_ts FROM products"
        )
        report = run_tables(spark, services, [weights_table])[weights_table.name]
        assert report.mode == "full" and "transform product_weights.sql changed" in report.note
        silver = {
            row.product_id: row.weight_grams for row in snapshot(spark, weights_table, services).collect()
        }
        assert silver == weights
        db.execute(
            "UPDATE retail.product_catalog SET weight_grams = 300, updated_ts = now() WHERE product_id = %s",
            (light,),
        )
        drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
        assert run_tables(spark, services, [weights_table])[weights_table.name].mode == "incremental"
        assert product_row(spark, services, light, weights_table).weight_grams == 300
    finally:
        db.execute("ALTER TABLE retail.product_catalog DROP COLUMN IF EXISTS weight_grams")


def test_a_dropped_column_stops_bronze_until_the_declaration_drops_it_and_nothing_is_lost(
    services, spark, db, topic_reader
):
    drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
    descriptions = db.execute("SELECT product_id, description FROM retail.product_catalog").fetchall()
    product, price = db.execute(
        "SELECT product_id, unit_price FROM retail.product_catalog ORDER BY product_id LIMIT 1"
    ).fetchone()
    changes = topic_reader(cdc_topic("product_catalog"))
    try:
        db.execute("ALTER TABLE retail.product_catalog DROP COLUMN description")
        db.execute(
            "UPDATE retail.product_catalog SET unit_price = unit_price + 1, updated_ts = now()"
            " WHERE product_id = %s",
            (product,),
        )
        wait_for_change(changes, product)
        for _ in range(2):  # the batch is still there for a second try: nothing moved on
            with pytest.raises(BronzeError) as stopped:
                BronzeJob(spark, services, (PRODUCT_CATALOG,)).drain()
            assert str(stopped.value).startswith(
                "the source schema of retail.product_catalog (Bronze table "
                "hudi_product_catalog_bronze) changed: column description (string) was dropped. "
                "Bronze stopped before landing this batch, and its messages wait in Kafka."
            )
            assert product_row(spark, services, product).unit_price == price

        # What the message says to do: drop the column from the declaration.
        edited = dataclasses.replace(
            PRODUCT_CATALOG,
            nullable=(),
            columns={name: kind for name, kind in PRODUCT_CATALOG.columns.items() if name != "description"},
        )
        BronzeJob(spark, services, (edited,)).drain()
        landed = product_row(spark, services, product)
        assert (landed.unit_price, landed.description) == (price + 1, None)
    finally:
        # Put the column back as it was, so later tests find the source they expect.
        db.execute("ALTER TABLE retail.product_catalog ADD COLUMN IF NOT EXISTS description text")
        with db.cursor() as cursor:
            cursor.executemany(
                "UPDATE retail.product_catalog SET description = %s WHERE product_id = %s",
                [(d, p) for p, d in descriptions],
            )
    drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))


def test_a_retype_the_declaration_cannot_hold_stops_bronze_until_it_is_reverted(
    services, spark, db, topic_reader, monkeypatch
):
    drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
    product, price = db.execute(
        "SELECT product_id, unit_price FROM retail.product_catalog ORDER BY product_id DESC LIMIT 1"
    ).fetchone()
    monkeypatch.setattr(bronze_job, "REFUSED_RETRY_SECONDS", 2)
    said: list[str] = []
    streaming = None
    changes = topic_reader(cdc_topic("product_catalog"))
    try:
        db.execute("ALTER TABLE retail.product_catalog ALTER COLUMN unit_price TYPE numeric(14,4)")
        db.execute(
            "UPDATE retail.product_catalog SET unit_price = unit_price + 0.0049,"
            " updated_ts = now() WHERE product_id = %s",
            (product,),
        )
        wait_for_change(changes, product)
        with pytest.raises(
            BronzeError,
            match=r"column unit_price changed type to numeric\(14,4\), "
            r"which decimal\(12,2\) cannot hold",
        ):
            BronzeJob(spark, services, (PRODUCT_CATALOG,)).drain()
        assert product_row(spark, services, product).unit_price == price

        # Streaming, the table is refused and tried again until the source is reverted.
        job = BronzeJob(spark, services, (PRODUCT_CATALOG,))
        streaming = threading.Thread(target=job.run_continuously, args=(1, said.append))
        streaming.start()
        wait_until(lambda: len(said) >= 2, 120, "two refusals while streaming", None)
        assert said[0].startswith("the source schema of retail.product_catalog") and said[0].endswith(
            "Trying again in 2 s."
        ), said[0]
    finally:
        db.execute("ALTER TABLE retail.product_catalog ALTER COLUMN unit_price TYPE numeric(12,2)")
    # Reverted at the source, the stream goes on by itself: the change written meanwhile holds
    # a price the declared decimal(12,2) cannot (Bronze does not round), so it goes to the
    # quarantine with its reason, and the row's next change lands as usual.
    try:
        quarantine = PRODUCT_CATALOG.quarantine
        refused = f"wrong type for unit_price (decimal(12,2)): '{price + Decimal('0.0049')}'"
        wait_until(
            lambda: (
                catalog.exists(spark, quarantine.path(services))
                and snapshot(spark, quarantine, services).where(F.col("error") == refused).count() == 1
            ),
            120,
            "the change that does not fit to be quarantined",
            None,
        )
        updated_ts = (
            db.execute(
                "UPDATE retail.product_catalog SET updated_ts = now() WHERE product_id"
                " = %s RETURNING updated_ts",
                (product,),
            )
            .fetchone()[0]
            .replace(tzinfo=None)
        )
        wait_until(
            lambda: product_row(spark, services, product).updated_ts == updated_ts,
            120,
            "the row's next change to land",
            None,
        )
        assert product_row(spark, services, product).unit_price == price
    finally:
        for query in spark.streams.active:
            query.stop()
        if streaming:
            streaming.join(60)
    drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
