"""The fault matrix: kill -9 every moving part under a live workload, then prove that nothing
was lost or duplicated (docs/architecture.md, "What the lakehouse promises": exactly once).

While the simulator writes to Postgres and sends events, the continuous Bronze streams land
them and Silver and Gold runs follow one another, each round waits a random while, kills one
victim with SIGKILL (Postgres and its backends, the Kafka broker, the Kafka Connect worker,
the Bronze streams, or the Silver/Gold run in flight), leaves it down a random while and
starts it again. Every victim is killed the same number of times, in a seeded random order.
The workers are supervised as a process manager would: one that exits by itself (say, the
Bronze streams after Kafka was gone too long) is restarted, and the report counts it.

At the end the workload stops, Bronze is drained and Silver and Gold run once more, and
`medallion.verify` checks every table: each Bronze CDC table equals Postgres, each event
table holds every valid message of its topic once and its quarantine every malformed one,
and each Silver and Gold table with its quarantine equals a full rebuild.

`make chaos` runs a long matrix against a warehouse of its own (`.lake/chaos`) and writes
`benchmarks/results/chaos.{json,md}`; the integration test runs a short one.
"""

# Why one module: the matrix is one experiment (the workload, the victims, the supervisor that
# restarts them, and the final proof); its parts share the run's clock, seed and report.

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shlex
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from bronze.job import BronzeError, BronzeJob
from bronze.tables import BRONZE_TABLES, DEBEZIUM
from infra import metastore, stack
from infra.native.process import BackgroundProcess
from ingestion import connector, database
from lakehouse.incremental import InputNotReady, Runner
from lakehouse.settings import LAKEHOUSE_READER, Settings
from medallion import verify
from medallion.invocation import lakehouse
from medallion.tables import derived_tables

SERVICES = ("postgres", "kafka", "connect")
WORKER_VICTIMS = ("bronze", "derived")
VICTIMS = SERVICES + WORKER_VICTIMS
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


@dataclass(frozen=True)
class ChaosPlan:
    kills_per_victim: int = 2
    seed: int = 1
    between_kills: tuple[float, float] = (5.0, 20.0)  # seconds of normal running before a kill
    down_for: tuple[float, float] = (0.0, 10.0)  # seconds a killed victim stays down
    transactions_per_second: float = 5.0
    events_per_second: float = 20.0
    bad_share: float = 0.02  # of transactions and of events: the quarantines take part too


@dataclass
class ChaosReport:
    plan: ChaosPlan
    kills: Counter = field(default_factory=Counter)
    restarted_after_exit: Counter = field(default_factory=Counter)
    derived_passes: int = 0
    verdicts: list[verify.Verdict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rows_checked(self) -> int:
        return sum(v.rows for v in self.verdicts)

    @property
    def lost(self) -> int:
        return sum(v.missing for v in self.verdicts)

    @property
    def duplicated(self) -> int:
        return sum(v.duplicated for v in self.verdicts)

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(v.equal for v in self.verdicts)

    def summary(self) -> dict:
        return {
            "rounds": sum(self.kills.values()),
            "kills": dict(sorted(self.kills.items())),
            "restarted_after_exit": dict(sorted(self.restarted_after_exit.items())),
            "derived_passes_completed": self.derived_passes,
            "tables": len(self.verdicts),
            "rows_checked": self.rows_checked,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "extra": sum(v.extra for v in self.verdicts),
            "passed": self.passed,
            "seconds": round(self.seconds),
        }

    def lines(self) -> list[str]:
        s = self.summary()
        return (
            [
                f"chaos: {s['rounds']} kills {s['kills']}, workers restarted after exiting "
                f"{s['restarted_after_exit'] or 'never'}, {s['derived_passes_completed']} "
                f"Silver and Gold passes completed between kills, {s['seconds']} s"
            ]
            + [f"  {v.line()}" for v in self.verdicts]
            + [
                f"chaos: {s['rows_checked']} rows checked in {s['tables']} tables: "
                f"lost {s['lost']}, duplicated {s['duplicated']}, extra {s['extra']}"
            ]
        )


class Workers:
    """The processes of a running pipeline, supervised: the workload, the Bronze streams and
    a loop of Silver and Gold runs, each a `lakehouse` command with these settings."""

    def __init__(self, settings: Settings, plan: ChaosPlan):
        cli = lakehouse()
        loop = (
            f'while :; do {shlex.join(cli)} silver; echo "silver exit $?"; '
            f'{shlex.join(cli)} gold; echo "gold exit $?"; sleep 5; done'
        )
        self.commands = {
            "simulator": [
                *cli,
                "simulate",
                "--duration",
                "0",
                "--rate",
                str(plan.transactions_per_second),
                "--event-rate",
                str(plan.events_per_second),
                "--seed",
                str(plan.seed),
                "--bad-rows",
                str(plan.bad_share),
                "--bad-events",
                str(plan.bad_share),
            ],
            "bronze": [*cli, "bronze", "--continuous"],
            # A killed run leaves an unfinished commit that the next run rolls back.
            "derived": ["bash", "-c", loop],
        }
        chaos_dir = settings.state_dir / "chaos"
        self.processes = {
            name: BackgroundProcess(f"chaos-{name}", chaos_dir / "run", chaos_dir / "logs")
            for name in self.commands
        }
        for process in self.processes.values():
            process.log.unlink(missing_ok=True)
        self.environment = {**settings.environment(), "SPARK_UI": "false"}

    def start(self, name: str) -> None:
        self.processes[name].start(self.commands[name], env=self.environment)

    def kill(self, name: str) -> None:
        self.processes[name].kill()

    def completed_passes(self) -> int:
        """Silver-and-Gold passes that ran to the end, between the kills."""
        log = self.processes["derived"].log
        return log.read_text(errors="replace").count("gold exit 0") if log.exists() else 0

    def restart_exited(self, report) -> list[str]:
        exited = [name for name, process in self.processes.items() if not process.running()]
        for name in exited:
            report(f"chaos: {name} exited by itself (log {self.processes[name].log}); restarting")
            self.start(name)
        return exited


def kill_schedule(plan: ChaosPlan, rng: random.Random) -> list[str]:
    """Every victim `kills_per_victim` times, in an order the seed fixes."""
    schedule = [victim for victim in VICTIMS for _ in range(plan.kills_per_victim)]
    rng.shuffle(schedule)
    return schedule


def _kill_and_restart(settings: Settings, workers: Workers, victim: str, down_for: float, report) -> None:
    began = time.monotonic()
    if victim in SERVICES:
        stack.stop_service(settings, victim, crash=True)
    else:
        workers.kill(victim)
    time.sleep(down_for)
    if victim in SERVICES:
        stack.start_service(settings, victim)
        if victim == "connect":
            connector.wait_running(settings)
    else:
        workers.start(victim)
    report(f"chaos: killed {victim} -9, down {down_for:.1f} s, back after {time.monotonic() - began:.1f} s")


def _retrying(action, deadline: float, report):
    """`action()`, tried again every 15 s until `deadline`: right after a writer was killed,
    Hudi refuses to roll back its unfinished commit until the writer's heartbeat expires (two
    missed beats, 2 minutes), so a writer started at once may fail ("Cannot execute instant
    ... due to heartbeat by concurrent writer/job")."""
    while True:
        try:
            return action()
        except (BronzeError, Py4JJavaError) as error:
            if time.monotonic() > deadline:
                raise
            report(f"chaos: failed, retrying in 15 s: {str(error).strip().splitlines()[0][:300]}")
            time.sleep(15)


def _settle(spark: SparkSession, settings: Settings, timeout: float, report) -> None:
    """Drains Bronze until its CDC tables equal Postgres (Debezium may still be catching up
    after its last restart) or `timeout` passes, then runs Silver and Gold."""
    cdc_tables = tuple(t for t in BRONZE_TABLES if t.envelope == DEBEZIUM)
    deadline = time.monotonic() + timeout
    with database.connect(settings, LAKEHOUSE_READER, autocommit=True) as db:
        while True:
            _retrying(BronzeJob(spark, settings).drain, deadline, report)
            verdicts = [verify.bronze_against_postgres(spark, settings, db, t) for t in cdc_tables]
            if all(v.equal for v in verdicts) or time.monotonic() > deadline:
                break
            report("chaos: Bronze not yet equal to Postgres; draining again")
            time.sleep(1)
    runner = Runner(spark, settings)
    try:
        for table in derived_tables():
            try:
                report(_retrying(lambda: runner.run(table), deadline, report).line())
            except InputNotReady as waiting:
                # An input that no source has written to yet (no events sent so far).
                report(f"{table.name:<40} waiting: {waiting}")
    finally:
        runner.record_results()


def run(spark: SparkSession, settings: Settings, plan: ChaosPlan, report=print) -> ChaosReport:
    """Runs the matrix against running, seeded services; `spark` drains and checks at the end."""
    began = time.monotonic()
    rng = random.Random(plan.seed)
    result = ChaosReport(plan)
    # From a pipeline that has caught up, so that the kills hit incremental runs and small
    # batches, as in production, rather than a first load that never gets to finish.
    report("chaos: bringing every table up to date before the workload starts")
    _settle(spark, settings, timeout=300, report=report)
    workers = Workers(settings, plan)
    for name in workers.commands:
        workers.start(name)
    schedule = kill_schedule(plan, rng)
    try:
        for number, victim in enumerate(schedule, start=1):
            time.sleep(rng.uniform(*plan.between_kills))
            result.restarted_after_exit.update(workers.restart_exited(report))
            report(f"chaos: round {number} of {len(schedule)}")
            _kill_and_restart(settings, workers, victim, rng.uniform(*plan.down_for), report)
            result.kills[victim] += 1
        time.sleep(plan.between_kills[1])
        result.restarted_after_exit.update(workers.restart_exited(report))
        result.derived_passes = workers.completed_passes()
    finally:
        # Killed, not stopped: the drain below must not share a table with a writer still
        # finishing its last batch.
        for name in workers.commands:
            workers.kill(name)
    report("chaos: workload stopped; draining Bronze and running Silver and Gold")
    _settle(spark, settings, timeout=300, report=report)
    with database.connect(settings, LAKEHOUSE_READER, autocommit=True) as db:
        result.verdicts = verify.bronze(spark, settings, db, BRONZE_TABLES)
    result.verdicts += [
        v for t in derived_tables() for v in verify.derived_against_rebuild(spark, settings, t)
    ]
    result.seconds = time.monotonic() - began
    return result


def _write_results(result: ChaosReport) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = {
        **result.summary(),
        "plan": dataclasses.asdict(result.plan),
        "tables": [dataclasses.asdict(v) for v in result.verdicts],
    }
    (RESULTS / "chaos.json").write_text(json.dumps(summary, indent=2) + "\n")
    (RESULTS / "chaos.md").write_text(
        "# Fault matrix (`make chaos`)\n\n```\n" + "\n".join(result.lines()) + "\n```\n"
    )


def main(argv: list[str] | None = None) -> int:
    from ingestion.seed import SeedSize, seed
    from lakehouse import settings as settings_module
    from lakehouse import spark as spark_module

    parser = argparse.ArgumentParser(prog="python -m operations.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills-per-victim", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    base = settings_module.load()
    # A warehouse and catalog of its own: the demo's tables are never part of the experiment.
    chaos_dir = base.state_dir / "chaos"
    settings = dataclasses.replace(
        base,
        warehouse=str(chaos_dir / "warehouse"),
        checkpoints=str(chaos_dir / "warehouse" / "_checkpoints"),
        quality_dir=chaos_dir / "quality",
        spark_ui=False,
        metastore_database="metastore_chaos",
    )
    stack.start(base)
    metastore.ensure(settings)
    seed(settings, SeedSize.for_lines(10_000))
    spark = spark_module.session(settings, "chaos")
    try:
        result = run(spark, settings, ChaosPlan(args.kills_per_victim, args.seed))
    finally:
        spark.stop()
    for line in result.lines():
        print(line)
    _write_results(result)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
