"""Postgres changes arrive in Kafka as Debezium events: right op, full images, exact money."""

from __future__ import annotations

import os
import random
import subprocess
from datetime import UTC, datetime
from decimal import Decimal

from ingestion import connector, database, generators
from ingestion.seed import copy_rows
from ingestion.topics import cdc_topic
from ingestion.workload import OltpWorkload, new_customer, new_product

NOW = datetime(2026, 6, 1, 12, 30, 15, 123456, tzinfo=UTC)
NOW_ISO = "2026-06-01T12:30:15.123456Z"


def _events_for(messages, key):
    return [value for k, value in messages if k == key and value is not None]


def _changes_of(reader, key, count: int) -> list[dict]:
    """The change events of the row `key`, read until there are `count`: each test changes
    one row of its own, among whatever else the topic carries meanwhile."""
    return _events_for(reader.read_until(lambda m: len(_events_for(m, key)) >= count), key)


def _ops(events):
    return [e["op"] for e in events]


def test_customer_insert_update_delete(db, topic_reader):
    customer_id = 9_000_001
    db.execute("DELETE FROM retail.customer_master WHERE customer_id = %s", (customer_id,))
    reader = topic_reader(cdc_topic("customer_master"))
    db.execute(
        "INSERT INTO retail.customer_master VALUES (%s, 'Ada', 'Lovelace', 'ada@example.com',"
        " NULL, '1815-12-10', 'London', 'ENG', 'GB', 'europe', 'gold', %s, %s)",
        (customer_id, NOW, NOW),
    )
    db.execute(
        "UPDATE retail.customer_master SET city = 'Tokyo', state = '13', country = 'JP',"
        " region = 'asia_pacific' WHERE customer_id = %s",
        (customer_id,),
    )
    db.execute("DELETE FROM retail.customer_master WHERE customer_id = %s", (customer_id,))
    key = {"customer_id": customer_id}
    events = _changes_of(reader, key, 3)
    assert _ops(events) == ["c", "u", "d"]
    created, updated, deleted = events
    assert created["before"] is None
    assert created["after"]["created_at"] == NOW_ISO
    assert created["after"]["birth_date"] == (datetime(1815, 12, 10) - datetime(1970, 1, 1)).days
    assert updated["before"]["region"] == "europe" and updated["after"]["region"] == "asia_pacific"
    # REPLICA IDENTITY FULL: the delete carries the whole old row, not just the key.
    assert deleted["after"] is None
    assert deleted["before"]["country"] == "JP" and deleted["before"]["email"] == "ada@example.com"
    lsns = [e["source"]["lsn"] for e in events]
    assert lsns == sorted(lsns)


def test_product_price_arrives_exact(db, topic_reader):
    product_id = 9_000_002
    db.execute("DELETE FROM retail.product_catalog WHERE product_id = %s", (product_id,))
    reader = topic_reader(cdc_topic("product_catalog"))
    db.execute(
        "INSERT INTO retail.product_catalog (product_id, sku, name, category, brand,"
        " unit_price, active, updated_ts) VALUES (%s, 'SKU-TEST-2', 'Precise Scale',"
        " 'home_kitchen', 'Casa', 1234567890.12, true, %s)",
        (product_id, NOW),
    )
    db.execute("UPDATE retail.product_catalog SET unit_price = 0.10 WHERE product_id = %s", (product_id,))
    db.execute("DELETE FROM retail.product_catalog WHERE product_id = %s", (product_id,))
    key = {"product_id": product_id}
    events = _changes_of(reader, key, 3)
    assert _ops(events) == ["c", "u", "d"]
    assert events[0]["after"]["unit_price"] == "1234567890.12"
    assert Decimal(events[1]["after"]["unit_price"]) == Decimal("0.10")
    assert events[1]["before"]["unit_price"] == "1234567890.12"
    assert events[2]["before"]["unit_price"] == "0.10"


def test_sales_line_changes_in_one_transaction_all_arrive_in_order(db, topic_reader):
    reader = topic_reader(cdc_topic("sales_transactions"))
    key = {"order_id": 9_000_003, "line_item_id": 1}
    with db.transaction():
        db.execute(
            "INSERT INTO retail.sales_transactions VALUES (%(order_id)s, %(line_item_id)s,"
            " 1, 1, 2, 19.99, 0.00, 'web', NULL, 'pending', %(ts)s, %(ts)s)",
            key | {"ts": NOW},
        )
        db.execute(
            "UPDATE retail.sales_transactions SET quantity = 3, discount = 5.97"
            " WHERE order_id = %(order_id)s AND line_item_id = %(line_item_id)s",
            key,
        )
        db.execute(
            "UPDATE retail.sales_transactions SET status = 'completed'"
            " WHERE order_id = %(order_id)s AND line_item_id = %(line_item_id)s",
            key,
        )
    db.execute(
        "DELETE FROM retail.sales_transactions"
        " WHERE order_id = %(order_id)s AND line_item_id = %(line_item_id)s",
        key,
    )
    events = _changes_of(reader, key, 4)
    assert _ops(events) == ["c", "u", "u", "d"]
    assert events[1]["after"]["discount"] == "5.97" and events[1]["after"]["quantity"] == 3
    assert events[2]["before"]["status"] == "pending" and events[2]["after"]["status"] == "completed"
    assert events[3]["before"]["transaction_ts"] == NOW_ISO
    assert len({e["source"]["txId"] for e in events[:3]}) == 1
    assert events[3]["source"]["txId"] != events[0]["source"]["txId"]


def test_a_change_made_with_psql_shows_up_within_seconds(services, db, topic_reader):
    reader = topic_reader(cdc_topic("product_catalog"))
    env = {
        **os.environ,
        "PGHOST": services.pg_host,
        "PGPORT": str(services.pg_port),
        "PGUSER": services.pg_user,
        "PGPASSWORD": services.pg_password,
        "PGDATABASE": services.pg_database,
    }
    subprocess.run(
        [
            "psql",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            "UPDATE retail.product_catalog SET active = NOT active WHERE product_id = 1",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    events = reader.read_until(lambda m: _events_for(m, {"product_id": 1}), timeout=15)
    assert _events_for(events, {"product_id": 1})[0]["op"] == "u"


def test_registration_is_idempotent(services):
    assert connector.register(services) == "unchanged"
    assert connector.register(services) == "unchanged"
    status = connector.connector_status(services)
    assert connector.is_running(status) and len(status["tasks"]) == 1


def test_the_workload_takes_the_next_free_ids_when_another_client_took_its_own(services, db):
    workload = OltpWorkload(db, seed=46)
    product_taken, customer_taken = workload.keys.max_product_id + 1, workload.keys.max_customer_id + 1
    rng, now = random.Random(46), datetime.now(UTC)
    with database.connect(services, autocommit=True) as another_client, another_client.transaction():
        copy_rows(another_client, "product_catalog", iter([generators.product(rng, product_taken, now)]))
        copy_rows(another_client, "customer_master", iter([generators.customer(rng, customer_taken, now)]))

    assert workload.run(new_product) == "new_product"
    assert workload.run(new_customer) == "new_customer"
    assert (workload.keys.max_product_id, workload.keys.max_customer_id) == (
        product_taken + 1,
        customer_taken + 1,
    )
    assert db.execute(
        "SELECT count(*) FROM retail.product_catalog WHERE product_id IN (%s, %s)",
        (product_taken, product_taken + 1),
    ).fetchone() == (2,)
