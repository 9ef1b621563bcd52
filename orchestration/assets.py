"""The translator from table declarations to Dagster: one asset per table, one asset check per
declared quality rule, one freshness check per Gold table. Nothing here names a table: a
table added to `<layer>/tables.py` is on the graph with no edit."""

import re
from datetime import UTC, datetime, timedelta

import dagster as dg

from bronze.tables import BRONZE_TABLES, BronzeTable
from lakehouse.rules import FAIL, Rule
from lakehouse.settings import Settings
from lakehouse.tables import DerivedTable, Table
from medallion.tables import derived_tables
from monitoring.state import table_states
from orchestration.policy import failure, retry_policy
from orchestration.table_jobs import TableJobFailed, latest_results, run_table

# What each report field of `lakehouse <layer> --json` is called on the asset.
BRONZE_METADATA = {
    "messages": "messages read",
    "rows": "rows written",
    "quarantined": "rows quarantined",
    "seconds": "seconds",
}
DERIVED_METADATA = {
    "mode": "mode",
    "changes_read": "rows read",
    "upserted": "rows upserted",
    "deleted": "rows deleted",
    "seconds": "seconds",
}
FRESHNESS_CHECK = "fresh_within_target"


class DerivedRun(dg.Config):
    """Run configuration of a Silver or Gold asset (the UI's launchpad, or a backfill)."""

    full_refresh: bool = False  # recompute from whole input snapshots: `--full-refresh`


def asset_key(table: Table) -> dg.AssetKey:
    return dg.AssetKey([table.layer, table.name])


def check_name(rule: Rule) -> str:
    """A rule's name as Dagster accepts it (letters, digits and underscores)."""
    return re.sub(r"\W+", "_", rule.name).strip("_") or "rule"


def tables() -> list[Table]:
    """Every table of the graph, each after the tables it reads."""
    return [*BRONZE_TABLES, *derived_tables()]


def dependencies(table: Table) -> list[Table]:
    return [i.table for i in table.inputs] if isinstance(table, DerivedTable) else []


def table_asset(table: Table, settings: Settings) -> dg.AssetsDefinition:
    rules = table.rules if isinstance(table, DerivedTable) else ()
    names = [check_name(rule) for rule in rules]
    if len(set(names)) != len(names):
        raise ValueError(
            f"table {table.name}: rule names {names} collide once made Dagster "
            f"check names; rename one in {table.layer}/tables.py"
        )
    source = f"Kafka topic `{table.topic}`" if isinstance(table, BronzeTable) else None

    decorate = dg.asset(
        key=asset_key(table),
        deps=[asset_key(t) for t in dependencies(table)],
        group_name=table.layer,
        description=table.description + (f"\n\nLands the {source}." if source else ""),
        kinds={"hudi", "spark"},
        tags={"layer": table.layer},
        metadata={
            "path": table.path(settings),
            "table type": table.table_type,
            "record key": ", ".join(table.record_key),
        },
        check_specs=[
            dg.AssetCheckSpec(
                check_name(rule),
                asset=asset_key(table),
                description=f"{rule.tier} tier: {rule.name}",
                blocking=rule.tier == FAIL,
            )
            for rule in rules
        ],
        retry_policy=retry_policy(settings),
        # One writer per layer at a time, as the command's own lock demands: a run never
        # starts a second one, and waits for the pool instead of failing on the lock.
        pool=f"lakehouse_{table.layer}",
    )

    def run(context, full_refresh: bool):
        try:
            report = run_table(table, settings, full_refresh)
        except TableJobFailed as failed:
            if not failed.retryable and isinstance(table, DerivedTable):
                # The breached rule shows failed beside the table, not only in the log.
                yield from (r for r in _check_results(table, settings) if not r.passed)
            raise failure(failed, context, settings) from None
        yield dg.MaterializeResult(
            metadata=_metadata(table, report),
            check_results=_check_results(table, settings) if isinstance(table, DerivedTable) else [],
        )

    if isinstance(table, DerivedTable):

        def materialize(context, config: DerivedRun):
            yield from run(context, config.full_refresh)
    else:

        def materialize(context):
            yield from run(context, False)

    return decorate(materialize)


def _metadata(table: Table, report: dict) -> dict:
    fields = BRONZE_METADATA if isinstance(table, BronzeTable) else DERIVED_METADATA
    metadata = {label: report[field] for field, label in fields.items() if field in report}
    reconciliation = report.get("reconciliation")
    if reconciliation:
        metadata["rows quarantined"] = reconciliation["quarantined"]
        metadata["rows held back"] = reconciliation["held_back"]
    if report.get("note"):
        metadata["note"] = report["note"]
    return metadata


def _check_results(table: DerivedTable, settings: Settings) -> list[dg.AssetCheckResult]:
    """Each rule's newest result from the results table: this run's when it validated a
    batch, the last one when it had no new input."""
    newest = latest_results(settings, table)
    results = []
    for rule in table.rules:
        found = newest.get(rule.name)
        severity = dg.AssetCheckSeverity.ERROR if rule.tier == FAIL else dg.AssetCheckSeverity.WARN
        if found is None:
            results.append(
                dg.AssetCheckResult(
                    check_name=check_name(rule),
                    passed=False,
                    severity=dg.AssetCheckSeverity.WARN,
                    description=f"never validated: {table.name} has had no new input since this "
                    f"rule was declared (`lakehouse {table.layer} --table {table.name} "
                    f"--full-refresh` validates every row)",
                )
            )
            continue
        results.append(
            dg.AssetCheckResult(
                check_name=check_name(rule),
                passed=bool(found["success"]),
                severity=severity,
                metadata={
                    "tier": rule.tier,
                    "rows checked": found["rows_checked"],
                    "unexpected rows": found["unexpected_count"],
                    "sample": found["sample_values"] or "[]",
                    "validated at (UTC)": found["validated_at"].isoformat(sep=" "),
                },
            )
        )
    return results


def freshness(behind: float | None, target: timedelta) -> tuple[bool, str]:
    """Whether a table `behind` seconds behind the source (None: unknown) meets its target."""
    if behind is None:
        return False, "how far behind the source is unknown: Kafka does not answer"
    limit = target.total_seconds()
    verdict = "within" if behind <= limit else "over"
    return behind <= limit, f"{behind:,.0f} s behind the source: {verdict} its target of {limit:,.0f} s"


def freshness_check(table: DerivedTable, settings: Settings) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=asset_key(table),
        name=FRESHNESS_CHECK,
        description=f"At most {table.fresh_within} behind the source (`fresh_within`).",
    )
    def check() -> dg.AssetCheckResult:
        state = next(s for s in table_states(settings, storage=False) if s.name == table.name)
        if state.last_commit is None:
            passed, description = False, "no commit yet"
        else:
            passed, description = freshness(state.source_lag(_utc_now()), table.fresh_within)
        return dg.AssetCheckResult(
            passed=passed, severity=dg.AssetCheckSeverity.WARN, description=description
        )

    return check


def _utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
