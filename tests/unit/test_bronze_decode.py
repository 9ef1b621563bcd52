"""Debezium envelopes and events -> Bronze rows or quarantine, per op and per table."""

# Why one module: it mirrors bronze/decode.py case by case, and every case builds its Kafka
# records with the same envelope and landing helpers at the top.

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime
from decimal import Decimal

import pytest

from bronze.decode import IMAGE_FIELDS, OVERSIZED, classify, split
from bronze.tables import (
    CUSTOMER_MASTER,
    INVENTORY_UPDATES,
    PRODUCT_CATALOG,
    SALES_TRANSACTIONS,
    WEB_CLICKSTREAMS,
)
from tests import bad_input
from tests.bad_input import SOURCE, kafka_key

# The hostile corpus's valid rows, with the keys these tests name in their Kafka keys and
# assertions, and a price that takes all twelve digits of decimal(12,2).
SALE = dict(bad_input.SALE, order_id=7, line_item_id=2)
CUSTOMER = dict(bad_input.CUSTOMER, customer_id=3)
PRODUCT = dict(bad_input.PRODUCT, product_id=4, sku="SKU-4", unit_price="1234567890.12")
CLICK = dict(bad_input.CLICK, event_id="e-1", session_id="s-1")
STOCK = dict(bad_input.STOCK, sku="SKU-4", location_id="WH-1")


def envelope(op, before=None, after=None, lsn=SOURCE["lsn"]):
    return bad_input.envelope(op, before, after, source=dict(SOURCE, lsn=lsn))


def _bytes(text):
    return None if text is None else (text if isinstance(text, bytes) else text.encode())


def kafka(spark, topic, *values, keys=None):
    keys = keys or [None] * len(values)
    rows = [
        (_bytes(key), _bytes(value), topic, 0, offset, datetime(2026, 6, 1))
        for offset, (key, value) in enumerate(zip(keys, values))
    ]
    return spark.createDataFrame(
        rows, "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
    )


def landed(spark, table, *values, keys=None):
    if keys is None:
        keys = [kafka_key(table, value) for value in values]
    rows, quarantined = split(classify(kafka(spark, table.topic, *values, keys=keys), table), table)
    return rows.collect(), quarantined.collect()


@pytest.mark.parametrize("op", ["c", "r", "u"])
def test_sales_line_create_snapshot_update_land_the_after_image(spark, op):
    before = dict(SALE, status="pending") if op == "u" else None
    after = dict(SALE, status="completed")
    (row,), bad = landed(spark, SALES_TRANSACTIONS, envelope(op, before, after, lsn=42))
    assert bad == []
    assert row.status == "completed" and row._op == op and row._source_lsn == 42
    assert row.unit_price == Decimal("19.99") and row.discount == Decimal("0.10")
    assert row.transaction_ts == datetime(2026, 6, 1, 23, 59, 59, 123456)
    assert row.dt == "2026-06-01"
    assert row._hoodie_is_deleted is False
    assert (row._kafka_topic, row._kafka_partition, row._kafka_offset) == (SALES_TRANSACTIONS.topic, 0, 0)


def test_delete_lands_the_before_image_as_a_delete(spark):
    (row,), _ = landed(spark, CUSTOMER_MASTER, envelope("d", before=CUSTOMER))
    assert row._hoodie_is_deleted is True and row._op == "d"
    assert row.customer_id == 3 and row.country == "GB"
    assert row.birth_date == date(1969, 11, 6)


def test_an_update_that_changes_the_partition_deletes_the_copy_in_the_old_one(spark):
    moved = dict(SALE, transaction_ts="2026-07-03T08:00:00Z")
    rows, bad = landed(spark, SALES_TRANSACTIONS, envelope("u", SALE, moved, lsn=42))
    assert bad == []
    assert sorted((r.dt, r.dt_month, r._hoodie_is_deleted, r._source_lsn) for r in rows) == [
        ("2026-06-01", "2026-06", True, 42),
        ("2026-07-03", "2026-07", False, 42),
    ]


def test_an_update_within_its_partition_is_one_row(spark):
    rows, _ = landed(spark, CUSTOMER_MASTER, envelope("u", CUSTOMER, dict(CUSTOMER, country="FR")))
    assert [(r.country, r._hoodie_is_deleted) for r in rows] == [("FR", False)]
    # Partitioned by month, a line re-dated within its month stays in its partition.
    redated = dict(SALE, transaction_ts="2026-06-03T08:00:00Z")
    rows, _ = landed(spark, SALES_TRANSACTIONS, envelope("u", SALE, redated, lsn=43))
    assert [(r.dt, r.dt_month, r._hoodie_is_deleted) for r in rows] == [("2026-06-03", "2026-06", False)]


def test_product_price_is_exact(spark):
    (row,), _ = landed(spark, PRODUCT_CATALOG, envelope("c", after=PRODUCT))
    assert row.unit_price == Decimal("1234567890.12") and row.active is True


# Each bad sales-line message, and the reason the quarantine gives for it.
BAD_SALES = [
    (b"{not json", "not a JSON object"),
    (envelope("x", after=SALE), "unknown op 'x'"),
    (json.dumps({"before": None, "after": SALE}), "missing field op"),
    (envelope("d", after=SALE), "missing before image"),
    (envelope("c", after=dict(SALE, line_item_id=None)), "missing key field line_item_id"),
    (envelope("c", after=dict(SALE, quantity="two")), "wrong type for quantity (int): 'two'"),
    (
        envelope("u", after=dict(SALE, unit_price="cheap")),
        "wrong type for unit_price (decimal(12,2)): 'cheap'",
    ),
    (json.dumps({"op": "c", "after": SALE, "source": {}}), "missing or non-numeric source.lsn"),
    # NOT NULL at the source (store_id, the one nullable column, is null in SALE and lands).
    (envelope("c", after=dict(SALE, channel=None)), "null in NOT NULL column channel"),
    # Beyond Spark's timestamps: converting it would fail the whole batch, every replay again.
    (
        json.dumps({"op": "c", "after": SALE, "source": {"lsn": 1, "ts_ms": 10**17}}),
        "implausible source.ts_ms '100000000000000000'",
    ),
    (
        json.dumps({"op": "c", "after": SALE, "source": {"lsn": 1, "ts_ms": 1}}),
        "implausible source.ts_ms '1'",
    ),
    # Strict JSON: one object, nothing after it, no field twice, no single quotes or NaN.
    (
        envelope("c", after=SALE) + envelope("d", before=SALE),
        f"something after the JSON object (at character {len(envelope('c', after=SALE))})",
    ),
    (
        envelope("c", after=SALE) + " trailing",
        f"something after the JSON object (at character {len(envelope('c', after=SALE)) + 1})",
    ),
    (envelope("c", after=SALE).replace('"op": "c"', '"op": "c", "op": "d"'), "field op given twice"),
    (envelope("c", after=SALE).replace('"', "'"), "not a JSON object"),
    (envelope("c", after=dict(SALE, quantity=float("nan"))), "NaN is not a JSON value"),
    # Exact numbers: no truncation into an integer, no rounding into a decimal's scale.
    (envelope("c", after=dict(SALE, quantity=2.5)), "wrong type for quantity (int): '2.5'"),
    (
        envelope("c", after=dict(SALE, unit_price="19.999")),
        "wrong type for unit_price (decimal(12,2)): '19.999'",
    ),
    (
        envelope("c", after=dict(SALE, unit_price="12345678901.00")),
        "wrong type for unit_price (decimal(12,2)): '12345678901.00'",
    ),
    (envelope("c", after=dict(SALE, quantity=2**40)), f"wrong type for quantity (int): '{2**40}'"),
]


@pytest.fixture(scope="module")
def bad_sales_landed(spark):
    """The bad messages in one batch, as Bronze meets them, one quarantined row by offset."""
    rows, quarantined = landed(spark, SALES_TRANSACTIONS, *[value for value, _ in BAD_SALES])
    assert rows == []
    return {row._kafka_offset: row for row in quarantined}


@pytest.mark.parametrize("offset", range(len(BAD_SALES)), ids=[error for _, error in BAD_SALES])
def test_bad_cdc_messages_are_quarantined_with_their_reason(bad_sales_landed, offset):
    value, error = BAD_SALES[offset]
    bad = bad_sales_landed[offset]
    assert bad.error == error
    assert bad.raw_value == (value.decode() if isinstance(value, bytes) else value)


def test_a_change_whose_kafka_key_is_not_its_rows_key_is_quarantined(spark):
    value = envelope("c", after=SALE)
    keys = [
        '{"order_id": 7, "line_item_id": 3}',
        '{"order_id": 7}',
        '{"order_id": 7, "line_item_id": 2, "extra": 1}',
        "7",
        None,
        '{"line_item_id": 2, "order_id": 7}',
    ]
    rows, bad = landed(spark, SALES_TRANSACTIONS, *[value] * len(keys), keys=keys)
    assert [(r._kafka_offset, r.error) for r in sorted(bad, key=lambda r: r._kafka_offset)] == [
        (0, """Kafka key '{"order_id": 7, "line_item_id": 3}' is not the row's key"""),
        (1, """Kafka key '{"order_id": 7}' is not the row's key"""),
        (2, """Kafka key '{"order_id": 7, "line_item_id": 2, "extra": 1}' is not the row's key"""),
        (3, "Kafka key '7' is not the row's key"),
        (4, "missing Kafka key"),
    ]
    assert [r._kafka_offset for r in rows] == [5]  # the same key, its fields in another order


def test_exact_numbers_land_exactly(spark):
    (row,), bad = landed(
        spark,
        SALES_TRANSACTIONS,
        envelope("c", after=dict(SALE, quantity=-3, unit_price="-9999999999.99", discount="0.1")),
    )
    assert bad == []
    assert (row.quantity, row.unit_price, row.discount) == (-3, Decimal("-9999999999.99"), Decimal("0.10"))


def test_events_land_and_bad_ones_around_them_are_quarantined(spark):
    values = [
        json.dumps(CLICK),
        "[1, 2]",
        json.dumps({k: v for k, v in CLICK.items() if k != "event_id"}),
        json.dumps(dict(CLICK, event_id="e-2", event_ts="not-a-ts")),
        json.dumps(dict(CLICK, event_id="e-3")),
    ]
    rows, bad = landed(spark, WEB_CLICKSTREAMS, *values)
    assert [r.event_id for r in rows] == ["e-1", "e-3"]
    assert rows[0].event_ts == datetime(2026, 6, 1, 10, 0, 0, 500000) and rows[0].dt == "2026-06-01"
    assert [(b._kafka_offset, b.error) for b in bad] == [
        (1, "not a JSON object"),
        (2, "missing key field event_id"),
        (3, "wrong type for event_ts (timestamp): 'not-a-ts'"),
    ]


def test_an_event_time_far_from_now_is_not_believed(spark):
    """It would order the event ahead of every later real one."""
    rows, bad = landed(
        spark,
        WEB_CLICKSTREAMS,
        json.dumps(dict(CLICK, event_ts="9999-12-31T00:00:00Z")),
        json.dumps(dict(CLICK, event_id="e-0", event_ts="1970-01-01T00:00:00Z")),
        json.dumps(CLICK),
    )
    assert [r.event_id for r in rows] == ["e-1"]
    assert [b.error for b in bad] == [
        "implausible event_ts '9999-12-31T00:00:00Z'",
        "implausible event_ts '1970-01-01T00:00:00Z'",
    ]


def test_a_change_beyond_the_sources_wal_position_is_not_believed(spark):
    """A forged LSN that high would win against every later real change of its row."""
    from bronze.decode import Plausible

    values = [envelope("c", after=SALE, lsn=4000), envelope("u", SALE, SALE, lsn=6000)]
    keys = [kafka_key(SALES_TRANSACTIONS, value) for value in values]
    raw = kafka(spark, SALES_TRANSACTIONS.topic, *values, keys=keys)
    rows, bad = split(classify(raw, SALES_TRANSACTIONS, Plausible(latest_lsn=5000)), SALES_TRANSACTIONS)
    assert [r._source_lsn for r in rows.collect()] == [4000]
    assert [b.error for b in bad.collect()] == [
        "implausible source.lsn '6000' (beyond the source's WAL position 5000)"
    ]


def test_one_decoder_decodes_each_batch_of_a_stream_with_that_batchs_own_facts(spark):
    """A stream builds its decoding once (bronze/job.py); what differs per batch, such as
    the source's WAL position, still comes from each batch."""
    from bronze.decode import Decoder, Plausible

    decoder = Decoder.of(SALES_TRANSACTIONS, Plausible())
    value = envelope("u", SALE, SALE, lsn=6000)
    raw = kafka(spark, SALES_TRANSACTIONS.topic, value, keys=[kafka_key(SALES_TRANSACTIONS, value)])
    verdicts = [
        decoder.classify(raw, Plausible(latest_lsn=latest)).select("_source_lsn", "error").collect()
        for latest in (5000, 7000)
    ]
    assert verdicts == [
        [(6000, "implausible source.lsn '6000' (beyond the source's WAL position 5000)")],
        [(6000, None)],
    ]


def test_the_plausible_range_is_a_setting(spark, monkeypatch):
    from bronze.decode import Plausible
    from lakehouse import settings

    monkeypatch.setenv("BRONZE_EARLIEST_PLAUSIBLE", "2026-06-02")
    plausible = Plausible.of(settings.load())
    raw = kafka(spark, WEB_CLICKSTREAMS.topic, json.dumps(CLICK), keys=[CLICK["session_id"]])
    (bad,) = split(classify(raw, WEB_CLICKSTREAMS, plausible), WEB_CLICKSTREAMS)[1].collect()
    assert bad.error == "implausible event_ts '2026-06-01T10:00:00.5Z'"
    monkeypatch.setenv("BRONZE_EARLIEST_PLAUSIBLE", "last year")
    with pytest.raises(
        settings.ConfigurationError,
        match=r"^BRONZE_EARLIEST_PLAUSIBLE='last year' is not a date \(YYYY-MM-DD\)$",
    ):
        settings.load()


def test_an_event_without_a_field_that_is_always_sent_is_quarantined(spark):
    rows, bad = landed(
        spark,
        WEB_CLICKSTREAMS,
        json.dumps(dict(CLICK, device=None)),
        json.dumps(dict(CLICK, event_id="e-2", customer_id=7)),
    )
    assert [(r.event_id, r.customer_id) for r in rows] == [("e-2", 7)]
    assert [b.error for b in bad] == ["missing field device"]


def test_inventory_update_needs_its_ordering_field(spark):
    rows, bad = landed(spark, INVENTORY_UPDATES, json.dumps(STOCK), json.dumps(dict(STOCK, update_ts=None)))
    assert rows[0].quantity_on_hand == 40 and rows[0].dt == "2026-06-01"
    assert [b.error for b in bad] == ["missing field update_ts"]


def test_a_cdc_message_names_its_fields_and_a_table_carrying_a_new_one_lands_it(spark):
    value = envelope("c", after=dict(PRODUCT, weight_grams=250))
    decoded = classify(kafka(spark, PRODUCT_CATALOG.topic, value), PRODUCT_CATALOG).first()
    assert decoded[IMAGE_FIELDS] == ",".join(sorted([*PRODUCT, "weight_grams"]))
    carrying = dataclasses.replace(
        PRODUCT_CATALOG, columns={**PRODUCT_CATALOG.columns, "weight_grams": "int"}
    )
    (row,), bad = landed(spark, carrying, value)
    assert bad == [] and row.weight_grams == 250 and row.name == "Kettle"


def _oversized(op, before, after, left_out):
    return bad_input.envelope(
        op,
        before,
        after,
        source=SOURCE,
        oversized={"bytes": 20000000, "limit": 16777216, "left_out": left_out},
    )


def test_a_change_captured_without_its_row_is_quarantined_with_its_size_and_the_limit(spark):
    rows, quarantined = landed(spark, PRODUCT_CATALOG, _oversized("u", None, None, "before and after"))
    assert rows == []
    assert [q.error for q in quarantined] == [
        f"{OVERSIZED}: its event of 20000000 bytes is over the connector's limit of 16777216, so it was "
        "captured without its row; the row's next change that fits lands it"
    ]


def test_an_update_without_its_before_image_lands_unless_its_row_may_have_moved_partition(spark):
    rows, quarantined = landed(spark, PRODUCT_CATALOG, _oversized("u", None, PRODUCT, "before"))
    assert [r.product_id for r in rows] == [4] and quarantined == []
    rows, quarantined = landed(spark, SALES_TRANSACTIONS, _oversized("u", None, SALE, "before"))
    assert rows == []
    assert [q.error for q in quarantined] == [
        f"{OVERSIZED}: its event of 20000000 bytes is over the connector's limit of 16777216, so it came "
        "without its before-image, and a move between partitions would go unseen; the row's next change "
        "that fits lands it"
    ]
