"""Data-quality rules, declared beside each table, and the gate that checks a batch with them.

A rule is one Great Expectations (GX Core 1.x) expectation with a name people read in
quarantine reasons and error messages, and a tier that says what a breach does:

- `warn`: recorded in the results table and Data Docs; the batch goes on.
- `quarantine`: the failing rows go to `<table>_quarantine` with the rules they broke and
  the rest goes on. A rule that `waits_for` an input (a customer or product that may
  arrive late) marks its rows *held back* rather than wrong: they are promoted once the
  missing row arrives, as any quarantined row is once it is fixed at the source. Rows
  that broke a rule reading the clock (a timestamp in the future) are checked again on
  every run that has new input, so they are promoted once their time has come.
- `fail`: the promotion stops before anything is written; the message names the table,
  the rule and offending values.

Declarations build plain data (no GX import), so reading the catalog stays fast; `Gate`
turns them into GX suites and checkpoints when a run validates.
"""

# Why one module, for now: the rule helpers and the gate are the two halves of one contract
# (what a rule means, and how GX is made to mean it, nulls included). Issue 31 splits the
# declarations, which import no PySpark, from the gate, which does.

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

WARN, QUARANTINE, FAIL = "warn", "quarantine", "fail"
TIERS = (WARN, QUARANTINE, FAIL)
HELD_BACK, QUARANTINED = "held back", "quarantined"
# Expectations about the batch as a whole: they name no rows, so they cannot quarantine.
BATCH_EXPECTATIONS = ("ExpectTableRowCountToBeBetween", "ExpectColumnMaxToBeBetween")
# Expectations that judge a column's values and let nulls pass unjudged: a rule built on one
# also fails a null, unless it declares the column nullable (a null "channel" is not a
# known channel).
NULL_BLIND = ("ExpectColumnValuesToBeBetween", "ExpectColumnValuesToBeInSet",
              "ExpectColumnValuesToMatchRegex")
SAMPLE_SIZE = 5
# Validation results GX keeps per table for Data Docs (its store and pages grow by one file
# per run, and the index page lists them all); the results table keeps every run.
DOCS_RUNS_KEPT = 100


@dataclass(frozen=True)
class Rule:
    name: str
    expectation: str  # a class of great_expectations.expectations
    arguments: tuple[tuple[str, object], ...]
    tier: str = QUARANTINE
    waits_for: str | None = None
    nullable: bool = False
    # A check no GX expectation expresses: (column, pure function of one value that says
    # why it fails, or None). See `satisfies`.
    computed: tuple[str, Callable[[object], str | None]] | None = None

    def __post_init__(self):
        if self.tier not in TIERS:
            raise ValueError(f"rule {self.name!r}: tier must be one of {TIERS}, got {self.tier!r}")
        if self.tier == QUARANTINE and not self.row_level:
            raise ValueError(f"rule {self.name!r}: {self.expectation} checks the batch as a "
                             f"whole, it has no rows to quarantine; use tier warn or fail")

    @property
    def row_level(self) -> bool:
        return self.expectation not in BATCH_EXPECTATIONS

    @property
    def fails_nulls(self) -> bool:
        """Whether the gate adds a null check to an expectation that passes nulls."""
        return self.expectation in NULL_BLIND and not self.nullable

    @property
    def depends_on_clock(self) -> bool:
        """Its verdict on an unchanged row can change as time passes (it reads "now")."""
        return any(isinstance(value, dict) and "$PARAMETER" in value
                   for _, value in self.arguments)

    @property
    def columns(self) -> tuple[str, ...]:
        if self.computed:
            return (self.computed[0],)
        found = dict(self.arguments)
        named = [found.get(k) for k in ("column", "column_A", "column_B")]
        return tuple(c for c in named if c) + tuple(found.get("column_list", ()))


def _rule(name: str, expectation: str, tier: str, waits_for: str | None = None,
          nullable: bool = False, **arguments) -> Rule:
    return Rule(name, expectation, tuple(arguments.items()), tier, waits_for, nullable)


def not_null(column: str, tier: str = FAIL, name: str | None = None) -> Rule:
    return _rule(name or f"{column} is not null", "ExpectColumnValuesToNotBeNull", tier, column=column)


def unique(columns: tuple[str, ...], tier: str = FAIL) -> Rule:
    name = f"{', '.join(columns)} unique"
    if len(columns) == 1:
        return _rule(name, "ExpectColumnValuesToBeUnique", tier, column=columns[0])
    return _rule(name, "ExpectCompoundColumnsToBeUnique", tier, column_list=list(columns))


def between(column: str, minimum=None, maximum=None, tier: str = QUARANTINE,
            name: str | None = None, nullable: bool = False) -> Rule:
    default = " and ".join(text for text in (minimum is not None and f"{column} >= {minimum}",
                                             maximum is not None and f"{column} <= {maximum}") if text)
    return _rule(name or default, "ExpectColumnValuesToBeBetween", tier, nullable=nullable,
                 column=column, min_value=minimum, max_value=maximum)


def in_set(column: str, values, tier: str = QUARANTINE, name: str | None = None,
           nullable: bool = False) -> Rule:
    return _rule(name or f"{column} is known", "ExpectColumnValuesToBeInSet", tier,
                 nullable=nullable, column=column, value_set=sorted(values))


def matches(column: str, regex: str, tier: str = QUARANTINE, name: str | None = None,
            nullable: bool = False) -> Rule:
    # Spark's rlike finds the pattern anywhere, so a whole-value rule must be anchored.
    if not (regex.startswith("^") and regex.endswith("$")):
        raise ValueError(f"rule on {column}: anchor the pattern with ^...$, got {regex!r}")
    return _rule(name or f"{column} is well formed", "ExpectColumnValuesToMatchRegex", tier,
                 nullable=nullable, column=column, regex=regex)


def satisfies(column: str, check: Callable[[object], str | None], name: str,
              tier: str = QUARANTINE, nullable: bool = False) -> Rule:
    """A row-level rule that a maintained library, not a GX expectation, knows how to judge
    (an e-mail address): `check` says why a value fails, or None. The gate computes it into
    a column `<column>_problem` beside the batch and validates that with
    ExpectColumnValuesToBeNull, so each failing row is reported with its reason. A null fails
    (`no value`) unless the rule is nullable."""
    return Rule(name, "ExpectColumnValuesToBeNull", (("column", f"{column}_problem"),), tier,
                nullable=nullable, computed=(column, check))


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


def not_in_future(column: str, tier: str = QUARANTINE, nullable: bool = False) -> Rule:
    return _rule(f"{column} not in the future", "ExpectColumnValuesToBeBetween", tier,
                 nullable=nullable, column=column, max_value={"$PARAMETER": "now"})


def exists(what: str, column: str, waits_for: str, tier: str = QUARANTINE) -> Rule:
    """Referential integrity through a join: `column`, which only the referenced row
    provides, is null when `what` does not exist (yet). Rows are held back until the
    input `waits_for` brings it."""
    return _rule(f"{what} exists", "ExpectColumnValuesToNotBeNull", tier, waits_for, column=column)


def row_count(minimum: int | None = None, maximum: int | None = None, tier: str = WARN) -> Rule:
    name = ("batch is not empty" if (minimum, maximum) == (1, None)
            else f"batch has at least {minimum} rows" if maximum is None
            else f"batch has at most {maximum} rows" if minimum is None
            else f"batch has {minimum} to {maximum} rows")
    return _rule(name, "ExpectTableRowCountToBeBetween", tier, min_value=minimum, max_value=maximum)


def fresh(column: str, within: timedelta, tier: str = WARN) -> Rule:
    """The batch's newest `column` is at most `within` old."""
    return _rule(f"newest {column} at most {_duration(within)} old", "ExpectColumnMaxToBeBetween", tier,
                 column=column, min_value={"$PARAMETER": f"fresh_since_{within.total_seconds():.0f}"})


def _duration(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


def key_rules(record_key: tuple[str, ...]) -> tuple[Rule, ...]:
    """What every table's key needs, derived from its declaration."""
    return tuple(not_null(column) for column in record_key) + (unique(record_key),)


def expectation_parameters(rules, now: datetime) -> dict[str, datetime]:
    found = {"now": now}
    for rule in rules:
        for value in dict(rule.arguments).values():
            if isinstance(value, dict) and value.get("$PARAMETER", "").startswith("fresh_since_"):
                seconds = int(value["$PARAMETER"].removeprefix("fresh_since_"))
                found[value["$PARAMETER"]] = now - timedelta(seconds=seconds)
    return found


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
        return Outcome(self.rule, self.success and other.success,
                       self.unexpected_count + other.unexpected_count,
                       (self.samples + other.samples)[:SAMPLE_SIZE],
                       self.failing_keys + other.failing_keys)

    def message(self, table: str, rows: int) -> str:
        examples = self.failing_keys[:SAMPLE_SIZE] or self.samples
        shown = ", ".join(json.dumps(e, default=str) for e in examples) or "none shown"
        what = (f"{self.unexpected_count} of {rows} rows, e.g. {shown}" if self.rule.row_level
                else f"observed {shown}")
        return f"{table}: rule \"{self.rule.name}\" ({self.rule.tier}) failed for {what}"


@dataclass(frozen=True)
class Verdict:
    rows: int
    outcomes: list[Outcome]
    quarantined: DataFrame  # record key, quarantine_rules, quarantine_status

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success and o.rule.tier == FAIL]


def docs_dir(quality_dir: Path) -> Path:
    """Where the Data Docs site is built: a static site, index.html at its root."""
    return quality_dir.resolve() / "docs"


def forget_old_runs(quality_dir: Path, name: str, keep: int = DOCS_RUNS_KEPT) -> None:
    """Keeps the newest `keep` validation results of suite `name` in GX's store and their
    Data Docs pages; run directories are named by their UTC start time, so names sort by age."""
    stored = quality_dir.resolve() / "gx" / "uncommitted" / "validations" / name
    runs = sorted(stored.glob("*/*/"))
    for run in runs[:max(0, len(runs) - keep)]:
        shutil.rmtree(run)
        shutil.rmtree(docs_dir(quality_dir) / "validations" / run.relative_to(stored.parent),
                      ignore_errors=True)


class QualityGateFailed(RuntimeError):
    """A fail-tier rule broke; nothing was committed."""


def _in_memory(batch: DataFrame):
    """The batch as a pandas frame for GX's pandas engine. pandas turns an integer column
    with nulls into floats, so a failing 3 would be reported as 3.0: such columns are kept
    as Python integers and None."""
    import pandas

    frame = batch.toPandas()
    for f in batch.schema:
        if isinstance(f.dataType, T.IntegralType) and frame[f.name].dtype.kind == "f":
            frame[f.name] = pandas.Series([None if v != v else int(v) for v in frame[f.name]],
                                          index=frame.index, dtype=object)
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
    return {column: _plain(row[column])
            for column in (*keys, *(c for c in row if c not in keys)) if column in row}


_GATES: dict[tuple, Gate] = {}


class Gate:
    """Validates batches with GX, in a file-backed GX project whose validation results feed
    the Data Docs site.

    A batch of at most `in_memory_rows` rows is collected and validated by GX's pandas
    engine: its Spark engine runs about 40 Spark jobs per batch, some 2 s on two cores
    whatever the batch's size, where pandas answers a few hundred rows in 0.15 s. Larger
    batches stay in Spark, so nothing large is ever collected into the driver. Both engines
    evaluate the same suite; tests/unit/test_quality_rules.py holds them to the same verdict."""

    SITE = "retailmax"

    def __init__(self, spark: SparkSession, quality_dir: Path, in_memory_rows: int):
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        logging.getLogger("great_expectations").setLevel(logging.WARNING)
        self.spark, self._gx = spark, gx
        self._suites, self._batches, self._checkpoints = {}, {}, {}
        self.context = gx.get_context(mode="file", project_root_dir=str(quality_dir))
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.context.variables.save()
        site = {"class_name": "SiteBuilder", "show_how_to_buttons": False,
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
                "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                                  "base_directory": str(docs_dir(quality_dir))}}
        sites = self.context.list_data_docs_sites()
        if "local_site" in sites:
            self.context.delete_data_docs_site("local_site")
        (self.context.update_data_docs_site if self.SITE in sites
         else self.context.add_data_docs_site)(self.SITE, site)
        self.sources = {
            # persist=False: GX must not cache each batch DataFrame for the life of the session.
            "spark": self.context.data_sources.add_or_update_spark(name="spark", persist=False),
            "pandas": self.context.data_sources.add_or_update_pandas(name="pandas"),
        }
        self.quality_dir, self.in_memory_rows = quality_dir, in_memory_rows

    @classmethod
    def shared(cls, spark: SparkSession, quality_dir: Path, in_memory_rows: int) -> Gate:
        """The process's gate for this session and project: opening a GX project takes
        6.5 s on two cores, which every run of a new Runner paid before its first batch."""
        key = (spark, str(quality_dir), in_memory_rows)
        if key not in _GATES:
            _GATES[key] = cls(spark, quality_dir, in_memory_rows)
        return _GATES[key]

    def _checkpoint(self, name: str, rules: tuple[Rule, ...], keys: tuple[str, ...], engine: str):
        # Keyed by the rules too: a gate outlives runs (`shared`), and a table declared anew
        # in the same process (a test's scratch table) must not be checked by its old suite.
        declared = (name, repr(rules))
        if (declared, engine) not in self._checkpoints:
            gx = self._gx
            if declared not in self._suites:  # one suite for both engines
                self._suites[declared] = self.context.suites.add_or_update(gx.ExpectationSuite(
                    name=name, expectations=[e for r in rules for e in self._expectations(r)]))
            suite = self._suites[declared]
            if (name, engine) not in self._batches:
                self._batches[name, engine] = (self.sources[engine].add_dataframe_asset(name=name)
                                               .add_batch_definition_whole_dataframe("batch"))
            validation = self.context.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=f"{name} ({engine})", data=self._batches[name, engine],
                                        suite=suite))
            from great_expectations.checkpoint import UpdateDataDocsAction
            self._checkpoints[declared, engine] = self.context.checkpoints.add_or_update(gx.Checkpoint(
                name=f"{name} ({engine})", validation_definitions=[validation],
                actions=[UpdateDataDocsAction(name="data_docs", site_names=[self.SITE])],
                # COMPLETE: every failing row's key, which quarantining needs; values are
                # sampled (partial_unexpected_count) for messages and the results table.
                result_format={"result_format": "COMPLETE", "partial_unexpected_count": SAMPLE_SIZE,
                               "unexpected_index_column_names": list(keys),
                               "return_unexpected_index_query": False}))
        return self._checkpoints[declared, engine]

    def _expectations(self, rule: Rule) -> list:
        """The rule's GX expectation, and a null check beside it where the rule fails nulls;
        both carry the rule's name, and `validate` joins their outcomes into one."""
        expectations, meta = self._gx.expectations, {"rule": rule.name, "tier": rule.tier}
        found = [getattr(expectations, rule.expectation)(**dict(rule.arguments), meta=meta)]
        if rule.fails_nulls:
            found.append(expectations.ExpectColumnValuesToNotBeNull(
                column=dict(rule.arguments)["column"], meta=meta))
        return found

    def validate(self, name: str, rules: tuple[Rule, ...], keys: tuple[str, ...],
                 batch: DataFrame, now: datetime, engine: str | None = None) -> Verdict:
        """`now` is naive UTC, as Spark hands timestamps to Python (lakehouse/spark.py sets
        the zone); `engine` ("spark" or "pandas") overrides the choice by size."""
        missing = sorted({c for r in rules for c in r.columns} - set(batch.columns))
        if missing:
            raise ValueError(f"{name}: rules name columns {missing} that the table does not have "
                             f"(its columns: {', '.join(batch.columns)})")
        forget_old_runs(self.quality_dir, name)
        batch = batch.withColumns({dict(r.arguments)["column"]: _problems(r)
                                   for r in rules if r.computed})
        rows = batch.count()
        engine = engine or ("pandas" if rows <= self.in_memory_rows else "spark")
        result = self._checkpoint(name, rules, keys, engine).run(
            batch_parameters={"dataframe": _in_memory(batch) if engine == "pandas" else batch},
            expectation_parameters=expectation_parameters(rules, now))
        by_name = {r.name: r for r in rules}
        outcomes: dict[str, Outcome] = {}
        for validation in result.run_results.values():
            for found in validation.results:
                rule = by_name[found.expectation_config.meta["rule"]]
                info = found.exception_info or {}
                if info.get("raised_exception"):
                    raise ValueError(f"{name}: rule \"{rule.name}\" could not be evaluated: "
                                     f"{info.get('exception_message')}")
                detail = found.result or {}
                samples = (detail.get("partial_unexpected_list", [])[:SAMPLE_SIZE] if rule.row_level
                           else [detail.get("observed_value")])
                failing = [_key_first(row, keys) for row in detail.get("unexpected_index_list") or []]
                outcome = Outcome(rule, bool(found.success), int(detail.get("unexpected_count") or 0),
                                  [_plain(value) for value in samples], failing)
                outcomes[rule.name] = (outcomes[rule.name].joined(outcome) if rule.name in outcomes
                                       else outcome)
        judged = [outcomes[r.name] for r in rules]
        return Verdict(rows, judged, self._quarantined(keys, batch.schema, judged))

    def _quarantined(self, keys: tuple[str, ...], schema: T.StructType,
                     outcomes: list[Outcome]) -> DataFrame:
        key_fields = [schema[k] for k in keys]
        failing = [(*(row[k] for k in keys), o.rule.name, o.rule.waits_for is not None)
                   for o in outcomes if not o.success and o.rule.tier == QUARANTINE
                   for row in o.failing_keys]
        broken = self.spark.createDataFrame(failing, T.StructType(key_fields + [
            T.StructField("rule", T.StringType()), T.StructField("waiting", T.BooleanType())]))
        return broken.groupBy(*keys).agg(
            F.array_sort(F.collect_set("rule")).alias("quarantine_rules"),
            F.when(F.bool_and("waiting"), F.lit(HELD_BACK)).otherwise(F.lit(QUARANTINED))
            .alias("quarantine_status"))
