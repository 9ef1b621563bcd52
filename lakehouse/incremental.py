"""The one runner behind every Silver and Gold table (docs/architecture.md, "Incremental model").

A run of one derived table:
1. reads each input's changes since the completion time it last consumed, with
   `hudi_table_changes(<input>, 'cdc', <start>, <end>)`, `end` being the input's newest
   completed commit when the run began;
2. turns them into the output keys they affect (`Input.affects`), before- and after-images
   alike, so a row that moves between groups recomputes both; keys held in the quarantine
   for a rule that reads the clock are added, since time alone may have made them pass;
3. recomputes exactly those keys with the table's transform over the inputs' current
   snapshots, keeps the rows that differ from what the table holds, and marks the keys the
   transform no longer produces as deletes; inputs declared with `prune` (and the output,
   when partitioned by the pruned column) are read only where the affected values lie;
4. upserts both in one Hudi commit whose metadata records the consumed `end` times, so the
   output and its checkpoint move together or not at all.

A full refresh is the same transform over whole snapshots, written with
`insert_overwrite_table`; it runs on `--full-refresh`, on the first run, when an input's
checkpoint is no longer readable (archived or cleaned), when an input was itself rebuilt
since the checkpoint (its change log then holds every row), and when the changes waiting
would cost more than a rebuild (lakehouse/costs.py) — and says which.

Snapshots may already hold commits newer than `end` (Bronze can be streaming meanwhile).
That is harmless: recomputing a key from a newer snapshot gives the newer truth, and those
commits' changes are read again, and recomputed again, by the next run.
"""

# Why one module: the runner's steps (read changes, validate, keep out, write, reconcile)
# share its held frames and report, and are read top to bottom as one algorithm. What they build
# on lives apart: Hudi reads and writes (lakehouse/hudi.py), the changeset a run commits
# (lakehouse/changeset.py) and what a run reports (lakehouse/reports.py).

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import reduce

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse import catalog, costs, hudi, layout, quality, rules, timeline
from lakehouse.changeset import changeset
from lakehouse.hudi import DELETED, change_log, changed_images, snapshot
from lakehouse.partitions import reached, within
from lakehouse.reports import RESULTS_SCHEMA, Reconciliation, RunReport
from lakehouse.settings import Settings
from lakehouse.spark import HeldFrames
from lakehouse.tables import DerivedTable, Input, quality_results_table


class IncrementalError(RuntimeError):
    """A derived table cannot run; the message names it and says what to do."""


class InputNotReady(IncrementalError):
    """An input has no commit yet (no source has sent its Bronze table anything): the table
    waits for it, and the other tables of a pass go on."""


class UnreadableChanges(Exception):
    """Hudi could not read an input's change log for the range a run needs."""


def _root_cause(error: Py4JJavaError) -> str:
    """The innermost Java exception of `error`, in one line: a failed task's own error, which
    Spark wraps in the job's."""
    cause = error.java_exception
    while cause.getCause() is not None:
        cause = cause.getCause()
    return cause.toString().splitlines()[0][:300]


def affected_rows(spark: SparkSession, table: DerivedTable, source: Input, changed: DataFrame) -> DataFrame:
    """The output's affected columns (key, and the columns inputs are pruned by) that the
    changes of one input reach."""
    changed.createOrReplaceTempView("changed")
    columns = table.affected_columns
    query = source.affects or f"SELECT {', '.join(columns)} FROM changed"
    found = spark.sql(query)
    missing = [c for c in columns if c not in found.columns]
    if missing:
        raise IncrementalError(
            f"{table.name}: what input {source.alias} affects must include "
            f"{', '.join(missing)}; add it to the Input's `affects` query"
        )
    return found.select(*columns)


def write(
    frame: DataFrame,
    table: DerivedTable,
    settings: Settings,
    operation: str,
    consumed: dict[str, str],
    oldest_change: str | None,
) -> None:
    """One Hudi commit of a derived table, with the checkpoint that moves with it, the
    fingerprint of the transform that computed it and the oldest source change it brings
    (commit metadata)."""
    metadata = {
        timeline.CONSUMED_KEY: json.dumps(consumed, sort_keys=True),
        timeline.TRANSFORM_KEY: table.fingerprint,
    }
    if oldest_change:
        metadata[timeline.OLDEST_CHANGE_KEY] = oldest_change
    hudi.write(frame, table, settings, operation, metadata)


def _transform_change(table: DerivedTable, written: timeline.Timeline) -> str | None:
    # Rows the old transform computed would otherwise stay as they are until their inputs
    # change (a column a new transform selects would fill in row by row).
    if written.last_transform not in (None, table.fingerprint):
        return (
            f"transform {table.transform_path.name} changed since the last run, rebuilt from full snapshots"
        )
    return None


def _rebuild_reason(inputs: dict[str, timeline.Timeline], consumed: dict[str, str] | None) -> str | None:
    if consumed is None:
        return "first run"
    for name, found in inputs.items():
        start = consumed.get(name)
        if start is None:
            return f"no checkpoint for input {name}"
        if not found.can_read_after(start):
            return (
                f"checkpoint {start} of input {name} is no longer on its active timeline "
                f"(archived or cleaned, which raising HUDI_COMMITS_RETAINED or running more "
                f"often avoids, or the input was rewritten in a new layout), rebuilt from "
                f"full snapshots"
            )
        if not found.completed_at(start):
            # Checkpoints are completion times of the input's commits; one that is gone was
            # undone by a restore (operations/savepoints.py), and this table holds rows
            # derived from it.
            return (
                f"input {name} was restored to a savepoint before commit {start}, which "
                f"this table had read; rebuilt from full snapshots"
            )
    return None


def _require_reconciled(table: DerivedTable, total: int, neither: int, both: int, committed: bool) -> None:
    if both or neither:
        outcome = "the commit is in the table" if committed else "nothing was committed"
        raise IncrementalError(
            f"{table.name}: reconciliation failed: of {total} input rows, {neither} are "
            f"neither promoted nor kept out and {both} are both; {outcome}, rerun with "
            f"--full-refresh after fixing the cause"
        )


def _fingerprint(rows: DataFrame) -> str:
    """The rows' count and two order-free hashes of their values, in one Spark job: equal
    for the same set of rows (keys are unique), and different for another, but for a
    collision of both hashes."""
    count, xor, total = rows.select(
        F.count(F.lit(1)), F.bit_xor(F.xxhash64(*rows.columns)), F.sum(F.hash(*rows.columns))
    ).first()
    return f"{count}:{xor or 0}:{total or 0}"


def sides(rows: DataFrame, verdict: quality.Verdict, keys: list[str]) -> tuple[DataFrame, DataFrame]:
    """`rows` split by the gate's verdict: those promoted to the table, and those kept out,
    with the rules they broke and whether they are held back or quarantined."""
    return rows.join(verdict.quarantined.select(keys), keys, "left_anti"), rows.join(
        verdict.quarantined, keys
    )


def utc_now() -> datetime:
    """Naive UTC, as Spark hands timestamps to Python (lakehouse/spark.py sets the zone)."""
    return datetime.now(UTC).replace(tzinfo=None)


class Runner:
    def __init__(
        self,
        spark: SparkSession,
        settings: Settings,
        clock: Callable[[], datetime] = utc_now,
        by_cost: bool = True,
    ):
        """`clock` is the "now" that rules such as "not in the future" compare with;
        `by_cost` lets a run rebuild when that costs less than its changes would
        (lakehouse/costs.py); without it a run goes incrementally whenever it can."""
        self.spark, self.settings, self.clock, self.by_cost = spark, settings, clock, by_cost
        self._results: dict[str, list[tuple]] = {}
        self._results_lock = threading.Lock()

    def alongside(self) -> Runner:
        """A runner for another thread (medallion/parallel.py): a Spark session of its own,
        since the temporary views a run reads its inputs through are per session, and this
        runner's gate and gathered quality results."""
        other = copy.copy(self)
        other.spark = self.spark.newSession()
        return other

    def schedule_in(self, pool: str | None) -> None:
        """Runs the calling thread's Spark jobs from now on in scheduler pool `pool`
        (lakehouse/spark.py), None for the default pool."""
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", pool)

    def run(self, table: DerivedTable, full_refresh: bool = False) -> RunReport:
        relaid = [
            note for t in (table, table.quarantine) if (note := layout.ensure(self.spark, self.settings, t))
        ]
        report = self._run(table, full_refresh)
        costs.record(self.settings, report)
        if not relaid:
            return report
        return dataclasses.replace(report, note="; ".join([*relaid, *filter(None, [report.note])]))

    def _run(self, table: DerivedTable, full_refresh: bool) -> RunReport:
        began = time.monotonic()
        inputs = {i.table.name: self._input_timeline(table, i) for i in table.inputs}
        ends = {name: t.latest for name, t in inputs.items()}
        path = table.path(self.settings)
        written = timeline.read(self.spark, path) if catalog.exists(self.spark, path) else None
        consumed = written.last_consumed if written else None
        note = None  # why an incremental run took its path, where the choice needs saying
        reason = (
            "--full-refresh"
            if full_refresh
            else _rebuild_reason(inputs, consumed) or _transform_change(table, written)
        )
        if not reason:
            # Each input with new commits, and the changes each of those commits recorded (its
            # write statistics): what the choice of path weighs, and what the change-log
            # reads are checked against.
            pending = [
                (i, self._recorded(i, consumed, ends))
                for i in table.inputs
                if inputs[i.table.name].has_commits_after(consumed[i.table.name])
            ]
            if not pending:
                # Decided from timelines alone: an idle table opens none of its inputs.
                return RunReport(table.name, "idle", seconds=time.monotonic() - began)
            if self.by_cost:
                waiting = sum(sum(recorded.values()) for _, recorded in pending)
                reason = self._rebuilt_input(pending, consumed, ends)
                if not reason:
                    choice = costs.read(self.settings, table.name).choose(waiting)
                    reason, note = (
                        (choice.reason, None) if choice.path == costs.FULL else (None, choice.reason)
                    )
        oldest = self._oldest_change(table, consumed or {}, ends)
        snapshots = self._snapshots(table)
        transform = self._transform(table, snapshots)
        if not reason:
            try:
                report = self._increment(table, snapshots, transform, pending, consumed, ends, oldest, began)
                return dataclasses.replace(report, note="; ".join(filter(None, [note, report.note])))
            except UnreadableChanges as error:
                reason = str(error)
        return self._rebuild(table, transform, ends, oldest, began, reason)

    def _oldest_change(
        self, table: DerivedTable, consumed: dict[str, str], ends: dict[str, str]
    ) -> str | None:
        """The oldest source change in the inputs' commits this run brings (those since the
        checkpoint, whichever path it takes): the commit records it, for lag from the source."""
        found = (
            timeline.oldest_change(
                self.spark, i.table.path(self.settings), consumed.get(i.table.name, ""), ends[i.table.name]
            )
            for i in table.inputs
        )
        return min(filter(None, found), default=None)

    def _rebuilt_input(
        self, pending: list[tuple[Input, dict]], consumed: dict[str, str], ends: dict[str, str]
    ) -> str | None:
        """Why the run rebuilds when an input was itself rebuilt since the checkpoint: its
        change log holds every row of it, which no incremental run reads faster than the
        snapshot (and a table never measured incrementally would otherwise read it so)."""
        for source, _ in pending:
            name = source.table.name
            if timeline.rebuilt(self.spark, source.table.path(self.settings), consumed[name], ends[name]):
                return f"rebuilt: input {name} was rebuilt since this table's last run"
        return None

    def _recorded(self, source: Input, consumed: dict[str, str], ends: dict[str, str]) -> dict[str, int]:
        name = source.table.name
        return timeline.changes_committed(
            self.spark, source.table.path(self.settings), consumed[name], ends[name]
        )

    @contextlib.contextmanager
    def full_result(self, table: DerivedTable) -> Iterator[tuple[DataFrame, DataFrame]]:
        """What `--full-refresh` would write, without writing it: the transform over the
        inputs' whole snapshots, split by the gate into the rows promoted to the table and
        the rows kept out (with `quarantine_rules` and `quarantine_status`). The transform
        is computed once, and held while the caller reads both sides."""
        with HeldFrames() as hold:
            result = hold(self._transform(table, self._snapshots(table)))
            verdict = self.gate.validate(table.name, table.rules, table.record_key, result, self.clock())
            yield sides(result, verdict, list(table.record_key))

    def record_results(self) -> None:
        """Writes the validation results gathered since the last call to each layer's
        results table, one commit per layer, and their Data Docs pages; called after a run
        fails, too."""
        with self._results_lock:
            gathered = {layer: list(rows) for layer, rows in self._results.items()}
        if not gathered:
            return
        for layer, rows in sorted(gathered.items()):
            results = quality_results_table(layer)
            relaid = layout.ensure(self.spark, self.settings, results)
            if relaid:
                print(relaid, flush=True)
            hudi.write(self.spark.createDataFrame(rows, RESULTS_SCHEMA), results, self.settings, "insert")
            with self._results_lock:
                # Runs alongside may have gathered more meanwhile; they stay for the next call.
                del self._results[layer][: len(rows)]
                if not self._results[layer]:
                    del self._results[layer]
        self.gate.publish()

    @property
    def gate(self) -> quality.Gate:
        settings = self.settings
        return quality.Gate.shared(settings.quality_dir, settings.quality_in_memory_rows)

    def _snapshots(self, table: DerivedTable) -> dict[str, DataFrame]:
        return {i.alias: snapshot(self.spark, i.table, self.settings) for i in table.inputs}

    def _transform(self, table: DerivedTable, views: dict[str, DataFrame]) -> DataFrame:
        """The transform over `views`; Spark resolves them now, so they can be replaced after."""
        for alias, frame in views.items():
            frame.createOrReplaceTempView(alias)
        return self.spark.sql(table.transform_sql())

    def _input_timeline(self, table: DerivedTable, source: Input) -> timeline.Timeline:
        path = source.table.path(self.settings)
        found = (
            timeline.read(self.spark, path, checkpoint=False) if catalog.exists(self.spark, path) else None
        )
        if found is None or found.latest is None:
            raise InputNotReady(
                f"{table.name}: input {source.table.qualified_name} has no data yet at {path}; "
                f"build it first (`lakehouse run` goes through the layers in order)"
            )
        return found

    def _validate(
        self, table: DerivedTable, candidates: DataFrame, ends: dict[str, str], full_refresh: bool
    ) -> quality.Verdict:
        """The gate: every rule over the rows about to be promoted, recorded whatever the
        outcome; a fail-tier breach stops the run here, before anything is written."""
        validated_at = self.clock()
        verdict = self.gate.validate(table.name, table.rules, table.record_key, candidates, validated_at)
        run_id = f"{validated_at:%Y%m%d%H%M%S%f}"
        instants = json.dumps(ends, sort_keys=True)
        rows = [
            (
                run_id,
                table.name,
                o.rule.name,
                o.rule.tier,
                instants,
                full_refresh,
                o.success,
                verdict.rows,
                o.unexpected_count,
                json.dumps(o.samples, default=str),
                validated_at,
                validated_at.date(),
            )
            for o in verdict.outcomes
        ]
        with self._results_lock:
            self._results.setdefault(table.layer, []).extend(rows)
        if verdict.failures:
            raise rules.QualityGateFailed(
                "; ".join(f.message(table.name, verdict.rows) for f in verdict.failures)
                + f". Nothing was committed and the checkpoint of {table.name} did not move: "
                f"correct those rows at the source (or the rule in {table.layer}/tables.py) "
                f"and run again."
            )
        return verdict

    def _keep_out(
        self,
        table: DerivedTable,
        candidates: DataFrame,
        verdict: quality.Verdict,
        affected: DataFrame | None,
        ends: dict[str, str],
    ) -> None:
        """Brings the quarantine table in line with the verdict for the affected keys (all
        keys on a full refresh): kept-out rows, new or changed, are upserted with their
        reasons, and rows no longer kept out (fixed, or promoted now that a late dimension
        arrived) leave."""
        keys, quarantine = list(table.record_key), table.quarantine
        kept_out, released = sides(candidates, verdict, keys)[1], None
        exists = catalog.exists(self.spark, quarantine.path(self.settings))
        if not (exists or verdict.keeps_out):
            return
        # A rebuild's kept-out rows decide the whole quarantine, so the quarantine's last
        # write records their fingerprint: when the next rebuild keeps out the same rows,
        # nothing needs bringing in line, and one aggregate replaces reading the quarantine
        # and comparing it row by row. The demo's simulator sends a bad row every few
        # seconds, so there most rebuilds still compare; scheduled runs and quiet hours skip.
        fingerprint = _fingerprint(kept_out) if affected is None else None
        if exists:
            if fingerprint and fingerprint == timeline.last_write_metadata(
                self.spark, quarantine.path(self.settings), timeline.KEPT_OUT_KEY
            ):
                return
            held = snapshot(self.spark, quarantine, self.settings)
            if affected is not None:
                held = held.join(affected, keys, "left_semi")
            released = held.join(verdict.quarantined.select(keys), keys, "left_anti")
            if set(kept_out.columns) <= set(held.columns):
                # A row kept out as it already is, for the same rules, stays as and since when
                # it was kept out. Rewritten, every rebuild would rewrite the whole quarantine,
                # which grows with the source's history. Keys are unique on both sides, so an
                # anti join on every column finds the same rows as `exceptAll`, and Spark
                # broadcasts a small quarantine to it where `exceptAll` shuffled both sides.
                same = [kept_out[c].eqNullSafe(held[c]) for c in kept_out.columns]
                kept_out = kept_out.join(held, same, "left_anti")
        kept_out = (
            kept_out.withColumn("input_instants", F.lit(json.dumps(ends, sort_keys=True)))
            .withColumn("quarantined_at", F.current_timestamp())
            .withColumn(DELETED, F.lit(False))
        )
        if released is not None:
            kept_out = kept_out.unionByName(released.withColumn(DELETED, F.lit(True)))
        with HeldFrames() as hold:
            kept_out = hold(kept_out)
            # A rebuild commits even when nothing changed (an empty commit), to record the
            # fingerprint that lets the next one skip this step.
            if kept_out.take(1) or fingerprint:
                stamp = {timeline.KEPT_OUT_KEY: fingerprint} if fingerprint else None
                hudi.write(kept_out, quarantine, self.settings, "upsert", stamp)

    def _current(self, table: DerivedTable, scope: dict[str, list]) -> DataFrame:
        """The table's rows, only the partitions in `scope` when it is partitioned by one of
        its columns."""
        current = snapshot(self.spark, table, self.settings)
        if table.partitioning and table.partitioning.column in scope:
            current = within(current, table, table.partitioning.column, scope[table.partitioning.column])
        return current

    def _reconcile(
        self,
        table: DerivedTable,
        rows_in: DataFrame,
        produced: DataFrame,
        held: DataFrame,
        batch: DataFrame,
        verdict: quality.Verdict,
    ) -> tuple[Reconciliation, int, int]:
        """Where each input row will go, from the frames the commit is made of rather than
        a read of the table back (the caller checks the commit's write statistics against
        the batch): a key will be in the table when the batch upserts it, or the table held
        it in more partitions than the batch deletes it from; in the quarantine when the
        gate's verdict keeps it out (`_keep_out` makes the quarantine so). A row the
        transform produced that would be in neither, or in both, fails the run before
        anything is written. Also returns the batch's upserted and deleted rows: one Spark
        job counts them all. Counted before the writes: on a cluster the frames are
        persisted, and a write re-caches every frame that read the written table."""
        keys = list(table.record_key)
        status = F.col("quarantine_status")
        where = (
            rows_in.join(held.groupBy(keys).agg(F.count(F.lit(1)).alias("held")), keys, "left")
            .join(
                batch.groupBy(keys).agg(
                    F.count_if(~F.col(DELETED)).alias("upserts"), F.count_if(F.col(DELETED)).alias("deletes")
                ),
                keys,
                "left",
            )
            .join(verdict.quarantined.select(*keys, "quarantine_status"), keys, "left")
            .join(produced.withColumn("produced", F.lit(True)), keys, "left")
            .withColumn(
                "promoted",
                (F.coalesce("upserts", F.lit(0)) > 0)
                | (F.coalesce("held", F.lit(0)) > F.coalesce("deletes", F.lit(0))),
            )
        )
        total, promoted, quarantined, held_back, both, neither, upserted, deleted = where.agg(
            F.count(F.lit(1)),
            F.count_if(F.col("promoted")),
            F.count_if(status == rules.QUARANTINED),
            F.count_if(status == rules.HELD_BACK),
            F.count_if(F.col("promoted") & status.isNotNull()),
            F.count_if(F.col("produced") & ~F.col("promoted") & status.isNull()),
            F.coalesce(F.sum("upserts"), F.lit(0)),
            F.coalesce(F.sum("deletes"), F.lit(0)),
        ).first()
        _require_reconciled(table, total, neither, both, committed=False)
        reconciliation = Reconciliation(
            total, promoted, quarantined, held_back, total - promoted - quarantined - held_back
        )
        return reconciliation, upserted, deleted

    def _committed(self, table: DerivedTable, ends: dict[str, str]) -> timeline.LastCommit:
        """The table's newest commit, which must be this run's: another writer's meanwhile
        would make the run's reconciliation untrue."""
        last = timeline.last_commit(self.spark, table.path(self.settings))
        if last.consumed != ends:
            raise IncrementalError(
                f"{table.name}: reconciliation failed: the table's newest commit is not this "
                f"run's (it consumed {last.consumed}, the run {ends}); another writer "
                f"committed meanwhile, rerun with --full-refresh"
            )
        return last

    def _reconcile_rebuild(
        self, table: DerivedTable, verdict: quality.Verdict, ends: dict[str, str]
    ) -> Reconciliation:
        """A rebuild's reconciliation, from its commit rather than a read of the table back:
        the commit replaced every row, so what the table holds is what its write statistics
        record as written, and the gate's verdict says which rows it kept out. Every
        transformed row must be one or the other; none can be both, since the rows written
        are those the verdict did not keep out."""
        written = self._committed(table, ends).written
        quarantined, held_back = verdict.kept_out[rules.QUARANTINED], verdict.kept_out[rules.HELD_BACK]
        unaccounted = verdict.rows - written - quarantined - held_back
        _require_reconciled(table, verdict.rows, max(unaccounted, 0), max(-unaccounted, 0), committed=True)
        return Reconciliation(verdict.rows, written, quarantined, held_back, 0)

    def _report(
        self,
        table: DerivedTable,
        mode: str,
        began: float,
        verdict: quality.Verdict,
        reconciliation: Reconciliation,
        **counts,
    ) -> RunReport:
        breaches = tuple(o.message(table.name, verdict.rows) for o in verdict.outcomes if not o.success)
        return RunReport(
            table.name,
            mode,
            seconds=time.monotonic() - began,
            reconciliation=reconciliation,
            breaches=breaches,
            **counts,
        )

    def _rebuild(
        self,
        table: DerivedTable,
        transform: DataFrame,
        ends: dict[str, str],
        oldest: str | None,
        began: float,
        reason: str,
    ) -> RunReport:
        keys = list(table.record_key)
        with HeldFrames() as hold:
            result = hold(transform)
            verdict = self._validate(table, result, ends, full_refresh=True)
            self._keep_out(table, result, verdict, None, ends)
            promoted, _ = sides(result, verdict, keys)
            write(
                promoted.withColumn(DELETED, F.lit(False)),
                table,
                self.settings,
                "insert_overwrite_table",
                ends,
                oldest,
            )
            reconciliation = self._reconcile_rebuild(table, verdict, ends)
            return self._report(
                table, "full", began, verdict, reconciliation, upserted=reconciliation.promoted, note=reason
            )

    def _increment(
        self,
        table: DerivedTable,
        snapshots: dict[str, DataFrame],
        transform: DataFrame,
        pending: list[tuple[Input, dict[str, int]]],
        consumed: dict[str, str],
        ends: dict[str, str],
        oldest: str | None,
        began: float,
    ) -> RunReport:
        with HeldFrames() as hold:
            changes_read, affected, misses = self._read_changes(table, pending, consumed, ends, hold)
            report = self._upsert_affected(
                table, snapshots, transform, affected, ends, oldest, hold, began, changes_read
            )
            notes = [*filter(None, [report.note]), *misses]
            return dataclasses.replace(report, note="; ".join(notes) or None) if misses else report

    def _read_changes(
        self,
        table: DerivedTable,
        pending: list[tuple[Input, dict[str, int]]],
        consumed: dict[str, str],
        ends: dict[str, str],
        hold,
    ) -> tuple[int, DataFrame, list[str]]:
        changes_read, affected, misses = 0, [], []
        for source, recorded in pending:
            start, end = consumed[source.table.name], ends[source.table.name]
            log, count, missed = self._checked_change_log(source, start, end, recorded, hold)
            misses += filter(None, [missed])
            changed = hold(changed_images(log, self.spark.table(source.alias).schema, source.reads))
            changes_read += count
            found = affected_rows(self.spark, table, source, changed)
            # A query joining other inputs would scan them whole only to join nothing; an
            # always-false filter lets Spark drop the scan and keeps the columns.
            affected.append(found if count else found.where(F.lit(False)))
        affected += self._due_for_recheck(table)
        return changes_read, hold(reduce(DataFrame.unionByName, affected).distinct()), misses

    def _checked_change_log(
        self, source: Input, start: str, end: str, recorded: dict[str, int], hold
    ) -> tuple[DataFrame, int, str | None]:
        """The input's change log of (start, end], its row count, and a note naming the
        range's commits that recorded changes (`recorded`, per commit) but of which the log
        holds no row.

        Each row of the log carries its commit (`ts_ms`, the commit's requested time), so one
        pass over the log counts each commit's rows, and each is matched with the changes its
        write statistics recorded. The one miss seen (docs/architecture.md, "A change-log
        read checked") was a whole commit absent from a first read that a later read of the
        same range returned, so a read missing a commit is read again, and the read missing
        fewer is used; a commit still missing goes on, named in the run's report. Fewer rows
        than recorded is no miss: the statistics also count writes that change no row (an
        upsert of a row as it stands, a delete of a row Bronze never had)."""
        name, path = source.table.name, source.table.path(self.settings)
        best = None
        for _ in range(2):
            # Held in local mode, the log is read where it is held; persisted, at the count.
            try:
                log = hold(change_log(self.spark, path, start, end))
                per_commit = dict(log.groupBy("ts_ms").count().collect())
            except Py4JJavaError as error:
                # Hudi 1.2's CDC reader has failed on a range: after a writer died during
                # inline compaction and its successor wrote on top of the pending
                # compaction, and once in CI with no writer killed ("No value present in
                # Option": a before-image file slice without its base file). A rebuild from
                # snapshots is always correct, so say so and do it.
                raise UnreadableChanges(
                    f"changes of input {name} in ({start}, {end}] are unreadable "
                    f"({_root_cause(error)}); rebuilt from full snapshots"
                ) from None
            missed = sorted(commit for commit, rows in recorded.items() if rows and commit not in per_commit)
            if best is None or len(missed) < len(best[2]):
                best = (log, sum(per_commit.values()), missed)
            if not best[2]:
                return best[0], best[1], None
        log, count, missed = best
        return (
            log,
            count,
            f"the change log of input {name} in ({start}, {end}] held, read twice, no row of "
            + ", ".join(f"commit {commit} ({recorded[commit]} changes recorded)" for commit in missed),
        )

    def _due_for_recheck(self, table: DerivedTable) -> list[DataFrame]:
        """Quarantined rows that broke a rule reading the clock ("not in the future"): time
        alone can make them pass, so every run with new input checks them again."""
        timed = [r.name for r in table.rules if r.depends_on_clock and r.row_level]
        quarantine = table.quarantine
        if not timed or not catalog.exists(self.spark, quarantine.path(self.settings)):
            return []
        held = snapshot(self.spark, quarantine, self.settings)
        return [
            held.where(F.arrays_overlap("quarantine_rules", F.array(*map(F.lit, timed)))).select(
                *table.affected_columns
            )
        ]

    def _pruned_inputs_moved(self, table: DerivedTable, ends: dict[str, str]) -> bool:
        """Whether a pruned input has a commit completed after this run's end for it."""
        return any(
            timeline.read(self.spark, i.table.path(self.settings), checkpoint=False).has_commits_after(
                ends[i.table.name]
            )
            for i in table.inputs
            if i.prune
        )

    def _upsert_affected(
        self,
        table: DerivedTable,
        snapshots: dict[str, DataFrame],
        transform: DataFrame,
        affected: DataFrame,
        ends: dict[str, str],
        oldest: str | None,
        hold,
        began: float,
        changes_read: int,
    ) -> RunReport:
        keys = list(table.record_key)
        scope = {
            column: [row[0] for row in affected.select(column).distinct().collect()]
            for column in dict.fromkeys(i.prune[1] for i in table.inputs if i.prune)
        }
        pruned_views = {
            i.alias: within(snapshots[i.alias], i.table, i.prune[0], reached(scope[i.prune[1]], i.reach))
            if i.prune
            else snapshots[i.alias]
            for i in table.inputs
        }
        recomputed = hold(self._transform(table, pruned_views).join(affected, keys, "left_semi"))
        verdict = self._validate(table, recomputed, ends, full_refresh=False)
        # Read once: the upserts, the missing rows and the kept-out rows each compare with it.
        held = hold(self._current(table, scope).join(affected, keys, "left_semi"))
        changes = changeset(table, recomputed, held, verdict.quarantined.select(keys))
        if any(column not in keys for column in scope):
            # A row missing from the pruned inputs may have moved out of the affected values
            # in an input commit newer than this run's end (snapshots can be newer). Only the
            # whole inputs can tell, so the few delete candidates are looked up there: a
            # transform over whole inputs, as costly as a rebuild. It is needed only when a
            # pruned input committed since the run began (the snapshots were read by now), and
            # that is asked first: the timelines answer without a Spark job.
            if self._pruned_inputs_moved(table, ends):
                missing = hold(changes.missing)
                if missing.count():
                    changes = changes.still_produced(transform.join(missing.select(keys), keys, "left_semi"))
        batch = hold(changes.batch())
        rows_in = affected.select(keys).distinct()
        reconciliation, upserted, deleted = self._reconcile(
            table, rows_in, recomputed.select(keys), held, batch, verdict
        )
        # The quarantine first: a crash before the table's commit leaves the checkpoint
        # where it was, and the rerun writes the same quarantine again.
        self._keep_out(table, recomputed, verdict, rows_in, ends)
        # Written even when empty: the commit moves the checkpoint past changes that turned
        # out not to affect this table.
        write(batch, table, self.settings, "upsert", ends, oldest)
        committed = self._committed(table, ends)
        if (committed.upserted, committed.deleted) != (upserted, deleted):
            raise IncrementalError(
                f"{table.name}: reconciliation failed: the commit records {committed.upserted} "
                f"rows upserted and {committed.deleted} deleted, its batch held {upserted} and "
                f"{deleted}; the commit is in the table, rerun with --full-refresh after "
                f"fixing the cause"
            )
        return self._report(
            table,
            "incremental",
            began,
            verdict,
            reconciliation,
            changes_read=changes_read,
            upserted=upserted,
            deleted=deleted,
        )
