"""The hourly tick: one fleet run, which probes every store and syncs those with news."""

from __future__ import annotations

from dagster import DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, schedule

from pipelines.fleet.jobs import sync_fleet
from pipelines.fleet.run_config import FLEET_TAG, fleet_run_config
from pipelines.partitions import sync_store_partitions
from pipelines.resources import QuarryResource
from registry.accounts import list_stores


@schedule(
    job=sync_fleet,
    cron_schedule="0 * * * *",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every hour: one fleet run probes every store of the registry and syncs "
    "the ones with changes, in batches. The run's `tick` output lists what the probe found "
    "for each store.",
)
def hourly_sync(context: ScheduleEvaluationContext, quarry: QuarryResource) -> RunRequest:
    with quarry.registry.session() as session:
        store_ids = [store.id for store in list_stores(session)]
    # Each store's partition exists before the run logs events for it.
    sync_store_partitions(context.instance, store_ids)
    tick = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else ""
    return RunRequest(
        run_key=f"tick:{tick}",
        run_config=fleet_run_config(quarry.settings),
        tags={FLEET_TAG: "tick"},
    )


SCHEDULES = [hourly_sync]
