"""Business view: Gold's daily sales by region and category, today against the last week,
customer segments, top products, buyers by RFM score and one sku's demand with its forecast,
for a date range, regions and categories that the page's link carries (so a filtered view
can be shared)."""

from __future__ import annotations

import streamlit as st

from dashboard import panels, ui
from gold.tables import DAILY_SALES

ui.services_strip()
st.title("RetailMax sales")


def gold_committed(states) -> bool:
    return any(s.name == DAILY_SALES.name and s.last_commit for s in states)


@st.fragment(run_every=ui.refresh_seconds())
def first_pass() -> None:
    """Until Gold's first commit: what the pipeline has done so far. Reruns the whole page
    once that commit is there."""
    states = ui.table_states()
    if gold_committed(states):
        st.rerun()
    progress = ", ".join(
        f"{layer} {done} of {declared}" for layer, (done, declared) in panels.first_pass(states).items()
    )
    running = (
        f"The pipeline's first pass is running; the first Gold commit usually comes "
        f"{ui.FIRST_GOLD_COMMIT_USUALLY}."
        if ui.pipeline_running()
        else "The pipeline is not running: `make up` starts it, `lakehouse run` makes one pass."
    )
    st.info(
        f"Gold has no data yet. Tables committed so far: {progress}. {running} The Pipeline "
        f"page shows each table; this page refreshes itself."
    )


if not gold_committed(ui.table_states()):
    first_pass()
    st.stop()

sales = ui.read(ui.daily_sales)
if sales is None:
    st.stop()
today = ui.now().date()
chosen, problem = panels.filter_from_params(st.query_params, panels.default_filter(sales, today))
if problem:
    st.warning(problem)
with st.sidebar:
    st.header("Filter")
    dates = st.date_input("Order dates", value=(chosen.start, chosen.end))
    regions = st.multiselect(
        "Regions",
        sorted(sales["region"].dropna().unique()),
        default=[r for r in chosen.regions if r in set(sales["region"])],
    )
    categories = st.multiselect(
        "Categories",
        sorted(sales["product_category"].dropna().unique()),
        default=[c for c in chosen.categories if c in set(sales["product_category"])],
    )
# While a range is being picked the widget holds its first day only.
start, end = (
    (dates[0], dates[-1]) if isinstance(dates, (tuple, list)) and dates else (chosen.start, chosen.end)
)
sales_filter = panels.SalesFilter(start, end, tuple(regions), tuple(categories))
st.query_params.from_dict(panels.filter_params(sales_filter))


def money(amount) -> str:
    return f"{amount:,.2f}"


@st.fragment(run_every=ui.refresh_seconds())
def business_panels(sales_filter: panels.SalesFilter) -> None:
    sales = ui.read(ui.daily_sales)
    if sales is None:
        return
    gold = {state.name: state for state in ui.table_states()}[DAILY_SALES.name]
    st.caption(
        f"From {DAILY_SALES.qualified_name}, completed order lines; last commit "
        f"{gold.last_commit:%Y-%m-%d %H:%M:%S} UTC. Refreshes every "
        f"{ui.refresh_seconds()} s."
    )
    chosen = panels.select_sales(sales, sales_filter)
    in_range = panels.totals(chosen)
    st.subheader(f"{sales_filter.start} to {sales_filter.end}")
    columns = st.columns(3)
    columns[0].metric("Sales", money(in_range.sales))
    columns[1].metric("Units sold", f"{in_range.units:,}")
    columns[2].metric("Order lines", f"{in_range.lines:,}")

    today, week = panels.today_against_last_week(
        panels.select_sales(sales, sales_filter, dates=False), ui.now()
    )
    st.subheader(
        f"Today so far ({ui.now():%Y-%m-%d %H:%M} UTC) against the average day of the last "
        f"{panels.WEEK} by the same time"
    )
    columns = st.columns(3)
    columns[0].metric("Sales today", money(today.sales), delta=money(today.sales - week.sales))
    columns[1].metric("Units sold today", f"{today.units:,}", delta=f"{today.units - week.units:,}")
    columns[2].metric("Order lines today", f"{today.lines:,}", delta=f"{today.lines - week.lines:,}")

    period = panels.grain(sales_filter)
    left, right = st.columns(2)
    with left:
        st.subheader(f"Sales per {period} by region")
        st.bar_chart(panels.sales_over_time(chosen, "region", period))
    with right:
        st.subheader(f"Sales per {period} by category")
        st.bar_chart(panels.sales_over_time(chosen, "product_category", period))

    left, right = st.columns(2)
    with left:
        st.subheader("Customer segments")
        segments = ui.read(ui.segments)
        if segments is not None:
            counts = panels.segment_counts(segments, sales_filter.regions)
            st.bar_chart(counts, x="segment", y="customers", horizontal=True)
    with right:
        st.subheader("Top products")
        products = ui.read(ui.top_products, panels.top_products_query(sales_filter))
        if products is not None:
            st.dataframe(
                products.astype({"total_sales_amount": float}),
                hide_index=True,
                width="stretch",
                column_order=("product_name", "product_category", "total_sales_amount", "units_sold"),
                column_config={
                    "product_name": "product",
                    "product_category": "category",
                    "total_sales_amount": st.column_config.NumberColumn("sales", format="%.2f"),
                    "units_sold": "units",
                },
            )

    left, right = st.columns(2)
    with left:
        st.subheader("Buyers by RFM score")
        scores = ui.read(ui.rfm_scores)
        if scores is not None:
            st.caption("Scores 1-5 (5: most recent, most frequent), from the segmentation features.")
            st.bar_chart(panels.rfm_mix(scores, sales_filter.regions))
    with right:
        demand_panel(sales_filter)


def demand_panel(sales_filter: panels.SalesFilter) -> None:
    skus = ui.read(ui.best_selling_skus, sales_filter.start, sales_filter.end)
    if skus is None:
        return
    if not skus:
        st.info("No sku sold in these dates.")
        return
    sku = st.selectbox("Demand for sku (best sellers in these dates)", skus)
    series = ui.read(ui.demand_series, sku)
    if series is None:
        return
    forecast = ui.read(ui.demand_forecast, sku)
    if forecast is None:
        st.caption("No demand model recorded yet: `lakehouse train demand` adds its forecast here.")
    st.line_chart(panels.demand_chart(series, sales_filter.start, sales_filter.end, forecast))


business_panels(sales_filter)
