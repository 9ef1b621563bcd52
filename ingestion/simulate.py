"""`lakehouse simulate`: the live sources, paced at a given rate for a given duration.

Like the applications it stands for, the simulator outlives its dependencies' restarts: when
PostgreSQL goes away it reconnects and carries on, and events wait in the Kafka producer's
buffer while the broker is down.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

import psycopg
from kafka import KafkaProducer

from ingestion.database import connect
from ingestion.events import EventStreams
from ingestion.workload import OltpWorkload
from lakehouse.settings import SOURCE_WRITER, Settings


@dataclass(frozen=True)
class SimulationPlan:
    transactions_per_second: float = 10.0
    events_per_second: float = 50.0
    duration_seconds: float = 60.0  # 0 runs until interrupted
    seed: int = 7
    bad_event_share: float = 0.0
    bad_row_share: float = 0.0
    fix_bad_rows_after_seconds: float = 600.0


def _connect_when_up(settings: Settings, report) -> psycopg.Connection:
    """A connection as soon as PostgreSQL accepts one. Autocommit, so that each workload
    step's `transaction()` is a real transaction of its own and not a savepoint inside one
    endless transaction."""
    while True:
        try:
            return connect(settings, SOURCE_WRITER, autocommit=True)
        except psycopg.OperationalError as error:
            report(f"simulate: Postgres unavailable ({str(error).strip().splitlines()[-1]}); retrying in 2 s")
            time.sleep(2)


def simulate(settings: Settings, plan: SimulationPlan, report=print) -> Counter:
    """Runs both workloads side by side, pacing each to its rate; returns what it did."""
    done: Counter = Counter()
    conn = _connect_when_up(settings, report)
    oltp = OltpWorkload(
        conn, plan.seed, plan.bad_row_share, timedelta(seconds=plan.fix_bad_rows_after_seconds)
    )
    customers = [
        r[0]
        for r in conn.execute(
            "SELECT customer_id FROM retail.customer_master ORDER BY customer_id LIMIT 5000"
        )
    ]
    catalog = conn.execute(
        "SELECT product_id, sku FROM retail.product_catalog ORDER BY product_id LIMIT 5000"
    ).fetchall()
    producer = KafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap, acks="all", linger_ms=20, client_id="retailmax-simulator"
    )
    events = EventStreams(
        producer,
        plan.seed,
        customers,
        [sku for _, sku in catalog],
        [pid for pid, _ in catalog],
        plan.bad_event_share,
    )
    start = time.monotonic()
    next_report = start + 10
    try:
        while True:
            elapsed = time.monotonic() - start
            if plan.duration_seconds and elapsed >= plan.duration_seconds:
                break
            behind_oltp = elapsed * plan.transactions_per_second - sum(done.values())
            behind_events = elapsed * plan.events_per_second - events.total
            if behind_oltp >= 1:
                try:
                    done[oltp.step()] += 1
                except psycopg.OperationalError as error:
                    # The database restarted: the step may or may not have committed.
                    report(f"simulate: Postgres connection lost ({str(error).strip()}); reconnecting")
                    conn.close()
                    conn = _connect_when_up(settings, report)
                    oltp.reconnect(conn)
                    done["interrupted"] += 1
            elif behind_events >= 1:
                events.step()
            else:
                time.sleep(min(0.01, 1 / max(plan.transactions_per_second, plan.events_per_second, 1)))
            if time.monotonic() >= next_report:
                next_report += 10
                report(
                    f"simulate: {sum(done.values())} transactions, "
                    f"{events.sent['clickstream']} clicks, {events.sent['inventory']} "
                    f"stock updates, {events.sent['malformed']} malformed"
                )
    finally:
        producer.flush()
        producer.close()
        conn.close()
    done.update({f"events_{k}": v for k, v in events.sent.items()})
    return done
