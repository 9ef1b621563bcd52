"""Debezium resumes from its replication slot after Kafka Connect goes down: nothing is lost."""

from __future__ import annotations

import pytest

from infra import stack
from ingestion import connector
from ingestion.topics import cdc_topic


@pytest.mark.parametrize("crash", [True, False], ids=["killed", "stopped"])
def test_changes_made_while_connect_is_down_arrive_after_restart(services, db, topic_reader, crash):
    reader = topic_reader(cdc_topic("customer_master"))
    tier = "platinum" if crash else "silver"
    stack.stop_connect(services, crash=crash)
    changed = (11, 12, 13) if crash else (14, 15)
    for customer_id in changed:
        db.execute("UPDATE retail.customer_master SET loyalty_tier = %s, updated_ts = now()"
                   " WHERE customer_id = %s", (tier, customer_id))
    stack.start_connect(services)
    assert connector.register(services) == "unchanged"

    def arrived(messages):
        return {v["after"]["customer_id"] for _, v in messages
                if v and v["op"] == "u" and v["after"]["loyalty_tier"] == tier} >= set(changed)

    reader.read_until(arrived, timeout=90)
