"""The two models the Gold feature tables feed, as pure functions of a feature frame: the same
frame gives the same model (fixed seeds, rows in key order), which is what makes training
again from a recorded commit reproduce it.

- Customer segmentation: k-means over each buyer's log recency, frequency and monetary
  value, standardised; customers who never bought have nothing to cluster and are left out.
- Demand: gradient-boosted trees predicting a sku's units sold on a day from the features of
  earlier days (lags, rolling sums, the last stock report, the weekday), validated on the
  last `holdout_days` days against the naive forecast "the daily average of the week before".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy
import pandas
from sklearn.cluster import KMeans
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import mean_absolute_error, silhouette_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

SEED = 7
SEGMENT_FEATURES = ("recency_days", "frequency", "monetary")
DEMAND_FEATURES = (
    "units_lag_1",
    "units_lag_7",
    "units_rolling_7",
    "units_rolling_28",
    "revenue_rolling_28",
    "stock_last_reported",
    "day_of_week",
)
# No stock report in the 28 days before: a value no report has, so the trees can split on it.
NO_STOCK_REPORT = -1.0


class NotEnoughData(RuntimeError):
    """The frame has too few rows to train on; the message says how many it has."""


@dataclass(frozen=True)
class Trained:
    model: Pipeline
    features: tuple[str, ...]
    rows: int
    params: dict
    metrics: dict[str, float]
    # A digest of what the model computes on its training rows: equal digests, equal models.
    fingerprint: str = field(default="")
    # Types in the model that skops (MLflow's safe format) cannot vouch for and loads only
    # when named: ours, since this project writes the files it reads back.
    trusted_types: tuple[str, ...] = ()


def _digest(*arrays: numpy.ndarray) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(numpy.round(numpy.asarray(array, dtype=float), 9).tobytes())
    return digest.hexdigest()[:16]


def _matrix(frame: pandas.DataFrame, columns: tuple[str, ...]) -> numpy.ndarray:
    # Decimals and nullable integers arrive as Python objects: floats for the estimators.
    return frame[list(columns)].astype(float).to_numpy()


def segmentation(features: pandas.DataFrame, clusters: int = 4) -> Trained:
    buyers = features[features["frequency"] > 0]
    if len(buyers) < clusters * 10:
        raise NotEnoughData(
            f"segmentation needs at least {clusters * 10} customers who bought, the table has {len(buyers)}"
        )
    x = _matrix(buyers, SEGMENT_FEATURES)
    model = make_pipeline(
        FunctionTransformer(numpy.log1p, inverse_func=numpy.expm1),
        StandardScaler(),
        KMeans(clusters, n_init=10, random_state=SEED),
    ).fit(x)
    labels = model.predict(x)
    kmeans = model[-1]
    return Trained(
        model,
        SEGMENT_FEATURES,
        len(buyers),
        {"clusters": clusters, "seed": SEED, "scaling": "log1p, standardised"},
        {
            "inertia": float(kmeans.inertia_),
            # On a fixed sample: the full pairwise distances grow with the square of the rows.
            "silhouette": float(
                silhouette_score(
                    model[:-1].transform(x), labels, sample_size=min(len(x), 5000), random_state=SEED
                )
            ),
            **{f"cluster_{c}_share": float((labels == c).mean()) for c in range(clusters)},
        },
        _digest(kmeans.cluster_centers_, labels),
    )


def demand_inputs(series: pandas.DataFrame) -> numpy.ndarray:
    """What the demand model reads from rows of the demand table, to train or to predict."""
    return _matrix(
        series.assign(stock_last_reported=series["stock_last_reported"].fillna(NO_STOCK_REPORT)),
        DEMAND_FEATURES,
    )


def demand(frame: pandas.DataFrame, holdout_days: int = 28) -> Trained:
    dates = pandas.to_datetime(frame["date"])
    cutoff = dates.max() - pandas.Timedelta(days=holdout_days)
    train, test = frame[dates <= cutoff], frame[dates > cutoff]
    if len(train) < 100 or test.empty:
        raise NotEnoughData(
            f"demand needs at least 100 sku-days before the last {holdout_days} days and some in "
            f"them, the table has {len(train)} and {len(test)}"
        )
    model = make_pipeline(HistGradientBoostingRegressor(random_state=SEED)).fit(
        demand_inputs(train), train["units_sold"].astype(float)
    )
    predicted = model.predict(demand_inputs(test))
    actual = test["units_sold"].astype(float)
    naive = test["units_rolling_7"].astype(float) / 7
    return Trained(
        model,
        DEMAND_FEATURES,
        len(train),
        {"holdout_days": holdout_days, "seed": SEED, "cutoff": str(cutoff.date())},
        {
            "mae": float(mean_absolute_error(actual, predicted)),
            "naive_mae": float(mean_absolute_error(actual, naive)),
            "test_rows": float(len(test)),
        },
        _digest(model.predict(demand_inputs(frame))),
        # The trees' node arrays, which skops cannot bound-check.
        ("sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",),
    )


TRAINERS = {"segmentation": segmentation, "demand": demand}
