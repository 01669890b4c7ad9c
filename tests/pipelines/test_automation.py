"""The hourly schedule and the partitions sensor, evaluated against a real instance."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInstance,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    SensorResult,
    build_schedule_context,
    build_sensor_context,
)

from pipelines.definitions import defs
from pipelines.fleet.run_config import FLEET_TAG
from pipelines.fleet.schedules import hourly_sync
from pipelines.fleet.store_sensors import store_partitions
from pipelines.partitions import STORES_PARTITIONS
from pipelines.resources import QuarryResource
from registry.db import Registry
from registry.models import Store, utcnow


def test_hourly_schedule_requests_one_fleet_run(
    instance: DagsterInstance, store_ids: list[str]
) -> None:
    instance.add_dynamic_partitions(STORES_PARTITIONS, ["st_removed"])
    tick = datetime(2024, 6, 1, 10, tzinfo=UTC)
    with build_schedule_context(
        instance=instance,
        scheduled_execution_time=tick,
        resources={"quarry": QuarryResource()},
        repository_def=defs.get_repository_def(),
    ) as context:
        [request] = list(hourly_sync.evaluate_tick(context).run_requests or [])
    # One run probes every store (store_ids None); it syncs only those with news.
    assert isinstance(request, RunRequest) and request.tags[FLEET_TAG] == "tick"
    assert request.run_config["ops"]["probe_fleet"]["config"]["store_ids"] is None
    assert request.run_config["execution"] == {"config": {"in_process": {}}}
    assert request.run_key == f"tick:{tick.isoformat()}"
    # Each store's partition exists before the run logs events for it.
    assert sorted(instance.get_dynamic_partitions(STORES_PARTITIONS)) == sorted(store_ids)


def test_sensor_keeps_partitions_in_step_and_starts_first_syncs(
    instance: DagsterInstance, registry: Registry, store_ids: list[str]
) -> None:
    instance.add_dynamic_partitions(STORES_PARTITIONS, ["st_removed"])
    with registry.session() as session:
        synced = session.get(Store, store_ids[0])
        assert synced is not None
        synced.last_synced_at = utcnow()
    with build_sensor_context(instance=instance, resources={"quarry": QuarryResource()}) as context:
        result = store_partitions(context)
    assert isinstance(result, SensorResult)
    [add, delete] = result.dynamic_partitions_requests or []
    assert isinstance(add, AddDynamicPartitionsRequest)
    assert sorted(add.partition_keys) == sorted(store_ids)
    assert isinstance(delete, DeleteDynamicPartitionsRequest)
    assert list(delete.partition_keys) == ["st_removed"]
    [first_sync] = result.run_requests or []
    assert first_sync.run_config["ops"]["probe_fleet"]["config"]["store_ids"] == [store_ids[1]]
    assert first_sync.tags[FLEET_TAG] == "first-sync"
    assert (first_sync.run_key or "").startswith("first-sync:")
