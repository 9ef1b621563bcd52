"""Models trained on the Gold feature tables, reproducibly: read a table as of a commit
(features.py), fit (models.py), record the model with the table and commit (tracking.py).

This module imports none of them: `lakehouse --help` lists the models without loading
scikit-learn or MLflow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gold.tables import CUSTOMER_SEGMENTATION_FEATURES, DEMAND_FORECASTING_TS
from lakehouse.settings import Settings
from lakehouse.tables import DerivedTable

if TYPE_CHECKING:
    from ml.features import Snapshot
    from ml.models import Trained
    from ml.tracking import Recorded

# Each model and the feature table it learns from.
SOURCES: dict[str, DerivedTable] = {
    "segmentation": CUSTOMER_SEGMENTATION_FEATURES,
    "demand": DEMAND_FORECASTING_TS,
}


@dataclass(frozen=True)
class Training:
    model: str
    snapshot: Snapshot
    trained: Trained
    recorded: Recorded


def train(settings: Settings, model: str, as_of: str | None = None) -> Training:
    """Trains `model` on its feature table as of the commit `as_of` names (the newest by
    default) and records it."""
    from ml import features, models, tracking

    snapshot = features.read_as_of(settings, SOURCES[model], as_of)
    trained = models.TRAINERS[model](snapshot.frame)
    return Training(model, snapshot, trained, tracking.record(settings, model, snapshot, trained))
