"""Bronze equals Postgres after a drain: through random workloads, replays, bad input and kill -9."""

# Why one module over 300 lines: every test here drives the same Bronze job against the same
# topics and checks it the same way (Bronze against Postgres or the topic); split, the
# modules would share all their helpers.

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError
from pyspark.sql import functions as F

from bronze.job import BronzeError, BronzeJob, checkpoint_location
from bronze.tables import CUSTOMER_MASTER, SALES_TRANSACTIONS, WEB_CLICKSTREAMS
from lakehouse import catalog, hudi, layout, timeline
from lakehouse.hudi import snapshot
from lakehouse.settings import ConfigurationError
from lakehouse.tables import LAYOUT_KEY, Partitioning, hudi_options
from medallion import verify
from tests.support import drain_until_equal, kill_mid_write, run_lakehouse, run_workload

# A valid click for the tests that send their own; each gives it a session of its own.
CLICK = {
    "event_id": "t-click",
    "session_id": "t-click",
    "customer_id": 1,
    "event_type": "page_view",
    "page_url": "/",
    "product_id": None,
    "search_query": None,
    "device": "web",
    "event_ts": "2026-06-01T10:00:00Z",
}


def test_bronze_equals_postgres_after_a_random_workload(services, spark, db):
    run_workload(db, steps=300, seed=101)
    drain_until_equal(spark, services, db)


def test_bronze_tables_are_in_the_catalog_of_a_fresh_process(services, spark, db):
    drain_until_equal(spark, services, db, tables=(CUSTOMER_MASTER,))
    expected = db.execute("SELECT count(*) FROM retail.customer_master").fetchone()[0]
    result = run_lakehouse(
        services, "sql", "SELECT count(*) AS customers FROM bronze.hudi_customer_master_bronze"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert str(expected) in [line.strip("| ") for line in result.stdout.splitlines()], result.stdout


def test_a_table_laid_out_otherwise_is_rewritten_once_in_the_declared_layout(services, spark):
    """As an earlier release wrote sales: partitioned by day, on the global record index."""
    settings = dataclasses.replace(services, warehouse=f"{services.warehouse}/earlier-release")
    path = SALES_TRANSACTIONS.path(settings)
    daily = dataclasses.replace(
        SALES_TRANSACTIONS, partitioning=Partitioning("dt", by="day", from_ts="transaction_ts")
    )
    record_index = {
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.global.record.level.index.enable": "true",
    }
    lines = spark.createDataFrame(
        [(order, 1, f"2026-0{order}-0{order}", order * 10, False) for order in (1, 2, 3)],
        "order_id long, line_item_id int, dt string, _source_lsn long, _hoodie_is_deleted boolean",
    )
    old_options = {k: v for k, v in hudi_options(daily, settings).items() if k != LAYOUT_KEY}
    lines.write.format("hudi").options(**old_options | record_index).mode("append").save(path)

    # A savepoint would not survive the rewrite: the writer refuses and says what to do.
    [(instant, _)] = timeline.read(spark, path, checkpoint=False).commits
    spark.sql(f"CALL create_savepoint(path => '{path}', commit_time => '{instant}')").collect()
    with pytest.raises(ConfigurationError) as refused:
        layout.ensure(spark, settings, SALES_TRANSACTIONS)
    assert str(refused.value) == (
        f"bronze.hudi_sales_transactions_bronze is laid out partitioned by dt, record index and "
        f"declared partitioned by dt_month, 1 bucket, but rewriting it would drop its savepoints "
        f"{instant}; delete them (`lakehouse savepoint delete bronze.hudi_sales_transactions_bronze"
        f" --instant <instant>`) or declare the table's old layout"
    )
    spark.sql(f"CALL delete_savepoint(path => '{path}', instant_time => '{instant}')").collect()

    message = layout.ensure(spark, settings, SALES_TRANSACTIONS)
    assert re.fullmatch(
        r"bronze.hudi_sales_transactions_bronze: laid out partitioned by dt, record index, "
        r"declared partitioned by dt_month, 1 bucket; rewrote its 3 rows in the declared layout "
        r"\([0-9.]+ s\). Tables that read it rebuild once.",
        message,
    ), message
    rows = snapshot(spark, SALES_TRANSACTIONS, settings)
    assert sorted((r.order_id, r.dt, r.dt_month) for r in rows.collect()) == [
        (1, "2026-01-01", "2026-01"),
        (2, "2026-02-02", "2026-02"),
        (3, "2026-03-03", "2026-03"),
    ]
    properties = catalog.table_properties(spark, path)
    assert properties["hoodie.table.partition.fields"] == "dt_month"
    assert "record_index" not in properties.get("hoodie.table.metadata.partitions", "")
    # Once done, a new process finds nothing to do.
    layout._checked.clear()
    assert layout.ensure(spark, settings, SALES_TRANSACTIONS) is None


def test_partition_values_are_data_not_paths(services, spark):
    """Whatever a partition column holds reads back as written, and its files stay inside the
    table's folder (the value that would climb out of it is four levels up)."""
    settings = dataclasses.replace(services, warehouse=f"{services.warehouse}/partition-values")
    by_country = dataclasses.replace(
        CUSTOMER_MASTER, name="hudi_customers_by_country", partitioning=Partitioning("country", by="value")
    )
    countries = ["../../../../escaped", "a/b", "k=v", "", None, "%2F", "Côte d'Ivoire", " ", "NO"]
    rows = spark.createDataFrame(
        [(n, country, n, False) for n, country in enumerate(countries)],
        "customer_id long, country string, _source_lsn long, _hoodie_is_deleted boolean",
    )
    warehouse = Path(services.warehouse)
    before = set(warehouse.iterdir())
    hudi.write(rows, by_country, settings, "upsert")
    read = snapshot(spark, by_country, settings).collect()
    assert sorted((r.customer_id, r.country) for r in read) == list(enumerate(countries))
    assert set(warehouse.iterdir()) - before == {Path(settings.warehouse)}
    root = Path(by_country.path(settings))
    assert [p for p in Path(settings.warehouse).rglob("*") if p.is_file() and root not in p.parents] == []


def test_mor_log_files_are_compacted(services, spark, db):
    """Test settings compact every 3 delta commits."""
    for round_number in range(3):
        run_workload(db, steps=10, seed=303 + round_number)
        drain_until_equal(spark, services, db, tables=(SALES_TRANSACTIONS,))
    timeline = Path(SALES_TRANSACTIONS.path(services)) / ".hoodie" / "timeline"
    assert list(timeline.glob("*_*.commit")), "no completed compaction on the timeline"


def test_replaying_the_whole_topic_changes_nothing(services, spark, db):
    drain_until_equal(spark, services, db)
    before = sorted(verify.bronze_rows(spark, services, SALES_TRANSACTIONS))
    # Forgetting the checkpoint makes the next drain read the topic from its first offset.
    subprocess.run(["rm", "-rf", checkpoint_location(services, SALES_TRANSACTIONS)], check=True)
    counts = BronzeJob(spark, services, (SALES_TRANSACTIONS,)).drain()
    assert counts[SALES_TRANSACTIONS.name].messages > len(before) // 2
    assert sorted(verify.bronze_rows(spark, services, SALES_TRANSACTIONS)) == before


def test_a_message_that_fails_its_batch_is_quarantined_alone_and_the_rest_lands(
    services, spark, producer, monkeypatch
):
    """A fault no check foresaw (here the writer failing on one message, every time) costs
    that message, quarantined with the error, and nothing else: the stream goes on."""
    import bronze.job

    real_write = hudi.write

    def write(frame, table, *args, **kwargs):
        if (
            table.name == WEB_CLICKSTREAMS.name
            and "event_id" in frame.columns
            and frame.where("event_id = 't-poison'").count()
        ):
            raise RuntimeError("the writer fails on t-poison")
        return real_write(frame, table, *args, **kwargs)

    monkeypatch.setattr(hudi, "write", write)
    monkeypatch.setattr(bronze.job, "FAILED_BATCH_RETRY_SECONDS", 0)
    click = dict(CLICK, session_id="t-iso")
    ids = ["t-iso-1", "t-iso-2", "t-poison", "t-iso-3", "t-iso-4"]
    offsets = {
        event_id: producer.send(
            WEB_CLICKSTREAMS.topic, key=b"t-iso", value=json.dumps(dict(click, event_id=event_id)).encode()
        )
        .get(timeout=10)
        .offset
        for event_id in ids
    }

    BronzeJob(spark, services, (WEB_CLICKSTREAMS,)).drain()

    clicks = spark.read.format("hudi").load(WEB_CLICKSTREAMS.path(services))
    assert {r.event_id for r in clicks.where("session_id = 't-iso'").collect()} == set(ids) - {"t-poison"}
    quarantine = spark.read.format("hudi").load(WEB_CLICKSTREAMS.quarantine.path(services))
    ours = quarantine.where(F.col("raw_key") == "t-iso").where(F.col("_kafka_offset").isin(*offsets.values()))
    assert [(r._kafka_offset, r.error, json.loads(r.raw_value)["event_id"]) for r in ours.collect()] == [
        (offsets["t-poison"], "could not be landed: the writer fails on t-poison", "t-poison")
    ]


def test_malformed_messages_are_quarantined_and_valid_ones_around_them_land(services, spark, producer):
    click = dict(CLICK, event_id="t-good-1", session_id="t-s")
    messages = [
        json.dumps(click).encode(),
        b"\x00\x01 not json",
        json.dumps(dict(click, event_id=None)).encode(),
        json.dumps(dict(click, event_id="t-bad-ts", event_ts="yesterday")).encode(),
        json.dumps(dict(click, event_id="t-good-2")).encode(),
    ]
    offsets = [
        producer.send(WEB_CLICKSTREAMS.topic, key=b"t-s", value=m).get(timeout=10).offset for m in messages
    ]
    unknown_op = {"before": None, "after": {"customer_id": 1}, "op": "t", "source": {"lsn": 1, "ts_ms": 0}}
    cdc_offset = (
        producer.send(CUSTOMER_MASTER.topic, key=b'{"customer_id":1}', value=json.dumps(unknown_op).encode())
        .get(timeout=10)
        .offset
    )

    BronzeJob(spark, services, (WEB_CLICKSTREAMS, CUSTOMER_MASTER)).drain()

    clicks = spark.read.format("hudi").load(WEB_CLICKSTREAMS.path(services))
    assert {r.event_id for r in clicks.where("session_id = 't-s'").collect()} == {"t-good-1", "t-good-2"}
    quarantine = spark.read.format("hudi").load(WEB_CLICKSTREAMS.quarantine.path(services))
    # Earlier runs against the same Kafka left messages with this key: look at ours only.
    ours = quarantine.where(F.col("raw_key") == "t-s").where(F.col("_kafka_offset").isin(offsets))
    errors = {r._kafka_offset: r.error for r in ours.collect()}
    assert errors == {
        offsets[1]: "not a JSON object",
        offsets[2]: "missing key field event_id",
        offsets[3]: "wrong type for event_ts (timestamp): 'yesterday'",
    }
    cdc_quarantine = spark.read.format("hudi").load(CUSTOMER_MASTER.quarantine.path(services))
    assert [r.error for r in cdc_quarantine.where(f"_kafka_offset = {cdc_offset}").collect()] == [
        "unknown op 't'"
    ]


def test_offsets_kafka_no_longer_holds_stop_the_job_with_a_clear_error(services, spark, producer):
    topic = f"bronze_expiry_test_{int(time.time())}"
    table = dataclasses.replace(WEB_CLICKSTREAMS, name=topic, topic=topic)
    admin = KafkaAdminClient(bootstrap_servers=services.kafka_bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    event = {
        "event_id": "x",
        "session_id": "s",
        "event_type": "page_view",
        "page_url": "/",
        "device": "web",
        "event_ts": "2026-06-01T10:00:00Z",
    }

    def send(first: int, count: int) -> None:
        for n in range(first, first + count):
            producer.send(topic, key=b"s", value=json.dumps(dict(event, event_id=f"e{n}")).encode())
        producer.flush()

    send(0, 10)
    BronzeJob(spark, services, (table,)).drain()
    send(10, 10)
    # Retention deleting offsets 10-14 before Bronze read them: a gap Bronze must not skip.
    admin.delete_records({TopicPartition(topic, 0): 15})
    admin.close()
    with pytest.raises(BronzeError, match=f"Bronze table {topic}: Kafka no longer holds offsets"):
        BronzeJob(spark, services, (table,)).drain()


def _recreate(admin: KafkaAdminClient, topic: str) -> None:
    admin.delete_topics([topic])
    deadline = time.monotonic() + 60
    while True:  # the broker refuses the name until the deletion has gone through
        try:
            admin.create_topics([NewTopic(topic, 1, 1)])
            return
        except TopicAlreadyExistsError:
            assert time.monotonic() < deadline, f"topic {topic} still exists a minute after its deletion"
            time.sleep(0.5)


def _landed_events(spark, settings, table) -> int:
    path = table.path(settings)
    return snapshot(spark, table, settings).count() if catalog.exists(spark, path) else 0


def test_a_topic_recreated_under_a_running_bronze_is_landed_from_its_first_offset(services, spark, producer):
    topic = f"bronze_recreated_test_{int(time.time())}"
    table = dataclasses.replace(WEB_CLICKSTREAMS, name=topic, topic=topic)
    admin = KafkaAdminClient(bootstrap_servers=services.kafka_bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])

    def send(first: int, count: int) -> None:
        for n in range(first, first + count):
            producer.send(
                topic,
                key=CLICK["session_id"].encode(),
                value=json.dumps(dict(CLICK, event_id=f"r{n}")).encode(),
            )
        producer.flush()

    def until(landed: int, what: str) -> None:
        deadline = time.monotonic() + 120
        while _landed_events(spark, services, table) < landed:
            assert streaming.is_alive(), f"the stream stopped: {reports}"
            assert time.monotonic() < deadline, f"not within 120 s: {what}; {reports}"
            time.sleep(1)

    reports = []
    job = BronzeJob(spark, services, (table,))
    streaming = threading.Thread(target=job.run_continuously, args=(2,), kwargs={"report": reports.append})
    send(0, 10)
    streaming.start()
    until(10, "the old topic's events")
    _recreate(admin, topic)
    send(100, 5)
    until(15, "the new topic's events")
    for query in spark.streams.active:
        if query.name == topic:
            query.stop()
    streaming.join(60)
    (report,) = [r for r in reports if "was recreated" in r]
    assert f"Bronze table {topic}: topic {topic} was recreated: its end offsets went back" in report
    assert "Messages the old topic held beyond them are gone." in report

    # Recreated while no Bronze runs: the next drain takes it up the same way.
    _recreate(admin, topic)
    admin.close()
    send(200, 3)
    BronzeJob(spark, services, (table,)).drain()
    assert _landed_events(spark, services, table) == 18


@pytest.mark.long
def test_kill_minus_nine_during_a_write_loses_and_duplicates_nothing(services, spark, db):
    drain_until_equal(spark, services, db)
    run_workload(db, steps=400, seed=202)
    kill_mid_write(services, SALES_TRANSACTIONS, "bronze", "--table", SALES_TRANSACTIONS.name)
    drain_until_equal(spark, services, db)
