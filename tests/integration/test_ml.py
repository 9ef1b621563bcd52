"""Models on the Gold feature tables, against the real tables: a training reads exactly the
rows Spark's time travel sees at its commit, Ray Data reads what Spark reads, and training
again on that commit after more data arrived gives the same model (ml/)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pandas

import ml
from gold.tables import (
    CUSTOMER_SEGMENTATION_FEATURES,
    DEMAND_FORECASTING_TS,
    PRODUCT_RECOMMENDATION_USER_ITEM,
)
from ml import features, ray_data, tracking
from tests.support import drain_until_equal, run_all, run_lakehouse, run_workload

FEATURE_TABLES = (CUSTOMER_SEGMENTATION_FEATURES, PRODUCT_RECOMMENDATION_USER_ITEM, DEMAND_FORECASTING_TS)


def _comparable(frame: pandas.DataFrame, table, columns=None) -> pandas.DataFrame:
    """Rows in key order as text, whatever types a reader chose: numbers and decimals as floats
    (Ray hands decimals over as floats), a missing value as "None" (NaN, None or pandas' NA),
    timestamps as naive UTC (Spark's form), Hudi's columns left out. Two readers' frames of
    the same rows are then equal."""
    frame = frame[[c for c in (columns or frame.columns) if not c.startswith("_hoodie")]]
    frame = frame.sort_values(list(table.record_key), ignore_index=True)
    text = {}
    for column in frame.columns:
        values = frame[column]
        if pandas.api.types.is_numeric_dtype(values.dtype) and not pandas.api.types.is_bool_dtype(
            values.dtype
        ):
            values = values.astype("float64")
        text[column] = [_text(v) for v in values]
    return pandas.DataFrame(text)


def _text(value) -> str | None:
    if pandas.isna(value):
        return None
    if isinstance(value, Decimal):
        value = float(value)
    elif isinstance(value, datetime) and value.tzinfo:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return str(pandas.Timestamp(value)) if isinstance(value, datetime) else str(value)


def _same_rows(read: pandas.DataFrame, expected: pandas.DataFrame, table) -> str | None:
    """None when `read` holds `expected`'s rows, else the first difference of each column."""
    mine, theirs = _comparable(read, table), _comparable(expected, table, list(read.columns))
    if len(mine) != len(theirs):
        return f"{table.name}: {len(mine)} rows, expected {len(theirs)}"
    differing = [
        f"{column}: {mine[column][row]!r} != {theirs[column][row]!r} (row {row})"
        for column in mine.columns
        if (row := next((i for i, (a, b) in enumerate(zip(mine[column], theirs[column])) if a != b), None))
        is not None
    ]
    return f"{table.name}: " + "; ".join(differing) if differing else None


def _spark_rows(spark, table, as_of: str | None = None) -> pandas.DataFrame:
    travel = f" TIMESTAMP AS OF '{as_of}'" if as_of else ""
    return spark.sql(f"SELECT * FROM {table.qualified_name}{travel}").toPandas()


def test_a_feature_table_read_as_of_a_commit_holds_what_spark_time_travel_sees(built, spark):
    for table in FEATURE_TABLES:
        snapshot = features.read_as_of(built, table)
        expected = _spark_rows(spark, table, snapshot.completed)
        assert len(expected) > 0, table.name
        assert _same_rows(snapshot.frame, expected, table) is None


def test_ray_data_reads_each_feature_table_as_spark_does(built, spark):
    import ray

    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 << 20, log_to_driver=False)
    try:
        for table in FEATURE_TABLES:
            read = ray_data.read(built, table).to_pandas()
            expected = _spark_rows(spark, table)
            assert len(expected) > 0, table.name
            assert _same_rows(read, expected, table) is None
    finally:
        ray.shutdown()


def test_training_again_on_the_recorded_commit_after_more_data_arrived_gives_the_same_model(built, spark, db):
    first = {model: ml.train(built, model) for model in ml.SOURCES}
    run_workload(db, steps=40, seed=1900)
    drain_until_equal(spark, built, db)
    run_all(spark, built)

    for model, trained in first.items():
        newest = features.resolve(built, ml.SOURCES[model])
        assert newest[1] > trained.snapshot.completed, f"no new commit of {model}'s table"
        again = ml.train(built, model, as_of=trained.snapshot.completed)
        assert again.snapshot.frame.equals(trained.snapshot.frame)
        assert again.trained.fingerprint == trained.trained.fingerprint
        assert again.recorded.reproduced is True
    runs = tracking.runs(built, "segmentation")
    assert runs[0]["commit_completed"] == first["segmentation"].snapshot.completed
    assert {r["run_id"] for r in runs} >= {first["segmentation"].recorded.run_id}

    # The command line says so too.
    done = run_lakehouse(built, "train", "segmentation", "--as-of", first["segmentation"].snapshot.completed)
    assert done.returncode == 0, done.stderr
    assert "segmentation: the same model as the earlier training on this commit" in done.stdout
