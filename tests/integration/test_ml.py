"""Models on the Gold feature tables, against the real tables: a training reads exactly the
rows Spark's time travel sees at its commit, and training again on that commit after more
data arrived gives the same model (ml/)."""

from __future__ import annotations

import ml
from ml import features, tracking
from tests.support import drain_until_equal, run_all, run_lakehouse, run_workload


def test_a_feature_table_read_as_of_a_commit_holds_what_spark_time_travel_sees(built, spark):
    table = ml.SOURCES["demand"]
    snapshot = features.read_as_of(built, table)
    seen = spark.sql(f"SELECT * FROM {table.qualified_name} TIMESTAMP AS OF '{snapshot.completed}'")
    expected = seen.drop(*[c for c in seen.columns if c.startswith("_hoodie")]).toPandas()
    expected = expected.sort_values(list(table.record_key), ignore_index=True)[list(snapshot.frame.columns)]
    assert len(snapshot.frame) == len(expected) > 0
    assert snapshot.frame.astype(str).equals(expected.astype(str))


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
