"""The models on the Gold feature tables: the same rows give the same model, and a commit the
cleaner may have thinned out is refused (ml/)."""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta
from decimal import Decimal

import numpy
import pandas
import pytest

from gold.tables import DEMAND_FORECASTING_TS
from lakehouse.settings import ConfigurationError, load
from ml import features, models, tracking


def _customers(seed: int) -> pandas.DataFrame:
    """Buyers in three clear groups (recent and frequent, lapsed, big single orders), and
    customers who never bought, typed as the feature table hands them over."""
    rng = numpy.random.default_rng(seed)
    groups = [(5, 12, 3000), (300, 2, 150), (60, 1, 2500)]
    rows = []
    for index in range(240):
        recency, frequency, monetary = groups[index % 3]
        rows.append(
            {
                "customer_id": index,
                "recency_days": int(recency + rng.integers(0, 5)),
                "frequency": int(frequency + rng.integers(0, 2)),
                "monetary": Decimal(f"{monetary + rng.integers(0, 100)}.00"),
            }
        )
    rows += [
        {"customer_id": 1000 + i, "recency_days": None, "frequency": 0, "monetary": Decimal("0.00")}
        for i in range(5)
    ]
    return pandas.DataFrame(rows)


def test_segmentation_clusters_buyers_only_and_the_same_rows_give_the_same_model():
    first, again = models.segmentation(_customers(1)), models.segmentation(_customers(1))
    assert first.rows == 240, "customers who never bought are left out"
    assert first.fingerprint == again.fingerprint
    assert first.metrics["silhouette"] > 0.5, "three clear groups are found"
    assert sum(first.metrics[f"cluster_{c}_share"] for c in range(4)) == pytest.approx(1)
    assert models.segmentation(_customers(2)).fingerprint != first.fingerprint


def test_segmentation_refuses_too_few_buyers_with_the_count():
    with pytest.raises(models.NotEnoughData, match="at least 40 customers who bought, the table has 12"):
        models.segmentation(_customers(1).head(12))


def _series(days: int) -> pandas.DataFrame:
    """Two skus whose sales follow the weekday, with the features the Gold table computes."""
    start, rows = date(2026, 1, 1), []
    for sku, scale in (("SKU-1", 10), ("SKU-2", 3)):
        sold = [scale * (1 + (start + timedelta(days=d)).weekday() % 3) for d in range(days)]
        for d in range(days):
            day = start + timedelta(days=d)
            rows.append(
                {
                    "sku": sku,
                    "date": day,
                    "units_sold": sold[d],
                    "units_lag_1": sold[d - 1] if d >= 1 else 0,
                    "units_lag_7": sold[d - 7] if d >= 7 else 0,
                    "units_rolling_7": sum(sold[max(0, d - 7) : d]),
                    "units_rolling_28": sum(sold[max(0, d - 28) : d]),
                    "revenue_rolling_28": Decimal(sum(sold[max(0, d - 28) : d]) * 5),
                    "stock_last_reported": None if d % 2 else 100,
                    "day_of_week": (day.isoweekday() % 7) + 1,
                }
            )
    return pandas.DataFrame(rows)


def test_demand_beats_the_naive_forecast_on_the_held_out_days_and_is_reproducible():
    trained = models.demand(_series(120))
    assert trained.params["cutoff"] == str(date(2026, 1, 1) + timedelta(days=119 - 28))
    assert trained.metrics["test_rows"] == 2 * 28
    assert trained.metrics["mae"] < trained.metrics["naive_mae"]
    assert models.demand(_series(120)).fingerprint == trained.fingerprint


def test_demand_refuses_a_series_too_short_to_hold_days_out():
    with pytest.raises(models.NotEnoughData, match="at least 100 sku-days before the last 28 days"):
        models.demand(_series(40))


def _timeline(root, *instants: str):
    """A table directory whose timeline holds the given `<requested>_<completed>.<action>`
    files, which is all the commit lookup reads."""
    folder = root / "gold" / DEMAND_FORECASTING_TS.name / ".hoodie" / "timeline"
    folder.mkdir(parents=True)
    for name in instants:
        (folder / name).touch()


def test_a_commit_is_found_by_either_time_and_refused_once_the_cleaner_may_have_thinned_it(tmp_path):
    settings = dataclasses.replace(load(), warehouse=str(tmp_path), commits_retained=2)
    _timeline(
        tmp_path,
        "001_002.commit",
        "003_004.commit",
        "005_006.replacecommit",
        "007_008.commit",
        "009.commit.requested",  # in flight: not a commit yet
    )
    assert features.resolve(settings, DEMAND_FORECASTING_TS) == ("007", "008")
    assert features.resolve(settings, DEMAND_FORECASTING_TS, "005") == ("005", "006")
    assert features.resolve(settings, DEMAND_FORECASTING_TS, "006") == ("005", "006")
    with pytest.raises(ConfigurationError, match="more than HUDI_COMMITS_RETAINED .2. commits old"):
        features.resolve(settings, DEMAND_FORECASTING_TS, "004")
    with pytest.raises(ConfigurationError, match="has no commit 010 on its active timeline"):
        features.resolve(settings, DEMAND_FORECASTING_TS, "010")


def test_a_savepoint_keeps_an_old_commit_trainable(tmp_path):
    settings = dataclasses.replace(load(), warehouse=str(tmp_path), commits_retained=1)
    _timeline(tmp_path, "001_002.commit", "001_003.savepoint", "004_005.commit")
    assert features.resolve(settings, DEMAND_FORECASTING_TS, "002") == ("001", "002")


def test_a_table_without_data_says_to_run_the_pipeline(tmp_path):
    settings = dataclasses.replace(load(), warehouse=str(tmp_path))
    with pytest.raises(ConfigurationError, match="has no data yet .* run `lakehouse run` first"):
        features.resolve(settings, DEMAND_FORECASTING_TS)


def test_reading_the_model_store_creates_nothing_and_a_half_built_one_is_replaced(tmp_path):
    settings = dataclasses.replace(load(), models_dir=tmp_path)
    assert tracking.runs(settings, "demand") == []
    assert list(tmp_path.iterdir()) == []
    # What a creation stopped between two of MLflow's migrations leaves behind.
    (tmp_path / "mlflow.db.creating").write_bytes(b"half a schema")
    customers = _customers(1)
    snapshot = features.Snapshot("gold.t", "001", "002", customers)
    recorded = tracking.record(settings, "segmentation", snapshot, models.segmentation(customers))
    assert not (tmp_path / "mlflow.db.creating").exists()
    assert [r["run_id"] for r in tracking.runs(settings, "segmentation")] == [recorded.run_id]
