"""Old Dagster runs go, with their events: Dagster's own `retention:` setting prunes only
schedule and sensor ticks, and a fleet's hourly runs and their events would grow without
bound.

A finished run older than QUARRY_RUN_RETENTION_DAYS is deleted unless it holds the latest
materialization of some asset partition or the latest result of some asset check partition:
deleting it would take that event with it, and the UI would show the store's partition as
never materialized (or never checked). Runs still queued or in progress are never touched.
The values a fleet run handed from step to step (quarry.files.run_files) go with the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from dagster import (
    AssetCheckKey,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    EventRecordsFilter,
    RunsFilter,
)

from quarry.files import FileStore

FINISHED = [DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
# Runs looked at per pass of the loop (each deletion is a few statements).
PAGE = 500


@dataclass(frozen=True)
class Pruned:
    deleted: int
    kept_for_history: int


def runs_holding_latest_events(
    instance: DagsterInstance, assets: Iterable[AssetKey], checks: Sequence[AssetCheckKey]
) -> set[str]:
    """The runs that logged some partition's latest materialization of `assets`, or some
    partition's latest result of `checks`."""
    storage = instance.event_log_storage
    runs: set[str] = set()
    materializations: list[int] = []
    for key in assets:
        by_partition = storage.get_latest_storage_id_by_partition(
            key, DagsterEventType.ASSET_MATERIALIZATION
        )
        materializations.extend(by_partition.values())
        latest = instance.get_latest_materialization_event(key)  # unpartitioned assets
        if latest is not None:
            runs.add(latest.run_id)
    evaluations = [
        info.latest_check_event_storage_id
        for info in storage.get_asset_check_partition_info(list(checks))
        if info.latest_check_event_storage_id is not None
    ]
    for kind, ids in (
        (DagsterEventType.ASSET_MATERIALIZATION, materializations),
        (DagsterEventType.ASSET_CHECK_EVALUATION, evaluations),
    ):
        for start in range(0, len(ids), PAGE):
            chunk = ids[start : start + PAGE]
            records = storage.get_event_records(
                EventRecordsFilter(event_type=kind, storage_ids=chunk), limit=len(chunk)
            )
            runs.update(record.run_id for record in records)
    # The latest check result of an unpartitioned check is recorded per key too.
    for record in storage.get_latest_asset_check_execution_by_key(list(checks)).values():
        runs.add(record.run_id)
    return runs


def prune_runs(
    instance: DagsterInstance,
    before: datetime,
    protected: set[str],
    files: FileStore | None = None,
) -> Pruned:
    """Delete the finished runs last updated before `before`, except `protected` ones."""
    candidates: list[str] = []
    cursor: str | None = None
    while True:
        records = instance.get_run_records(
            RunsFilter(statuses=FINISHED, updated_before=before), limit=PAGE, cursor=cursor
        )
        if not records:
            break
        candidates.extend(record.dagster_run.run_id for record in records)
        cursor = records[-1].dagster_run.run_id
    doomed = [run_id for run_id in candidates if run_id not in protected]
    for run_id in doomed:
        instance.delete_run(run_id)
        if files is not None:
            files.remove(run_id)
    return Pruned(deleted=len(doomed), kept_for_history=len(candidates) - len(doomed))
