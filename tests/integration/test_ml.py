"""Models on the Gold feature tables, against the real tables: a training reads exactly the
rows Spark's time travel sees at its commit, Ray Data reads what Spark reads, and training
again on that commit after more data arrived gives the same model (ml/)."""

from __future__ import annotations

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
    """Rows in key order as text, timestamps as naive UTC (Spark's form), Hudi's columns
    left out: two readers' frames of the same rows are then equal."""
    frame = frame[[c for c in (columns or frame.columns) if not c.startswith("_hoodie")]]
    for column in frame.columns:
        if isinstance(frame[column].dtype, pandas.DatetimeTZDtype):
            frame = frame.assign(**{column: frame[column].dt.tz_convert(None)})
    return frame.sort_values(list(table.record_key), ignore_index=True).astype(str)


def _spark_rows(spark, table, as_of: str | None = None) -> pandas.DataFrame:
    travel = f" TIMESTAMP AS OF '{as_of}'" if as_of else ""
    return spark.sql(f"SELECT * FROM {table.qualified_name}{travel}").toPandas()


def test_a_feature_table_read_as_of_a_commit_holds_what_spark_time_travel_sees(built, spark):
    for table in FEATURE_TABLES:
        snapshot = features.read_as_of(built, table)
        expected = _spark_rows(spark, table, snapshot.completed)
        assert len(snapshot.frame) == len(expected) > 0, table.name
        columns = list(snapshot.frame.columns)
        assert _comparable(snapshot.frame, table).equals(_comparable(expected, table, columns)), table.name


def test_ray_data_reads_each_feature_table_as_spark_does(built, spark):
    import ray

    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 << 20, log_to_driver=False)
    try:
        for table in FEATURE_TABLES:
            read = ray_data.read(built, table).to_pandas()
            expected = _spark_rows(spark, table)
            assert len(read) == len(expected) > 0, table.name
            columns = list(read.columns)
            assert _comparable(read, table).equals(_comparable(expected, table, columns)), table.name
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
