"""The changeset an incremental run commits, case by case: the rows the runner recomputed
for the affected keys against the rows the table holds for them."""

from __future__ import annotations

from datetime import date

import pytest

from lakehouse.changeset import changeset
from lakehouse.hudi import DELETED
from lakehouse.tables import Partitioning, Table

# Keyed by order line, partitioned by the month of its date, as unified orders are.
ORDERS = Table(
    name="orders",
    layer="silver",
    table_type="COPY_ON_WRITE",
    record_key=("order_id",),
    ordering=("order_date",),
    partitioning=Partitioning("order_date", by="month"),
)
SCHEMA = "order_id int, order_date date, amount int"
KEYS = "order_id int"


def frame(spark, rows, schema=SCHEMA):
    return spark.createDataFrame(rows, schema)


def applied(spark, recomputed, held, kept_out=(), produced=None):
    """The batch as {(key, deleted): row}, from lists of (order_id, order_date, amount)."""
    changes = changeset(
        ORDERS, frame(spark, recomputed), frame(spark, held), frame(spark, [(k,) for k in kept_out], KEYS)
    )
    if produced is not None:
        changes = changes.still_produced(frame(spark, produced))
    rows = changes.batch().collect()
    batch = {(r.order_id, r[DELETED]): (r.order_id, r.order_date, r.amount) for r in rows}
    assert len(batch) == len(rows), f"a key twice in one batch: {rows}"
    return batch


JAN, JAN_2, FEB = date(2026, 1, 5), date(2026, 1, 20), date(2026, 2, 3)


def test_an_unchanged_row_is_not_rewritten(spark):
    assert applied(spark, recomputed=[(1, JAN, 10)], held=[(1, JAN, 10)]) == {}


def test_a_new_row_and_a_changed_row_are_upserted(spark):
    batch = applied(spark, recomputed=[(1, JAN, 11), (2, JAN, 20)], held=[(1, JAN, 10)])
    assert batch == {(1, False): (1, JAN, 11), (2, False): (2, JAN, 20)}


def test_a_key_no_longer_produced_is_deleted(spark):
    assert applied(spark, recomputed=[], held=[(1, JAN, 10)]) == {(1, True): (1, JAN, 10)}


def test_a_move_within_the_partition_is_an_update_only(spark):
    batch = applied(spark, recomputed=[(1, JAN_2, 10)], held=[(1, JAN, 10)])
    assert batch == {(1, False): (1, JAN_2, 10)}


def test_a_move_to_another_partition_deletes_the_old_copy(spark):
    # The bucket index only finds a key within its partition: without the delete, the old
    # copy would stay in January beside the new one in February.
    batch = applied(spark, recomputed=[(1, FEB, 10)], held=[(1, JAN, 10)])
    assert batch == {(1, False): (1, FEB, 10), (1, True): (1, JAN, 10)}


def test_a_row_kept_out_by_the_gate_is_deleted_and_not_upserted(spark):
    batch = applied(spark, recomputed=[(1, JAN, -5), (2, JAN, 20)], held=[(1, JAN, 10)], kept_out=[1])
    assert batch == {(1, True): (1, JAN, 10), (2, False): (2, JAN, 20)}


def test_a_row_moved_to_another_partition_and_kept_out_is_deleted_once(spark):
    # Missing from its partition and kept out: one delete, as Hudi counts it (the run checks
    # the commit's statistics against the batch).
    batch = applied(spark, recomputed=[(1, FEB, -5)], held=[(1, JAN, 10)], kept_out=[1])
    assert batch == {(1, True): (1, JAN, 10)}


def test_a_kept_out_row_the_table_never_held_is_left_out(spark):
    assert applied(spark, recomputed=[(1, JAN, -5)], held=[], kept_out=[1]) == {}


@pytest.mark.parametrize(
    ("produced", "deleted"),
    [
        # Still produced where it is: it only left the values the run recomputed.
        ([(1, JAN, 10)], False),
        # Produced, but in another partition: the copy the table holds is stale.
        ([(1, FEB, 10)], True),
        # Not produced at all: gone at the source.
        ([], True),
    ],
)
def test_missing_rows_are_checked_against_the_whole_inputs(spark, produced, deleted):
    batch = applied(spark, recomputed=[], held=[(1, JAN, 10)], produced=produced)
    assert batch == ({(1, True): (1, JAN, 10)} if deleted else {})
