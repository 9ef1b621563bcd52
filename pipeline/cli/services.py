"""The services and the pages beside them: `lakehouse services`, `cluster`, `up`, `down`,
`status`, `env`, `data-docs`, `dashboard`, `metrics` and `scheduler`."""

from __future__ import annotations

import time

MODES = ["auto", "native", "docker"]


def services(subcommands) -> None:
    services = subcommands.add_parser("services", help="start, stop or show the service stack")
    services.add_argument(
        "action", choices=["up", "down", "status"], help="start them, stop them, or show their health"
    )
    services.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="where the services run: docker when an engine answers, native processes otherwise",
    )
    services.set_defaults(handler=_services)


def _services(args, settings):
    from infra import stack
    from pipeline import status

    if args.action == "up":
        began = time.monotonic()
        mode = stack.start(settings, args.mode)
        print(f"services up ({mode} mode) in {time.monotonic() - began:.1f} s")
        for service in stack.status(settings):
            print(service.line())
    elif args.action == "down":
        stack.stop(settings)
    else:
        return 0 if status.show(settings) else 1
    return 0


def cluster(subcommands) -> None:
    cluster = subcommands.add_parser(
        "cluster",
        help="start or stop a Spark standalone cluster and HDFS on this machine (in containers where "
        "the services run in Compose, native processes otherwise)",
    )
    cluster.add_argument("action", choices=["up", "down"], help="start it or stop it")
    cluster.set_defaults(handler=_cluster)


def _cluster(args, settings):
    from infra import stack
    from infra.native import cluster

    if args.action == "up":
        if stack.in_containers(settings):
            stack.start_profile(settings, "cluster")
        else:
            cluster.start(settings)
        print(cluster.usage(settings, stack.in_containers(settings)))
    elif stack.in_containers(settings):
        stack.stop_profile(settings, "cluster")
    else:
        cluster.stop(settings)
    return 0


def up(subcommands) -> None:
    up = subcommands.add_parser("up", help="the whole demo: services, seed data, live workload")
    up.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="where the services run: docker when an engine answers, native processes otherwise",
    )
    up.set_defaults(handler=_up)


def _up(args, settings):
    from pipeline import demo

    demo.up(settings, args.mode)
    return 0


def down(subcommands) -> None:
    down = subcommands.add_parser("down", help="stop the demo and the services")
    down.add_argument(
        "--delete-volumes",
        action="store_true",
        help="in the Compose mode, delete the services' volumes too (`make clean`)",
    )
    down.set_defaults(handler=_down)


def _down(args, settings):
    from orchestration import service
    from pipeline import demo

    service.stop(settings)
    demo.down(settings, delete_volumes=args.delete_volumes)
    return 0


def status(subcommands) -> None:
    subcommands.add_parser("status", help="health of each service and the connector").set_defaults(
        handler=_services, action="status"
    )


def env(subcommands) -> None:
    subcommands.add_parser("env", help="write random local secrets to .env").set_defaults(handler=_env)


def _env(args, settings):
    from lakehouse.settings import write_env_file

    created = write_env_file()
    print(f"wrote {', '.join(created)} to .env" if created else ".env already has every secret")
    return 0


def data_docs(subcommands) -> None:
    subcommands.add_parser(
        "data-docs",
        help="serve the quality gates' Data Docs (Great Expectations) on QUALITY_DOCS_PORT; "
        "`make docs` serves this project's documentation",
    ).set_defaults(handler=_data_docs)


def _data_docs(args, settings):
    from monitoring import data_docs

    data_docs.serve(settings)
    return 0


def dashboard(subcommands) -> None:
    subcommands.add_parser(
        "dashboard", help="serve the dashboard of Gold and pipeline health on DASHBOARD_PORT"
    ).set_defaults(handler=_dashboard)


def _dashboard(args, settings):
    from dashboard import server

    server.serve(settings)


def supervise(subcommands) -> None:
    from infra.workers import WORKERS

    supervise = subcommands.add_parser(
        "supervise",
        help="keep the demo's other workers running: restart one that exits, record why (make up runs it)",
    )
    # Checked by `refuse`, not `choices`: argparse checks an empty `nargs="*"` against its
    # choices and refuses it (python/cpython#53811), and an empty list means all the others.
    supervise.add_argument(
        "workers",
        nargs="*",
        help=f"the workers to watch, of {', '.join(_supervised(WORKERS))} (default: all of them)",
    )
    supervise.add_argument(
        "--start", action="store_true", help="start them first (the Compose mode's `workers` container)"
    )
    supervise.set_defaults(handler=_supervise, refuse=_unknown_workers)


def _supervised(workers) -> list[str]:
    return [name for name in workers if name != "supervisor"]


def _unknown_workers(args) -> str | None:
    from infra.workers import WORKERS

    unknown = [name for name in args.workers if name not in _supervised(WORKERS)]
    if unknown:
        return f"no worker {', '.join(unknown)}; the supervisor watches {', '.join(_supervised(WORKERS))}"
    return None


def _supervise(args, settings):
    from infra import workers

    workers.supervise(settings, args.workers, args.start)
    return 0


def metrics(subcommands) -> None:
    subcommands.add_parser(
        "metrics", help="serve the pipeline's Prometheus metrics on METRICS_PORT"
    ).set_defaults(handler=_metrics)


def _metrics(args, settings):
    from monitoring import metrics

    metrics.serve(settings)
    return 0


def scheduler(subcommands) -> None:
    scheduler = subcommands.add_parser(
        "scheduler", help="the scheduled mode (Dagster): `up` starts its UI on SCHEDULER_PORT and its daemon"
    )
    scheduler.add_argument(
        "action",
        choices=["up", "down", "webserver", "daemon"],
        help="up/down: both in the background; webserver/daemon: one in the "
        "foreground (what Docker Compose runs)",
    )
    scheduler.set_defaults(handler=_scheduler)


def _scheduler(args, settings):
    from orchestration import service

    if args.action == "up":
        service.start(settings)
    elif args.action == "down":
        service.stop(settings)
    else:
        service.serve(settings, args.action)
    return 0


SUBCOMMANDS = {
    "services": services,
    "cluster": cluster,
    "up": up,
    "down": down,
    "status": status,
    "env": env,
    "data-docs": data_docs,
    "dashboard": dashboard,
    "metrics": metrics,
    "supervise": supervise,
    "scheduler": scheduler,
}
