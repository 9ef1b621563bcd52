"""`make up` / `make down`: the services plus the processes of the running demo, its workers
(infra/workers.py: the workload simulator, the pipeline, the pages), each a `lakehouse`
command in the background."""

from __future__ import annotations

import time

from infra import stack, workers
from infra.workers import COMPOSE_SERVICES, WORKERS, worker
from ingestion.seed import SeedSize, seed
from lakehouse.settings import Settings


def up(settings: Settings, mode: str = "auto", report=print) -> None:
    began = time.monotonic()
    mode = stack.start(settings, mode, report)
    counts = seed(settings, SeedSize.for_lines(10_000))
    report("seed: tables already hold data" if counts is None else f"seed: {counts}")
    if mode == "docker":
        stack.start_demo_containers(settings)
        report(f"demo workers running in containers ({', '.join(COMPOSE_SERVICES)}, workers)")
    else:
        for name in WORKERS:
            report(stack.row(name, f"running (log {workers.start(settings, name).log})"))
    report(
        f"demo up ({mode} mode) in {time.monotonic() - began:.1f} s; dashboard on "
        f"http://localhost:{settings.dashboard_port}/, Data Docs on "
        f"http://localhost:{settings.docs_port}/"
    )
    for s in stack.status(settings):
        report(f"  {s.line()}")


def down(settings: Settings, report=print, delete_volumes: bool = False) -> None:
    for name in WORKERS:
        worker(settings, name).stop()
        report(stack.row(name, "stopped"))
    stack.stop(settings, report, delete_volumes)
