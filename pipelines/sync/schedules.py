"""Schedules: an hourly incremental sync of every store, daily exchange rates.

Both start RUNNING: a deployment keeps its stores fresh without anyone switching a
schedule on (an incremental sync with nothing to do costs a few seconds and no commit).
Stop them in the UI to sync only on demand."""

from collections.abc import Iterator

from dagster import DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, schedule

from pipelines.instance import store_tags
from pipelines.partitions import sync_store_partitions
from pipelines.resources import QuarryResource
from pipelines.sync.jobs import sync_exchange_rates, sync_stores
from registry.accounts import list_stores


@schedule(
    job=sync_stores,
    cron_schedule="0 * * * *",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every hour: an incremental sync of every store of the registry.",
)
def hourly_sync(context: ScheduleEvaluationContext, quarry: QuarryResource) -> Iterator[RunRequest]:
    with quarry.registry.session() as session:
        names = {store.id: store.name for store in list_stores(session)}
    sync_store_partitions(context.instance, list(names))
    tick = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else ""
    for store_id, name in names.items():
        yield RunRequest(
            run_key=f"{store_id}:{tick}",
            partition_key=store_id,
            tags=store_tags(store_id, name),
        )


@schedule(
    job=sync_exchange_rates,
    cron_schedule="15 0 * * *",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every day at 00:15 UTC: exchange rates from the provider.",
)
def daily_exchange_rates() -> RunRequest:
    return RunRequest()


SCHEDULES = [hourly_sync, daily_exchange_rates]
