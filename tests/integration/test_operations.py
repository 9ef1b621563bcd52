"""Operating the tables: table services, savepoints and restores, on the real stack."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest

from bronze.job import BronzeJob
from bronze.tables import CUSTOMER_MASTER, SALES_TRANSACTIONS
from gold.tables import DAILY_SALES
from lakehouse.locks import exclusive_writer
from lakehouse.settings import ConfigurationError
from medallion import verify
from medallion.tables import declared_tables, derived_tables
from operations import maintenance, savepoints
from silver.tables import UNIFIED_CUSTOMER_ORDERS
from tests.support import (
    assert_equals_full_rebuild,
    drain_until_equal,
    rows,
    run_all,
    run_lakehouse,
    run_tables,
    run_workload,
)

GOLD = [t for t in derived_tables() if t.layer == "gold"]
CUSTOMER_READERS = [t for t in derived_tables() if any(i.table is CUSTOMER_MASTER for i in t.inputs)]


def data_files(partition: Path) -> set[str]:
    """The base and log files of a local table's partition (the table's own folder when it
    is not partitioned)."""
    return {
        p.name
        for p in partition.iterdir()
        if p.name.endswith(".parquet") or (".log." in p.name and not p.name.endswith(".crc"))
    }


def land_customer_changes(spark, settings, db, rounds: int) -> None:
    """One small Bronze commit per round: the same three customers of one country change
    tier at the source (the table, unpartitioned and of one bucket, is one file group)."""
    for n in range(rounds):
        db.execute(
            "UPDATE retail.customer_master SET loyalty_tier = %s, updated_ts = now()"
            " WHERE customer_id IN (SELECT customer_id FROM retail.customer_master"
            "  WHERE country = (SELECT min(country) FROM retail.customer_master)"
            "  ORDER BY customer_id LIMIT 3)",
            (("bronze", "silver", "gold", "platinum")[n % 4],),
        )
        deadline = time.monotonic() + 120
        while True:
            BronzeJob(spark, settings, (CUSTOMER_MASTER,)).drain()
            if verify.bronze_against_postgres(spark, settings, db, CUSTOMER_MASTER).equal:
                break
            assert time.monotonic() < deadline, "the change did not reach Bronze in 120 s"
            time.sleep(2)


SMALL_COMMITS = 4


def test_maintenance_compacts_small_commits_and_cleans_old_versions(services, spark, db):
    # Inline compaction off, and a retention of one commit, so that both show.
    settings = dataclasses.replace(services, compact_every_delta_commits=1000, commits_retained=1)
    drain_until_equal(spark, services, db)
    land_customer_changes(spark, settings, db, rounds=SMALL_COMMITS)
    # The readers take the changes first, so cleaning passes nothing they still need.
    run_tables(spark, services, CUSTOMER_READERS)
    before = maintenance.files(spark, settings, CUSTOMER_MASTER)
    kept = rows(spark, settings, CUSTOMER_MASTER)
    first_version = data_files(Path(CUSTOMER_MASTER.path(settings)))
    assert sum(".log." in name for name in first_version) >= SMALL_COMMITS

    compacted = maintenance.maintain(spark, settings, CUSTOMER_MASTER)
    assert "compaction" in compacted.services
    # The log files and their base file were one snapshot read's files; now one base file.
    assert compacted.after.snapshot_files <= before.snapshot_files - SMALL_COMMITS, compacted.line()
    assert compacted.after.pending_compactions == 0
    assert rows(spark, settings, CUSTOMER_MASTER) == kept

    # Hudi keeps the version before the oldest retained commit for queries still reading
    # it: the first version's files go at the next maintenance after more commits.
    land_customer_changes(spark, settings, db, rounds=2)
    run_tables(spark, services, CUSTOMER_READERS)
    maintenance.maintain(spark, settings, CUSTOMER_MASTER)
    left = first_version & data_files(Path(CUSTOMER_MASTER.path(settings)))
    assert not left, f"files of the compacted version still stored: {sorted(left)}"
    assert verify.bronze_against_postgres(spark, settings, db, CUSTOMER_MASTER).equal
    # A compaction is a commit, which readers take (it changes no row); a reader whose
    # checkpoint the cleaner had passed would rebuild in full instead.
    modes = [r.mode for r in run_tables(spark, services, CUSTOMER_READERS).values()]
    assert "full" not in modes, "a reader lost its checkpoint"

    shown = run_lakehouse(services, "tables", "--json", CUSTOMER_MASTER.qualified_name)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert (
        json.loads(shown.stdout.strip().splitlines()[-1])
        == maintenance.files(spark, settings, CUSTOMER_MASTER).as_dict()
    )


def test_the_scheduled_maintenance_job_maintains_every_table(services, spark, db):
    from orchestration import definitions

    drain_until_equal(spark, services, db)
    run_all(spark, services)
    result = (
        definitions.build(services).resolve_job_def("maintenance").execute_in_process(raise_on_error=False)
    )
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    [output] = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    maintained = set(output.event_specific_data.metadata)
    existing = maintenance.existing(spark, services, declared_tables())
    assert CUSTOMER_MASTER.qualified_name in maintained
    assert maintained == {t.qualified_name for t in existing}


def test_a_restored_gold_equals_its_savepoint_and_catches_up(services, spark, db):
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    saved = {t.name: rows(spark, services, t) for t in GOLD}
    points = [savepoints.create(spark, services, t, "before a bad pass") for t in GOLD]
    assert [s.instant for t in GOLD for s in savepoints.listed(spark, services, t)] == [
        p.instant for p in points
    ]

    run_workload(db, steps=15, seed=1901)
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    assert {t.name: rows(spark, services, t) for t in GOLD} != saved, "the pass changed no Gold row"

    for table in GOLD:
        savepoints.restore(spark, services, table)
    assert {t.name: rows(spark, services, t) for t in GOLD} == saved

    # The checkpoints came back with the data: the next run reads the changes since then.
    reports = run_tables(spark, services, GOLD)
    assert {r.mode for r in reports.values()} == {"incremental"}, reports
    assert_equals_full_rebuild(spark, services, GOLD)

    for point, table in zip(points, GOLD):
        savepoints.delete(spark, services, table, point.instant)
    with pytest.raises(
        ConfigurationError,
        match="has no savepoint; create one first with `lakehouse savepoint create gold.hudi_daily",
    ):
        savepoints.restore(spark, services, DAILY_SALES)


def test_a_restored_bronze_table_replays_kafka_and_its_readers_rebuild(services, spark, db):
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    point = savepoints.create(spark, services, SALES_TRANSACTIONS)
    saved = rows(spark, services, SALES_TRANSACTIONS)

    run_workload(db, steps=30, seed=1902)
    drain_until_equal(spark, services, db, tables=(SALES_TRANSACTIONS,))
    run_tables(spark, services, [UNIFIED_CUSTOMER_ORDERS])
    savepoints.restore(spark, services, SALES_TRANSACTIONS)
    assert rows(spark, services, SALES_TRANSACTIONS) == saved

    # The stream's checkpoint came back too: it lands again what Kafka holds since then.
    drain_until_equal(spark, services, db, tables=(SALES_TRANSACTIONS,))
    reports = run_tables(spark, services, [UNIFIED_CUSTOMER_ORDERS, DAILY_SALES])
    assert reports[UNIFIED_CUSTOMER_ORDERS.name].mode == "full"
    assert "was restored to a savepoint" in reports[UNIFIED_CUSTOMER_ORDERS.name].note
    assert_equals_full_rebuild(spark, services, [UNIFIED_CUSTOMER_ORDERS, DAILY_SALES])
    savepoints.delete(spark, services, SALES_TRANSACTIONS, point.instant)


def test_a_restore_while_a_writer_runs_is_refused(services):
    with exclusive_writer(services, "gold"):
        refused = run_lakehouse(services, "savepoint", "restore", "gold", timeout=120)
    assert refused.returncode == 4, refused.stderr
    assert f"the gold tables are being written by pid {os.getpid()}" in refused.stderr
