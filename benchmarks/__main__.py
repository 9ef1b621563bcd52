"""`make bench`: measures the pipeline on this machine and writes benchmarks/results/.

Why one module: it is the benchmark's entry point, its parser (shown on the Commands page)
and the two parts' markdown that have no module of their own; split, the parser's options
and the code reading them would sit apart.

Runs against the real services (started natively if none answer, stopped again afterwards)
with a warehouse of its own under .lake/bench. The demo's workers must not run meanwhile:
they would compete for the same cores and write to the same source tables. Parts, in order:
`images` (the Compose mode's base image and project image built with no cache, then again
after a change to the code, and their sizes; on a Docker engine started for it if none
answers), `run` (a scheduled `lakehouse run` after --run-changes source transactions) and
`scheduler` (what running each table as a Dagster asset adds to its command), both on
services of their own seeded with --seed-lines from empty (so one day's figures compare
with another's), then `commits` (the fixed cost of a small
Hudi commit, lever by lever), `layout` (partition granularity at --layout-sizes, then the
file format lever by lever at --format-lines, on tables of its own), `freshness` (the
demo's workers on an empty warehouse: how soon Gold has rows, how long a sale then takes
from Postgres to Gold, how fast a burst is taken in), `bronze` (landing
rate and a drain of bulk changes), `derived` (Silver and Gold after --changed-lines lines
changed, incrementally and by a full refresh, at --derived-sizes: it grows the source
tables to the largest and leaves them so, until `make clean`) and `serving` (the three read
paths over the Gold the derived part built).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from benchmarks import bronze, commits, derived, freshness, images, layout, run, scheduler, serving
from benchmarks.report import RESULTS, header, machine
from infra import metastore, stack, workers
from ingestion.seed import SeedSize, seed
from lakehouse import costs, spark
from lakehouse import settings as settings_module

PARTS = ("images", "run", "scheduler", "commits", "layout", "freshness", "bronze", "derived", "serving")


def bronze_markdown(results: dict) -> str:
    throughput = results["throughput"]
    lines = [
        *header("Bronze ingestion benchmark", results),
        "| bulk change (one transaction) | events | capture s | capture events/s "
        "| landing s | landing events/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in throughput["phases"]:
        lines.append(
            f"| {p['phase']} | {p['events']:,} | {p['capture_seconds']} "
            f"| {p['capture_events_per_second']:,} | {p['landing_seconds']} "
            f"| {p['landing_events_per_second']:,} |"
        )
    lines += [
        "",
        f"Sustained Postgres -> Bronze: **{throughput['sustained_events_per_second']:,} "
        f"events/s** (capture {throughput['capture_events_per_second']:,}/s, landing "
        f"{throughput['landing_events_per_second']:,}/s; the slower half bounds it).",
    ]
    for latency in filter(None, (results.get("latency_at_demo_rate"), results["latency"])):
        lines += ["", *_latency_lines(latency)]
    return "\n".join(lines) + "\n"


def _latency_lines(latency: dict) -> list[str]:
    slower = {
        seconds: [name for name, own in latency.get("triggers", {}).items() if own == seconds]
        for seconds in sorted(set(latency.get("triggers", {}).values()) - {latency["trigger_seconds"]})
    }
    lines = [
        f"Latency, commit in Postgres (for events, their event time) -> readable in Bronze, "
        f"continuous mode with a {latency['trigger_seconds']} s trigger"
        + "".join(f" ({', '.join(names)}: {seconds} s)" for seconds, names in slower.items())
        + f", {latency['duration_seconds']:.0f} s of "
        f"live workload after {latency['warmup_seconds']:.0f} s of warm-up "
        f"({latency['transactions_per_second']} transactions/s, "
        f"{latency['events_per_second']} events/s):",
        "",
        "| table | rows | p50 s | p95 s | max s | median wait for batch s | median batch write s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    summaries = [("all", latency["all"]), ("Postgres changes", latency.get("postgres_changes"))]
    for name, t in [*((name, t) for name, t in summaries if t), *latency["tables"].items()]:
        if t["rows"]:
            lines.append(
                f"| {name} | {t['rows']:,} | {t['p50_seconds']} | {t['p95_seconds']} "
                f"| {t['max_seconds']} | {t['median_wait_seconds']} "
                f"| {t['median_write_seconds']} |"
            )
    if cpu := latency.get("cpu"):
        lines += [
            "",
            f"The Bronze process meanwhile: **{cpu['cores']} cores** (CPU seconds per wall "
            f"second, its Python driver and JVM), {cpu['cpu_seconds_per_1000_messages']} CPU "
            f"seconds per 1,000 of the {cpu['messages']:,} messages. The JVM's cores by "
            "kind of thread: "
            + ", ".join(f"{kind} {cores}" for kind, cores in cpu.get("jvm_threads", {}).items())
            + ".",
        ]
    return lines


def derived_markdown(results: dict) -> str:
    lines = [
        *header("Silver and Gold benchmark", results),
        f"One incremental pass over every Silver and Gold table after "
        f"{results['changed_lines']:,} sales lines changed, whatever the base's size (new "
        f"orders, and the most recent lines one status step on), against `--full-refresh` "
        f"of the same inputs:",
        "",
        "| sales lines | new lines | updated lines | incremental s | full refresh s | full / incremental |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size in results["sizes"]:
        lines.append(
            f"| {size['sales_lines']:,} | {size['new_lines']:,} | {size['updated_lines']:,} "
            f"| {size['incremental']['seconds']} | {size['full_refresh']['seconds']} "
            f"| {size['speedup']}x |"
        )
    for size in results["sizes"]:
        lines += [
            "",
            f"Per table at {size['sales_lines']:,} lines:",
            "",
            "| table | changes read | upserted | deleted | incremental s | full refresh s |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, outcome in size["incremental"]["tables"].items():
            lines.append(
                f"| {name} | {outcome['changes_read']:,} | {outcome['upserted']:,} "
                f"| {outcome['deleted']:,} | {outcome['seconds']} "
                f"| {size['full_refresh']['tables'][name]['seconds']} |"
            )
    return "\n".join(lines) + "\n"


def _write(name: str, results: dict, markdown: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown)
    print(markdown)


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated line counts, got {text!r}") from None
    if not sizes or sizes[0] <= 0:
        raise argparse.ArgumentTypeError(f"line counts must be positive, got {text!r}")
    return sizes


def parser() -> argparse.ArgumentParser:
    """The options of `make bench` (`python -m benchmarks`), which the Commands reference shows."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--only",
        choices=PARTS,
        help="run one part (default: all, in this order; `serving` alone "
        "reuses the warehouse the derived part left)",
    )
    parser.add_argument(
        "--seed-lines",
        type=int,
        default=10_000,
        help="sales lines of the seed: always for the run and scheduler parts' own services, "
        "for the demo's source when its tables are empty",
    )
    parser.add_argument(
        "--run-changes", type=int, default=400, help="source transactions before the timed `lakehouse run`"
    )
    parser.add_argument(
        "--scheduler-runs",
        type=int,
        default=2,
        help="runs of each table's command, directly and as a Dagster asset",
    )
    parser.add_argument(
        "--commit-base-rows", type=int, default=100_000, help="rows in the table the small commits go to"
    )
    parser.add_argument("--commits", type=int, default=12, help="small commits per variant")
    parser.add_argument(
        "--layout-sizes",
        type=_sizes,
        default=[10_000, 10_000_000],
        help="sales-line counts to compare table layouts at (comma-separated)",
    )
    parser.add_argument(
        "--format-lines",
        type=int,
        default=1_000_000,
        help="sales lines to compare file formats (codec, footers, row groups, file sizes) at",
    )
    parser.add_argument(
        "--probes", type=int, default=24, help="sales written while the demo runs, each timed to Gold"
    )
    parser.add_argument("--probe-spacing", type=float, default=10, help="average seconds between two probes")
    parser.add_argument(
        "--burst-lines", type=int, default=20_000, help="new sales lines in the burst the demo takes in"
    )
    parser.add_argument(
        "--burst-updates", type=int, default=5_000, help="recent sales lines the burst updates"
    )
    parser.add_argument(
        "--changes", type=int, default=100_000, help="rows of each bulk change in the throughput run"
    )
    parser.add_argument("--duration", type=float, default=180, help="seconds of live workload")
    parser.add_argument(
        "--warmup",
        type=float,
        default=240,
        help="seconds of the same workload before Bronze's latency and CPU are read",
    )
    parser.add_argument("--rate", type=float, default=50, help="Postgres transactions/s")
    parser.add_argument("--event-rate", type=float, default=200, help="Kafka events/s")
    parser.add_argument("--trigger-seconds", type=int, default=10, help="Bronze's micro-batch interval")
    parser.add_argument(
        "--derived-sizes",
        type=_sizes,
        default=[100_000, 10_000_000],
        help="sales-line counts to measure Silver and Gold at (comma-separated)",
    )
    parser.add_argument(
        "--changed-lines",
        type=int,
        default=1_000,
        help="sales lines changed (half new, half updated) before the incremental pass, at every size",
    )
    parser.add_argument(
        "--query-runs",
        type=int,
        default=20,
        help="runs of each Gold query through the JDBC server and `lakehouse query`",
    )
    parser.add_argument(
        "--cold-jvm-runs",
        type=int,
        default=5,
        help="runs of each Gold query through `lakehouse sql` (a JVM start each)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    settings = settings_module.load()
    busy = [name for name in workers.WORKERS if workers.worker(settings, name).running()]
    if busy:
        print(
            f"the demo's {', '.join(busy)} workers are running: stop them with `make down` "
            f"first (they compete for the cores and write to the source tables)",
            file=sys.stderr,
        )
        return 1
    if args.only in (None, "images"):
        results = {"machine": machine(), **images.measure()}
        _write("images", results, images.markdown(results))
    if args.only in (None, "run", "scheduler"):
        with run.source_of_its_own(settings, args.seed_lines) as source:
            own = bronze.bench_settings(source)
            metastore.ensure(own)
            if args.only in (None, "run"):
                results = {"machine": machine(), **run.measure(own, args.run_changes)}
                _write("run", results, run.markdown(results))
            if args.only in (None, "scheduler"):
                results = {
                    "machine": machine(),
                    **scheduler.measure(own, args.scheduler_runs, args.run_changes),
                }
                _write("scheduler", results, scheduler.markdown(results))
    if args.only in ("images", "run", "scheduler"):
        return 0
    started_services = not all(s.healthy for s in stack.status(settings))
    if started_services:
        stack.start(settings, "native")
    try:
        counts = seed(settings, SeedSize.for_lines(args.seed_lines))
        if counts:
            print(f"seeded {counts}")
        bench = bronze.bench_settings(settings)
        metastore.ensure(bench)
        if args.only != "serving":
            shutil.rmtree(settings.state_dir / "bench", ignore_errors=True)
            costs.forget(bench)
        session = spark.session(bench, "bench")
        if args.only in (None, "commits"):
            results = {
                "machine": machine(),
                **commits.measure(session, bench, args.commit_base_rows, args.commits),
            }
            _write("commits", results, commits.markdown(results))
        if args.only in (None, "layout"):
            results = {
                "machine": machine(),
                **layout.measure(session, bench, args.layout_sizes, args.commits, args.format_lines),
            }
            _write("layout", results, layout.markdown(results))
        if args.only in (None, "freshness"):
            results = {
                "machine": machine(),
                **freshness.measure(
                    session, settings, args.probes, args.probe_spacing, args.burst_lines, args.burst_updates
                ),
            }
            _write("freshness", results, freshness.markdown(results))
        if args.only in (None, "bronze"):
            results = {
                "machine": machine(),
                "throughput": bronze.throughput(session, bench, args.changes),
                "latency_at_demo_rate": bronze.latency(
                    session,
                    bench,
                    args.trigger_seconds,
                    args.duration,
                    workers.DEMO_RATE,
                    workers.DEMO_EVENT_RATE,
                    args.warmup,
                ),
                "latency": bronze.latency(
                    session,
                    bench,
                    args.trigger_seconds,
                    args.duration,
                    args.rate,
                    args.event_rate,
                    args.warmup,
                ),
            }
            _write("bronze", results, bronze_markdown(results))
        if args.only in (None, "derived"):
            results = {
                "machine": machine(),
                **derived.measure(session, bench, args.derived_sizes, args.changed_lines),
            }
            _write("derived", results, derived_markdown(results))
        session.stop()
        if args.only in (None, "serving"):
            results = {"machine": machine(), **serving.measure(bench, args.query_runs, args.cold_jvm_runs)}
            _write("serving", results, serving.markdown(results))
    finally:
        if started_services:
            stack.stop(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
