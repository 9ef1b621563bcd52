"""The data's way in and through the layers: `lakehouse seed`, `simulate`, `bronze`,
`silver`, `gold`, `run` and `tail`."""

from __future__ import annotations

import json
import sys
import time

from medallion.invocation import EXIT_FAILURE
from pipeline.cli.arguments import JSON_HELP, NON_NEGATIVE, PAST_DAY, POSITIVE_INT, SHARE

CONTINUOUS_INTERVAL = 10  # seconds between the starts of two continuous passes


def seed(subcommands) -> None:
    seed = subcommands.add_parser("seed", help="load the initial data set (COPY) into empty tables")
    seed.add_argument("--sales-lines", type=POSITIVE_INT, default=10_000, help="order lines to generate")
    seed.add_argument("--customers", type=POSITIVE_INT, help="default: sales lines / 10")
    seed.add_argument("--products", type=POSITIVE_INT, help="default: sales lines / 50")
    seed.add_argument(
        "--seed", type=int, default=42, help="the random seed: the same seed and day, the same data"
    )
    seed.add_argument(
        "--day",
        type=PAST_DAY,
        help="the history is the year before this day, YYYY-MM-DD (default: today, UTC)",
    )
    seed.set_defaults(handler=_seed)


def _seed(args, settings):
    from ingestion.seed import SeedSize, seed

    size = SeedSize.for_lines(args.sales_lines, args.customers, args.products)
    began = time.monotonic()
    counts = seed(settings, size, args.seed, args.day)
    if counts is None:
        print("retail tables already hold data; seed skipped (it only fills empty tables)")
    else:
        print(f"seeded {json.dumps(counts)} in {time.monotonic() - began:.1f} s")
    return 0


def simulate(subcommands) -> None:
    simulate = subcommands.add_parser("simulate", help="run the live OLTP and event workload")
    simulate.add_argument("--rate", type=NON_NEGATIVE, default=10.0, help="Postgres transactions/s")
    simulate.add_argument("--event-rate", type=NON_NEGATIVE, default=50.0, help="Kafka events/s")
    simulate.add_argument("--duration", type=NON_NEGATIVE, default=60.0, help="seconds; 0 = forever")
    simulate.add_argument("--seed", type=int, default=7, help="the random seed of the workload")
    simulate.add_argument("--bad-events", type=SHARE, default=0.0, help="share of malformed events, 0..1")
    simulate.add_argument(
        "--bad-rows",
        type=SHARE,
        default=0.0,
        help="share of transactions writing a row the quality gates must catch "
        "(negative quantity, unknown product, future timestamp, malformed "
        "e-mail), 0..1; later transactions fix them at the source",
    )
    simulate.add_argument(
        "--fix-bad-rows-after",
        type=NON_NEGATIVE,
        default=600.0,
        help="seconds before a bad row may be fixed at the source",
    )
    simulate.set_defaults(handler=_simulate)


def _simulate(args, settings):
    from ingestion.simulate import SimulationPlan, simulate

    plan = SimulationPlan(
        args.rate,
        args.event_rate,
        args.duration,
        args.seed,
        args.bad_events,
        args.bad_rows,
        args.fix_bad_rows_after,
    )
    try:
        done = simulate(settings, plan)
    except KeyboardInterrupt:
        return 0
    print(f"simulate: {json.dumps(dict(sorted(done.items())))}")
    return 0


def bronze(subcommands) -> None:
    bronze = subcommands.add_parser("bronze", help="land the Kafka topics in the Bronze tables")
    bronze.add_argument(
        "--continuous",
        action="store_true",
        help="keep streaming (default: drain what Kafka holds now, then exit)",
    )
    bronze.add_argument(
        "--trigger-seconds",
        type=POSITIVE_INT,
        default=None,
        help="micro-batch interval with --continuous (default BRONZE_TRIGGER_SECONDS)",
    )
    bronze.add_argument("--table", action="append", help="only this table (repeatable)")
    bronze.add_argument("--json", action="store_true", help=JSON_HELP)
    bronze.set_defaults(handler=_bronze, refuse=_streaming_flags_alone)


def _streaming_flags_alone(args) -> str | None:
    """Flags that only a continuous run reads, given to a run that ends."""
    alone = [
        flag
        for flag, given in (
            ("--trigger-seconds", args.trigger_seconds),
            ("--interval", getattr(args, "interval", None)),
        )
        if given is not None and not args.continuous
    ]
    if alone:
        return f"{' and '.join(alone)} {'apply' if len(alone) > 1 else 'applies'} only with --continuous"
    return None


def _bronze(args, settings):
    from pipeline import passes

    passes.bronze(settings, args.table, args.continuous, args.trigger_seconds, args.json)
    return 0


def derived(subcommands, layer: str) -> None:
    derived = subcommands.add_parser(
        layer, help=f"bring the {layer} tables up to date with their inputs' changes"
    )
    derived.add_argument("--table", action="append", help="only this table (repeatable)")
    derived.add_argument(
        "--full-refresh", action="store_true", help="recompute from whole input snapshots instead of changes"
    )
    derived.add_argument("--json", action="store_true", help=JSON_HELP)
    derived.set_defaults(handler=lambda args, settings: _derived(args, settings, layer))


def _derived(args, settings, layer: str):
    from pipeline import passes

    passes.derived(settings, layer, args.table, args.full_refresh, args.json)
    return 0


def run(subcommands) -> None:
    run = subcommands.add_parser(
        "run", help="one idempotent pass through every layer: Bronze drain, then Silver, then Gold"
    )
    run.add_argument(
        "--full-refresh", action="store_true", help="rebuild Silver and Gold from whole snapshots"
    )
    run.add_argument(
        "--continuous",
        action="store_true",
        help="keep going: Bronze streams (in a process of its own), and the Silver or Gold "
        "table most overdue against its freshness target runs next",
    )
    run.add_argument(
        "--trigger-seconds",
        type=POSITIVE_INT,
        default=None,
        help="Bronze micro-batch interval (default BRONZE_TRIGGER_SECONDS)",
    )
    run.add_argument(
        "--interval",
        type=POSITIVE_INT,
        default=None,
        help=f"with --continuous, the longest wait between two readings of the tables' "
        f"freshness when none is due (default: {CONTINUOUS_INTERVAL})",
    )
    run.set_defaults(handler=_run, refuse=_contradicting_run_flags)


def _contradicting_run_flags(args) -> str | None:
    if args.full_refresh and args.continuous:
        return (
            "--full-refresh and --continuous contradict each other: rebuild once with "
            "`lakehouse run --full-refresh`, then keep going with `lakehouse run --continuous`"
        )
    return _streaming_flags_alone(args)


def _run(args, settings):
    from pipeline import passes

    if args.continuous:
        passes.run_continuously(settings, args.trigger_seconds, args.interval or CONTINUOUS_INTERVAL)
    else:
        passes.run(settings, args.full_refresh)
    return 0


def tail(subcommands) -> None:
    tail = subcommands.add_parser("tail", help="print the last messages of a Kafka topic")
    tail.add_argument("topic", help="e.g. retailmax.retail.sales_transactions")
    tail.add_argument("-n", type=POSITIVE_INT, default=5, help="messages per partition")
    tail.add_argument("--timeout", type=POSITIVE_INT, default=3, help="seconds to wait for more")
    tail.set_defaults(handler=_tail)


def _tail(args, settings):
    from ingestion import topics

    try:
        for line in topics.tail(settings, args.topic, args.n, args.timeout):
            print(line)
    except topics.NoSuchTopic as missing:
        print(missing, file=sys.stderr)
        return EXIT_FAILURE
    return 0


SUBCOMMANDS = {
    "seed": seed,
    "simulate": simulate,
    "bronze": bronze,
    "silver": lambda subcommands: derived(subcommands, "silver"),
    "gold": lambda subcommands: derived(subcommands, "gold"),
    "run": run,
    "tail": tail,
}
