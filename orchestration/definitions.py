"""The one `Definitions` object of the scheduled mode, built from the declarations:
`dagster-webserver -m orchestration.definitions` and `dagster-daemon run -m
orchestration.definitions` load it (`make scheduler`)."""

from __future__ import annotations

import dagster as dg

from lakehouse import settings as settings_module
from lakehouse.settings import Settings
from lakehouse.tables import LAYERS, DerivedTable
from orchestration.assets import freshness_check, table_asset, tables
from orchestration.maintenance import maintenance_job, maintenance_schedule
from orchestration.policy import schedule

EVERY_TABLE_JOB = "every_table"
FRESHNESS_JOB = "freshness"
# Often enough that a stale Gold table shows within minutes of passing its target.
FRESHNESS_CRON = "*/5 * * * *"


def layer_job(layer: str) -> str:
    return f"{layer}_tables"


def build(settings: Settings) -> dg.Definitions:
    declared = tables()
    freshness_checks = [freshness_check(t, settings) for t in declared if isinstance(t, DerivedTable)]
    # One step at a time: each is a Spark job of its own, and two cores run one well.
    jobs = [
        dg.define_asset_job(
            EVERY_TABLE_JOB,
            selection=dg.AssetSelection.all(),
            executor_def=dg.in_process_executor,
            description="Every table, each after its inputs, as `lakehouse run` does.",
        ),
        *(
            dg.define_asset_job(
                layer_job(layer),
                selection=dg.AssetSelection.groups(layer),
                executor_def=dg.in_process_executor,
                description=f"The {layer} tables alone.",
            )
            for layer in LAYERS
        ),
        dg.define_asset_job(
            FRESHNESS_JOB,
            selection=dg.AssetSelection.checks(*freshness_checks),
            executor_def=dg.in_process_executor,
            description="Whether every Silver and Gold table is within its freshness target.",
        ),
        maintenance_job(settings),
    ]
    schedules = [
        schedule(EVERY_TABLE_JOB, settings.schedule_cron, "SCHEDULE_CRON: the whole graph."),
        schedule(FRESHNESS_JOB, FRESHNESS_CRON),
        maintenance_schedule(settings),
    ]
    return dg.Definitions(
        assets=[table_asset(t, settings) for t in declared],
        asset_checks=freshness_checks,
        jobs=jobs,
        schedules=schedules,
    )


defs = build(settings_module.load())
