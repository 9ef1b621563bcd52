"""Integration tests run against the real services (the `services` fixture, tests/conftest.py)."""

from __future__ import annotations

import json
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from ingestion import database
from lakehouse import settings as settings_module
from tests.support import demo_state, drain_until_equal, run_all, run_workload


# After pytest-randomly's shuffle: integration tests build on the stack they share, so they
# run in the order they are written.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Marks every test under this folder, so `pytest -m "not integration"` leaves them out,
    and runs the long scenarios after the rest, then those that leave a long change log
    behind (every later pass would read it), then the check of what the session left."""
    ours = [item for item in items if "integration" in item.nodeid.split("/")]
    for item in ours:
        item.add_marker(pytest.mark.integration)
    items[:] = [item for item in items if item not in ours] + sorted(ours, key=_order)


def _order(item) -> tuple:
    path, line, _ = item.reportinfo()
    callspec = getattr(item, "callspec", None)
    return (
        *(item.get_closest_marker(m) is not None for m in ("after_all", "long", "leaves_history")),
        str(path),
        line or 0,
        tuple(callspec.indices.values()) if callspec else (),
    )


@pytest.fixture(scope="session", autouse=True)
def demo_before():
    """The demo running beside the session, as the session found it (None without one):
    before any test starts a service or writes a row."""
    return demo_state(settings_module.load())


@pytest.fixture
def db(services):
    """Postgres, as its owner, in autocommit: each statement a test runs is a change that
    Debezium captures at once."""
    with database.connect(services, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="session")
def built(services, spark):
    """Every table built, through a workload with some rows the gates keep out (so every
    quarantine exists): the warehouse of the modules that only read it. Built once, by the
    first module that asks; modules in between change it, which only moves it on."""
    with database.connect(services, autocommit=True) as db:
        run_workload(db, steps=60, seed=1800, bad_share=0.05)
        drain_until_equal(spark, services, db)
    run_all(spark, services)
    return services


@pytest.fixture
def producer(services):
    """Kafka, for the messages a test sends itself (events, and what Bronze must quarantine)."""
    producer = KafkaProducer(bootstrap_servers=services.kafka_bootstrap)
    yield producer
    producer.close()


class TopicReader:
    """Reads a topic from the offsets it had when created, i.e. only what comes after."""

    def __init__(self, settings, topic: str):
        self.topic = topic
        self.consumer = KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False)
        partitions = [
            TopicPartition(topic, p) for p in sorted(self.consumer.partitions_for_topic(topic) or [])
        ]
        assert partitions, f"topic {topic} does not exist"
        self.consumer.assign(partitions)
        for partition, offset in self.consumer.end_offsets(partitions).items():
            self.consumer.seek(partition, offset)

    def poll(self, timeout_ms: int = 500) -> list:
        """The next messages, (key, value) decoded as JSON where possible."""
        return [
            (_decode(r.key), _decode(r.value))
            for records in self.consumer.poll(timeout_ms=timeout_ms).values()
            for r in records
        ]

    def read_until(self, done, timeout: float = 30.0) -> list:
        """Messages until done(messages)."""
        messages, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            messages += self.poll()
            if done(messages):
                return messages
        raise AssertionError(
            f"{self.topic}: condition not met within {timeout} s; "
            f"got {len(messages)} messages: {messages[-5:]}"
        )

    def close(self):
        self.consumer.close()


def _decode(raw: bytes | None):
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@pytest.fixture
def topic_reader(services):
    readers = []

    def open_reader(topic: str) -> TopicReader:
        readers.append(TopicReader(services, topic))
        return readers[-1]

    yield open_reader
    for reader in readers:
        reader.close()
