"""The numbers behind each dashboard panel, on a handful of rows."""

# Why one module: it mirrors dashboard/panels.py test by test and shares its builders of
# Gold rows; read beside that module, it is the panels' specification.

from datetime import date, datetime
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest
from datafusion import SessionContext

from dashboard import panels
from dashboard.panels import SalesFilter, Totals
from lakehouse.files import Storage, storage
from monitoring.state import TableState

D1, D2, D3 = date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)


def daily_sales(*rows) -> pd.DataFrame:
    """Rows of (order_date, category, region, sales, units, lines), as Gold holds them."""
    return pd.DataFrame(
        [
            {
                "order_date": d,
                "product_category": c,
                "region": r,
                "total_sales_amount": Decimal(s),
                "total_orders": lines,
                "units_sold": units,
                "line_count": lines,
            }
            for d, c, r, s, units, lines in rows
        ],
        columns=list(panels.SALES_COLUMNS),
    )


SALES = daily_sales(
    (D1, "books", "EMEA", "10.50", 1, 1),
    (D1, "toys", "APAC", "20.25", 2, 2),
    (D3, "books", "APAC", "5.00", 3, 1),
    (D3, "toys", "EMEA", "1.10", 1, 1),
)


def test_the_filter_keeps_its_dates_regions_and_categories_and_the_totals_add_up():
    chosen = panels.select_sales(SALES, SalesFilter(D1, D2, regions=("EMEA", "APAC"), categories=("books",)))
    assert panels.totals(chosen) == Totals(sales=Decimal("10.50"), units=1, lines=1)
    assert panels.totals(panels.select_sales(SALES, SalesFilter(D1, D3))) == Totals(Decimal("36.85"), 7, 5)
    assert panels.totals(panels.select_sales(SALES, SalesFilter(D2, D2))) == Totals(Decimal("0.00"), 0, 0)


def test_a_range_that_ends_before_it_starts_is_refused():
    with pytest.raises(ValueError, match=r"starts \(2026-11-03\) after it ends \(2026-11-01\)"):
        SalesFilter(D3, D1)


def test_sales_over_time_has_every_day_of_the_range_and_zero_where_nothing_sold():
    over_time = panels.sales_over_time(SALES, "region")
    assert list(over_time.index) == [D1, D2, D3]
    assert over_time.to_dict() == {
        "APAC": {D1: 20.25, D2: 0.0, D3: 5.0},
        "EMEA": {D1: 10.5, D2: 0.0, D3: 1.1},
    }
    assert panels.sales_over_time(SALES.iloc[0:0], "region").empty


def test_a_long_range_is_charted_by_month_with_empty_months_at_zero():
    sales = daily_sales(
        (date(2025, 1, 31), "books", "EMEA", "1.00", 1, 1),
        (date(2025, 1, 2), "books", "EMEA", "2.00", 1, 1),
        (date(2025, 3, 1), "toys", "EMEA", "4.00", 1, 1),
    )
    assert panels.grain(SalesFilter(date(2025, 1, 1), date(2025, 4, 3))) == "month"
    assert panels.grain(SalesFilter(date(2025, 1, 1), date(2025, 4, 2))) == "day"
    assert panels.sales_over_time(sales, "product_category", "month").to_dict() == {
        "books": {date(2025, 1, 1): 3.0, date(2025, 2, 1): 0.0, date(2025, 3, 1): 0.0},
        "toys": {date(2025, 1, 1): 0.0, date(2025, 2, 1): 0.0, date(2025, 3, 1): 4.0},
    }


def test_today_so_far_is_set_against_the_average_day_of_the_week_before_by_the_same_time():
    sales = daily_sales(
        (date(2026, 11, 10), "books", "EMEA", "70.00", 7, 14),
        (date(2026, 11, 4), "books", "EMEA", "7.00", 7, 7),
        (date(2026, 11, 3), "books", "EMEA", "1000.00", 1, 1),  # 8 days before: out
        (date(2026, 11, 11), "books", "EMEA", "3.00", 3, 3),
    )
    today, week = panels.today_against_last_week(sales, datetime(2026, 11, 11, 8, 0))
    assert today == Totals(Decimal("3.00"), 3, 3)
    # A third of the day gone: a third of the average day (11.00, 2 units, 3 lines).
    assert week == Totals(Decimal("3.67"), 1, 1)
    assert panels.today_against_last_week(sales, datetime(2026, 11, 11, 23, 59, 59))[1] == Totals(
        Decimal("11.00"), 2, 3
    )


def test_segment_counts_are_per_segment_most_first_and_follow_the_region_filter():
    segments = pd.DataFrame(
        {
            "segment": ["loyal", "champion", "loyal", "prospect"],
            "region": ["EMEA", "EMEA", "APAC", "APAC"],
            "customers": [3, 5, 4, 1],
        }
    )
    assert panels.segment_counts(segments).to_dict("records") == [
        {"segment": "loyal", "customers": 7},
        {"segment": "champion", "customers": 5},
        {"segment": "prospect", "customers": 1},
    ]
    assert panels.segment_counts(segments, ("APAC",)).to_dict("records") == [
        {"segment": "loyal", "customers": 4},
        {"segment": "prospect", "customers": 1},
    ]


def test_the_rfm_mix_counts_buyers_per_recency_and_frequency_score_with_every_score_shown():
    scores = pd.DataFrame(
        {
            "r_score": [5, 5, 1, 3],
            "f_score": [5, 5, 2, 1],
            "region": ["EMEA", "APAC", "EMEA", "APAC"],
            "customers": [4, 2, 1, 7],
        }
    )
    grid = panels.rfm_mix(scores)
    assert grid.shape == (5, 5)
    assert (grid.loc[5, "frequency 5"], grid.loc[1, "frequency 2"], grid.loc[3, "frequency 1"]) == (6, 1, 7)
    assert int(grid.to_numpy().sum()) == 14
    assert int(panels.rfm_mix(scores, ("EMEA",)).to_numpy().sum()) == 5


def test_the_demand_chart_has_every_day_with_zero_units_where_the_sku_has_no_row():
    series = pd.DataFrame(
        {"date": [D1, D3], "units_sold": [4, 2], "units_rolling_7": [14, 28]},
    )
    chart = panels.demand_chart(series, D1, D3)
    assert chart["units sold"].tolist() == [4.0, 0.0, 2.0]
    assert chart["7-day average before"].tolist()[::2] == [2.0, 4.0]
    assert "model forecast" not in chart
    forecast = pd.Series([3.5, 2.5], index=[D1, D3])
    assert panels.demand_chart(series, D1, D3, forecast)["model forecast"].tolist()[::2] == [3.5, 2.5]


def test_top_products_sum_completed_lines_in_the_filter_in_datafusion():
    lines = pa.table(
        {
            "product_id": [1, 1, 2, 3, 2, 1],
            "product_name": ["Mug", "Mug", "Pen", "Hat", "Pen", "Mug"],
            "product_category": ["home", "home", "office", "fashion", "office", "home"],
            "region": ["EMEA", "EMEA", "EMEA", "EMEA", "APAC", "EMEA"],
            "status": ["completed", "completed", "completed", "completed", "completed", "pending"],
            "order_date": [D1, D2, D1, D3, D1, D1],
            "quantity": [1, 2, 5, 1, 1, 9],
            "line_total": pa.array(
                [
                    Decimal("4.00"),
                    Decimal("8.00"),
                    Decimal("10.00"),
                    Decimal("30.00"),
                    Decimal("2.00"),
                    Decimal("36.00"),
                ],
                pa.decimal128(14, 2),
            ),
        }
    )
    context = SessionContext()
    context.sql("CREATE SCHEMA silver")
    context.register_record_batches("silver.hudi_unified_customer_orders_silver", [lines.to_batches()])
    sql = panels.top_products_query(SalesFilter(D1, D2, regions=("EMEA",), categories=("home", "office")))
    assert context.sql(sql).to_arrow_table().to_pylist() == [
        {
            "product_id": 1,
            "product_name": "Mug",
            "product_category": "home",
            "total_sales_amount": Decimal("12.00"),
            "units_sold": 3,
        },
        {
            "product_id": 2,
            "product_name": "Pen",
            "product_category": "office",
            "total_sales_amount": Decimal("10.00"),
            "units_sold": 5,
        },
    ]


def test_a_quote_in_a_filter_value_stays_inside_its_sql_string():
    sql = panels.top_products_query(SalesFilter(D1, D1, regions=("O'Hare",)))
    assert "region IN ('O''Hare')" in sql


def test_a_link_carries_the_filter_and_a_broken_link_falls_back_to_the_default():
    default = SalesFilter(D1, D3)
    shared = SalesFilter(D1, D2, regions=("EMEA", "APAC"), categories=("books",))
    assert panels.filter_from_params(panels.filter_params(shared), default) == (shared, None)
    assert panels.filter_from_params({}, default) == (default, None)
    assert panels.filter_from_params({"start": "2026-13-01"}, default) == (
        default,
        "the link's filter was ignored: month must be in 1..12",
    )
    assert panels.filter_from_params({"start": "2026-11-03", "end": "2026-11-01"}, default) == (
        default,
        "the link's filter was ignored: the date range starts (2026-11-03) after it ends (2026-11-01)",
    )


def test_the_default_filter_spans_every_day_with_sales():
    assert panels.default_filter(SALES, date(2027, 1, 1)) == SalesFilter(D1, D3)
    assert panels.default_filter(SALES.iloc[0:0], D2) == SalesFilter(D2, D2)


NOW = datetime(2026, 11, 25, 12, 0, 0)


def test_freshness_gives_each_table_its_commit_age_and_its_lag_behind_its_source():
    states = [
        TableState(
            "bronze",
            "b",
            datetime(2026, 11, 25, 11, 59, 50),
            oldest_waiting=datetime(2026, 11, 25, 11, 59, 30),
            waiting=12,
            oldest_unreflected=datetime(2026, 11, 25, 11, 59, 30),
        ),
        TableState("bronze", "b2", None, lag_known=False, source_known=False),
        TableState(
            "silver", "s", datetime(2026, 11, 25, 11, 58), oldest_unreflected=datetime(2026, 11, 25, 11, 59)
        ),
        TableState(
            "gold",
            "g",
            None,
            oldest_waiting=datetime(2026, 11, 25, 11, 57),
            oldest_unreflected=datetime(2026, 11, 25, 11, 56),
        ),
    ]
    frame = panels.freshness(states, NOW, {"s": 300.0, "g": 60.0})
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    assert [
        (
            r["table"],
            r["seconds since commit"],
            r["lag behind input (s)"],
            r["lag behind source (s)"],
            r["target (s)"],
            r["over target by (s)"],
        )
        for r in rows
    ] == [
        ("b", 10.0, 30.0, 30.0, None, None),
        ("b2", None, None, None, None, None),
        ("s", 120.0, 0.0, 60.0, 300.0, 0.0),
        ("g", None, 180.0, 240.0, 60.0, 180.0),
    ]
    assert rows[0]["messages waiting"] == 12
    assert panels.first_pass(states) == {"bronze": (1, 2), "silver": (1, 1), "gold": (0, 1)}


def test_each_table_shows_its_data_files_their_size_and_its_partitions():
    listing = [
        ("/dt_month=2026-05/a_1-0-1_20261125.parquet", 3 * 2**20),
        ("/dt_month=2026-05/.a_20261126.log.1_1-0-1", 2**20),
        ("/dt_month=2026-06/b_1-0-1_20261125.parquet", 2 * 2**20),
        ("/dt_month=2026-06/.hoodie_partition_metadata", 96),
        ("/dt_month=2026-06/.b_1-0-1_20261125.parquet.crc", 12),
        ("/.hoodie/timeline/20261125.commit", 5000),
        ("/.hoodie/hoodie.properties", 900),
    ]
    found = storage(listing)
    assert found == Storage(files=3, bytes=6 * 2**20, partitions=2)
    assert storage([("/a_1-0-1_20261125.parquet", 10)]).partitions == 1  # unpartitioned
    frame = panels.freshness(
        [TableState("bronze", "b", None, storage=found), TableState("silver", "s", None)], NOW, {}
    )
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    assert [(r["partitions"], r["data files"], r["MiB"], r["average file KiB"]) for r in rows] == [
        (2, 3, 6.0, 2048.0),
        (None, None, None, None),
    ]


def test_throughput_sums_rows_per_minute_and_table_with_zero_for_quiet_minutes():
    commits = pd.DataFrame(
        {
            "table": ["a", "a", "b", "a"],
            "completed": pd.to_datetime(
                ["2026-11-25 11:58:10", "2026-11-25 11:58:50", "2026-11-25 11:59:59", "2026-11-25 10:00:00"]
            ),
            "rows_written": [5, 7, 3, 1000],
        }
    )
    landed = panels.throughput(commits, NOW, minutes=3)
    assert [str(m) for m in landed.index] == [
        "2026-11-25 11:58:00",
        "2026-11-25 11:59:00",
        "2026-11-25 12:00:00",
    ]
    assert landed.to_dict("list") == {"a": [12, 0, 0], "b": [0, 3, 0]}


def test_a_rule_is_listed_while_its_latest_validation_fails():
    results = pd.DataFrame(
        {
            "table_name": ["t", "t", "t", "u"],
            "rule": ["price > 0", "price > 0", "customer exists", "key unique"],
            "tier": ["quarantine", "quarantine", "quarantine", "fail"],
            "success": [False, True, False, False],
            "unexpected_count": [2, 0, 1, 3],
            "sample_values": ["[-1]", None, "[7]", "[1, 1]"],
            "validated_at": pd.to_datetime(
                ["2026-11-25 11:00", "2026-11-25 11:30", "2026-11-25 11:10", "2026-11-25 11:20"]
            ),
        }
    )
    failing = panels.latest_failures(results)
    assert failing[["table_name", "rule", "unexpected_count", "sample_values"]].to_dict("records") == [
        {"table_name": "u", "rule": "key unique", "unexpected_count": 3, "sample_values": "[1, 1]"},
        {"table_name": "t", "rule": "customer exists", "unexpected_count": 1, "sample_values": "[7]"},
    ]


def test_quarantine_counts_split_held_back_from_quarantined_rows():
    counts = pd.DataFrame(
        {
            "table": ["orders", "orders", "clicks"],
            "status": ["held back", "quarantined", "quarantined"],
            "rows": [2, 1, 9],
        }
    )
    assert panels.quarantine_counts(counts).to_dict("records") == [
        {"table": "clicks", "held back": 0, "quarantined": 9, "total": 9},
        {"table": "orders", "held back": 2, "quarantined": 1, "total": 3},
    ]
