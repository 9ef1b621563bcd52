"""The demo's workers: the `lakehouse` commands `make up` keeps running beside the services,
supervised as the native services are (pid files in `.lake/run`, logs in `.lake/logs`,
stopped by `make down`), and the pages users open beside the services.

The workers are the workload simulator, the pipeline (`lakehouse run --continuous`: the
Bronze streams in a process of their own, and Silver and Gold passes starting every 10 s;
their two Spark UIs are on http://localhost:4040 and 4041), the web server of the quality
gates' Data Docs (http://localhost:8085 by default, QUALITY_DOCS_PORT), the dashboard
(http://localhost:8501, DASHBOARD_PORT) and the metrics. pipeline/demo.py starts them.
"""

from __future__ import annotations

from infra import stack
from infra.native.process import BackgroundProcess, port_open
from lakehouse.settings import Settings

WORKERS = {
    "simulator": [
        "simulate",
        "--duration",
        "0",
        "--rate",
        "5",
        "--event-rate",
        "20",
        "--bad-rows",
        "0.02",
        "--bad-events",
        "0.01",
    ],
    "pipeline": ["run", "--continuous", "--interval", "10"],
    "docs": ["docs"],
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
        *(("spark ui", port, "a Spark job of the pipeline") for port in SPARK_UI_PORTS),
        ("scheduler", settings.scheduler_port, "the scheduler's UI (`make scheduler`)"),
    ]
    return [
        stack.ServiceStatus(name, f"http://localhost:{port}/", port_open("127.0.0.1", port), detail)
        for name, port, detail in found
    ]


def worker(settings: Settings, name: str) -> BackgroundProcess:
    return BackgroundProcess(name, settings.state_dir / "run", settings.state_dir / "logs")
