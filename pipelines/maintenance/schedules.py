"""Hourly warehouse maintenance, RUNNING by default: a pass with nothing to do costs a few
catalog queries."""

from dagster import DefaultScheduleStatus, RunRequest, schedule

from pipelines.maintenance.jobs import warehouse_maintenance


@schedule(
    job=warehouse_maintenance,
    cron_schedule="30 * * * *",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every hour at :30: warehouse maintenance.",
)
def hourly_maintenance() -> RunRequest:
    return RunRequest()


SCHEDULES = [hourly_maintenance]
