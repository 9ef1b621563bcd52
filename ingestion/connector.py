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


def is_running(status: dict | None) -> bool:
    return bool(
        status
        and status["connector"]["state"] == "RUNNING"
        and status["tasks"]
        and all(task["state"] == "RUNNING" for task in status["tasks"])
    )


def wait_running(settings: Settings, timeout: float = 90) -> dict:
    """Waits until the connector and every task are RUNNING; fails fast on FAILED."""
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = connector_status(settings)
        if is_running(status):
            return status
        if status and (failure := _failure(status)):
            raise ConnectorError(f"Debezium connector {status['name']}: {failure}")
        time.sleep(1)
    raise ConnectorError(
        f"Debezium connector not RUNNING after {timeout:.0f} s; last status: "
        f"{json.dumps(status)}. Check .lake/logs/connect.log."
    )


def register(settings: Settings, timeout: float = 90) -> str:
    """Creates the connector or updates its config (PUT is create-or-update); idempotent.

    Returns "created", "updated" or "unchanged".
    """
    definition = connector_definition()
    name, config = definition["name"], definition["config"]
    base = f"{settings.connect_url}/connectors/{name}"
    current = requests.get(f"{base}/config", timeout=10)
    if current.ok and {k: v for k, v in current.json().items() if k != "name"} == config:
        outcome = "unchanged"
    else:
        response = requests.put(f"{base}/config", json=config, timeout=30)
        if not response.ok:
            raise ConnectorError(
                f"Kafka Connect refused connector {name} ({response.status_code}): {response.text}"
            )
        outcome = "created" if response.status_code == 201 else "updated"
    wait_running(settings, timeout)
    return outcome
