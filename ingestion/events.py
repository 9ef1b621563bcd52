"""Producers of the application event streams: `web_clickstreams` and `inventory_updates`.

Events are JSON, keyed so that related events share a partition and keep their order:
clickstreams by `session_id`, inventory by `sku|location_id` (ingestion/topics.py). A share
of malformed events (not JSON, a missing key field, a wrong type) can be mixed in so that
Bronze can prove it quarantines them.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

from kafka import KafkaProducer

from ingestion import generators
from ingestion.topics import CLICKSTREAM_TOPIC, INVENTORY_TOPIC, event_key


def encode(event: dict | bytes) -> bytes:
    if isinstance(event, bytes):
        return event
    return json.dumps(event, default=_json_value, separators=(",", ":")).encode()


def _json_value(value):
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    raise TypeError(f"not JSON-serialisable: {value!r}")


class EventStreams:
    """Generates both event streams from one seeded generator and sends them to Kafka."""

    def __init__(
        self,
        producer: KafkaProducer,
        seed: int,
        customer_ids: list[int],
        skus: list[str],
        product_ids: list[int],
        bad_share: float = 0.0,
    ):
        self.producer = producer
        self.rng = random.Random(f"{seed}:events")
        self.customer_ids, self.skus, self.product_ids = customer_ids, skus, product_ids
        self.bad_share = bad_share
        self.pending_clicks: list[dict] = []
        self.stock: dict[tuple[str, str], int] = {}
        self.sent = {"clickstream": 0, "inventory": 0, "malformed": 0}

    @property
    def total(self) -> int:
        return self.sent["clickstream"] + self.sent["inventory"]

    def _send(self, topic: str, event: dict, key_field: str) -> None:
        payload: dict | bytes = event
        if self.bad_share and self.rng.random() < self.bad_share:
            _, payload = generators.malformed(self.rng, event, key_field)
            self.sent["malformed"] += 1
        self.producer.send(topic, key=event_key(topic, event), value=encode(payload))

    def step(self) -> None:
        """Sends one event: a click (two times in three) or a stock movement."""
        now = datetime.now(UTC)
        if self.rng.random() < 2 / 3:
            if not self.pending_clicks:
                self.pending_clicks = generators.click_session(
                    self.rng, self.customer_ids, self.product_ids, now
                )
            # A live stream stamps events when they happen, not when the session was planned.
            event = self.pending_clicks.pop(0) | {"event_ts": now}
            self._send(CLICKSTREAM_TOPIC, event, "event_id")
            self.sent["clickstream"] += 1
        else:
            event = generators.inventory_update(self.rng, self.stock, self.skus, now)
            self._send(INVENTORY_TOPIC, event, "sku")
            self.sent["inventory"] += 1
