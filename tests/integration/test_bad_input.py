"""The hostile corpus (tests/bad_input.py) through the real path, Kafka and the streaming job
into Hudi, all at once: each message quarantined with its reason or landed; then hostile rows
written to Postgres, through Debezium, land equal: the streams went on."""

from __future__ import annotations

import json

from bronze.job import BronzeJob
from bronze.tables import BRONZE_TABLES, WEB_CLICKSTREAMS
from lakehouse.hudi import snapshot
from tests.bad_input import CASES
from tests.support import drain_until_equal, run_lakehouse

# A change that lands from a forged message would be in Bronze and not at the source, which
# Bronze must equal: those cases are decoded in tests/unit/test_bad_input.py, and hostile
# values reach the CDC tables below the way real ones do, through Postgres and Debezium.
SENT = [case for case in CASES if case.error is not None or case.table.envelope != "debezium"]
HOSTILE_TEXT = 'Zoë 🚀 "quoted" \\ \' \u202e; DROP TABLE x;--'


def _landed(spark, settings, table, case) -> dict | None:
    image = json.loads(case.value)
    where = " AND ".join(f"{key} = '{image[key]}'" for key in table.record_key)
    rows = snapshot(spark, table, settings).where(where).collect()
    return rows[0].asDict() if rows else None


def test_the_corpus_through_kafka_is_quarantined_or_landed_and_the_streams_go_on(
    services, spark, db, producer
):
    positions = {}
    for case in SENT:
        sent = producer.send(case.table.topic, key=case.kafka_key(), value=case.kafka_value())
        metadata = sent.get(timeout=10)
        positions[case.name] = (metadata.partition, metadata.offset)

    BronzeJob(spark, services).drain()

    errors = {}
    for table in BRONZE_TABLES:
        quarantine = snapshot(spark, table.quarantine, services)
        errors |= {
            (table.topic, r._kafka_partition, r._kafka_offset): r.error
            for r in quarantine.select("_kafka_partition", "_kafka_offset", "error").collect()
        }
    wrong = []
    for case in SENT:
        where = (case.table.topic, *positions[case.name])
        if case.error is not None:
            if errors.get(where) != case.error:
                wrong.append(f"{case.name}: expected {case.error!r}, got {errors.get(where)!r}")
        else:
            row = _landed(spark, services, case.table, case)
            if row is None or {c: row[c] for c in case.lands} != case.lands:
                wrong.append(f"{case.name}: expected to land {case.lands}, got {row}")
    assert not wrong, "\n".join(wrong)

    # `make status` says what the streams kept out, and how analysts sign in.
    status = run_lakehouse(services, "status", timeout=120)
    lines = status.stdout.splitlines()
    assert any(
        line.split()[:3] == ["stream", "kept", "out"]
        and WEB_CLICKSTREAMS.name in line
        and " quarantined" in line
        for line in lines
    ), status.stdout + status.stderr
    assert f"user {services.analyst_user}, password {services.analyst_password}" in status.stdout, (
        status.stdout
    )

    # Hostile values at the source land equal (Bronze equals Postgres, compared value by
    # value), and land after all of the above: no message stopped a stream.
    customer_id, product_id, order_id = 9_900_100, 9_900_100, 9_900_100
    try:
        # Columns named: earlier tests drop and re-add columns, which reorders them.
        db.execute(
            "INSERT INTO retail.customer_master (customer_id, first_name, last_name, email, "
            "city, state, country, region, loyalty_tier, created_at, updated_ts) VALUES "
            "(%s, %s, %s, %s, %s, %s, 'GB', 'europe', 'gold', now(), now())",
            (
                customer_id,
                HOSTILE_TEXT,
                "O'Brien\ttab\nnewline",
                "zoë@exämple.com",
                "../../etc/passwd",
                "a/b=c%2F",
            ),
        )
        db.execute(
            "INSERT INTO retail.product_catalog (product_id, sku, name, description, "
            "category, brand, unit_price, active, updated_ts) VALUES (%s, %s, %s, %s, "
            "'home_kitchen', 'Casa', 0.01, true, now())",
            (product_id, "../SKU=1/..", HOSTILE_TEXT, "x" * 20_000),
        )
        db.execute(
            "INSERT INTO retail.sales_transactions (order_id, line_item_id, customer_id, "
            "product_id, quantity, unit_price, discount, channel, store_id, status, "
            "transaction_ts, updated_ts) VALUES (%s, 1, %s, %s, 2147483647, 9999999999.99, "
            "0, 'web', %s, 'pending', now(), now())",
            (order_id, customer_id, product_id, "../../store"),
        )
        drain_until_equal(spark, services, db)
    finally:
        db.execute("DELETE FROM retail.sales_transactions WHERE order_id = %s", (order_id,))
        db.execute("DELETE FROM retail.product_catalog WHERE product_id = %s", (product_id,))
        db.execute("DELETE FROM retail.customer_master WHERE customer_id = %s", (customer_id,))
        drain_until_equal(spark, services, db)
