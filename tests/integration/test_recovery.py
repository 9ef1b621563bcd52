"""Debezium resumes from its replication slot after Kafka Connect goes down: nothing is lost,
not even inside a bulk load."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from bronze.tables import SALES_TRANSACTIONS
from infra import stack
from ingestion import connector
from ingestion.seed import copy_rows
from ingestion.topics import cdc_topic
from tests.support import drain_until_equal

CONNECT_OFFSETS_TOPIC = "_connect_offsets"


# A graceful stop can wait out Jetty's 30 s stop timeout (see below), so that case is long.
@pytest.mark.parametrize(
    "crash", [pytest.param(True, id="killed"), pytest.param(False, id="stopped", marks=pytest.mark.long)]
)
def test_changes_made_while_connect_is_down_arrive_after_restart(services, db, topic_reader, crash):
    reader = topic_reader(cdc_topic("customer_master"))
    tier = "platinum" if crash else "silver"
    stack.stop_service(services, "connect", crash=crash)
    changed = (11, 12, 13) if crash else (14, 15)
    for customer_id in changed:
        db.execute(
            "UPDATE retail.customer_master SET loyalty_tier = %s, updated_ts = now() WHERE customer_id = %s",
            (tier, customer_id),
        )
    stack.start_service(services, "connect")
    assert connector.register(services) == "unchanged"

    # As updates, or as reads when Connect was stopped before the initial snapshot finished
    # (this test running first in a session), which the restarted connector then redoes.
    def arrived(messages):
        return {
            v["after"]["customer_id"]
            for _, v in messages
            if v and v["op"] in ("u", "r") and v["after"]["loyalty_tier"] == tier
        } >= set(changed)

    reader.read_until(arrived, timeout=90)


# Large enough that Debezium streams the transaction for longer than Connect's offset flush
# interval (5 s at about 10,000 events/s), so an offset is committed inside it.
BULK_LINES = 60_000


def _copy_lines(db, first_order_id: int, count: int = BULK_LINES) -> None:
    now = datetime.now(UTC)
    lines = (
        {
            "order_id": first_order_id + n,
            "line_item_id": 1,
            "customer_id": 1 + n % 50,
            "product_id": 1 + n % 20,
            "quantity": 1 + n % 3,
            "unit_price": Decimal("9.99"),
            "discount": Decimal("0.00"),
            "channel": "web",
            "store_id": None,
            "status": "pending",
            "transaction_ts": now,
            "updated_ts": now,
        }
        for n in range(count)
    )
    with db.transaction():
        copy_rows(db, "sales_transactions", lines)


def _insert_select_lines(db, first_order_id: int) -> None:
    db.execute(
        "INSERT INTO retail.sales_transactions SELECT g, 1, 1 + g %% 50, 1 + g %% 20,"
        " 1 + g %% 3, 9.99, 0, 'web', NULL, 'pending', now(), now()"
        " FROM generate_series(%s::bigint, %s::bigint) AS g",
        (first_order_id, first_order_id + BULK_LINES - 1),
    )


def _ours(messages, first_order_id: int) -> list[dict]:
    """The load's insert events among `messages`."""
    return [
        v
        for _, v in messages
        if v and v["op"] == "c" and first_order_id <= v["after"]["order_id"] < first_order_id + BULK_LINES
    ]


@pytest.mark.leaves_history
def test_each_row_of_a_copy_has_a_wal_position_of_its_own(db):
    """What keeps Debezium 3.7.0's resume point exact (ingestion/schema.sql): without the
    schema's row trigger, COPY writes a page of rows at one LSN."""
    first_order_id = db.execute("SELECT max(order_id) + 1000 FROM retail.sales_transactions").fetchone()[0]
    slot = "retailmax_lsn_probe"
    db.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding', true)", (slot,))
    try:
        _copy_lines(db, first_order_id, count=1_000)
        rows, positions = db.execute(
            "SELECT count(*), count(DISTINCT lsn) FROM pg_logical_slot_peek_changes(%s, NULL, NULL)"
            " WHERE data LIKE 'table retail.sales_transactions: INSERT:%%'",
            (slot,),
        ).fetchone()
    finally:
        db.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        db.execute("DELETE FROM retail.sales_transactions WHERE order_id >= %s", (first_order_id,))
    assert (rows, positions) == (1_000, 1_000)


# Connect stops its REST server before its tasks, and Jetty may wait out its 30 s stop timeout
# meanwhile, so a graceful stop can land after the whole load has streamed. That load tested
# nothing new (it is checked whole all the same), and the scenario is tried once more.
ATTEMPTS_TO_STOP_MID_LOAD = 2


# A kill leaves Connect's last stored offset as the resume point, a graceful stop stores one
# on its way out: both are tried under both kinds of load (COPY and INSERT ... SELECT are each
# one large transaction in the WAL, which is what Debezium reads). Each takes minutes and adds
# 120,000 changes (its lines, then their deletion) that every later drain and pass of the
# session would take, so they run last (tests/integration/conftest.py).
@pytest.mark.long
@pytest.mark.leaves_history
@pytest.mark.parametrize(
    ("load", "crash"),
    [
        pytest.param(_copy_lines, True, id="copy-sigkill"),
        pytest.param(_insert_select_lines, True, id="insert_select-sigkill"),
        pytest.param(_copy_lines, False, id="copy-sigterm"),
        pytest.param(_insert_select_lines, False, id="insert_select-sigterm"),
    ],
)
def test_a_bulk_load_streaming_when_connect_stops_reaches_kafka_and_bronze_whole(
    services, spark, db, topic_reader, load, crash
):
    first_order_id = db.execute("SELECT max(order_id) + 1000 FROM retail.sales_transactions").fetchone()[0]
    lines = topic_reader(cdc_topic("sales_transactions"))
    offsets = topic_reader(CONNECT_OFFSETS_TOPIC)
    connect_stopped = False
    try:
        for attempt in range(ATTEMPTS_TO_STOP_MID_LOAD):
            load_start = first_order_id + attempt * BULK_LINES
            load(db, load_start)
            # Stop Connect once it has stored an offset inside the load's transaction: that
            # offset, not the transaction's start, is where the restarted task resumes.
            arrived, tx_id, deadline = set(), None, time.monotonic() + 120
            while True:
                events = _ours(lines.poll(), load_start)
                arrived |= {e["after"]["order_id"] for e in events}
                tx_id = tx_id or (events[0]["source"]["txId"] if events else None)
                if tx_id and any(v and v.get("txId") == tx_id for _, v in offsets.poll(100)):
                    break
                assert time.monotonic() < deadline, (
                    f"no offset committed inside the load; {len(arrived)} lines arrived"
                )
            stack.stop_service(services, "connect", crash=crash)
            connect_stopped = True
            while events := _ours(lines.poll(1000), load_start):
                arrived |= {e["after"]["order_id"] for e in events}

            stack.start_service(services, "connect")
            connect_stopped = False
            assert connector.register(services) == "unchanged"
            stopped_mid_load = len(arrived) < BULK_LINES
            deadline = time.monotonic() + 180
            while len(arrived) < BULK_LINES and time.monotonic() < deadline:
                arrived |= {e["after"]["order_id"] for e in _ours(lines.poll(), load_start)}
            assert len(arrived) == BULK_LINES, f"{BULK_LINES - len(arrived)} lines never reached Kafka"
            if stopped_mid_load:
                break
        assert stopped_mid_load, f"the load finished streaming before Connect stopped, {attempt + 1} times"

        drain_until_equal(spark, services, db, tables=(SALES_TRANSACTIONS,))
    finally:
        if connect_stopped:  # a failed assertion must not leave the next tests without Connect
            stack.start_service(services, "connect")
        db.execute("DELETE FROM retail.sales_transactions WHERE order_id >= %s", (first_order_id,))
    # Bronze lands the load's deletes here, so that the next test does not wait behind them
    # for its own changes to arrive.
    drain_until_equal(spark, services, db, tables=(SALES_TRANSACTIONS,))
