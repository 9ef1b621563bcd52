"""The Kafka topics every source lands on: Debezium's CDC topics and the event streams.

All five are created up front with the same partition count. Debezium would create its
topics itself, but only when the first change of a table arrives; creating them first means
a consumer (Bronze, the tests) can subscribe before any change has been made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from ingestion.database import SOURCE_TABLES
from lakehouse.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession
    from pyspark.sql.streaming import DataStreamReader

CDC_TOPIC_PREFIX = "retailmax"
CLICKSTREAM_TOPIC = "web_clickstreams"
INVENTORY_TOPIC = "inventory_updates"
EVENT_TOPICS = (CLICKSTREAM_TOPIC, INVENTORY_TOPIC)
# The fields an event stream is keyed by, joined by '|': Kafka keeps one key's events in
# order on one partition. Bronze quarantines an event whose key is not its own.
EVENT_KEYS = {CLICKSTREAM_TOPIC: ("session_id",), INVENTORY_TOPIC: ("sku", "location_id")}
PARTITIONS = 3


def cdc_topic(table: str) -> str:
    return f"{CDC_TOPIC_PREFIX}.retail.{table}"


def event_key(topic: str, event: dict) -> bytes:
    return "|".join(str(event[name]) for name in EVENT_KEYS[topic]).encode()


def source_topics() -> tuple[str, ...]:
    return (*(cdc_topic(table) for table in SOURCE_TABLES), *EVENT_TOPICS)


def create_source_topics(settings: Settings) -> list[str]:
    """Creates the source topics that are missing; returns the names it created."""
    admin = KafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap, client_id="retailmax-admin")
    try:
        missing = [t for t in source_topics() if t not in set(admin.list_topics())]
        created = []
        for topic in missing:
            try:
                admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
                created.append(topic)
            except TopicAlreadyExistsError:
                pass
        return created
    finally:
        admin.close()


class NoSuchTopic(LookupError):
    """The topic does not exist on the broker."""


def tail(settings: Settings, topic: str, per_partition: int, timeout: int) -> Iterator[str]:
    """`lakehouse tail`: the last `per_partition` messages of each of the topic's partitions,
    then those that arrive until none has for `timeout` s, one line each."""
    # A local broker answers at once: after 5 s (not the client's 30) it is said to be down.
    consumer = KafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        enable_auto_commit=False,
        consumer_timeout_ms=timeout * 1000,
        bootstrap_timeout_ms=5_000,
    )
    partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or []]
    if not partitions:
        raise NoSuchTopic(f"topic {topic} does not exist")
    consumer.assign(partitions)
    for partition, end in consumer.end_offsets(partitions).items():
        consumer.seek(partition, max(0, end - per_partition))
    for message in consumer:
        key = message.key.decode(errors="replace") if message.key else None
        value = message.value.decode(errors="replace") if message.value else None
        yield f"{message.partition}:{message.offset} key={key} {value}"


# A Spark read of a topic's range fetches it, then its consumer fetches ahead from the
# range's end, where nothing is yet: the broker holds that fetch for up to
# `fetch.max.wait.ms` (Kafka's default 500 ms), and the offsets Spark asks for next on the
# same connection wait behind it, more than once per read task: a batch read of a topic of
# 24,000 messages took 1.4 s, and 0.4 s with this; a drain of the five topics two fifths
# less (CHANGELOG.md).
SPARK_FETCH_MAX_WAIT_MS = 10


def spark_reader(
    spark: SparkSession, settings: Settings, topic: str, streaming: bool = False
) -> DataFrameReader | DataStreamReader:
    """A Spark reader of `topic` (`streaming`: a stream's) from its earliest offset."""
    reader = spark.readStream if streaming else spark.read
    return (
        reader.format("kafka")
        .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
        .option("kafka.fetch.max.wait.ms", SPARK_FETCH_MAX_WAIT_MS)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )


def end_offsets(settings: Settings, topic: str) -> dict[int, int]:
    """Each partition's end offset (none for a topic that does not exist)."""
    consumer = KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return {partition.partition: end for partition, end in consumer.end_offsets(partitions).items()}
    finally:
        consumer.close()


def messages_in(settings: Settings, topic: str) -> int:
    """The sum of the topic's end offsets: how many messages it has ever received."""
    return sum(end_offsets(settings, topic).values())
