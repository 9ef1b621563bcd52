"""The quality gate: checks a batch against its table's rules (lakehouse/rules.py) with
Great Expectations, and says which rows to promote, which to keep out and why.
"""

# Why one module: it is the project's one adapter around Great Expectations (the GX project,
# its suites and checkpoints, and GX's results turned back into outcomes); nothing else
# imports GX, and the rules it runs are plain data in lakehouse/rules.py.

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakehouse.rules import FAIL, HELD_BACK, QUARANTINE, QUARANTINED, Rule, expectation_parameters

SAMPLE_SIZE = 5
# Validation results GX keeps per table for Data Docs (its store and pages grow by one file
# per run, and the index page lists them all); the results table keeps every run.
DOCS_RUNS_KEPT = 100


@dataclass(frozen=True)
class Outcome:
    """One rule's result on one batch."""

    rule: Rule
    success: bool
    unexpected_count: int
    samples: list
    failing_keys: list[dict] = field(default_factory=list)

    def joined(self, other: Outcome) -> Outcome:
        """One outcome of a rule checked by two expectations (its own and the null check)."""
        return Outcome(
            self.rule,
            self.success and other.success,
            self.unexpected_count + other.unexpected_count,
            (self.samples + other.samples)[:SAMPLE_SIZE],
            self.failing_keys + other.failing_keys,
        )

    def message(self, table: str, rows: int) -> str:
        examples = self.failing_keys[:SAMPLE_SIZE] or self.samples
        shown = ", ".join(json.dumps(e, default=str) for e in examples) or "none shown"
        what = (
            f"{self.unexpected_count} of {rows} rows, e.g. {shown}"
            if self.rule.row_level
            else f"observed {shown}"
        )
        return f'{table}: rule "{self.rule.name}" ({self.rule.tier}) failed for {what}'


@dataclass(frozen=True)
class Verdict:
    rows: int
    outcomes: list[Outcome]
    quarantined: DataFrame  # record key, quarantine_rules, quarantine_status
    kept_out: dict[str, int]  # rows kept out by quarantine_status, known without a Spark job

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success and o.rule.tier == FAIL]

    @property
    def keeps_out(self) -> bool:
        """Whether `quarantined` holds a row, known without a Spark job."""
        return any(o.failing_keys for o in _quarantining(self.outcomes))


def _quarantining(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes whose failing rows go to the quarantine."""
    return [o for o in outcomes if not o.success and o.rule.tier == QUARANTINE]


def docs_dir(quality_dir: Path) -> Path:
    """Where the Data Docs site is built: a static site, index.html at its root."""
    return quality_dir.resolve() / "docs"


def forget_old_runs(quality_dir: Path, name: str, keep: int = DOCS_RUNS_KEPT) -> None:
    """Keeps the newest `keep` validation results of suite `name` in GX's store and their
    Data Docs pages; run directories are named by their UTC start time, so names sort by age."""
    stored = quality_dir.resolve() / "gx" / "uncommitted" / "validations" / name
    runs = sorted(stored.glob("*/*/"))
    for run in runs[: max(0, len(runs) - keep)]:
        shutil.rmtree(run)
        shutil.rmtree(
            docs_dir(quality_dir) / "validations" / run.relative_to(stored.parent), ignore_errors=True
        )


def _problems(rule: Rule):
    """The column of `rule`'s check: null where a value passes, else why it fails."""
    column, check = rule.computed

    def problem(value) -> str | None:
        if value is None:
            return None if rule.nullable else "no value"
        return check(value)

    @F.pandas_udf(T.StringType())
    def problems(values):
        return values.map(problem)

    return problems(F.col(column))


def _in_memory(batch: DataFrame):
    """The batch as a pandas frame for GX's pandas engine. pandas turns an integer column
    with nulls into floats, so a failing 3 would be reported as 3.0: such columns are kept
    as Python integers and None."""
    import pandas

    frame = batch.toPandas()
    for f in batch.schema:
        if isinstance(f.dataType, T.IntegralType) and frame[f.name].dtype.kind == "f":
            frame[f.name] = pandas.Series(
                [None if v != v else int(v) for v in frame[f.name]], index=frame.index, dtype=object
            )
    return frame


def _plain(value):
    """`value` as Spark hands it to Python: the pandas engine reports numpy scalars, pandas
    timestamps, and NaN or NaT for null, which createDataFrame and JSON reject or misread."""
    if value != value:  # NaN and NaT are the values not equal to themselves
        return None
    if hasattr(value, "to_pydatetime"):
        return value.to_pydatetime()
    return value.item() if hasattr(value, "item") else value


def _key_first(row: dict, keys: tuple[str, ...]) -> dict:
    """A failing row as both engines then report it: its key, then the failing value."""
    return {
        column: _plain(row[column]) for column in (*keys, *(c for c in row if c not in keys)) if column in row
    }


_GATES: dict[tuple, Gate] = {}
_GATES_LOCK = threading.Lock()  # runs side by side ask at once; one opens the project


def open_in_background(quality_dir: Path, in_memory_rows: int) -> None:
    """Starts opening the process's gate (`Gate.shared`) on a thread of its own. Importing
    GX and opening its project take seconds of Python on two cores (the import alone 3.7 s
    in a cold process), which the first run would spend in front of its first rows; started
    while the JVM starts or Bronze drains, which mostly wait on the JVM, they cost it
    little. The first run then finds the gate open, or waits for it; asking again is free."""

    def open_gate() -> None:
        with contextlib.suppress(Exception):
            # What failed here fails again where a run asks for the gate, and says so there.
            Gate.shared(quality_dir, in_memory_rows)

    threading.Thread(target=open_gate, name="open-gx", daemon=True).start()


class Gate:
    """Validates batches with GX, in a file-backed GX project whose validation results feed
    the Data Docs site.

    A batch of at most `in_memory_rows` rows is collected and validated by GX's pandas
    engine: its Spark engine runs about 40 Spark jobs per batch, some 2 s on two cores
    whatever the batch's size, where pandas answers a few hundred rows in 0.15 s. Larger
    batches stay in Spark, so nothing large is ever collected into the driver. Both engines
    evaluate the same suite; tests/unit/test_quality_rules.py holds them to the same verdict."""

    SITE = "retailmax"

    def __init__(self, quality_dir: Path, in_memory_rows: int):
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        logging.getLogger("great_expectations").setLevel(logging.WARNING)
        self._gx = gx
        self.context = gx.get_context(mode="file", project_root_dir=str(quality_dir))
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.context.variables.save()
        site = {
            "class_name": "SiteBuilder",
            "show_how_to_buttons": False,
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(docs_dir(quality_dir)),
            },
        }
        sites = self.context.list_data_docs_sites()
        if "local_site" in sites:
            self.context.delete_data_docs_site("local_site")
        (self.context.update_data_docs_site if self.SITE in sites else self.context.add_data_docs_site)(
            self.SITE, site
        )
        self._declare_sources()
        self.quality_dir, self.in_memory_rows = quality_dir, in_memory_rows
        self._unpublished: list = []  # validation results (and their suites) without pages yet
        # GX's project is not safe for threads; runs side by side (medallion/parallel.py)
        # take turns in it, and compute their batches outside it.
        self._lock = threading.Lock()

    @classmethod
    def shared(cls, quality_dir: Path, in_memory_rows: int) -> Gate:
        """The process's gate for this project: opening a GX project takes seconds on two
        cores, which every new Runner paid before its first batch. A gate serves every Spark
        session: each batch brings its own, and GX's Spark engine uses it."""
        key = (str(quality_dir), in_memory_rows)
        with _GATES_LOCK:
            if key not in _GATES:
                _GATES[key] = cls(quality_dir, in_memory_rows)
            return _GATES[key]

    def _declare_sources(self) -> None:
        """(Re)declares the two engines' data sources, which drops every asset on them, and
        forgets every suite and checkpoint declared on them."""
        self.sources = {
            # persist=False: GX must not cache each batch DataFrame for the life of the session.
            "spark": self.context.data_sources.add_or_update_spark(name="spark", persist=False),
            "pandas": self.context.data_sources.add_or_update_pandas(name="pandas"),
        }
        self._suites: dict[tuple, object] = {}
        self._checkpoints: dict[tuple, object] = {}

    def _checkpoint(self, name: str, rules: tuple[Rule, ...], keys: tuple[str, ...], engine: str):
        # Keyed by the rules too: a shared gate outlives runs, and a table declared anew in the
        # same process (a test's scratch table) must not be checked by its old suite.
        declared = (name, repr(rules))
        if (declared, engine) not in self._checkpoints:
            gx = self._gx
            if declared not in self._suites:  # one suite for both engines
                self._suites[declared] = self.context.suites.add_or_update(
                    gx.ExpectationSuite(
                        name=name, expectations=[e for r in rules for e in self._expectations(r)]
                    )
                )
            suite = self._suites[declared]
            source = self.sources[engine]
            if name in source.get_asset_names():
                source.delete_asset(name)
            batches = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe("batch")
            validation = self.context.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=f"{name} ({engine})", data=batches, suite=suite)
            )
            self._checkpoints[declared, engine] = self.context.checkpoints.add_or_update(
                gx.Checkpoint(
                    name=f"{name} ({engine})",
                    validation_definitions=[validation],
                    # COMPLETE: every failing row's key, which quarantining needs; values are
                    # sampled (partial_unexpected_count) for messages and the results table.
                    result_format={
                        "result_format": "COMPLETE",
                        "partial_unexpected_count": SAMPLE_SIZE,
                        "unexpected_index_column_names": list(keys),
                        "return_unexpected_index_query": False,
                    },
                )
            )
        return self._checkpoints[declared, engine]

    def _expectations(self, rule: Rule) -> list:
        """The rule's GX expectation, and a null check beside it where the rule fails nulls;
        both carry the rule's name, and `validate` joins their outcomes into one."""
        expectations, meta = self._gx.expectations, {"rule": rule.name, "tier": rule.tier}
        found = [getattr(expectations, rule.expectation)(**dict(rule.arguments), meta=meta)]
        if rule.fails_nulls:
            found.append(
                expectations.ExpectColumnValuesToNotBeNull(column=dict(rule.arguments)["column"], meta=meta)
            )
        return found

    def validate(
        self,
        name: str,
        rules: tuple[Rule, ...],
        keys: tuple[str, ...],
        batch: DataFrame,
        now: datetime,
        engine: str | None = None,
    ) -> Verdict:
        """`now` is naive UTC, as Spark hands timestamps to Python (lakehouse/spark.py sets
        the zone); `engine` ("spark" or "pandas") overrides the choice by size."""
        missing = sorted({c for r in rules for c in r.columns} - set(batch.columns))
        if missing:
            raise ValueError(
                f"{name}: rules name columns {missing} that the table does not have "
                f"(its columns: {', '.join(batch.columns)})"
            )
        batch = batch.withColumns({dict(r.arguments)["column"]: _problems(r) for r in rules if r.computed})
        # One Spark job both sizes a small batch and collects it: counting first, then
        # collecting, computed the batch (and its Python checks) twice.
        if engine == "spark":
            in_memory = None
        elif engine == "pandas":
            in_memory = _in_memory(batch)
        else:
            in_memory = _in_memory(batch.limit(self.in_memory_rows + 1))
            if len(in_memory) > self.in_memory_rows:
                in_memory = None
        rows = batch.count() if in_memory is None else len(in_memory)
        engine = "spark" if in_memory is None else "pandas"
        from great_expectations.exceptions.resource_freshness import ResourceFreshnessAggregateError

        def run():
            return self._checkpoint(name, rules, keys, engine).run(
                batch_parameters={"dataframe": batch if in_memory is None else in_memory},
                expectation_parameters=expectation_parameters(rules, now),
            )

        with self._lock:
            forget_old_runs(self.quality_dir, name)
            try:
                result = run()
            except ResourceFreshnessAggregateError:
                # Another process (a scheduled asset, a `lakehouse` command) declared the same
                # suite in the shared GX project since this gate did, and GX refuses a copy that
                # differs from the stored one: declare everything again, then validate.
                self._declare_sources()
                result = run()
            from great_expectations.data_context.types.resource_identifiers import (
                ExpectationSuiteIdentifier,
            )

            self._unpublished += [*result.run_results, ExpectationSuiteIdentifier(name=name)]
        by_name = {r.name: r for r in rules}
        outcomes: dict[str, Outcome] = {}
        for validation in result.run_results.values():
            for found in validation.results:
                rule = by_name[found.expectation_config.meta["rule"]]
                info = found.exception_info or {}
                if info.get("raised_exception"):
                    raise ValueError(
                        f'{name}: rule "{rule.name}" could not be evaluated: {info.get("exception_message")}'
                    )
                detail = found.result or {}
                samples = (
                    detail.get("partial_unexpected_list", [])[:SAMPLE_SIZE]
                    if rule.row_level
                    else [detail.get("observed_value")]
                )
                failing = [_key_first(row, keys) for row in detail.get("unexpected_index_list") or []]
                outcome = Outcome(
                    rule,
                    bool(found.success),
                    int(detail.get("unexpected_count") or 0),
                    [_plain(value) for value in samples],
                    failing,
                )
                outcomes[rule.name] = (
                    outcomes[rule.name].joined(outcome) if rule.name in outcomes else outcome
                )
        judged = [outcomes[r.name] for r in rules]
        return Verdict(rows, judged, *self._quarantined(batch.sparkSession, keys, batch.schema, judged))

    def publish(self) -> None:
        """Builds the Data Docs pages of the validations since the last call, and the site's
        index once: GX's own checkpoint action rebuilt the index at every validation, a third
        of each one's time."""
        with self._lock:
            if self._unpublished:
                self.context.build_data_docs(site_names=[self.SITE], resource_identifiers=self._unpublished)
                self._unpublished = []

    def _quarantined(
        self, spark: SparkSession, keys: tuple[str, ...], schema: T.StructType, outcomes: list[Outcome]
    ) -> tuple[DataFrame, dict[str, int]]:
        """The kept-out rows' keys, each with the rules it broke and its status (held back when
        every rule it broke waits for a late dimension), and how many rows have each status.
        Built in Python from the failing keys GX returned, so the driver holds them already;
        marked for broadcast wherever a run joins it with its rows. Spark cannot size a frame
        made from Python rows (a scan of an RDD to it): unmarked, it shuffled and sorted both
        sides of every such join."""
        broken: dict[tuple, list[Rule]] = {}
        for outcome in _quarantining(outcomes):
            for row in outcome.failing_keys:
                broken.setdefault(tuple(row[k] for k in keys), []).append(outcome.rule)
        rows = [
            (
                *key,
                sorted({r.name for r in rules}),
                HELD_BACK if all(r.waits_for is not None for r in rules) else QUARANTINED,
            )
            for key, rules in broken.items()
        ]
        kept_out = {QUARANTINED: 0, HELD_BACK: 0}
        for *_, status in rows:
            kept_out[status] += 1
        frame = spark.createDataFrame(
            rows,
            T.StructType(
                [schema[k] for k in keys]
                + [
                    T.StructField("quarantine_rules", T.ArrayType(T.StringType())),
                    T.StructField("quarantine_status", T.StringType()),
                ]
            ),
        )
        return F.broadcast(frame), kept_out
