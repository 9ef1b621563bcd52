"""`lakehouse`: the single entry point for every layer and the services under them."""

# Why one 600-line module, for now: the parser, the handlers and the continuous supervisor
# share one argparse namespace and one set of exit statuses. Issue 31 splits it into a thin
# entry point with one module per command group, each over functions that live with their
# feature; done before that split, a partial one would move the same code twice.

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from lakehouse import settings as settings_module
from lakehouse.settings import ConfigurationError

# Exit statuses a scheduler can act on: retrying helps after a failure (1: a service
# restarting) or a busy writer (4), never after a misconfiguration (2) or a fail-tier
# quality breach (3), which need a person.
EXIT_FAILURE, EXIT_CONFIGURATION, EXIT_QUALITY_GATE, EXIT_WRITER_BUSY = 1, 2, 3, 4
JSON_HELP = "print one JSON object per table (what a scheduler reads) instead of a text line"


def _services(args, settings):
    from infra import stack

    if args.action == "up":
        began = time.monotonic()
        mode = stack.start(settings, args.mode)
        print(f"services up ({mode} mode) in {time.monotonic() - began:.1f} s")
        _print_status(stack.status(settings))
    elif args.action == "down":
        stack.stop(settings)
    else:
        from lakehouse import demo

        statuses = stack.status(settings)
        _print_status(statuses)
        # The pages run with the demo only, so one that is not up fails no status check.
        _print_status(demo.pages(settings))
        print(f"{'analyst':<9} {'':<8} {'JDBC sign-in':<30} user {settings.analyst_user}, "
              f"password {settings.analyst_password}")
        _print_stream_quarantine(settings)
        return 0 if all(s.healthy for s in statuses) else 1
    return 0


def _cluster(args, settings):
    from infra.native import cluster

    if args.action == "up":
        cluster.start(settings)
    else:
        cluster.stop(settings)
    return 0


def _print_status(statuses) -> None:
    for s in statuses:
        print(f"{s.name:<9} {'healthy' if s.healthy else 'DOWN':<8} {s.address:<30} {s.detail}")


def _print_stream_quarantine(settings) -> None:
    """What the Bronze streams kept out: messages quarantined by a check, and those that
    failed their batch (`not landable`, a fault no check foresaw)."""
    from bronze.tables import BRONZE_TABLES
    from dashboard import sources

    kept_out = sources.quarantine_rows(settings)
    for table in BRONZE_TABLES:
        counts = kept_out[kept_out["table"] == table.name].groupby("status")["rows"].sum()
        if not counts.empty:
            print(f"{'stream':<9} {'kept out':<8} {table.name:<30} "
                  + ", ".join(f"{rows:,} {status}" for status, rows in sorted(counts.items()))
                  + f" (see {table.quarantine.qualified_name})")


def _up(args, settings):
    from lakehouse import demo

    demo.up(settings, args.mode)
    return 0


def _down(args, settings):
    from lakehouse import demo
    from orchestration import service

    service.stop(settings)
    demo.down(settings)
    return 0


def _env(args, settings):
    created = settings_module.write_env_file()
    print(f"wrote {', '.join(created)} to .env" if created else ".env already has every secret")
    return 0


def _seed(args, settings):
    from ingestion.seed import SeedSize, seed

    size = SeedSize.for_lines(args.sales_lines, args.customers, args.products)
    began = time.monotonic()
    counts = seed(settings, size, args.seed)
    if counts is None:
        print("retail tables already hold data; seed skipped (it only fills empty tables)")
    else:
        print(f"seeded {json.dumps(counts)} in {time.monotonic() - began:.1f} s")
    return 0


def _simulate(args, settings):
    from ingestion.simulate import SimulationPlan, simulate

    plan = SimulationPlan(args.rate, args.event_rate, args.duration, args.seed, args.bad_events,
                          args.bad_rows, args.fix_bad_rows_after)
    try:
        done = simulate(settings, plan)
    except KeyboardInterrupt:
        return 0
    print(f"simulate: {json.dumps(dict(sorted(done.items())))}")
    return 0


def _tail(args, settings):
    from kafka import KafkaConsumer, TopicPartition

    # A local broker answers at once: after 5 s (not the client's 30) it is said to be down.
    consumer = KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=args.timeout * 1000, bootstrap_timeout_ms=5_000)
    partitions = [TopicPartition(args.topic, p) for p in consumer.partitions_for_topic(args.topic) or []]
    if not partitions:
        print(f"topic {args.topic} does not exist", file=sys.stderr)
        return 1
    consumer.assign(partitions)
    for partition, end in consumer.end_offsets(partitions).items():
        consumer.seek(partition, max(0, end - args.n))
    for message in consumer:
        key = message.key.decode(errors="replace") if message.key else None
        value = message.value.decode(errors="replace") if message.value else None
        print(f"{message.partition}:{message.offset} key={key} {value}")
    return 0


_registered_in: set[int] = set()


def _spark(settings, app_name: str):
    """The process's SparkSession (later calls get the first one), with the declared tables
    registered in the catalog once."""
    from lakehouse import catalog, spark

    session = spark.session(settings, app_name)
    if id(session) not in _registered_in:
        catalog.register(session, settings)
        _registered_in.add(id(session))
    return session


def _bronze_tables(args) -> tuple:
    from bronze.tables import BRONZE_TABLES, bronze_table

    return tuple(bronze_table(t) for t in args.table) if args.table else BRONZE_TABLES


def _print_landed(counts, as_json: bool = False) -> None:
    for name, c in counts.items():
        if as_json:
            print(json.dumps({"table": name, "messages": c.messages, "rows": c.rows,
                              "quarantined": c.quarantined, "batches": c.batches,
                              "seconds": round(c.seconds, 3)}), flush=True)
        else:
            print(f"{name:<34} {c.messages:>9} messages  {c.rows:>9} rows  "
                  f"{c.quarantined:>6} quarantined  {c.batches:>3} batches  {c.seconds:6.1f} s")


def _bronze(args, settings):
    from bronze.job import BronzeJob
    from lakehouse.locks import exclusive_writer

    tables = _bronze_tables(args)  # an unknown name is refused before the lock is taken
    with exclusive_writer(settings, "bronze"):
        job = BronzeJob(_spark(settings, "bronze"), settings, tables)
        if args.continuous:
            print(f"bronze: streaming every {args.trigger_seconds} s (Ctrl-C stops)", flush=True)
            try:
                job.run_continuously(args.trigger_seconds)
            except KeyboardInterrupt:
                pass
        else:
            began = time.monotonic()
            job.drain()
            if not getattr(args, "json", False):
                print(f"bronze: drained in {time.monotonic() - began:.1f} s")
        _print_landed(job.counts, getattr(args, "json", False))
    return 0


def _derived_tables(args, layer: str | None):
    from lakehouse.catalog import derived_tables

    tables = [t for t in derived_tables() if layer is None or t.layer == layer]
    unknown = set(getattr(args, "table", None) or ()) - {t.name for t in tables}
    if unknown:
        raise ConfigurationError(f"no {layer} table {', '.join(sorted(unknown))}; known: "
                                 f"{', '.join(t.name for t in tables)}")
    return [t for t in tables if not getattr(args, "table", None) or t.name in args.table]


def _derived(args, settings, layer: str, runner=None) -> int:
    from lakehouse.incremental import Runner
    from lakehouse.locks import exclusive_writer

    tables = _derived_tables(args, layer)
    with exclusive_writer(settings, layer):
        runner = runner or Runner(_spark(settings, layer), settings)
        try:
            for table in tables:
                report = runner.run(table, args.full_refresh)
                print(json.dumps(report.as_dict()) if getattr(args, "json", False) else report.line(),
                      flush=True)
        finally:
            runner.record_results()
    return 0


def _run(args, settings):
    from lakehouse.incremental import Runner

    if args.continuous:
        return _run_continuously(args, settings)
    args.table = None
    _bronze(args, settings)
    # One runner for both layers: its quality gate (a Great Expectations context) takes
    # seconds to set up.
    runner = Runner(_spark(settings, "run"), settings)
    for layer in ("silver", "gold"):
        _derived(args, settings, layer, runner)
    return 0


def _run_continuously(args, settings) -> int:
    """Bronze streams in a process of its own while this one brings Silver and Gold up to
    date in passes, a pass starting every --interval s (at once when the last took longer);
    a pass runs the tables with a freshness target between the others (catalog.continuous_pass).

    Two JVMs rather than one: within one Spark application a Silver or Gold job holds the
    cores until it ends, so the streams' micro-batches (and everything downstream of them)
    waited behind it. The Bronze process is this one's child, in its process group: stopping
    or killing the group stops both, and this one stops when Bronze does."""
    import signal
    import subprocess
    from contextlib import ExitStack

    from lakehouse.catalog import continuous_pass
    from lakehouse.incremental import IncrementalError, Runner
    from lakehouse.locks import exclusive_writer
    from lakehouse.quality import QualityGateFailed

    with ExitStack() as locks:
        for layer in ("silver", "gold"):
            locks.enter_context(exclusive_writer(settings, layer))
        bronze = subprocess.Popen([sys.executable, "-m", "lakehouse.cli", "bronze", "--continuous",
                                   "--trigger-seconds", str(args.trigger_seconds)])
        # A SIGTERM to this process alone (not its group) must not leave Bronze running.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        print(f"run: Bronze streaming every {args.trigger_seconds} s (process {bronze.pid}), "
              f"Silver and Gold every {args.interval} s (Ctrl-C stops)", flush=True)
        try:
            runner = Runner(_spark(settings, "silver-gold"), settings)
            while bronze.poll() is None:
                began = time.monotonic()
                for table in continuous_pass():
                    try:
                        print(runner.run(table).line(), flush=True)
                    except IncrementalError as waiting:
                        # Bronze has not landed this input yet: the next pass tries again.
                        print(f"{table.name:<40} waiting: {waiting}", flush=True)
                    except QualityGateFailed as blocked:
                        # Nothing was committed; the table stays blocked, the others go on,
                        # and each pass retries it until the rows are fixed at the source.
                        print(f"{table.name:<40} blocked: {blocked}", flush=True)
                runner.record_results()
                time.sleep(max(0.0, args.interval - (time.monotonic() - began)))
        except KeyboardInterrupt:
            pass
        finally:
            if bronze.poll() is None:
                bronze.terminate()
                bronze.wait()
        if bronze.returncode not in (0, -15):
            raise RuntimeError(f"the Bronze streams stopped (exit {bronze.returncode}); their "
                               f"error is printed above")
    return 0


def _docs(args, settings):
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from lakehouse.quality import docs_dir
    site = docs_dir(settings.quality_dir)
    site.mkdir(parents=True, exist_ok=True)
    # GX writes index.html at the first validation; until then the listing shows it is empty.
    server = ThreadingHTTPServer(("127.0.0.1", settings.docs_port),
                                 partial(SimpleHTTPRequestHandler, directory=str(site)))
    print(f"Data Docs on http://localhost:{settings.docs_port}/ from {site} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def _dashboard(args, settings):
    from dashboard import server

    server.serve(settings)


def _metrics(args, settings):
    from monitoring import metrics

    metrics.serve(settings)
    return 0


def _scheduler(args, settings):
    from orchestration import service

    if args.action == "up":
        service.start(settings)
    elif args.action == "down":
        service.stop(settings)
    else:
        service.serve(settings, args.action)
    return 0


def _sql(args, settings):
    session = _spark(settings, "sql")
    session.sql(args.query).show(args.limit, truncate=False)
    return 0


def _query(args, settings):
    from serving import fastpath

    result = fastpath.query(settings.warehouse, args.query)
    if args.format == "csv":
        from pyarrow import csv

        csv.write_csv(result.table, sys.stdout.buffer)
    else:
        print(fastpath.render(result.table, args.limit))
    return 0


def _history(args, settings):
    from serving import history

    print(history.render(history.history(settings.warehouse, args.table)))
    return 0


def _savepoint(args, settings):
    from lakehouse.catalog import main_tables, select
    from lakehouse.locks import layer_writers
    from operations import savepoints

    tables = select(args.target, main_tables())
    if args.action != "list" and not args.target:
        raise ConfigurationError(f"name the tables or layers to {args.action}, e.g. "
                                 f"`lakehouse savepoint {args.action} gold`")
    with layer_writers(settings, [] if args.action == "list" else tables):
        spark = _spark(settings, "savepoint")
        for line in savepoints.apply(spark, settings, args.action, tables, args.instant, args.comment):
            print(line, flush=True)
    return 0


def _tables(args, settings):
    from lakehouse.catalog import declared_tables, select
    from operations import maintenance

    spark = _spark(settings, "tables")
    found = [maintenance.files(spark, settings, t)
             for t in maintenance.existing(spark, settings, select(args.target, declared_tables()))]
    if args.json:
        for table in found:
            print(json.dumps(table.as_dict()))
    else:
        print(maintenance.render(found))
    return 0


def _maintain(args, settings):
    from lakehouse.catalog import declared_tables, select
    from lakehouse.locks import layer_writers
    from operations import maintenance

    tables = select(args.table, declared_tables())
    with layer_writers(settings, tables):
        spark = _spark(settings, "maintain")
        for table in maintenance.existing(spark, settings, tables):
            report = maintenance.maintain(spark, settings, table)
            print(json.dumps(report.as_dict()) if args.json else report.line(), flush=True)
    return 0


def _erase(args, settings):
    from lakehouse.catalog import main_tables
    from lakehouse.locks import layer_writers
    from operations import erasure

    with layer_writers(settings, main_tables()):
        report = erasure.erase(_spark(settings, "erase"), settings, "customer_id", args.customer_id)
    print("\n".join(report.lines()))
    return 0


def _at_least(kind, lowest, inclusive: bool):
    """An argparse type: `kind`, refused below `lowest` (or at it, unless `inclusive`)."""
    def parse(text: str):
        value = kind(text)
        if value < lowest or (value == lowest and not inclusive):
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: must be {'at least' if inclusive else 'more than'} {lowest}")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value"
    return parse


POSITIVE_INT = _at_least(int, 0, False)
NON_NEGATIVE = _at_least(float, 0, True)


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range: a share is between 0 and 1")
    return value


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="lakehouse", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)

    services = commands.add_parser("services", help="start, stop or show the service stack")
    services.add_argument("action", choices=["up", "down", "status"])
    services.add_argument("--mode", choices=["auto", "native", "docker"], default="auto",
                          help="docker when an engine answers, native processes otherwise")
    services.set_defaults(handler=_services)
    cluster = commands.add_parser("cluster", help="start or stop a Spark standalone cluster "
                                  "and HDFS on this machine (native processes)")
    cluster.add_argument("action", choices=["up", "down"])
    cluster.set_defaults(handler=_cluster)
    up = commands.add_parser("up", help="the whole demo: services, seed data, live workload")
    up.add_argument("--mode", choices=["auto", "native", "docker"], default="auto")
    up.set_defaults(handler=_up)
    commands.add_parser("down", help="stop the demo and the services").set_defaults(handler=_down)
    commands.add_parser("status", help="health of each service and the connector").set_defaults(
        handler=_services, action="status")
    commands.add_parser("env", help="write random local secrets to .env").set_defaults(handler=_env)

    seed = commands.add_parser("seed", help="load the initial data set (COPY) into empty tables")
    seed.add_argument("--sales-lines", type=POSITIVE_INT, default=10_000)
    seed.add_argument("--customers", type=POSITIVE_INT, help="default: sales lines / 10")
    seed.add_argument("--products", type=POSITIVE_INT, help="default: sales lines / 50")
    seed.add_argument("--seed", type=int, default=42)
    seed.set_defaults(handler=_seed)

    simulate = commands.add_parser("simulate", help="run the live OLTP and event workload")
    simulate.add_argument("--rate", type=NON_NEGATIVE, default=10.0, help="Postgres transactions/s")
    simulate.add_argument("--event-rate", type=NON_NEGATIVE, default=50.0, help="Kafka events/s")
    simulate.add_argument("--duration", type=NON_NEGATIVE, default=60.0, help="seconds; 0 = forever")
    simulate.add_argument("--seed", type=int, default=7)
    simulate.add_argument("--bad-events", type=_share, default=0.0,
                          help="share of malformed events, 0..1")
    simulate.add_argument("--bad-rows", type=_share, default=0.0,
                          help="share of transactions writing a row the quality gates must catch "
                               "(negative quantity, unknown product, future timestamp, malformed "
                               "e-mail), 0..1; later transactions fix them at the source")
    simulate.add_argument("--fix-bad-rows-after", type=NON_NEGATIVE, default=600.0,
                          help="seconds before a bad row may be fixed at the source")
    simulate.set_defaults(handler=_simulate)

    bronze = commands.add_parser("bronze", help="land the Kafka topics in the Bronze tables")
    bronze.add_argument("--continuous", action="store_true",
                        help="keep streaming (default: drain what Kafka holds now, then exit)")
    bronze.add_argument("--trigger-seconds", type=POSITIVE_INT, default=None,
                        help="micro-batch interval with --continuous (default BRONZE_TRIGGER_SECONDS)")
    bronze.add_argument("--table", action="append", help="only this table (repeatable)")
    bronze.add_argument("--json", action="store_true", help=JSON_HELP)
    bronze.set_defaults(handler=_bronze)
    for layer in ("silver", "gold"):
        derived = commands.add_parser(layer, help=f"bring the {layer} tables up to date with "
                                                  f"their inputs' changes")
        derived.add_argument("--table", action="append", help="only this table (repeatable)")
        derived.add_argument("--full-refresh", action="store_true",
                             help="recompute from whole input snapshots instead of changes")
        derived.add_argument("--json", action="store_true", help=JSON_HELP)
        derived.set_defaults(handler=lambda args, settings, layer=layer: _derived(args, settings, layer))
    run = commands.add_parser("run", help="one idempotent pass through every layer: Bronze "
                                          "drain, then Silver, then Gold")
    run.add_argument("--full-refresh", action="store_true",
                     help="rebuild Silver and Gold from whole snapshots")
    run.add_argument("--continuous", action="store_true",
                     help="keep going: Bronze streams (in a process of its own), Silver and Gold "
                          "passes start every --interval s")
    run.add_argument("--trigger-seconds", type=POSITIVE_INT, default=None,
                     help="Bronze micro-batch interval (default BRONZE_TRIGGER_SECONDS)")
    run.add_argument("--interval", type=POSITIVE_INT, default=10,
                     help="seconds between the starts of two Silver and Gold passes with "
                          "--continuous")
    run.set_defaults(handler=_run)
    commands.add_parser("docs", help="serve the Great Expectations Data Docs site on "
                                     "QUALITY_DOCS_PORT").set_defaults(handler=_docs)
    commands.add_parser("dashboard", help="serve the dashboard of Gold and pipeline health on "
                                          "DASHBOARD_PORT").set_defaults(handler=_dashboard)
    commands.add_parser("metrics", help="serve the pipeline's Prometheus metrics on "
                                        "METRICS_PORT").set_defaults(handler=_metrics)
    scheduler = commands.add_parser("scheduler", help="the scheduled mode (Dagster): `up` starts "
                                                      "its UI on SCHEDULER_PORT and its daemon")
    scheduler.add_argument("action", choices=["up", "down", "webserver", "daemon"],
                           help="up/down: both in the background; webserver/daemon: one in the "
                                "foreground (what Docker Compose runs)")
    scheduler.set_defaults(handler=_scheduler)

    sql = commands.add_parser("sql", help="run a Spark SQL query over the catalog and print it")
    sql.add_argument("query")
    sql.add_argument("--limit", type=POSITIVE_INT, default=50, help="rows to print")
    sql.set_defaults(handler=_sql)

    query = commands.add_parser("query", help="answer a SQL query over the tables without a JVM "
                                              "(hudi-rs and DataFusion; read-only)")
    query.add_argument("query", help="SQL in DataFusion's dialect, tables named as in Spark: "
                                     "gold.hudi_daily_sales_gold")
    query.add_argument("--limit", type=POSITIVE_INT, default=50, help="rows to print as a table")
    query.add_argument("--format", choices=["table", "csv"], default="table",
                       help="csv prints every row")
    query.set_defaults(handler=_query)

    history = commands.add_parser("history", help="a table's commits: requested and completed "
                                                  "times, operation, rows written (no JVM)")
    history.add_argument("table", help="e.g. gold.hudi_daily_sales_gold")
    history.set_defaults(handler=_history)

    savepoint = commands.add_parser(
        "savepoint", help="create, list, restore or delete Hudi savepoints of tables or layers")
    savepoint.add_argument("action", choices=["create", "list", "restore", "delete"])
    savepoint.add_argument("target", nargs="*",
                           help="layers or tables, e.g. gold or silver.hudi_customer_profiles_silver")
    savepoint.add_argument("--instant", help="restore or delete this savepoint (restore: the "
                                             "latest by default)")
    savepoint.add_argument("--comment", default="", help="kept with a created savepoint")
    savepoint.set_defaults(handler=_savepoint)

    tables = commands.add_parser("tables", help="per table: data files, files a snapshot read "
                                                "opens, pending compactions, oldest retained commit")
    tables.add_argument("target", nargs="*", help="layers or tables (default: every table)")
    tables.add_argument("--json", action="store_true", help="one JSON object per table")
    tables.set_defaults(handler=_tables)

    maintain = commands.add_parser("maintain", help="run Hudi's table services now: compaction "
                                                    "(Bronze), cleaning and archival")
    maintain.add_argument("--table", action="append",
                          help="a layer or table (repeatable; default: every table)")
    maintain.add_argument("--json", action="store_true", help=JSON_HELP)
    maintain.set_defaults(handler=_maintain)

    erase = commands.add_parser("erase", help="erase customers' personal data from the source, "
                                              "every layer and every file of the warehouse (GDPR)")
    erase.add_argument("--customer-id", type=POSITIVE_INT, action="append", required=True,
                       help="the customer to erase (repeatable: one erasure rewrites the tables "
                            "once for all of them)")
    erase.set_defaults(handler=_erase)

    tail = commands.add_parser("tail", help="print the last messages of a Kafka topic")
    tail.add_argument("topic")
    tail.add_argument("-n", type=POSITIVE_INT, default=5, help="messages per partition")
    tail.add_argument("--timeout", type=POSITIVE_INT, default=3, help="seconds to wait for more")
    tail.set_defaults(handler=_tail)
    return root


def main(argv: list[str] | None = None) -> int:
    from lakehouse.locks import WriterBusy
    from lakehouse.quality import QualityGateFailed

    args = parser().parse_args(argv)
    settings = None
    try:
        settings = settings_module.load()
        if getattr(args, "trigger_seconds", 0) is None:
            args.trigger_seconds = settings.bronze_trigger_seconds
        return args.handler(args, settings)
    except ConfigurationError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return EXIT_CONFIGURATION
    except QualityGateFailed as error:
        print(f"quality gate failed: {error}", file=sys.stderr)
        return EXIT_QUALITY_GATE
    except WriterBusy as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_WRITER_BUSY
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except Exception as error:
        unreachable = _unreachable_service(error, settings)
        if unreachable is None:
            raise
        print(f"error: {unreachable}", file=sys.stderr)
        return EXIT_CONFIGURATION if "password" in unreachable else EXIT_FAILURE


def _unreachable_service(error: Exception, settings) -> str | None:
    """One line for a service that is down or refuses our credentials, which would otherwise
    print a client library's traceback."""
    import psycopg
    from kafka.errors import KafkaTimeoutError

    if isinstance(error, psycopg.OperationalError):
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        if "password authentication failed" in reason:
            from lakehouse.settings import PG_ROLES

            named = re.search(r'for user "([^"]+)"', reason)
            user = named[1] if named else settings.pg_user
            variable = next((r.password_variable for r in PG_ROLES if r.name == user), "PGPASSWORD")
            return (f"Postgres at {settings.pg_host}:{settings.pg_port} refused the password of "
                    f"{user}: check {variable} in .env against the running database (`make "
                    f"services` sets every role's password from .env)")
        return (f"Postgres at {settings.pg_host}:{settings.pg_port} does not answer ({reason}); "
                f"start it with `make services`")
    if isinstance(error, KafkaTimeoutError) and "bootstrap" in str(error):
        return (f"Kafka at {settings.kafka_bootstrap} does not answer; start it with "
                f"`make services`")
    return None


if __name__ == "__main__":
    sys.exit(main())
