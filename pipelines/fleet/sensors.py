"""A store that failed in a fleet run is synced again alone: a one-partition `sync_stores`
run, which fails in Dagster's usual way if the store fails again (and the sync failure
sensor alerts, naming it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dagster import (
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunStatusSensorContext,
    run_status_sensor,
)

from pipelines.fleet.jobs import FAILED_STORES, sync_fleet
from pipelines.fleet.run_config import FLEET_TAG
from pipelines.instance import store_tags
from pipelines.progress import RunOutcome
from pipelines.sync.jobs import sync_stores


def _report(instance: DagsterInstance, run_id: str) -> dict[str, Any]:
    """The metadata of fleet run `run_id`'s fleet_report step; empty before it ran."""
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_OUTPUT).records
    for record in records:
        event = record.event_log_entry.dagster_event
        if event is not None and event.step_key == "fleet_report":
            return {k: v.value for k, v in event.step_output_data.metadata.items()}
    return {}


def failed_stores(instance: DagsterInstance, run_id: str) -> list[str]:
    """The stores that fleet run `run_id` reported failed."""
    return [str(s) for s in _report(instance, run_id).get(FAILED_STORES, [])]


def fleet_outcomes(instance: DagsterInstance, run_id: str) -> dict[str, RunOutcome]:
    """What fleet run `run_id` did to each store it synced, as a run per store reports it."""
    outcomes = {}
    for store_id, o in _report(instance, run_id).get("stores", {}).items():
        outcomes[store_id] = RunOutcome(
            store_id,
            o["name"],
            run_id,
            o["outcome"] == "synced",
            float(o.get("seconds", 0.0)),
            dict(o.get("rows") or {}),
            error=o.get("error"),
        )
    return outcomes


@run_status_sensor(
    run_status=DagsterRunStatus.SUCCESS,
    monitored_jobs=[sync_fleet],
    request_job=sync_stores,
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Syncs each store that failed in a fleet run again, alone.",
)
def fleet_retries(context: RunStatusSensorContext) -> Iterator[RunRequest]:
    run = context.dagster_run
    if run.tags.get(FLEET_TAG) == "cli":
        return  # `quarry sync` retries its own failed stores and waits for them
    for store_id in failed_stores(context.instance, run.run_id):
        yield RunRequest(
            run_key=f"retry:{run.run_id}:{store_id}",
            partition_key=store_id,
            tags={**store_tags(store_id, None), "quarry/retry_of": run.run_id},
        )


SENSORS = [fleet_retries]
