"""`lakehouse status`: the services, the demo's workers, the pages beside them, the analysts'
sign-in, each table's lag behind the source against its target and what the Bronze streams
kept out, one line each."""

from __future__ import annotations

from bronze.tables import BRONZE_TABLES
from infra import stack, workers
from lakehouse.incremental import utc_now
from lakehouse.settings import Settings
from medallion.tables import freshness_targets
from monitoring import state


def show(settings: Settings) -> bool:
    """Prints the status; returns whether every service, and every worker of a running demo,
    is healthy."""
    statuses = stack.status(settings) + workers.processes(settings)
    for status in statuses:
        print(status.line())
    # The pages run with the demo only, so one that is not up fails no status check.
    for page in workers.pages(settings):
        print(page.line())
    print(
        stack.row(
            "analyst",
            "",
            "JDBC sign-in",
            f"user {settings.analyst_user}, password {settings.analyst_password}",
        )
    )
    for line in [*freshness(settings), *stream_quarantine(settings)]:
        print(line)
    return all(s.healthy for s in statuses)


def freshness(settings: Settings) -> list[str]:
    """Each written table's lag behind the source (the age of the oldest source change it
    does not reflect) and behind its input, against its freshness target."""
    now = utc_now()
    targets = freshness_targets()
    lines = []
    for table in state.table_states(settings, storage=False):
        if table.last_commit is None:
            continue
        behind, behind_input = table.source_lag(now), table.lag(now)
        target = targets.get(table.name)
        verdict = "late" if target is not None and behind is not None and behind > target else "ok"
        detail = (
            "behind the source unknown: Kafka does not answer"
            if behind is None
            else (f"{behind:,.0f} s behind the source" + (f" (target {target:,.0f} s)" if target else ""))
        )
        if behind_input:
            detail += f", {behind_input:,.0f} s behind its input"
        lines.append(stack.row("table", verdict, table.name, detail))
    return lines


def stream_quarantine(settings: Settings) -> list[str]:
    """What the Bronze streams kept out: messages quarantined by a check, and those that
    failed their batch (`not landable`, a fault no check foresaw)."""
    kept_out = state.quarantine_rows(settings)
    lines = []
    for table in BRONZE_TABLES:
        counts = kept_out[kept_out["table"] == table.name].groupby("status")["rows"].sum()
        if not counts.empty:
            kinds = ", ".join(f"{rows:,} {status}" for status, rows in sorted(counts.items()))
            lines.append(
                stack.row(
                    "stream", "kept out", table.name, f"{kinds} (see {table.quarantine.qualified_name})"
                )
            )
    return lines
