"""Trained models recorded in MLflow: a run per training, in the SQLite store under
LAKEHOUSE_MODELS_DIR (MLflow's default store since 3.7; its file store is legacy), with the
model's files beside it.

Each run names the feature table and the commit it read (both its times), so a model is
traced to the exact rows it saw, and `lakehouse train --as-of <commit>` trains on them again.
Its fingerprint (ml/models.py) says whether that gave the same model.
"""

from __future__ import annotations

import fcntl
import logging
from dataclasses import dataclass
from pathlib import Path

from lakehouse.settings import Settings
from ml.features import Snapshot
from ml.models import Trained

EXPERIMENT_PREFIX = "retailmax-"
TABLE, REQUESTED, COMPLETED, FINGERPRINT = "table", "commit_requested", "commit_completed", "fingerprint"


@dataclass(frozen=True)
class Recorded:
    run_id: str
    # Earlier runs of the same model on the same commit: their run ids and whether each
    # computed the same model.
    earlier: tuple[tuple[str, bool], ...]

    @property
    def reproduced(self) -> bool | None:
        """Whether every earlier training on this commit gave this model; None if none."""
        return all(same for _, same in self.earlier) if self.earlier else None


def _store(settings: Settings) -> Path:
    return settings.models_dir / "mlflow.db"


def _mlflow(settings: Settings):
    import mlflow

    # Its INFO lines (database migrations, experiment creation) would bury the command's.
    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    store = _store(settings)
    if not store.exists():
        _create(mlflow, store)
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    return mlflow


def _create(mlflow, store: Path) -> None:
    """Creates the store whole or not at all. MLflow creates its schema on first use in some
    forty migration steps, and a store left between two of them (its process stopped, as
    Streamlit stops a page's script when the browser leaves) is refused ever after as
    "out-of-date". So the schema is built under another name and renamed when complete,
    under a lock, since two processes may be first at once."""
    store.parent.mkdir(parents=True, exist_ok=True)
    with (store.parent / ".mlflow.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if store.exists():  # another process created it meanwhile
            return
        partial = store.with_name(f"{store.name}.creating")
        partial.unlink(missing_ok=True)
        mlflow.set_tracking_uri(f"sqlite:///{partial}")
        mlflow.search_experiments(max_results=1)
        partial.rename(store)


def _experiment(mlflow, settings: Settings, model: str) -> str:
    name = f"{EXPERIMENT_PREFIX}{model}"
    found = mlflow.get_experiment_by_name(name)
    if found:
        return found.experiment_id
    return mlflow.create_experiment(
        name, artifact_location=(settings.models_dir / "artifacts" / model).as_uri()
    )


def record(settings: Settings, model: str, snapshot: Snapshot, trained: Trained) -> Recorded:
    import sklearn

    mlflow = _mlflow(settings)
    experiment = _experiment(mlflow, settings, model)
    earlier = mlflow.search_runs(
        [experiment],
        filter_string=f"tags.{TABLE} = '{snapshot.table}' AND tags.{COMPLETED} = '{snapshot.completed}'",
        output_format="list",
    )
    tags = {
        TABLE: snapshot.table,
        REQUESTED: snapshot.requested,
        COMPLETED: snapshot.completed,
        FINGERPRINT: trained.fingerprint,
    }
    with mlflow.start_run(
        experiment_id=experiment, run_name=f"{model} as of {snapshot.completed}", tags=tags
    ) as run:
        mlflow.log_params({**trained.params, "features": ",".join(trained.features), "rows": trained.rows})
        mlflow.log_metrics(trained.metrics)
        # Named requirements: MLflow would otherwise import every package to infer them.
        mlflow.sklearn.log_model(
            trained.model,
            name="model",
            pip_requirements=[f"scikit-learn=={sklearn.__version__}"],
            skops_trusted_types=list(trained.trusted_types) or None,
        )
    return Recorded(
        run.info.run_id,
        tuple((r.info.run_id, r.data.tags.get(FINGERPRINT) == trained.fingerprint) for r in earlier),
    )


def runs(settings: Settings, model: str) -> list[dict]:
    """Every recorded training of `model`, newest first: run id, table, commit, fingerprint,
    metrics. Reading creates nothing: before the first training there is no store."""
    if not _store(settings).exists():
        return []
    mlflow = _mlflow(settings)
    found = mlflow.get_experiment_by_name(f"{EXPERIMENT_PREFIX}{model}")
    if not found:
        return []
    return [
        {
            "run_id": r.info.run_id,
            "table": r.data.tags.get(TABLE),
            "commit_completed": r.data.tags.get(COMPLETED),
            "fingerprint": r.data.tags.get(FINGERPRINT),
            "metrics": r.data.metrics,
        }
        for r in mlflow.search_runs([found.experiment_id], order_by=["start_time DESC"], output_format="list")
    ]


def load(settings: Settings, run_id: str):
    """The model a run recorded, ready to predict."""
    return _mlflow(settings).sklearn.load_model(f"runs:/{run_id}/model")
