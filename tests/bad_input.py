"""A corpus of hostile messages for the five Bronze topics, and what Bronze must do with each.

Built from three sources: what a Debezium envelope may carry (op, before and after images,
source position and time), what the source schema holds (types, NOT NULL, keys), and JSON's
corners (RFC 8259: one value per text, UTF-8, no NaN, names given once). Every case either
is quarantined with exactly its `error`, or lands with the values in `lands`. Used message
by message through the decoder (tests/unit/test_bad_input.py) and all at once through
Kafka and the streaming job (tests/integration/test_bad_input.py).
"""

# Why one module: the corpus is data, one case per hostile message; its length is the number
# of ways a message can be wrong, and one file keeps it reviewable as one list.

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from bronze.decode import OVERSIZED
from bronze.tables import (
    CUSTOMER_MASTER,
    INVENTORY_UPDATES,
    PRODUCT_CATALOG,
    SALES_TRANSACTIONS,
    WEB_CLICKSTREAMS,
    BronzeTable,
)
from ingestion.topics import event_key

# Keys far above what the seed and the workload use, so a case that lands is no one's row.
SALE = {
    "order_id": 9_900_001,
    "line_item_id": 1,
    "customer_id": 3,
    "product_id": 4,
    "quantity": 2,
    "unit_price": "19.99",
    "discount": "0.10",
    "channel": "web",
    "store_id": None,
    "status": "pending",
    "transaction_ts": "2026-06-01T23:59:59.123456Z",
    "updated_ts": "2026-06-02T00:00:01Z",
}
CUSTOMER = {
    "customer_id": 9_900_001,
    "first_name": "Ada",
    "last_name": "Lovelace",
    "email": "ada@example.com",
    "phone": None,
    "birth_date": -56,
    "city": "London",
    "state": "ENG",
    "country": "GB",
    "region": "europe",
    "loyalty_tier": "gold",
    "created_at": "2026-01-01T00:00:00Z",
    "updated_ts": "2026-01-01T00:00:00Z",
}
PRODUCT = {
    "product_id": 9_900_001,
    "sku": "SKU-9900001",
    "name": "Kettle",
    "description": None,
    "category": "home_kitchen",
    "brand": "Casa",
    "unit_price": "12.50",
    "active": True,
    "updated_ts": "2026-01-01T00:00:00Z",
}
CLICK = {
    "event_id": "adv-0",
    "session_id": "adv-session",
    "customer_id": None,
    "event_type": "page_view",
    "page_url": "/",
    "product_id": None,
    "search_query": None,
    "device": "mobile",
    "event_ts": "2026-06-01T10:00:00.5Z",
}
STOCK = {
    "sku": "ADV-SKU",
    "location_id": "WH-ADV",
    "quantity_on_hand": 40,
    "change_qty": -2,
    "reason": "sale",
    "update_ts": "2026-06-01T10:00:00Z",
}
SOURCE = {"lsn": 1000, "ts_ms": 1780000000000}
DERIVED = "derived"  # the key its producer would give the message (`kafka_key`)
# The size and limit the connector's guard adds to a change it lets through without images.
OVERSIZED_EVENT = {"bytes": 20_000_000, "limit": 16_777_216}


def kafka_key(table: BronzeTable, value: str | bytes | None) -> bytes | None:
    """The Kafka key `table`'s producer gives a message: Debezium's (its row's key, from its
    image) or the event stream's (its `kafka_key` fields); None when the message has nothing
    to take it from."""
    try:
        message = json.loads(value)
        if table.envelope == "debezium":
            image = message["before"] if message["op"] == "d" else message["after"]
            return json.dumps({name: image[name] for name in table.record_key}).encode()
        return event_key(table.topic, message)
    except (TypeError, ValueError, KeyError, RecursionError):
        return None


def envelope(op, before=None, after=None, source=SOURCE, **extra) -> str:
    return json.dumps(
        {"before": before, "after": after, "op": op, "source": source, "ts_ms": 1780000000001, **extra}
    )


def event(base: dict, **changes) -> str:
    return json.dumps({**base, **changes})


@dataclass(frozen=True)
class Case:
    name: str
    table: BronzeTable
    value: str | bytes | None
    error: str | None = None  # None: the message lands
    lands: dict = field(default_factory=dict)  # columns of the landed row, typed
    key: str | bytes | None = DERIVED

    def kafka_key(self) -> bytes | None:
        if self.key != DERIVED:
            return self.key.encode() if isinstance(self.key, str) else self.key
        return kafka_key(self.table, self.value)

    def kafka_value(self) -> bytes | None:
        return self.value.encode() if isinstance(self.value, str) else self.value


def _deep(levels: int) -> str:
    return envelope("c", after=SALE)[:-1] + ', "x": ' + "[" * levels + "]" * levels + "}"


# One letter per table keeps the corpus's rows on one line each.
S, C, P, W, I = SALES_TRANSACTIONS, CUSTOMER_MASTER, PRODUCT_CATALOG, WEB_CLICKSTREAMS, INVENTORY_UPDATES  # noqa: E741
NOT_JSON = "not a JSON object"
WHOLE = len(envelope("c", after=SALE))

CASES = [
    # JSON's corners (RFC 8259), on a CDC topic.
    Case("bytes that are not text", S, b"\x00\x01\xfe", "not UTF-8 text"),
    Case(
        "invalid UTF-8 inside a string",
        S,
        envelope("c", after=SALE).encode().replace(b'"pending"', b'"pend\xffing"'),
        "not UTF-8 text",
    ),
    Case("empty message", S, "", NOT_JSON),
    Case("null message (no value)", S, None, NOT_JSON, key='{"order_id": 9900001}'),
    Case("JSON null", S, "null", NOT_JSON),
    Case("JSON array", S, "[]", NOT_JSON),
    Case("JSON string", S, '"c"', NOT_JSON),
    Case("JSON number", S, "42", NOT_JSON),
    Case("truncated object", S, envelope("c", after=SALE)[:-5], NOT_JSON),
    Case("single quotes", S, envelope("c", after=SALE).replace('"', "'"), NOT_JSON),
    Case(
        "two envelopes in one message",
        S,
        envelope("c", after=SALE) + envelope("d", before=SALE),
        f"something after the JSON object (at character {WHOLE})",
    ),
    Case(
        "trailing garbage",
        S,
        envelope("c", after=SALE) + "}",
        f"something after the JSON object (at character {WHOLE})",
    ),
    Case(
        "op given twice",
        S,
        envelope("c", after=SALE).replace('"op": "c"', '"op": "c", "op": "d"'),
        "field op given twice",
    ),
    Case(
        "image field given twice",
        S,
        envelope("c", after=SALE).replace('"quantity": 2', '"quantity": 2, "quantity": 200'),
        "field quantity given twice",
    ),
    Case("NaN", S, envelope("c", after=dict(SALE, unit_price=float("nan"))), "NaN is not a JSON value"),
    Case(
        "Infinity", S, envelope("c", after=dict(SALE, quantity=float("inf"))), "Infinity is not a JSON value"
    ),
    Case("nested 100,000 deep", S, _deep(100_000), "JSON nested too deeply"),
    # Debezium's envelope.
    Case("no op", S, json.dumps({"before": None, "after": SALE, "source": SOURCE}), "missing field op"),
    Case("null op", S, envelope(None, after=SALE), "missing field op"),
    Case("unknown op", S, envelope("x", after=SALE), "unknown op 'x'"),
    Case("truncate op", S, envelope("t", after=SALE), "unknown op 't'"),
    Case("numeric op", S, envelope(1, after=SALE), "unknown op '1'"),
    Case("delete without before image", S, envelope("d", after=SALE), "missing before image"),
    Case("create without after image", S, envelope("c", before=SALE), "missing after image"),
    # What the connector's guard sends for a change too large for Kafka (bronze/decode.py).
    Case(
        "change captured without its row (over the size limit)",
        S,
        envelope("u", oversized=OVERSIZED_EVENT | {"left_out": "before and after"}),
        f"{OVERSIZED}: its event of 20000000 bytes is over the connector's limit of 16777216, so it was "
        "captured without its row; the row's next change that fits lands it",
        key='{"order_id": 9900001, "line_item_id": 1}',
    ),
    Case(
        "update without its before-image (over the size limit), partitioned table",
        S,
        envelope("u", after=SALE, oversized=OVERSIZED_EVENT | {"left_out": "before"}),
        f"{OVERSIZED}: its event of 20000000 bytes is over the connector's limit of 16777216, so it came "
        "without its before-image, and a move between partitions would go unseen; the row's next change "
        "that fits lands it",
    ),
    Case(
        "update without its before-image (over the size limit), unpartitioned table",
        P,
        envelope(
            "u",
            after=dict(PRODUCT, product_id=9_900_002, sku="SKU-9900002", name="Kettle XL"),
            oversized=OVERSIZED_EVENT | {"left_out": "before"},
        ),
        lands={"product_id": 9_900_002, "name": "Kettle XL"},
    ),
    Case(
        "image that is not an object",
        S,
        envelope("c", after=[1, 2]),
        "before, after and source must be JSON objects",
    ),
    Case(
        "source that is not an object",
        S,
        envelope("c", after=SALE, source="pg"),
        "before, after and source must be JSON objects",
    ),
    Case("no source", S, json.dumps({"op": "c", "after": SALE}), "missing or non-numeric source.lsn"),
    Case(
        "text LSN",
        S,
        envelope("c", after=SALE, source={"lsn": "abc", "ts_ms": SOURCE["ts_ms"]}),
        "missing or non-numeric source.lsn",
    ),
    Case(
        "fractional LSN",
        S,
        envelope("c", after=SALE, source={"lsn": 1.5, "ts_ms": SOURCE["ts_ms"]}),
        "missing or non-numeric source.lsn",
    ),
    Case(
        "negative LSN",
        S,
        envelope("c", after=SALE, source={"lsn": -5, "ts_ms": SOURCE["ts_ms"]}),
        "missing or non-numeric source.lsn",
    ),
    Case(
        "LSN beyond 64 bits",
        S,
        envelope("c", after=SALE, source={"lsn": 2**64, "ts_ms": SOURCE["ts_ms"]}),
        "missing or non-numeric source.lsn",
    ),
    Case(
        "source time beyond Spark's range",
        S,
        envelope("c", after=SALE, source={"lsn": 1, "ts_ms": 10**17}),
        "implausible source.ts_ms '100000000000000000'",
    ),
    Case(
        "source time in 1970",
        S,
        envelope("c", after=SALE, source={"lsn": 1, "ts_ms": 1}),
        "implausible source.ts_ms '1'",
    ),
    Case(
        "source time as text",
        S,
        envelope("c", after=SALE, source={"lsn": 1, "ts_ms": "soon"}),
        "implausible source.ts_ms 'soon'",
    ),
    # The source schema: keys, types, NOT NULL.
    Case(
        "null key column",
        S,
        envelope("c", after=dict(SALE, line_item_id=None)),
        "missing key field line_item_id",
        key="{}",
    ),
    Case(
        "text in an integer",
        S,
        envelope("c", after=dict(SALE, quantity="two")),
        "wrong type for quantity (int): 'two'",
    ),
    Case(
        "fraction in an integer",
        S,
        envelope("c", after=dict(SALE, quantity=2.5)),
        "wrong type for quantity (int): '2.5'",
    ),
    Case(
        "integer beyond int",
        S,
        envelope("c", after=dict(SALE, quantity=2**40)),
        f"wrong type for quantity (int): '{2**40}'",
    ),
    Case(
        "fraction in a key",
        C,
        envelope("c", after=dict(CUSTOMER, customer_id=7.9)),
        "wrong type for customer_id (bigint): '7.9'",
    ),
    Case(
        "key beyond bigint",
        C,
        envelope("c", after=dict(CUSTOMER, customer_id=2**63)),
        f"wrong type for customer_id (bigint): '{2**63}'",
    ),
    Case(
        "decimal beyond its scale",
        S,
        envelope("c", after=dict(SALE, unit_price="19.999")),
        "wrong type for unit_price (decimal(12,2)): '19.999'",
    ),
    Case(
        "decimal beyond its precision",
        S,
        envelope("c", after=dict(SALE, unit_price="12345678901.00")),
        "wrong type for unit_price (decimal(12,2)): '12345678901.00'",
    ),
    Case(
        "decimal in exponent form",
        S,
        envelope("c", after=dict(SALE, discount="1e3")),
        "wrong type for discount (decimal(12,2)): '1e3'",
    ),
    Case(
        "decimal with a plus sign",
        P,
        envelope("c", after=dict(PRODUCT, unit_price="+1.00")),
        "wrong type for unit_price (decimal(12,2)): '+1.00'",
    ),
    Case(
        "boolean as yes",
        P,
        envelope("c", after=dict(PRODUCT, active="yes")),
        "wrong type for active (boolean): 'yes'",
    ),
    Case(
        "boolean as 1",
        P,
        envelope("c", after=dict(PRODUCT, active=1)),
        "wrong type for active (boolean): '1'",
    ),
    Case(
        "unreadable timestamp",
        S,
        envelope("c", after=dict(SALE, transaction_ts="yesterday")),
        "wrong type for transaction_ts (timestamp): 'yesterday'",
    ),
    Case(
        "unreadable date",
        C,
        envelope("c", after=dict(CUSTOMER, birth_date="someday")),
        "wrong type for birth_date (date): 'someday'",
    ),
    Case(
        "null in NOT NULL",
        S,
        envelope("c", after=dict(SALE, channel=None)),
        "null in NOT NULL column channel",
    ),
    Case(
        "null in NOT NULL of a delete",
        C,
        envelope("d", before=dict(CUSTOMER, email=None)),
        "null in NOT NULL column email",
    ),
    # The Kafka key: Kafka orders one key's changes, so it must be the row's.
    Case(
        "key of another row",
        S,
        envelope("c", after=SALE),
        """Kafka key '{"order_id": 9900001, "line_item_id": 2}' is not the row's key""",
        key='{"order_id": 9900001, "line_item_id": 2}',
    ),
    Case(
        "key missing a column",
        S,
        envelope("c", after=SALE),
        """Kafka key '{"order_id": 9900001}' is not the row's key""",
        key='{"order_id": 9900001}',
    ),
    Case(
        "key that is not JSON",
        C,
        envelope("c", after=CUSTOMER),
        "Kafka key '9900001' is not the row's key",
        key="9900001",
    ),
    Case("no key", C, envelope("c", after=CUSTOMER), "missing Kafka key", key=None),
    Case(
        "event under another session's key",
        W,
        event(CLICK),
        "Kafka key 'another-session' is not the event's session_id",
        key="another-session",
    ),
    Case("event without a key", W, event(CLICK), "missing Kafka key", key=None),
    Case(
        "stock update keyed by its sku alone",
        I,
        event(STOCK),
        "Kafka key 'ADV-SKU' is not the event's sku|location_id",
        key="ADV-SKU",
    ),
    # What lands, exactly as sent.
    Case(
        "nullable column null",
        S,
        envelope("c", after=SALE),
        lands={"store_id": None, "quantity": 2, "unit_price": Decimal("19.99")},
    ),
    Case(
        "exact decimals and a negative integer",
        S,
        envelope("c", after=dict(SALE, quantity=-3, unit_price="-9999999999.99", discount="0.1")),
        lands={"quantity": -3, "unit_price": Decimal("-9999999999.99"), "discount": Decimal("0.10")},
    ),
    Case(
        "unicode, quotes and control characters",
        C,
        envelope(
            "c",
            after=dict(
                CUSTOMER, first_name='Zoë 🚀 "Ada" \\ \' \u202e', last_name="nul\u0000byte\ttab\nline"
            ),
        ),
        lands={"first_name": 'Zoë 🚀 "Ada" \\ \' \u202e', "last_name": "nul\u0000byte\ttab\nline"},
    ),
    Case(
        "a path in a text column",
        C,
        envelope("c", after=dict(CUSTOMER, country="../../etc", city="a/b=c")),
        lands={"country": "../../etc", "city": "a/b=c"},
    ),
    Case(
        "a long text",
        P,
        envelope("c", after=dict(PRODUCT, description="x" * 20_000)),
        lands={"description": "x" * 20_000},
    ),
    Case(
        "a date as days before 1970",
        C,
        envelope("r", after=CUSTOMER),
        lands={"birth_date": datetime(1969, 11, 6).date()},
    ),
    # Events (JSON, no envelope).
    Case("event that is an array", W, "[1, 2]", NOT_JSON),
    Case(
        "two events in one message",
        W,
        event(CLICK) + event(CLICK, event_id="adv-1"),
        f"something after the JSON object (at character {len(event(CLICK))})",
    ),
    Case(
        "event id given twice",
        W,
        event(CLICK).replace('"event_id": "adv-0"', '"event_id": "adv-0", "event_id": "adv-9"'),
        "field event_id given twice",
    ),
    Case("empty event", W, "{}", "missing key field event_id"),
    Case(
        "event without its key",
        W,
        json.dumps({k: v for k, v in CLICK.items() if k != "event_id"}),
        "missing key field event_id",
    ),
    Case("event without a field always sent", W, event(CLICK, device=None), "missing field device"),
    Case(
        "event time in year 9999",
        W,
        event(CLICK, event_ts="9999-12-31T00:00:00Z"),
        "implausible event_ts '9999-12-31T00:00:00Z'",
    ),
    Case(
        "event time unreadable",
        W,
        event(CLICK, event_ts="yesterday"),
        "wrong type for event_ts (timestamp): 'yesterday'",
    ),
    Case(
        "customer id as text",
        W,
        event(CLICK, customer_id="abc"),
        "wrong type for customer_id (bigint): 'abc'",
    ),
    Case(
        "customer id with a fraction",
        W,
        event(CLICK, customer_id=1.5),
        "wrong type for customer_id (bigint): '1.5'",
    ),
    Case(
        "event with an unknown type and an extra field",
        W,
        event(CLICK, event_id="adv-2", event_type="hack", injected="<script>"),
        lands={"event_type": "hack", "event_id": "adv-2"},
    ),
    Case(
        "stock count in exponent form",
        I,
        event(STOCK, quantity_on_hand=1e2),
        "wrong type for quantity_on_hand (int): '100.0'",
    ),
    Case(
        "stock update without its time",
        I,
        json.dumps({k: v for k, v in STOCK.items() if k != "update_ts"}),
        "missing field update_ts",
    ),
    Case(
        "negative stock (Silver's rule judges it)",
        I,
        event(STOCK, quantity_on_hand=-5),
        lands={"quantity_on_hand": -5},
    ),
    Case(
        "a path and an equals sign in a key",
        I,
        event(STOCK, sku="../x=1/..", location_id="WH/1"),
        lands={"sku": "../x=1/..", "location_id": "WH/1"},
    ),
]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "\\n")


def _value(value) -> str:
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def markdown() -> str:
    """docs/bad-input.md: the corpus as a table, what arrives and what Bronze does with it."""
    topics = {table.name: table.topic for table in (S, C, P, W, I)}
    lines = [
        "# Bad input: what Bronze does with each message",
        "",
        "Every case of the project's hostile corpus (`tests/bad_input.py`), each sent through",
        "Kafka to the streaming job by `tests/integration/test_bad_input.py` and through the",
        "decoder alone by `tests/unit/test_bad_input.py`. A quarantined message is kept whole in",
        "`<table>_quarantine` with the reason below; the stream goes on, and later changes of",
        "the same rows land. Generated from the corpus (`python -m tests.bad_input >",
        "docs/bad-input.md`); a unit test fails when the two differ.",
        "",
        "| topic | message | Bronze |",
        "|---|---|---|",
    ]
    for case in CASES:
        if case.error is not None:
            fate = f"quarantined: `{_cell(case.error)}`"
        else:
            landed = ", ".join(f"{name} = {_value(value)}" for name, value in case.lands.items())
            fate = f"lands exactly: {_cell(landed) if len(landed) < 120 else 'as sent'}"
        lines.append(f"| `{topics[case.table.name]}` | {_cell(case.name)} | {fate} |")
    return "\n".join([*lines, *BEYOND_ONE_MESSAGE]) + "\n"


# Bad input that is not one message, each with the test that sends it.
BEYOND_ONE_MESSAGE = [
    "",
    "## Beyond one message",
    "",
    "| input | what happens | test |",
    "|---|---|---|",
    "| a row of several megabytes at the source | lands exact, up to a change event of 16 MiB "
    '([Architecture](architecture.md#the-source-half), "Large rows") | '
    "`tests/integration/test_large_rows.py` |",
    "| a row beyond that | the connector's guard sends it without its images; quarantined as "
    "above, every other change flows on | `tests/integration/test_large_rows.py` |",
    "| a huge transaction: 60,000 lines in one `COPY` or `INSERT ... SELECT`, with Connect killed "
    "or stopped in the middle | every line lands once | `tests/integration/test_recovery.py` |",
    "| a topic deleted and created again under a running Bronze | the stream takes up the new "
    "topic from its first offset and says what went with the old one | "
    "`tests/integration/test_bronze.py` |",
    "| offsets Kafka no longer holds (retention) | the table's stream stops with what to do: "
    "going on would skip changes | `tests/integration/test_bronze.py` |",
]


if __name__ == "__main__":
    print(markdown(), end="")
