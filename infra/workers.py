"""The demo's workers: the `lakehouse` commands `make up` keeps running beside the services,
supervised as the native services are (pid files in `.lake/run`, logs in `.lake/logs`,
stopped by `make down`), and the pages users open beside the services.

The workers are the supervisor (below), the workload simulator, the pipeline (`lakehouse
run --continuous`: the Bronze streams in a process of their own, and Silver and Gold each
kept within its freshness target; their two Spark UIs are on http://localhost:4040 and 4041), the web
server of the quality gates' Data Docs (http://localhost:8085 by default, QUALITY_DOCS_PORT),
the dashboard (http://localhost:8501, DASHBOARD_PORT) and the metrics. pipeline/demo.py
starts them.

A worker that exits by itself leaves its pid file behind (`make down` removes it): the
supervisor (`lakehouse supervise`) starts it again, and records each exit with the last error
its log shows, until it has exited `RESTARTS_ALLOWED` times within `RESTART_WINDOW` seconds;
then it leaves it down and says so. `processes` reports each worker, running or not and why,
to `lakehouse status`, the dashboard and the metrics.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field

from infra import stack
from infra.native.process import BackgroundProcess, tail
from lakehouse.network import port_open
from lakehouse.settings import Settings
from medallion.invocation import MESSAGE_PREFIXES, lakehouse

# The demo's workload: Postgres transactions and Kafka events per second.
DEMO_RATE, DEMO_EVENT_RATE = 5, 20
# The supervisor first: `make down` stops the workers in this order, and a supervisor still
# running would start again a worker that was being stopped.
WORKERS = {
    "supervisor": ["supervise"],
    "simulator": [
        "simulate",
        "--duration",
        "0",
        "--rate",
        str(DEMO_RATE),
        "--event-rate",
        str(DEMO_EVENT_RATE),
        "--bad-rows",
        "0.02",
        "--bad-events",
        "0.01",
    ],
    "pipeline": ["run", "--continuous", "--interval", "10"],
    "data-docs": ["data-docs"],
    "dashboard": ["dashboard"],
    "metrics": ["metrics"],
}
# Workers that Docker Compose runs as services of its own in docker mode.
COMPOSE_SERVICES = {"dashboard", "metrics"}


# The pipeline's two Spark UIs (Bronze streams, Silver and Gold passes) take these in the
# order their JVMs start.
SPARK_UI_PORTS = (4040, 4041)


def pages(settings: Settings) -> list[stack.ServiceStatus]:
    """The pages users open beside the services, each healthy while something answers."""
    found = [
        ("dashboard", settings.dashboard_port, "Gold and pipeline health"),
        ("data docs", settings.docs_port, "results of the quality gates"),
        ("metrics", settings.metrics_port, "Prometheus metrics, on /metrics"),
        *(
            (
                f"spark ui {n}",
                port,
                f"the {which} Spark job of the pipeline to start (Bronze's or the passes')",
            )
            for n, (which, port) in enumerate(zip(("first", "second"), SPARK_UI_PORTS, strict=True), 1)
        ),
        ("scheduler", settings.scheduler_port, "the scheduler's UI (`make scheduler`)"),
    ]
    return [
        stack.ServiceStatus(name, f"http://localhost:{port}/", port_open("127.0.0.1", port), detail)
        for name, port, detail in found
    ]


def worker(settings: Settings, name: str) -> BackgroundProcess:
    return BackgroundProcess(name, settings.state_dir / "run", settings.state_dir / "logs")


# A worker that keeps failing (a misconfiguration, a service that stays down) is left down
# after this many exits within the window, rather than restarted forever.
RESTARTS_ALLOWED = 5
RESTART_WINDOW = 600.0
# The line of a Python or JVM traceback that names the exception (`psycopg.errors.UniqueViolation:
# ...`, `java.lang.OutOfMemoryError: ...`), or one of the `lakehouse` command's own messages.
_ERROR_LINE = re.compile(
    r"^\s*(?:(?:[a-z_]\w*\.)*[A-Z][a-z]\w*(?::|$)|" + "|".join(map(re.escape, MESSAGE_PREFIXES)) + ")"
)


@dataclass
class Exits:
    """What the supervisor knows of one worker's exits, in `<state dir>/run/<name>.exits`."""

    times: list[float] = field(default_factory=list)  # of each exit, epoch seconds
    restarts: int = 0
    last_error: str = ""
    gave_up: bool = False

    @staticmethod
    def path(settings: Settings, name: str):
        return settings.state_dir / "run" / f"{name}.exits"

    @classmethod
    def load(cls, settings: Settings, name: str) -> Exits:
        path = cls.path(settings, name)
        return cls(**json.loads(path.read_text())) if path.exists() else cls()

    def save(self, settings: Settings, name: str) -> None:
        path = self.path(settings, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_suffix(".partial")
        staged.write_text(json.dumps(asdict(self)))
        staged.replace(path)


def last_error(log_tail: str) -> str:
    """The line of a log's tail that says why its process stopped: the last that names an
    error, else the last line."""
    lines = [line.strip() for line in log_tail.splitlines() if line.strip()]
    named = [line for line in lines if _ERROR_LINE.match(line)]
    return (named or lines or ["(nothing in its log)"])[-1][:300]


def supervise_once(
    settings: Settings, commands: dict[str, list[str]], now: float | None = None, report=print
) -> None:
    """Starts again each worker of `commands` (name: argv) that exited by itself, recording
    why it stopped; leaves it down once it has exited too often."""
    now = time.time() if now is None else now
    for name, command in commands.items():
        process, exits = worker(settings, name), Exits.load(settings, name)
        if not process.exited() or exits.gave_up:
            continue
        exits.times = [t for t in exits.times if now - t < RESTART_WINDOW] + [now]
        exits.last_error = last_error(tail(process.log, 60))
        exits.gave_up = len(exits.times) > RESTARTS_ALLOWED
        if exits.gave_up:
            report(f"{name} exited {len(exits.times)} times in {RESTART_WINDOW:.0f} s: left down")
        else:
            process.start(command)
            exits.restarts += 1
            report(f"{name} exited ({exits.last_error}); started again")
        exits.save(settings, name)


def start(settings: Settings, name: str) -> BackgroundProcess:
    """Starts a worker unless it runs, with a clean record of exits."""
    process = worker(settings, name)
    if not process.running():
        Exits.path(settings, name).unlink(missing_ok=True)
        process.start(lakehouse(*WORKERS[name]))
    return process


def supervise(settings: Settings, names: list[str], start_them: bool = False, interval: float = 5.0) -> None:
    """`lakehouse supervise`: watches the demo's workers `names` (all the others when none)
    until stopped. With `start_them`, it starts them first and records its own pid, as the
    main process of the Compose mode's `workers` container, which shares the host's process
    table: `make status` and `make down` then treat it and them as native workers."""
    names = names or [name for name in WORKERS if name != "supervisor"]
    if start_them:
        # A group of its own, as a worker the native mode starts: `make down` stops a worker
        # by its process group.
        try:
            os.setsid()
        except PermissionError:  # already a group's leader
            pass
        own = worker(settings, "supervisor").pid_file
        own.parent.mkdir(parents=True, exist_ok=True)
        own.write_text(str(os.getpid()))
        for name in names:
            start(settings, name)
    commands = {name: lakehouse(*WORKERS[name]) for name in names}
    while True:
        supervise_once(settings, commands)
        time.sleep(interval)


def processes(settings: Settings) -> list[stack.ServiceStatus]:
    """Each worker of a running demo: healthy while it runs, else why it stopped and whether
    the supervisor starts it again; with how often it was restarted and why. None after
    `make down`, which removes the pid files."""
    found = []
    for name in WORKERS:
        process, exits = worker(settings, name), Exits.load(settings, name)
        if not process.pid_file.exists():
            continue
        running = process.running()
        if running:
            detail = f"pid {process.pid}"
            if exits.restarts:
                detail += f"; restarted {exits.restarts} times, last after: {exits.last_error}"
        else:
            state = (
                "left down after repeated exits" if exits.gave_up else "exited; the supervisor restarts it"
            )
            error = exits.last_error or last_error(tail(process.log, 60))
            detail = f"{state}: {error} (log {process.log})"
        found.append(stack.ServiceStatus(name, "demo worker", running, detail))
    return found
