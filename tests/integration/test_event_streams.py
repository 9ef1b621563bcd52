"""The simulator's event producers write valid, keyed JSON events to both topics."""

from __future__ import annotations

from datetime import datetime

from kafka import KafkaProducer

from ingestion.events import EventStreams
from ingestion.topics import CLICKSTREAM_TOPIC, INVENTORY_TOPIC

CLICK_FIELDS = {
    "event_id": str,
    "session_id": str,
    "customer_id": (int, type(None)),
    "event_type": str,
    "page_url": str,
    "product_id": (int, type(None)),
    "search_query": (str, type(None)),
    "device": str,
    "event_ts": str,
}
INVENTORY_FIELDS = {
    "sku": str,
    "location_id": str,
    "quantity_on_hand": int,
    "change_qty": int,
    "reason": str,
    "update_ts": str,
}


def _valid(value, fields) -> bool:
    if not isinstance(value, dict) or set(value) != set(fields):
        return False
    if not all(isinstance(value[name], kind) for name, kind in fields.items()):
        return False
    ts = value.get("event_ts") or value.get("update_ts")
    return ts.endswith("Z") and datetime.fromisoformat(ts).utcoffset().total_seconds() == 0


class RecordingProducer(KafkaProducer):
    """Remembers the keys it sent, to tell this test's events from a running simulator's."""

    def __init__(self, **config):
        super().__init__(**config)
        self.keys: set[bytes] = set()

    def send(self, topic, value=None, key=None, **kwargs):
        self.keys.add(key)
        return super().send(topic, value=value, key=key, **kwargs)


def _produce(settings, steps: int, bad_share: float, seed: int) -> EventStreams:
    producer = RecordingProducer(bootstrap_servers=settings.kafka_bootstrap, acks="all")
    streams = EventStreams(producer, seed, [1, 2, 3], ["TEST-SKU-1", "TEST-SKU-2"], [1, 2], bad_share)
    for _ in range(steps):
        streams.step()
    producer.flush()
    producer.close()
    return streams


def _read_own(reader, streams: EventStreams, expected: int) -> list:
    def own(messages):
        return [(k, v) for k, v in messages if _raw(k) in streams.producer.keys]

    return own(reader.read_until(lambda m: len(own(m)) >= expected))


def _raw(key) -> bytes:
    return key if isinstance(key, bytes) else str(key).encode()


def test_events_are_valid_and_keyed(services, topic_reader):
    clicks, stock = topic_reader(CLICKSTREAM_TOPIC), topic_reader(INVENTORY_TOPIC)
    streams = _produce(services, 300, 0.0, seed=21)
    click_messages = _read_own(clicks, streams, streams.sent["clickstream"])
    stock_messages = _read_own(stock, streams, streams.sent["inventory"])
    assert len(click_messages) == streams.sent["clickstream"] > 100
    assert len(stock_messages) == streams.sent["inventory"] > 50
    for key, value in click_messages:
        assert _valid(value, CLICK_FIELDS), value
        assert key == value["session_id"].encode()
    for key, value in stock_messages:
        assert _valid(value, INVENTORY_FIELDS), value
        assert key == f"{value['sku']}|{value['location_id']}".encode()


def test_malformed_share_is_mixed_in_and_counted(services, topic_reader):
    clicks, stock = topic_reader(CLICKSTREAM_TOPIC), topic_reader(INVENTORY_TOPIC)
    streams = _produce(services, 400, 0.25, seed=22)
    messages = _read_own(clicks, streams, streams.sent["clickstream"]) + _read_own(
        stock, streams, streams.sent["inventory"]
    )
    invalid = [v for _, v in messages if not (_valid(v, CLICK_FIELDS) or _valid(v, INVENTORY_FIELDS))]
    assert len(invalid) == streams.sent["malformed"] > 50
    assert any(isinstance(v, bytes) for v in invalid)
