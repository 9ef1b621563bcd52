"""The Gold and Silver figures the dashboard's business pages show, read without a JVM
through the read path of the pipeline's state (monitoring/state.py): daily sales, segments,
RFM scores, demand and its forecast, top products. A table not written yet raises
`state.Unavailable` with one line saying why, which the page shows in place of the panel.
"""

from __future__ import annotations

import functools

import pandas as pd

from dashboard.panels import SALES_COLUMNS
from gold.tables import CUSTOMER_SEGMENTATION_FEATURES, CUSTOMER_SEGMENTS, DAILY_SALES, DEMAND_FORECASTING_TS
from lakehouse.settings import Settings
from lakehouse.tables import Table
from monitoring import state
from monitoring.state import query
from silver.tables import UNIFIED_CUSTOMER_ORDERS


def _written_or_explain(settings: Settings, table: Table) -> None:
    if not state.written(settings, table):
        raise state.Unavailable(
            f"{table.qualified_name} has no data yet: the pipeline's first pass has not committed it."
        )


def daily_sales(settings: Settings) -> pd.DataFrame:
    _written_or_explain(settings, DAILY_SALES)
    return query(settings, f"SELECT {', '.join(SALES_COLUMNS)} FROM {DAILY_SALES.qualified_name}")


def segments(settings: Settings) -> pd.DataFrame:
    _written_or_explain(settings, CUSTOMER_SEGMENTS)
    return query(
        settings,
        f"SELECT segment, region, count(*) AS customers "
        f"FROM {CUSTOMER_SEGMENTS.qualified_name} GROUP BY segment, region",
    )


def rfm_scores(settings: Settings) -> pd.DataFrame:
    """Buyers per (r_score, f_score, region) of the segmentation features."""
    _written_or_explain(settings, CUSTOMER_SEGMENTATION_FEATURES)
    return query(
        settings,
        f"SELECT r_score, f_score, region, count(*) AS customers "
        f"FROM {CUSTOMER_SEGMENTATION_FEATURES.qualified_name} WHERE r_score IS NOT NULL "
        f"GROUP BY r_score, f_score, region",
    )


def best_selling_skus(settings: Settings, start, end, limit: int = 20) -> list[str]:
    """The skus that sold the most units between two days, most first."""
    _written_or_explain(settings, DEMAND_FORECASTING_TS)
    frame = query(
        settings,
        f"SELECT sku FROM {DEMAND_FORECASTING_TS.qualified_name} "
        f"WHERE date BETWEEN DATE '{start}' AND DATE '{end}' "
        f"GROUP BY sku ORDER BY sum(units_sold) DESC, sku LIMIT {int(limit)}",
    )
    return frame["sku"].tolist()


def demand_series(settings: Settings, sku: str) -> pd.DataFrame:
    """Every row of one sku in the demand table, by day."""
    _written_or_explain(settings, DEMAND_FORECASTING_TS)
    quoted = sku.replace("'", "''")
    return query(
        settings,
        f"SELECT * FROM {DEMAND_FORECASTING_TS.qualified_name} WHERE sku = '{quoted}' ORDER BY date",
    )


def demand_forecast(settings: Settings, series: pd.DataFrame) -> pd.Series | None:
    """The newest recorded demand model's forecast for `series`' days, by day; None when no
    model has been trained (`lakehouse train demand`)."""
    from ml import models, tracking

    recorded = tracking.runs(settings, "demand")
    if not recorded or series.empty:
        return None
    model = _recorded_model(settings, recorded[0]["run_id"])
    return pd.Series(model.predict(models.demand_inputs(series)), index=series["date"].tolist())


@functools.lru_cache(maxsize=4)
def _recorded_model(settings: Settings, run_id: str):
    # A run's model never changes: loaded once, not at every refresh.
    from ml import tracking

    return tracking.load(settings, run_id)


def top_products(settings: Settings, sql: str) -> pd.DataFrame:
    """`sql` is panels.top_products_query's, over Silver's order lines."""
    _written_or_explain(settings, UNIFIED_CUSTOMER_ORDERS)
    return query(settings, sql)
