"""The Kafka topics of the application event streams (the CDC topics are Debezium's)."""

from __future__ import annotations

from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from lakehouse.settings import Settings

CDC_TOPIC_PREFIX = "retailmax"
CLICKSTREAM_TOPIC = "web_clickstreams"
INVENTORY_TOPIC = "inventory_updates"
EVENT_TOPICS = (CLICKSTREAM_TOPIC, INVENTORY_TOPIC)
PARTITIONS = 3


def cdc_topic(table: str) -> str:
    return f"{CDC_TOPIC_PREFIX}.retail.{table}"


def create_event_topics(settings: Settings) -> list[str]:
    """Creates the event topics that are missing; returns the names it created."""
    admin = KafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap,
                             client_id="retailmax-admin")
    try:
        missing = [t for t in EVENT_TOPICS if t not in set(admin.list_topics())]
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
