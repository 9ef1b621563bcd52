"""What both pages share: the settings, cached readers and the strip that names a service
that is down. Each reader is cached for one refresh interval, so the page's own refresh and
several open browsers cost one read of each table per interval."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from dashboard import sources
from infra.workers import worker
from lakehouse import settings as lakehouse_settings
from monitoring import state

# Measured on the reference machine (2 cores) from a clean `make up` (10,000 seeded lines):
# Gold's first commit came 86 s after the command returned (docs/analysts.md, "The dashboard").
FIRST_GOLD_COMMIT_USUALLY = "about a minute and a half after `make up` returned"


@st.cache_resource
def settings() -> lakehouse_settings.Settings:
    return lakehouse_settings.load()


def refresh_seconds() -> int:
    return settings().dashboard_refresh_seconds


def now() -> datetime:
    """Naive UTC, as the tables and timelines hold times."""
    return datetime.now(UTC).replace(tzinfo=None)


_cache = st.cache_data(ttl=refresh_seconds(), show_spinner=False)


@_cache
def daily_sales() -> pd.DataFrame:
    return sources.daily_sales(settings())


@_cache
def segments() -> pd.DataFrame:
    return sources.segments(settings())


@_cache
def rfm_scores() -> pd.DataFrame:
    return sources.rfm_scores(settings())


@_cache
def best_selling_skus(start, end) -> list[str]:
    return sources.best_selling_skus(settings(), start, end)


@_cache
def demand_series(sku: str) -> pd.DataFrame:
    return sources.demand_series(settings(), sku)


@_cache
def demand_forecast(sku: str):
    return sources.demand_forecast(settings(), demand_series(sku))


@_cache
def top_products(sql: str) -> pd.DataFrame:
    return sources.top_products(settings(), sql)


@_cache
def quality_results() -> pd.DataFrame:
    return state.quality_results(settings())


@_cache
def quarantine_rows() -> pd.DataFrame:
    return state.quarantine_rows(settings())


@_cache
def bronze_commits() -> pd.DataFrame:
    return state.bronze_commits(settings())


@_cache
def table_states() -> list:
    return state.table_states(settings())


@_cache
def services() -> list:
    return state.services(settings())


@_cache
def pages() -> list:
    return state.pages(settings())


def read(reader, *args, show=st.info) -> pd.DataFrame | list | None:
    """The reader's answer, or None after showing why it has none (a table not written
    yet, a service down) in one line where the panel would be."""
    try:
        return reader(*args)
    except state.Unavailable as error:
        show(str(error))
        return None


def pipeline_running() -> bool:
    return worker(settings(), "pipeline").running()


def services_strip() -> None:
    """One warning per service that is down, and one if the continuous pipeline is not
    running: what a user should fix first, instead of a panel's stack trace."""
    for service in read(services, show=st.warning) or ():
        if not service.healthy:
            detail = f": {service.detail}" if service.detail else ""
            st.warning(
                f"**{service.name}** is down ({service.address}){detail}. "
                f"`make status` shows every service; `make up` starts what is missing."
            )
    if not pipeline_running():
        st.info(
            "The continuous pipeline is not running, so the numbers do not move: "
            "`make up` starts it, `lakehouse run` makes one pass."
        )
