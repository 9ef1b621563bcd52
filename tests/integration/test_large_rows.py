"""Rows larger than Kafka's default 1 MB: up to the connector's stated maximum (16 MiB of
change event) they land exact; beyond it they stop no capture, and the user sees them kept
out. A connector task that fails anyway fails `lakehouse run` and `lakehouse status`."""

from __future__ import annotations

import base64
import random
import time
from contextlib import contextmanager

import pytest
import requests

from bronze.decode import OVERSIZED
from bronze.job import BronzeJob
from bronze.tables import PRODUCT_CATALOG
from ingestion import connector
from lakehouse.hudi import snapshot
from medallion import verify
from tests.support import drain_until_equal, run_lakehouse

MAXIMUM = int(connector.connector_definition()["config"]["transforms.guard.max.bytes"])


def _incompressible(characters: int, seed: int) -> str:
    # Random bytes as Base64: drawing the characters one by one took seconds per row.
    return base64.b64encode(random.Random(seed).randbytes(characters))[:characters].decode()


def _products(db, count: int) -> list[int]:
    return [
        r[0]
        for r in db.execute(
            "SELECT product_id FROM retail.product_catalog ORDER BY product_id LIMIT %s", (count,)
        )
    ]


def _describe(db, product_id: int, description: str | None) -> None:
    db.execute(
        "UPDATE retail.product_catalog SET description = %s, updated_ts = now() WHERE product_id = %s",
        (description, product_id),
    )


def test_a_row_of_3_mb_lands_exact(services, spark, db):
    product = _products(db, 1)[0]
    (original,) = db.execute(
        "SELECT description FROM retail.product_catalog WHERE product_id = %s", (product,)
    ).fetchone()
    # An update carries the row twice (before and after images): a 6 MB event.
    _describe(db, product, _incompressible(3_000_000, seed=3))
    drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
    landed = snapshot(spark, PRODUCT_CATALOG, services).where(f"product_id = {product}").first()
    assert len(landed.description) == 3_000_000
    _describe(db, product, original)
    drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))


def _wait(condition, what: str, timeout: float = 90.0, status=None):
    """`condition()`'s first true outcome; fails after `timeout` naming `what` and, where
    given, what `status()` shows then."""
    deadline = time.monotonic() + timeout
    while not (outcome := condition()):
        if time.monotonic() >= deadline:
            pytest.fail(f"not within {timeout:.0f} s: {what}" + (f"; status: {status()}" if status else ""))
        time.sleep(1)
    return outcome


def _stopped(status: dict | None) -> bool:
    return bool(status and status["connector"]["state"] == "STOPPED" and not status["tasks"])


def _unguarded(services, url: str) -> None:
    """The connector without its guard. Stopped around the change, which removes its tasks:
    a task Connect reports RUNNING afterwards is a new one, with the new config. (Paused
    instead, the old, guarded task could still be the one reported RUNNING after the
    change, and it passed the row as the guard does.)"""
    config = {
        k: v for k, v in connector.connector_definition()["config"].items() if not k.startswith("transforms")
    }
    requests.put(f"{url}/stop", timeout=30).raise_for_status()
    _wait(lambda: _stopped(connector.connector_status(services)), "the connector stops")
    requests.put(f"{url}/config", json=config, timeout=30).raise_for_status()
    requests.put(f"{url}/resume", timeout=30).raise_for_status()
    connector.wait_running(services)


@contextmanager
def _capture_restored(services, db, url: str, products: list[int]):
    """Whatever this test stops at, the tests after it find the connector guarded and
    running and no row over its limit at the source: left behind, either would stop every
    later comparison of Bronze with Postgres."""
    try:
        yield
    finally:
        db.execute(
            "UPDATE retail.product_catalog SET description = 'small again', updated_ts = now() "
            "WHERE product_id = ANY(%s) AND octet_length(description) > %s",
            (products, MAXIMUM // 2),
        )
        requests.put(f"{url}/resume", timeout=30)
        connector.register(services)


def test_a_row_beyond_the_maximum_stops_no_capture_and_is_named_wherever_a_user_looks(services, spark, db):
    first, second, bystander = _products(db, 3)
    url = f"{services.connect_url}/connectors/retailmax-postgres"
    with _capture_restored(services, db, url, [first, second]):
        # Without its guard, the connector fails on such a row as Kafka's producer refuses it,
        # and nothing after it is captured: the failure must show.
        _unguarded(services, url)
        # Over the producer's limit too (the broker's and the producer's are 1 MiB above the guard's).
        _describe(db, first, _incompressible(MAXIMUM + 2**20, seed=1))
        failed = _wait(
            lambda: connector.failure(services),
            "the unguarded task fails",
            timeout=180,
            status=lambda: connector.connector_status(services),
        )
        assert "RecordTooLargeException" in failed

        status = run_lakehouse(services, "status", timeout=120)
        assert status.returncode == 1
        (line,) = [line for line in status.stdout.splitlines() if line.startswith("debezium ")]
        assert " DOWN " in line and "task 0 FAILED" in line and "RecordTooLargeException" in line
        run = run_lakehouse(services, "run", timeout=600)
        assert run.returncode == 1, run.stderr[-2000:]
        assert (
            "error: the Debezium connector is down, so no change at the source is captured: task 0 FAILED"
            in run.stderr
        )

        # With the guard back (what `make services` does), the task takes up the same row again
        # and lets it through without its images; a second such row no longer stops anything.
        assert connector.register(services) == "updated"
        _describe(db, second, _incompressible(MAXIMUM + 1, seed=2))
        db.execute("UPDATE retail.product_catalog SET updated_ts = now() WHERE product_id = %s", (bystander,))

        def kept_out():
            BronzeJob(spark, services).drain()
            verdict = verify.bronze_against_postgres(spark, services, db, PRODUCT_CATALOG)
            return verdict if verdict.missing == 2 and len(verdict.explained) == 2 else None

        verdict = _wait(kept_out, "both rows kept out and the bystander landed", timeout=300)
        assert connector.failure(services) is None
        assert verdict.extra == 2 and not verdict.duplicated  # Bronze still holds both rows as they were
        for product in (first, second):
            (reason,) = [r for r in verdict.explained if r.startswith(f"product_id={product} ")]
            assert f"kept out at capture: {OVERSIZED}: its event of " in reason
            assert f"is over the connector's limit of {MAXIMUM}" in reason
        status = run_lakehouse(services, "status", timeout=120)
        assert "2 oversized" in status.stdout, status.stdout

        # The row's next change that fits lands it: without the old row's image, which is over.
        _describe(db, first, "small again")
        _describe(db, second, None)
        drain_until_equal(spark, services, db, tables=(PRODUCT_CATALOG,))
