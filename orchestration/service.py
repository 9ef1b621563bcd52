"""`make scheduler`: Dagster's webserver (the UI, SCHEDULER_PORT) and daemon (which fires the
schedules and starts queued runs), as background processes of the native mode or as
Compose services, with the instance's state under `<state dir>/dagster`."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import requests

from infra import stack
from infra.native.process import BackgroundProcess, ServiceError, ensure_port_free
from lakehouse.settings import Settings

DEFINITIONS = "orchestration.definitions"
# One run at a time, and one step per layer pool at a time across runs: the Spark jobs of
# two runs would share two cores, and a layer's command holds that layer's lock.
INSTANCE_CONFIG = """\
# Written by orchestration/service.py at every start; edit that file instead.
concurrency:
  runs:
    max_concurrent_runs: 1
  pools:
    default_limit: 1
telemetry:
  enabled: false
"""
ROLES = ("webserver", "daemon")


def home(settings: Settings) -> Path:
    return settings.state_dir / "dagster"


def _process(settings: Settings, role: str) -> BackgroundProcess:
    return BackgroundProcess(f"scheduler-{role}", settings.state_dir / "run", settings.state_dir / "logs")


def command(settings: Settings, role: str) -> list[str]:
    """The Dagster process for `role`, on the definitions built from the declarations."""
    if role == "webserver":
        # Dagster's webserver behind the project's same-origin guard (orchestration/webserver.py).
        return [
            sys.executable,
            "-m",
            "orchestration.webserver",
            "-h",
            "127.0.0.1",
            "-p",
            str(settings.scheduler_port),
            "-m",
            DEFINITIONS,
        ]
    return [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-m", DEFINITIONS]


def environment(settings: Settings) -> dict[str, str]:
    directory = home(settings)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dagster.yaml").write_text(INSTANCE_CONFIG)
    return {**os.environ, **settings.environment(), "DAGSTER_HOME": str(directory)}


def serve(settings: Settings, role: str) -> None:
    """Becomes the webserver or the daemon (exec): what Compose runs in the foreground."""
    arguments = command(settings, role)
    os.execve(arguments[0], arguments, environment(settings))


# The webserver answers before it has loaded the asset graph (its code location), and
# serves an empty graph meanwhile: it is up when the location has loaded.
_LOCATIONS = "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"


def answers(settings: Settings) -> bool:
    try:
        reply = requests.post(
            f"http://localhost:{settings.scheduler_port}/graphql", timeout=5, json={"query": _LOCATIONS}
        )
        entries = reply.json()["data"]["workspaceOrError"]["locationEntries"]
    except (requests.RequestException, ValueError, KeyError, TypeError):
        return False
    return bool(entries) and all(entry["loadStatus"] == "LOADED" for entry in entries)


def start(settings: Settings, report=print, timeout: float = 120) -> None:
    """Both roles, in containers where the services run in Compose (its profile "scheduler",
    whose healthcheck waits for the webserver as `answers` does), as processes otherwise."""
    if stack.in_containers(settings):
        stack.start_profile(settings, "scheduler")
        logs = "`docker compose logs scheduler-daemon`"
    else:
        _start_processes(settings, timeout)
        logs = str(_process(settings, "daemon").log)
    report(
        f"scheduler on http://localhost:{settings.scheduler_port}/ (daemon log {logs}); runs every "
        f"table on '{settings.schedule_cron}' (SCHEDULE_CRON)"
    )


def _start_processes(settings: Settings, timeout: float) -> None:
    if shutil.which("java") is None:
        raise ServiceError("Java is not installed: every table's job is a Spark job (`make install`).")
    webserver = _process(settings, "webserver")
    if not webserver.running():
        ensure_port_free("scheduler", settings.scheduler_port, "SCHEDULER_PORT")
    for role in ROLES:
        process = _process(settings, role)
        if not process.running():
            process.start(command(settings, role), environment(settings))
    deadline = time.monotonic() + timeout
    while not answers(settings):
        if not webserver.running() or time.monotonic() > deadline:
            raise ServiceError(
                f"the scheduler's webserver did not answer on port "
                f"{settings.scheduler_port}; see {webserver.log}"
            )
        time.sleep(1)


def stop(settings: Settings, report=print) -> None:
    if stack.in_containers(settings):
        stack.stop_profile(settings, "scheduler")
        return
    for role in ROLES:
        process = _process(settings, role)
        if process.running():
            process.stop()
            report(f"scheduler {role} stopped")
