"""Daily exchange rates (the hourly sync of the stores is the fleet's: pipelines.fleet).

It starts RUNNING: a deployment keeps its rates fresh without anyone switching it on."""

from dagster import DefaultScheduleStatus, RunRequest, schedule

from pipelines.sync.jobs import sync_exchange_rates


@schedule(
    job=sync_exchange_rates,
    cron_schedule="15 0 * * *",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every day at 00:15 UTC: exchange rates from the provider.",
)
def daily_exchange_rates() -> RunRequest:
    return RunRequest()


SCHEDULES = [daily_exchange_rates]
