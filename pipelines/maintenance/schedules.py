"""Hourly warehouse maintenance, RUNNING by default: a pass with nothing to do costs a few
catalog queries and a read of the rollup tables' keys."""

from dagster import DefaultScheduleStatus, RunRequest, schedule

from pipelines.maintenance.jobs import dagster_run_retention, warehouse_maintenance


@schedule(
    job=warehouse_maintenance,
    cron_schedule="30 * * * *",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every hour at :30: warehouse maintenance.",
)
def hourly_maintenance() -> RunRequest:
    return RunRequest()


@schedule(
    job=dagster_run_retention,
    cron_schedule="45 3 * * *",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every day at 03:45 UTC: old Dagster runs and their events deleted.",
)
def daily_run_retention() -> RunRequest:
    return RunRequest()


SCHEDULES = [hourly_maintenance, daily_run_retention]
