"""Every table declaration loads, and what is derived from it is consistent."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, timedelta

import pytest

from bronze.tables import BRONZE_TABLES, INVENTORY_UPDATES, SALES_TRANSACTIONS, bronze_table
from gold.tables import CUSTOMER_SEGMENTS, DAILY_SALES
from ingestion.topics import source_topics
from lakehouse.partitions import reached
from lakehouse.settings import ConfigurationError
from lakehouse.tables import LAYOUT_KEY, DerivedTable, Input, Partitioning, hudi_options
from medallion.tables import declared_tables, derived_tables
from silver.tables import CUSTOMER_PROFILES, UNIFIED_CUSTOMER_ORDERS


def test_every_source_topic_lands_in_exactly_one_bronze_table():
    assert sorted(t.topic for t in BRONZE_TABLES) == sorted(source_topics())


def test_table_names_are_unique_and_follow_the_catalog_convention():
    names = [t.name for t in declared_tables()]
    assert len(names) == len(set(names))
    assert all(
        t.name.startswith("hudi_") and t.name.removesuffix("_quarantine").endswith(f"_{t.layer}")
        for t in declared_tables()
    )


def test_hudi_options_follow_the_declaration(settings):
    options = hudi_options(SALES_TRANSACTIONS, settings)
    assert options["hoodie.datasource.write.recordkey.field"] == "order_id,line_item_id"
    assert options["hoodie.datasource.write.keygenerator.type"] == "COMPLEX"
    assert options["hoodie.datasource.write.partitionpath.field"] == "dt_month"
    assert options["hoodie.table.ordering.fields"] == "_source_lsn"
    assert options["hoodie.table.cdc.enabled"] == "true"
    assert options["hoodie.compact.inline"] == "true"
    quarantine = hudi_options(SALES_TRANSACTIONS.quarantine, settings)
    assert quarantine["hoodie.datasource.write.table.type"] == "COPY_ON_WRITE"
    assert "hoodie.table.cdc.enabled" not in quarantine


def test_every_table_uses_the_bucket_index_without_key_bloom_filters(settings):
    for table in declared_tables():
        options = hudi_options(table, settings)
        assert (options["hoodie.index.type"], options["hoodie.bucket.index.num.buckets"]) == (
            "BUCKET",
            str(table.buckets),
        ), table.name
        assert options["hoodie.metadata.enable"] == "false"
        assert options["hoodie.parquet.bloom.filter.enabled"] == "false"
    with pytest.raises(ValueError, match="buckets must be at least 1, got 0"):
        dataclasses.replace(SALES_TRANSACTIONS, buckets=0)


def test_granularity_decides_the_partition_field_and_the_layout_every_commit_records(settings):
    assert [
        (p.by, p.field)
        for p in (
            Partitioning("order_date", by="month"),
            Partitioning("order_date", by="day"),
            Partitioning("country", by="value"),
            Partitioning("country", by="none"),
        )
    ] == [("month", "order_date_month"), ("day", "order_date"), ("value", "country_value"), ("none", "")]
    inventory = hudi_options(INVENTORY_UPDATES, settings)
    assert inventory["hoodie.datasource.write.partitionpath.field"] == ""
    assert inventory["hoodie.datasource.write.keygenerator.type"] == "NON_PARTITION"
    assert json.loads(hudi_options(UNIFIED_CUSTOMER_ORDERS, settings)[LAYOUT_KEY]) == {
        "partition_field": "order_date_month",
        "index": "bucket",
        "buckets": 1,
    }
    assert UNIFIED_CUSTOMER_ORDERS.layout.describe() == "partitioned by order_date_month, 1 bucket"
    with pytest.raises(
        ValueError,
        match=r"`by` must be one of \('none', 'value', 'day', "
        r"'month'\), got 'week'",
    ):
        Partitioning("order_date", by="week")


def test_derived_tables_are_copy_on_write_and_the_latest_recomputation_wins(settings):
    options = hudi_options(DAILY_SALES, settings)
    assert options["hoodie.datasource.write.table.type"] == "COPY_ON_WRITE"
    assert options["hoodie.write.record.merge.mode"] == "COMMIT_TIME_ORDERING"
    assert "hoodie.table.ordering.fields" not in options and "hoodie.compact.inline" not in options
    assert options["hoodie.datasource.write.partitionpath.field"] == ""


def test_a_declaration_with_an_unknown_key_fails_with_a_clear_message():
    with pytest.raises(ValueError, match=r"record key \['sale_id'\] not among its columns"):
        dataclasses.replace(SALES_TRANSACTIONS, record_key=("sale_id",))
    with pytest.raises(ValueError, match="envelope must be 'debezium' or 'json'"):
        dataclasses.replace(SALES_TRANSACTIONS, envelope="avro")


def test_only_a_column_outside_the_key_and_ordering_may_be_nullable():
    with pytest.raises(
        ValueError,
        match=r"nullable columns \['order_id', 'weight'\] must be "
        r"among its columns and outside its record key",
    ):
        dataclasses.replace(SALES_TRANSACTIONS, nullable=("store_id", "order_id", "weight"))


def test_tables_are_found_by_name_or_topic():
    assert bronze_table(SALES_TRANSACTIONS.topic) is SALES_TRANSACTIONS
    with pytest.raises(ConfigurationError, match="no Bronze table 'nope'; known: "):
        bronze_table("nope")


def test_derived_tables_run_after_the_tables_they_read():
    order = [table.name for table in derived_tables()]
    for table in derived_tables():
        for source in table.inputs:
            if source.table.name in order:
                assert order.index(source.table.name) < order.index(table.name)


def test_a_pass_takes_a_sale_to_gold_before_it_turns_to_unrelated_tables():
    order = [table.name for table in derived_tables()]
    assert order[:2] == [UNIFIED_CUSTOMER_ORDERS.name, DAILY_SALES.name]
    assert order.index(CUSTOMER_PROFILES.name) + 1 == order.index(CUSTOMER_SEGMENTS.name)


def test_every_derived_table_declares_a_freshness_target_and_daily_sales_the_tightest():
    targets = {t.name: t.fresh_within for t in derived_tables()}
    assert min(targets.values()) == targets[DAILY_SALES.name]
    assert sorted(targets.values()).count(targets[DAILY_SALES.name]) == 1
    with pytest.raises(ValueError, match="fresh_within must be a positive timedelta"):
        dataclasses.replace(DAILY_SALES, fresh_within=timedelta(0))


@pytest.mark.parametrize(
    "source, transform, refusal",
    [
        pytest.param(
            dataclasses.replace(SALES_TRANSACTIONS, change_log=False),
            "unified_customer_orders",
            "need change_log=True",
            id="input-without-change-log",
        ),
        pytest.param(
            SALES_TRANSACTIONS,
            "missing",
            r"transform .*silver/transforms/missing.sql does not exist",
            id="missing-transform",
        ),
    ],
)
def test_a_derived_table_reads_inputs_that_keep_a_change_log_through_an_existing_transform(
    source, transform, refusal
):
    with pytest.raises(ValueError, match=refusal):
        DerivedTable(
            name="t",
            layer="silver",
            record_key=("order_id",),
            ordering=("x",),
            inputs=(Input(source, "sales"),),
            transform=transform,
            fresh_within=timedelta(minutes=1),
        )


def test_changes_resolve_to_the_key_and_the_columns_inputs_are_pruned_by():
    # A line's day is not part of its key, so its changes must name it; a daily group's is.
    assert UNIFIED_CUSTOMER_ORDERS.affected_columns == ("order_id", "line_item_id", "order_date")
    assert DAILY_SALES.affected_columns == DAILY_SALES.record_key


def test_a_pruned_input_with_a_reach_reads_the_days_before_each_affected_day():
    day = date(2026, 3, 1)
    assert reached([day, None], timedelta(0)) == [day, None]
    # Two affected days a day apart share all but one day of their windows.
    assert reached([day, day + timedelta(days=1), None], timedelta(days=2)) == [
        day - timedelta(days=2),
        day - timedelta(days=1),
        day,
        day + timedelta(days=1),
    ]
    with pytest.raises(ValueError, match="input orders: `reach` widens a `prune`, and this input has none"):
        Input(UNIFIED_CUSTOMER_ORDERS, "orders", reach=timedelta(days=7))
    whole_days = "input orders: `reach` must be a whole number of days, got 12:00:00"
    with pytest.raises(ValueError, match=whole_days):
        Input(UNIFIED_CUSTOMER_ORDERS, "orders", prune=("order_date", "date"), reach=timedelta(hours=12))


def test_operations_pick_tables_by_layer_or_name_and_refuse_unknown_ones():
    from medallion.tables import main_tables, select

    tables = main_tables()
    assert select(None, tables) == tables
    assert select(["gold"], tables) == [t for t in tables if t.layer == "gold"]
    assert {t.layer for t in select(["gold"], tables)} == {"gold"}
    assert select(["silver.hudi_customer_profiles_silver", "hudi_customer_profiles_silver"], tables) == [
        t for t in tables if t.name == "hudi_customer_profiles_silver"
    ]
    with pytest.raises(ConfigurationError, match="no table or layer 'platinum'; known: bronze, silver, gold"):
        select(["platinum"], tables)


def test_a_snapshot_read_opens_the_latest_base_file_and_the_log_files_after_it():
    from operations.maintenance import snapshot_file_count

    names = [
        "f0-0_0-1-1_050.parquet",  # written by a commit archived since
        "f1-0_0-5-9_100.parquet",
        ".f1-0_110.log.1_0-1-2",
        ".f1-0_120.log.1_0-1-2",
        "f1-0_0-9-9_130.parquet",
        ".f1-0_130.log.1_0-9-9.cdc",
        ".f1-0_140.log.1_0-3-4",
        ".f2-0_150.log.1_0-3-4",  # f2 has no base file yet: its inserts are in a log
        ".f2-0_160.log.1_0-3-4",
    ]  # a write that never completed
    assert snapshot_file_count(names, {"100", "110", "120", "130", "140", "150"}) == 4
