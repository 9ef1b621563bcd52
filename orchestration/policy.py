"""What every scheduled job shares: how a failed try is retried, and how a schedule fires."""

from __future__ import annotations

import dagster as dg

from lakehouse.settings import Settings
from orchestration.table_jobs import TableJobFailed


def retry_policy(settings: Settings) -> dg.RetryPolicy:
    return dg.RetryPolicy(
        max_retries=settings.scheduler_retries,
        delay=settings.scheduler_retry_delay_seconds,
        backoff=dg.Backoff.EXPONENTIAL,
    )


def failure(failed: TableJobFailed, context, settings: Settings) -> dg.Failure:
    """The command's failure as Dagster's: retried only where retrying can help (a service
    restarting, a busy writer), and the last try failing with the command's own message,
    not with "Exceeded max_retries"."""
    retry = failed.retryable and context.retry_number < settings.scheduler_retries
    return dg.Failure(description=str(failed), allow_retries=retry)


def schedule(job: str, cron: str, description: str | None = None) -> dg.ScheduleDefinition:
    """A schedule of `job`, in UTC like every time the tables hold, running from the start."""
    return dg.ScheduleDefinition(
        name=job,
        job_name=job,
        cron_schedule=cron,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=description,
    )
