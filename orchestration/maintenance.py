"""The scheduled table services: `lakehouse maintain` over every table, as a job of its own on
MAINTENANCE_CRON (daily by default). It is not an asset: it changes files, never rows."""

from __future__ import annotations

import dagster as dg

from lakehouse.settings import Settings
from orchestration.policy import failure, retry_policy, schedule
from orchestration.table_jobs import TableJobFailed, maintain

MAINTENANCE_JOB = "maintenance"


def maintenance_job(settings: Settings) -> dg.JobDefinition:
    @dg.op(
        name="maintain_every_table",
        description="Compaction (Bronze), cleaning and archival of every table "
        "(operations/maintenance.py), with the writers' retention.",
        retry_policy=retry_policy(settings),
    )
    def maintain_every_table(context) -> None:
        try:
            reports = maintain(settings)
        except TableJobFailed as failed:
            # A busy writer (the continuous pipeline) may be gone at the next try.
            raise failure(failed, context, settings) from None
        context.add_output_metadata(
            {
                r["table"]: (
                    f"{', '.join(r['services'])}: snapshot files "
                    f"{r['before']['snapshot_files']} -> {r['after']['snapshot_files']}, "
                    f"stored files {r['before']['files']} -> {r['after']['files']}"
                )
                for r in reports
            }
        )

    @dg.job(
        name=MAINTENANCE_JOB,
        executor_def=dg.in_process_executor,
        description="Hudi's table services over every table (`lakehouse maintain`).",
    )
    def maintenance():
        maintain_every_table()

    return maintenance


def maintenance_schedule(settings: Settings) -> dg.ScheduleDefinition:
    return schedule(MAINTENANCE_JOB, settings.maintenance_cron, "MAINTENANCE_CRON: the table services.")
