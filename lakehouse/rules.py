"""Data-quality rules, declared beside each table as plain data.

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

Nothing here imports GX or PySpark, so declarations and whatever reads them (the catalog,
the scheduler's graph, the JVM-free path) stay light; lakehouse/quality.py's `Gate` turns
rules into GX suites and checkpoints when a run validates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

WARN, QUARANTINE, FAIL = "warn", "quarantine", "fail"
TIERS = (WARN, QUARANTINE, FAIL)
HELD_BACK, QUARANTINED = "held back", "quarantined"
# Expectations about the batch as a whole: they name no rows, so they cannot quarantine.
BATCH_EXPECTATIONS = ("ExpectTableRowCountToBeBetween", "ExpectColumnMaxToBeBetween")
# Expectations that judge a column's values and let nulls pass unjudged: a rule built on one
# also fails a null, unless it declares the column nullable (a null "channel" is not a
# known channel).
NULL_BLIND = (
    "ExpectColumnValuesToBeBetween",
    "ExpectColumnValuesToBeInSet",
    "ExpectColumnValuesToMatchRegex",
)


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
            raise ValueError(
                f"rule {self.name!r}: {self.expectation} checks the batch as a "
                f"whole, it has no rows to quarantine; use tier warn or fail"
            )

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
        return any(isinstance(value, dict) and "$PARAMETER" in value for _, value in self.arguments)

    @property
    def columns(self) -> tuple[str, ...]:
        if self.computed:
            return (self.computed[0],)
        found = dict(self.arguments)
        named = [found.get(k) for k in ("column", "column_A", "column_B")]
        return tuple(c for c in named if c) + tuple(found.get("column_list", ()))


def _rule(
    name: str, expectation: str, tier: str, waits_for: str | None = None, nullable: bool = False, **arguments
) -> Rule:
    return Rule(name, expectation, tuple(arguments.items()), tier, waits_for, nullable)


def not_null(column: str, tier: str = FAIL, name: str | None = None) -> Rule:
    return _rule(name or f"{column} is not null", "ExpectColumnValuesToNotBeNull", tier, column=column)


def unique(columns: tuple[str, ...], tier: str = FAIL) -> Rule:
    name = f"{', '.join(columns)} unique"
    if len(columns) == 1:
        return _rule(name, "ExpectColumnValuesToBeUnique", tier, column=columns[0])
    return _rule(name, "ExpectCompoundColumnsToBeUnique", tier, column_list=list(columns))


def between(
    column: str,
    minimum=None,
    maximum=None,
    tier: str = QUARANTINE,
    name: str | None = None,
    nullable: bool = False,
) -> Rule:
    default = " and ".join(
        text
        for text in (
            minimum is not None and f"{column} >= {minimum}",
            maximum is not None and f"{column} <= {maximum}",
        )
        if text
    )
    return _rule(
        name or default,
        "ExpectColumnValuesToBeBetween",
        tier,
        nullable=nullable,
        column=column,
        min_value=minimum,
        max_value=maximum,
    )


def in_set(
    column: str, values, tier: str = QUARANTINE, name: str | None = None, nullable: bool = False
) -> Rule:
    return _rule(
        name or f"{column} is known",
        "ExpectColumnValuesToBeInSet",
        tier,
        nullable=nullable,
        column=column,
        value_set=sorted(values),
    )


def matches(
    column: str, regex: str, tier: str = QUARANTINE, name: str | None = None, nullable: bool = False
) -> Rule:
    # Spark's rlike finds the pattern anywhere, so a whole-value rule must be anchored.
    if not (regex.startswith("^") and regex.endswith("$")):
        raise ValueError(f"rule on {column}: anchor the pattern with ^...$, got {regex!r}")
    return _rule(
        name or f"{column} is well formed",
        "ExpectColumnValuesToMatchRegex",
        tier,
        nullable=nullable,
        column=column,
        regex=regex,
    )


def satisfies(
    column: str,
    check: Callable[[object], str | None],
    name: str,
    tier: str = QUARANTINE,
    nullable: bool = False,
) -> Rule:
    """A row-level rule that a maintained library, not a GX expectation, knows how to judge
    (an e-mail address): `check` says why a value fails, or None. The gate computes it into
    a column `<column>_problem` beside the batch and validates that with
    ExpectColumnValuesToBeNull, so each failing row is reported with its reason. A null fails
    (`no value`) unless the rule is nullable."""
    return Rule(
        name,
        "ExpectColumnValuesToBeNull",
        (("column", f"{column}_problem"),),
        tier,
        nullable=nullable,
        computed=(column, check),
    )


def not_in_future(column: str, tier: str = QUARANTINE, nullable: bool = False) -> Rule:
    return _rule(
        f"{column} not in the future",
        "ExpectColumnValuesToBeBetween",
        tier,
        nullable=nullable,
        column=column,
        max_value={"$PARAMETER": "now"},
    )


def exists(what: str, column: str, waits_for: str, tier: str = QUARANTINE) -> Rule:
    """Referential integrity through a join: `column`, which only the referenced row
    provides, is null when `what` does not exist (yet). Rows are held back until the
    input `waits_for` brings it."""
    return _rule(f"{what} exists", "ExpectColumnValuesToNotBeNull", tier, waits_for, column=column)


def row_count(minimum: int | None = None, maximum: int | None = None, tier: str = WARN) -> Rule:
    name = (
        "batch is not empty"
        if (minimum, maximum) == (1, None)
        else f"batch has at least {minimum} rows"
        if maximum is None
        else f"batch has at most {maximum} rows"
        if minimum is None
        else f"batch has {minimum} to {maximum} rows"
    )
    return _rule(name, "ExpectTableRowCountToBeBetween", tier, min_value=minimum, max_value=maximum)


def fresh(column: str, within: timedelta, tier: str = WARN) -> Rule:
    """The batch's newest `column` is at most `within` old."""
    return _rule(
        f"newest {column} at most {_duration(within)} old",
        "ExpectColumnMaxToBeBetween",
        tier,
        column=column,
        min_value={"$PARAMETER": f"fresh_since_{within.total_seconds():.0f}"},
    )


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


class QualityGateFailed(RuntimeError):
    """A fail-tier rule broke; nothing was committed."""
