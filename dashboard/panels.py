"""What each panel of the dashboard shows, as pure functions of small frames.

Nothing here reads a table, a clock or a service: `sources.py` and monitoring/state.py do
the reading and the pages pass their frames in, so every number on the page is computed by
a function tested on a handful of rows (tests/unit/test_dashboard.py).
"""

# Why one module: it is the pages' whole arithmetic, one small pure function per panel, and
# the unit tests read against it as one specification; split by page, the pages' shared
# filter and totals would have to live in a third module both import.

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # the pages pass the states in; reading them is monitoring/state.py's
    from monitoring.state import TableState

# Gold's daily sales by (order_date, product_category, region), as sources.daily_sales reads it.
SALES_COLUMNS = (
    "order_date",
    "product_category",
    "region",
    "total_sales_amount",
    "total_orders",
    "units_sold",
    "line_count",
)
WEEK = 7
# Days in the longest range charted day by day.
MAX_DAILY_BARS = 92


@dataclass(frozen=True)
class SalesFilter:
    """The business view's filter: an inclusive date range, and regions and categories
    (empty means all)."""

    start: date
    end: date
    regions: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    def __post_init__(self):
        if self.start > self.end:
            raise ValueError(f"the date range starts ({self.start}) after it ends ({self.end})")


@dataclass(frozen=True)
class Totals:
    sales: Decimal
    units: int
    lines: int


def default_filter(daily_sales: pd.DataFrame, today: date) -> SalesFilter:
    """Every day with sales (today alone, before any)."""
    return SalesFilter(
        start=min(daily_sales["order_date"], default=today), end=max(daily_sales["order_date"], default=today)
    )


def filter_from_params(params: Mapping[str, str], default: SalesFilter) -> tuple[SalesFilter, str | None]:
    """The filter a link's query string names (`start`, `end`: ISO dates; `region`,
    `category`: comma-separated), the default for what it leaves out, and what was wrong
    with it, if anything (the default is used instead)."""
    try:
        start = date.fromisoformat(params["start"]) if params.get("start") else default.start
        end = date.fromisoformat(params["end"]) if params.get("end") else default.end
        return SalesFilter(start, end, _listed(params.get("region")), _listed(params.get("category"))), None
    except ValueError as error:
        return default, f"the link's filter was ignored: {error}"


def filter_params(sales_filter: SalesFilter) -> dict[str, str]:
    """The query string of `filter_from_params` for this filter."""
    params = {"start": sales_filter.start.isoformat(), "end": sales_filter.end.isoformat()}
    if sales_filter.regions:
        params["region"] = ",".join(sales_filter.regions)
    if sales_filter.categories:
        params["category"] = ",".join(sales_filter.categories)
    return params


def _listed(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def select_sales(daily_sales: pd.DataFrame, sales_filter: SalesFilter, dates: bool = True) -> pd.DataFrame:
    """The groups in the filter's regions and categories (and dates, unless `dates` is
    false: today's totals look at their own days)."""
    keep = pd.Series(True, index=daily_sales.index)
    if dates:
        keep &= daily_sales["order_date"].between(sales_filter.start, sales_filter.end)
    if sales_filter.regions:
        keep &= daily_sales["region"].isin(sales_filter.regions)
    if sales_filter.categories:
        keep &= daily_sales["product_category"].isin(sales_filter.categories)
    return daily_sales[keep]


def totals(sales: pd.DataFrame) -> Totals:
    """Sales amount, units and order lines over the groups given: all three add up across
    groups (orders do not: one order's lines may fall in several categories)."""
    return Totals(
        sales=sum(sales["total_sales_amount"], Decimal("0.00")),
        units=int(sales["units_sold"].sum()),
        lines=int(sales["line_count"].sum()),
    )


def grain(sales_filter: SalesFilter) -> str:
    """Days for a range of up to three months, months beyond: a chart keeps readable bars."""
    return "day" if (sales_filter.end - sales_filter.start).days < MAX_DAILY_BARS else "month"


def sales_over_time(sales: pd.DataFrame, by: str, period: str = "day") -> pd.DataFrame:
    """Sales amount per day or month (rows: every period of the range, a month named by its
    first day) and per value of `by` (columns), in floats for the chart; a period without
    sales shows as 0, not as a gap."""
    if sales.empty:
        return pd.DataFrame(dtype=float)
    days = pd.to_datetime(sales["order_date"])
    when = days.dt.to_period("M").dt.start_time if period == "month" else days
    frequency = "MS" if period == "month" else "D"
    periods = pd.date_range(when.min(), when.max(), freq=frequency)
    amounts = sales.assign(period=when, amount=sales["total_sales_amount"].astype(float))
    table = amounts.pivot_table(index="period", columns=by, values="amount", aggfunc="sum")
    table = table.reindex(periods, fill_value=0.0).fillna(0.0)
    table.index = table.index.date
    return table.rename_axis(index=period, columns=by)


def today_against_last_week(sales: pd.DataFrame, now: datetime) -> tuple[Totals, Totals]:
    """Today's totals so far, and what the average day of the WEEK days before it had sold
    by the same time of day (rounded to cents and whole units), over the groups given.

    Gold's daily sales have no time of day, so "by the same time" is the average day scaled
    by the share of today gone: a day half over is compared with half an average day, not
    with a whole one."""
    today = now.date()
    week = sales[sales["order_date"].between(today - timedelta(days=WEEK), today - timedelta(days=1))]
    week_totals = totals(week)
    share = Decimal((now - datetime.combine(today, datetime.min.time(), now.tzinfo)).total_seconds()) / 86_400
    by_now = Totals(
        sales=(week_totals.sales * share / WEEK).quantize(Decimal("0.01")),
        units=round(week_totals.units * share / WEEK),
        lines=round(week_totals.lines * share / WEEK),
    )
    return totals(sales[sales["order_date"] == today]), by_now


def segment_counts(segments: pd.DataFrame, regions: tuple[str, ...] = ()) -> pd.DataFrame:
    """Customers per segment, most first, from (segment, region, customers) rows."""
    if regions:
        segments = segments[segments["region"].isin(regions)]
    counts = segments.groupby("segment", as_index=False)["customers"].sum()
    return counts.sort_values(["customers", "segment"], ascending=[False, True], ignore_index=True)


def rfm_mix(scores: pd.DataFrame, regions: tuple[str, ...] = ()) -> pd.DataFrame:
    """Buyers per recency score (rows, 1-5) and frequency score (columns, 1-5), zero where
    none, from (r_score, f_score, region, customers) rows of the segmentation features."""
    if regions:
        scores = scores[scores["region"].isin(regions)]
    grid = scores.pivot_table(
        index="r_score", columns="f_score", values="customers", aggfunc="sum", fill_value=0
    )
    grid = grid.reindex(index=range(1, 6), columns=range(1, 6), fill_value=0).astype(int)
    grid.index.name = "recency score"
    grid.columns = [f"frequency {f}" for f in grid.columns]
    return grid


def demand_chart(
    series: pd.DataFrame, start: date, end: date, forecast: pd.Series | None = None
) -> pd.DataFrame:
    """One sku's units sold per day in [start, end] (zero on days without a row), beside the
    naive forecast (the daily average of the week before, from the table's own feature)
    and, when a model was trained, its forecast; indexed by day."""
    days = pd.date_range(start, end, freq="D").date
    frame = series.set_index("date").reindex(days)
    chart = pd.DataFrame(
        {
            "units sold": frame["units_sold"].fillna(0).astype(float),
            "7-day average before": frame["units_rolling_7"].astype(float) / WEEK,
        },
        index=pd.Index(days, name="date"),
    )
    if forecast is not None:
        chart["model forecast"] = forecast.reindex(days).astype(float)
    return chart


def top_products_query(sales_filter: SalesFilter, limit: int = 10) -> str:
    """SQL over Silver's order lines (Gold has no product grain) for the products that sold
    most in the filter, by the same rule as Gold's daily sales: completed lines only."""
    conditions = [
        "status = 'completed'",
        f"order_date BETWEEN DATE '{sales_filter.start}' AND DATE '{sales_filter.end}'",
    ]
    for column, values in (("region", sales_filter.regions), ("product_category", sales_filter.categories)):
        if values:
            conditions.append(f"{column} IN ({', '.join(_literal(v) for v in values)})")
    return (
        f"SELECT product_id, product_name, product_category, "
        f"sum(line_total) AS total_sales_amount, sum(quantity) AS units_sold "
        f"FROM silver.hudi_unified_customer_orders_silver "
        f"WHERE {' AND '.join(conditions)} "
        f"GROUP BY product_id, product_name, product_category "
        f"ORDER BY total_sales_amount DESC, product_id LIMIT {int(limit)}"
    )


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# The pipeline view.


FRESHNESS_COLUMNS = [
    "layer",
    "table",
    "last commit (UTC)",
    "seconds since commit",
    "lag behind input (s)",
    "lag behind source (s)",
    "target (s)",
    "over target by (s)",
    "messages waiting",
    "partitions",
    "data files",
    "MiB",
    "average file KiB",
]


def freshness(states: list[TableState], now: datetime, targets: Mapping[str, float]) -> pd.DataFrame:
    """Per table: its last commit, how long ago, its lag behind its input (how long the
    oldest change it has not taken yet has waited there) and behind the source (the age of
    the oldest source change it does not reflect), against its freshness target (seconds,
    by table name); and its data files (every version the cleaner keeps), where many small
    ones would show."""
    rows = [
        {
            "layer": s.layer,
            "table": s.name,
            "last commit (UTC)": s.last_commit,
            "seconds since commit": _seconds(now, s.last_commit),
            "lag behind input (s)": _round(s.lag(now)),
            "lag behind source (s)": _round(s.source_lag(now)),
            "target (s)": targets.get(s.name),
            "over target by (s)": (
                _round(max(0.0, s.source_lag(now) - targets[s.name]))
                if s.name in targets and s.source_lag(now) is not None
                else None
            ),
            "messages waiting": s.waiting,
            **(
                {
                    "partitions": s.storage.partitions,
                    "data files": s.storage.files,
                    "MiB": round(s.storage.bytes / 2**20, 2),
                    "average file KiB": round(s.storage.average_bytes / 2**10, 1),
                }
                if s.storage
                else {}
            ),
        }
        for s in states
    ]
    return pd.DataFrame(rows, columns=FRESHNESS_COLUMNS)


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _seconds(now: datetime, then: datetime | None) -> float | None:
    return None if then is None else round(max((now - then).total_seconds(), 0.0), 1)


def first_pass(states: list[TableState]) -> dict[str, tuple[int, int]]:
    """Per layer, how many of its tables have committed, of how many: what the first pass
    has done so far."""
    done: dict[str, tuple[int, int]] = {}
    for state in states:
        committed, declared = done.get(state.layer, (0, 0))
        done[state.layer] = (committed + (state.last_commit is not None), declared + 1)
    return done


def throughput(commits: pd.DataFrame, now: datetime, minutes: int = 30) -> pd.DataFrame:
    """Rows landed per minute and table over the last `minutes`, from Bronze's delta commits
    (table, completed, rows_written); a minute without commits shows as 0."""
    since = (now - timedelta(minutes=minutes - 1)).replace(second=0, microsecond=0)
    recent = commits[commits["completed"] >= since]
    minutes_index = pd.date_range(since, now.replace(second=0, microsecond=0), freq="min")
    if recent.empty:
        return pd.DataFrame(index=minutes_index.rename("minute"), dtype=float)
    per_minute = recent.assign(minute=recent["completed"].dt.floor("min")).pivot_table(
        index="minute", columns="table", values="rows_written", aggfunc="sum"
    )
    return per_minute.reindex(minutes_index, fill_value=0).fillna(0).rename_axis(index="minute")


def latest_failures(results: pd.DataFrame, limit: int = 20) -> pd.DataFrame:
    """The rules whose latest validation failed, newest first, with that validation's
    unexpected count and sample: a rule that failed once and passed since is not listed."""
    latest = results.sort_values("validated_at", ascending=False).drop_duplicates(["table_name", "rule"])
    failing = latest[~latest["success"].astype(bool)]
    return (
        failing[["validated_at", "table_name", "rule", "tier", "unexpected_count", "sample_values"]]
        .head(limit)
        .reset_index(drop=True)
    )


def quarantine_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """Rows per quarantine table and status (held back waiting for a missing input row,
    quarantined, or a Bronze message not landable), from (table, status, rows); the tables
    with most rows first."""
    table = counts.pivot_table(index="table", columns="status", values="rows", aggfunc="sum", fill_value=0)
    table["total"] = table.sum(axis=1)
    return table.sort_values(["total"], ascending=False).reset_index()
