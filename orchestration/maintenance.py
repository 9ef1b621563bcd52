"""The scheduled table services: `lakehouse maintain` over every table, as a job of its own on
MAINTENANCE_CRON (daily by default). It is not an asset: it changes files, never rows."""

from __future__ import annotations

import dagster as dg

from lakehouse.settings import Settings
from orchestration.table_jobs import TableJobFailed, maintain

MAINTENANCE_JOB = "maintenance"


def maintenance_job(settings: Settings) -> dg.JobDefinition:
    @dg.op(
        name="maintain_every_table",
        description="Compaction (Bronze), cleaning and archival of every table "
        "(operations/maintenance.py), with the writers' retention.",
        retry_policy=dg.RetryPolicy(
            max_retries=settings.scheduler_retries,
            delay=settings.scheduler_retry_delay_seconds,
            backoff=dg.Backoff.EXPONENTIAL,
        ),
    )
    def maintain_every_table(context) -> None:
        try:
            reports = maintain(settings)
        except TableJobFailed as failure:
            # A busy writer (the continuous pipeline) may be gone at the next try.
            retry = failure.retryable and context.retry_number < settings.scheduler_retries
            raise dg.Failure(description=str(failure), allow_retries=retry) from None
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
    return dg.ScheduleDefinition(
        name=MAINTENANCE_JOB,
        job_name=MAINTENANCE_JOB,
        cron_schedule=settings.maintenance_cron,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="MAINTENANCE_CRON: the table services.",
    )
