"""Registers the Debezium Postgres connector through Kafka Connect's REST API.

The connector config is `debezium-postgres.json` beside this file, the same for the native
and the Docker Compose mode; host, port and password are `${env:...}` references that the
Connect worker resolves, so no secret passes through the REST API. Choices worth knowing:

- `decimal.handling.mode=string`: money arrives as "12.34" and is cast to decimal in
  Bronze; the default (bytes) needs the schema to decode, and `double` would round.
- Timestamps are `timestamptz` columns, which Debezium sends as ISO-8601 strings in UTC.
- `tombstones.on.delete=false`: a delete is one event with `op=d` and the full before-image
  (REPLICA IDENTITY FULL). The topics are not log-compacted, so the null tombstones that
  compaction needs would only be records for Bronze to skip.
- Tables are captured through the `retailmax_publication` publication that the schema
  creates, so Debezium's role needs no ownership of the tables.
- The last transform, `guard` (ingestion/jvm/), lets a change event of up to 16 MiB through
  (the broker and the Connect producer take 17 MiB: infra/config/) and strips the row
  images of a larger one, which Bronze then quarantines as `oversized`: without it, one
  such row would fail the connector's only task and stop the capture of every table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import requests

from lakehouse.settings import Settings

CONNECTOR_FILE = Path(__file__).resolve().parent / "debezium-postgres.json"


class ConnectorError(RuntimeError):
    """The connector could not be registered or is not running; includes Connect's trace."""


def connector_definition() -> dict:
    return json.loads(CONNECTOR_FILE.read_text())


def connector_status(settings: Settings, name: str | None = None) -> dict | None:
    name = name or connector_definition()["name"]
    response = requests.get(f"{settings.connect_url}/connectors/{name}/status", timeout=10)
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return response.json()


def _failure(status: dict) -> str | None:
    states = [("connector", status["connector"])] + [
        (f"task {task['id']}", task) for task in status.get("tasks", [])
    ]
    for label, state in states:
        if state["state"] == "FAILED":
            return f"{label} FAILED:\n{state.get('trace', '(no trace)')}"
    return None


def failure(settings: Settings) -> str | None:
    """What failed, with the first line of its error, when Connect reports the connector or
    a task FAILED (no change at the source is captured meanwhile); None when it runs, is not
    registered, or Connect does not answer (`lakehouse status` shows that)."""
    try:
        status = connector_status(settings)
    except requests.RequestException:
        return None
    failed = _failure(status) if status else None
    if failed is None:
        return None
    label, _, trace = failed.partition("\n")
    lines = trace.splitlines() or ["(no trace)"]
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    return f"{label} {lines[0]}" + (f" (caused by {causes[-1]})" if causes else "")


def is_running(status: dict | None) -> bool:
    return bool(
        status
        and status["connector"]["state"] == "RUNNING"
        and status["tasks"]
        and all(task["state"] == "RUNNING" for task in status["tasks"])
    )


def wait_running(settings: Settings, timeout: float = 90, settle: float = 0) -> dict:
    """Waits until the connector and every task are RUNNING; fails fast on FAILED, once
    `settle` seconds have passed (a restarted task shows its old failure until it starts)."""
    began = time.monotonic()
    status = None
    while time.monotonic() < began + timeout:
        status = connector_status(settings)
        if is_running(status):
            return status
        if status and (failure := _failure(status)) and time.monotonic() >= began + settle:
            raise ConnectorError(f"Debezium connector {status['name']}: {failure}")
        time.sleep(1)
    raise ConnectorError(
        f"Debezium connector not RUNNING after {timeout:.0f} s; last status: "
        f"{json.dumps(status)}. Check .lake/logs/connect.log."
    )


def register(settings: Settings, timeout: float = 90) -> str:
    """Creates the connector or updates its config (PUT is create-or-update), and restarts
    what FAILED; idempotent. Returns "created", "updated", "restarted" (config unchanged) or
    "unchanged"."""
    definition = connector_definition()
    name, config = definition["name"], definition["config"]
    base = f"{settings.connect_url}/connectors/{name}"
    current = requests.get(f"{base}/config", timeout=10)
    failed = current.ok and _failure(connector_status(settings))
    if current.ok and {k: v for k, v in current.json().items() if k != "name"} == config:
        outcome = "restarted" if failed else "unchanged"
    else:
        response = requests.put(f"{base}/config", json=config, timeout=30)
        if not response.ok:
            # A worker started before `make install` built the project's plugin lacks it.
            stale = "could not be found" in response.text
            raise ConnectorError(
                f"Kafka Connect refused connector {name} ({response.status_code}): {response.text}"
                + (
                    "; restart Connect so that it loads the project's plugin: make down && make up"
                    if stale
                    else ""
                )
            )
        outcome = "created" if response.status_code == 201 else "updated"
    if failed:
        # A task that FAILED stays so after a new config until asked to restart.
        _restart_failed(base, timeout)
    wait_running(settings, timeout, settle=30 if failed else 0)
    return outcome


def _restart_failed(base: str, timeout: float) -> None:
    """Restarts what FAILED. Right after a config update, Connect answers 409 (a rebalance
    in progress) until its worker has read the new config: asked again, it restarts."""
    deadline = time.monotonic() + timeout
    while True:
        response = requests.post(
            f"{base}/restart", params={"includeTasks": "true", "onlyFailed": "true"}, timeout=30
        )
        if response.status_code != 409 or time.monotonic() >= deadline:
            response.raise_for_status()
            return
        time.sleep(1)
