"""The Bronze tables: one declaration each, and nothing else to edit to add one.

Every Bronze table is MERGE_ON_READ with Hudi's CDC log on, lands one Kafka topic, and has a
quarantine table `<name>_quarantine` beside it for the messages it could not decode. Columns
are the source's, in Spark SQL types; lineage columns (`_op`, `_source_lsn`, `_kafka_*` ...)
are added by the decoder. CDC tables order by the Debezium source position (LSN), so the
newest change of a key wins whatever order it arrives in (docs/architecture.md, "Bronze"):
two changes of one row are two WAL records and never share an LSN (rows of one multi-row COPY
do, but they are different keys). Event tables order by their own timestamp. One ordering
field each: Hudi 1.2 accepts several, but its catalog cannot register such a table (it looks
the joined list up as one column name).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ingestion.topics import CLICKSTREAM_TOPIC, EVENT_KEYS, INVENTORY_TOPIC, cdc_topic
from lakehouse.settings import ConfigurationError
from lakehouse.tables import Partitioning, Table

DEBEZIUM = "debezium"
JSON_EVENTS = "json"
CDC_ORDERING = ("_source_lsn",)
KAFKA_POSITION = ("_kafka_topic", "_kafka_partition", "_kafka_offset")


@dataclass(frozen=True)
class PersonalData:
    """The columns of a source table that identify a person, which `lakehouse erase`
    overwrites (operations/erasure.py).

    `subject` is the column naming the person (the table's record key), `erased` the value
    written in place of each personal column at the source (`{id}` stands for the person's
    id; None writes NULL), and `searched` the columns whose values are distinctive enough to
    look for in free text: quarantined messages, quality rule samples, Data Docs."""

    subject: str
    erased: dict[str, str | None]
    searched: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class BronzeTable(Table):
    topic: str
    envelope: str
    columns: dict[str, str] = field(default_factory=dict)
    # The columns that may be null, as at the source (NOT NULL there, or always sent, for
    # the rest): a message with a null elsewhere is quarantined, not landed.
    nullable: tuple[str, ...] = ()
    # An event stream's Kafka key: the fields its producer keys it by (joined by '|'). A CDC
    # topic's key is Debezium's: the row's record key.
    kafka_key: tuple[str, ...] = ()
    layer: str = "bronze"
    table_type: str = "MERGE_ON_READ"
    change_log: bool = True
    personal: PersonalData | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.envelope not in (DEBEZIUM, JSON_EVENTS):
            raise ValueError(
                f"table {self.name}: envelope must be {DEBEZIUM!r} or {JSON_EVENTS!r}, got {self.envelope!r}"
            )
        unknown = [k for k in self.record_key if k not in self.columns]
        if unknown:
            raise ValueError(f"table {self.name}: record key {unknown} not among its columns")
        unknown = [
            c for c in self.nullable if c not in self.columns or c in (*self.record_key, *self.ordering)
        ]
        if unknown:
            raise ValueError(
                f"table {self.name}: nullable columns {unknown} must be among its "
                f"columns and outside its record key and ordering"
            )
        if (self.envelope == JSON_EVENTS) != bool(self.kafka_key):
            raise ValueError(
                f"table {self.name}: an event stream declares its kafka_key, and only an event stream does"
            )
        unknown = [c for c in self.kafka_key if c not in self.columns or c in self.nullable]
        if unknown:
            raise ValueError(
                f"table {self.name}: kafka_key {unknown} must be among its columns and not nullable"
            )
        if self.personal:
            self._check_personal(self.personal)

    def _check_personal(self, personal: PersonalData) -> None:
        if self.envelope != DEBEZIUM:
            raise ValueError(
                f"table {self.name}: personal data is erased at its source, so "
                f"only a CDC table can declare it"
            )
        if (personal.subject,) != self.record_key:
            raise ValueError(
                f"table {self.name}: the personal data's subject must be the record "
                f"key {self.record_key}, got {personal.subject!r}"
            )
        unknown = sorted(set(personal.erased) - set(self.columns))
        if unknown:
            raise ValueError(f"table {self.name}: personal columns {unknown} are not among its columns")
        partitioned_by = [self.partitioning.column] if self.partitioning else []
        protected = sorted(set(personal.erased) & {*self.record_key, *self.ordering, *partitioned_by})
        if protected:
            raise ValueError(
                f"table {self.name}: {protected} locate the row (key, ordering or "
                f"partition) and cannot be erased; leave them out of `erased`"
            )
        not_erased = sorted(set(personal.searched) - set(personal.erased))
        if not_erased:
            raise ValueError(f"table {self.name}: searched columns {not_erased} must be erased too")

    @property
    def source_table(self) -> str:
        """The Postgres table a CDC table mirrors, `schema.table` (its topic's last two parts)."""
        return self.topic.split(".", 1)[1]

    @property
    def quarantine(self) -> Table:
        """Messages that could not be decoded, one row per Kafka position (so replays collapse)."""
        return Table(
            name=f"{self.name}_quarantine",
            layer=self.layer,
            table_type="COPY_ON_WRITE",
            record_key=KAFKA_POSITION,
            ordering=("_kafka_offset",),
            description=f"Undecodable messages of {self.topic}, with the reason.",
        )


CUSTOMER_MASTER = BronzeTable(
    name="hudi_customer_master_bronze",
    description="Mirror of retail.customer_master: one row per current customer.",
    topic=cdc_topic("customer_master"),
    envelope=DEBEZIUM,
    record_key=("customer_id",),
    ordering=CDC_ORDERING,
    partitioning=Partitioning("country", by="none"),
    columns={
        "customer_id": "bigint",
        "first_name": "string",
        "last_name": "string",
        "email": "string",
        "phone": "string",
        "birth_date": "date",
        "city": "string",
        "state": "string",
        "country": "string",
        "region": "string",
        "loyalty_tier": "string",
        "created_at": "timestamp",
        "updated_ts": "timestamp",
    },
    nullable=("phone", "birth_date"),
    # Who the customer is goes; where they shop from (country, region) and their tier stay,
    # so their sales keep their place in Gold's aggregates. The source's NOT NULL columns get
    # a placeholder, the e-mail one that still passes the e-mail rule (in .example, a name
    # reserved by RFC 2606 that never receives mail; the validator refuses .invalid). Names are erased in
    # every row about the customer but not searched for in others' text: many people share
    # them, and an e-mail address or a phone number is the customer's alone.
    personal=PersonalData(
        subject="customer_id",
        erased={
            "first_name": "erased",
            "last_name": "erased",
            "email": "erased-{id}@erased.example",
            "phone": None,
            "birth_date": None,
            "city": "erased",
            "state": "erased",
        },
        searched=("email", "phone"),
    ),
)

PRODUCT_CATALOG = BronzeTable(
    name="hudi_product_catalog_bronze",
    description="Mirror of retail.product_catalog: one row per current product.",
    topic=cdc_topic("product_catalog"),
    envelope=DEBEZIUM,
    record_key=("product_id",),
    ordering=CDC_ORDERING,
    columns={
        "product_id": "bigint",
        "sku": "string",
        "name": "string",
        "description": "string",
        "category": "string",
        "brand": "string",
        "unit_price": "decimal(12,2)",
        "active": "boolean",
        "updated_ts": "timestamp",
    },
    nullable=("description",),
)

SALES_TRANSACTIONS = BronzeTable(
    name="hudi_sales_transactions_bronze",
    description="Mirror of retail.sales_transactions: one row per current sales line.",
    topic=cdc_topic("sales_transactions"),
    envelope=DEBEZIUM,
    record_key=("order_id", "line_item_id"),
    ordering=CDC_ORDERING,
    partitioning=Partitioning("dt", by="month", from_ts="transaction_ts"),
    columns={
        "order_id": "bigint",
        "line_item_id": "int",
        "customer_id": "bigint",
        "product_id": "bigint",
        "quantity": "int",
        "unit_price": "decimal(12,2)",
        "discount": "decimal(12,2)",
        "channel": "string",
        "store_id": "string",
        "status": "string",
        "transaction_ts": "timestamp",
        "updated_ts": "timestamp",
    },
    nullable=("store_id",),
)

WEB_CLICKSTREAMS = BronzeTable(
    name="hudi_web_clickstreams_bronze",
    description="Every clickstream event once; a re-sent event_id collapses into one row.",
    topic=CLICKSTREAM_TOPIC,
    envelope=JSON_EVENTS,
    record_key=("event_id",),
    ordering=("event_ts",),
    partitioning=Partitioning("dt", by="month", from_ts="event_ts"),
    columns={
        "event_id": "string",
        "session_id": "string",
        "customer_id": "bigint",
        "event_type": "string",
        "page_url": "string",
        "product_id": "bigint",
        "search_query": "string",
        "device": "string",
        "event_ts": "timestamp",
    },
    nullable=("customer_id", "product_id", "search_query"),  # anonymous, or not about one
    kafka_key=EVENT_KEYS[CLICKSTREAM_TOPIC],
)

INVENTORY_UPDATES = BronzeTable(
    name="hudi_inventory_updates_bronze",
    description="Latest stock position per (sku, location): the newest update_ts wins.",
    topic=INVENTORY_TOPIC,
    envelope=JSON_EVENTS,
    record_key=("sku", "location_id"),
    ordering=("update_ts",),
    # One row per stock position: as large as the catalog times the locations, whatever the
    # time. A position would move to the partition of its latest report with nothing to say
    # where it was (an event has no before-image), so the table is not partitioned; `dt`
    # stays a column, the day of that report, which Silver reads by.
    partitioning=Partitioning("dt", by="none", from_ts="update_ts"),
    columns={
        "sku": "string",
        "location_id": "string",
        "quantity_on_hand": "int",
        "change_qty": "int",
        "reason": "string",
        "update_ts": "timestamp",
    },
    kafka_key=EVENT_KEYS[INVENTORY_TOPIC],
)

BRONZE_TABLES = (CUSTOMER_MASTER, PRODUCT_CATALOG, SALES_TRANSACTIONS, WEB_CLICKSTREAMS, INVENTORY_UPDATES)


def personal_columns() -> dict[str, tuple[str, ...]]:
    """Each source table's personal columns: the only ones its eraser role may change."""
    return {table.source_table: tuple(table.personal.erased) for table in BRONZE_TABLES if table.personal}


def bronze_table(name: str) -> BronzeTable:
    for table in BRONZE_TABLES:
        if name in (table.name, table.topic):
            return table
    raise ConfigurationError(
        f"no Bronze table {name!r}; known: {', '.join(t.name for t in BRONZE_TABLES)} (or their topics)"
    )
