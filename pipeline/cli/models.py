"""Models on the Gold feature tables: `lakehouse train` and `lakehouse models` (ml/)."""

from __future__ import annotations

import json


def train(subcommands) -> None:
    from ml import SOURCES

    train = subcommands.add_parser(
        "train",
        help="train a model on its Gold feature table as of a commit and record it in MLflow (no JVM)",
    )
    train.add_argument(
        "model", choices=sorted(SOURCES), help=", ".join(f"{m}: {t.name}" for m, t in SOURCES.items())
    )
    train.add_argument(
        "--as-of", help="the commit to train on, by its requested or completed time (default: the newest)"
    )
    train.add_argument("--json", action="store_true", help="print the training's record as one JSON object")
    train.set_defaults(handler=_train)


def _train(args, settings):
    import ml

    done = ml.train(settings, args.model, args.as_of)
    record = {
        "model": done.model,
        "run_id": done.recorded.run_id,
        "table": done.snapshot.table,
        "commit_completed": done.snapshot.completed,
        "rows": done.trained.rows,
        "fingerprint": done.trained.fingerprint,
        "metrics": done.trained.metrics,
        "reproduced": done.recorded.reproduced,
    }
    if args.json:
        print(json.dumps(record))
        return 0
    metrics = ", ".join(f"{name} {value:,.4g}" for name, value in done.trained.metrics.items())
    print(
        f"{done.model}: trained on {done.trained.rows:,} rows of {done.snapshot.table} as of commit "
        f"{done.snapshot.completed}; {metrics}; fingerprint {done.trained.fingerprint}; "
        f"MLflow run {done.recorded.run_id}"
    )
    if done.recorded.reproduced is not None:
        runs = ", ".join(run for run, _ in done.recorded.earlier)
        verdict = "the same model as" if done.recorded.reproduced else "NOT the same model as"
        print(f"{done.model}: {verdict} the earlier training on this commit ({runs})")
    return 0


def models(subcommands) -> None:
    from ml import SOURCES

    models = subcommands.add_parser("models", help="the recorded trainings of a model, newest first")
    models.add_argument(
        "model", choices=sorted(SOURCES), help=", ".join(f"{m}: {t.name}" for m, t in SOURCES.items())
    )
    models.set_defaults(handler=_models)


def _models(args, settings):
    from ml import tracking

    found = tracking.runs(settings, args.model)
    for run in found:
        print(json.dumps(run))
    if not found:
        print(f"no {args.model} model trained yet: `lakehouse train {args.model}`")
    return 0


SUBCOMMANDS = {"train": train, "models": models}
