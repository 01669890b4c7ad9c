"""Keep the `stores` partitions in step with the registry, and sync new stores soon."""

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from pipelines.instance import store_tags
from pipelines.partitions import partition_changes
from pipelines.resources import QuarryResource
from pipelines.sync.jobs import sync_stores
from registry.accounts import list_stores


@sensor(
    job=sync_stores,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
    description="Adds a partition for each new store and removes those of removed stores; "
    "requests a first sync of stores that never synced.",
)
def store_partitions(context: SensorEvaluationContext, quarry: QuarryResource) -> SensorResult:
    with quarry.registry.session() as session:
        stores = list(list_stores(session))
    changes = partition_changes(context.instance, [store.id for store in stores])
    first_syncs = [
        # The run key makes this once per store, however many ticks see it unsynced.
        RunRequest(run_key=f"first-sync:{s.id}", partition_key=s.id, tags=store_tags(s.id, s.name))
        for s in stores
        if s.last_synced_at is None
    ]
    return SensorResult(run_requests=first_syncs, dynamic_partitions_requests=changes.requests())


SENSORS = [store_partitions]
