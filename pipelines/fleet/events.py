"""A store's sync as Dagster events, logged by the batch step that synced it: the
materializations of the tables it wrote and the results of its checks, each for the store's
partition, so that the UI shows every store's history as a run per store did.

Each event is a write to Dagster's storage, the largest cost of a small store's sync
(docs/benchmark.md, "Fleet"), so a store logs only what says something:
- a materialization of each table it wrote (a table it did not touch keeps its last one,
  still true), and of `warehouse_snapshot` when it published;
- one `synced` check on `warehouse_snapshot`: passed, with every table check's figures in
  its metadata, or failed with the error;
- a table's own check result when it failed or warned, or for every table check with
  QUARRY_FLEET_TABLE_CHECKS=all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetMaterialization,
    MetadataValue,
    OpExecutionContext,
)

# Dagster's batched event writes have no public entry point for an op (1.13): the
# materializations go through the same constructor `log_event` uses, with batch metadata.
from dagster._core.events import DagsterEvent, DagsterEventBatchMetadata, generate_event_batch_id

from pipelines.fleet.store_sync import StoreSync
from pipelines.sync.table_stats import CheckOutcome

SNAPSHOT_ASSET = "warehouse_snapshot"


@dataclass
class StoreEvents:
    """What the batch step logs for one store."""

    materializations: list[AssetMaterialization] = field(default_factory=list)
    checks: list[AssetCheckEvaluation] = field(default_factory=list)


def store_events(result: StoreSync, label: str, *, every_check: bool = False) -> StoreEvents:
    """The events of `result` (a store labelled `label`, "Name (id)" in metadata); every
    table check's own result when `every_check`."""
    partition = result.store_id
    events = StoreEvents()
    for table, rows in result.rows.items():
        if result.touched(table):
            events.materializations.append(
                AssetMaterialization(
                    asset_key=table,
                    partition=partition,
                    metadata={"store": label, "rows_written": rows},
                )
            )
    for check in result.checks:
        if every_check or not check.passed:
            events.checks.append(_table_check(check, partition, label))
    if result.snapshot is not None:
        events.materializations.append(
            AssetMaterialization(
                asset_key=SNAPSHOT_ASSET,
                partition=partition,
                metadata={
                    "store": label,
                    "lake_version": result.snapshot.version,
                    "new_snapshot": result.snapshot.recorded,
                },
            )
        )
    events.checks.append(_synced(result, partition, label))
    return events


def _table_check(check: CheckOutcome, partition: str, label: str) -> AssetCheckEvaluation:
    return AssetCheckEvaluation(
        asset_key=AssetKey(check.table),
        check_name=check.name,
        passed=check.passed,
        # Figures labelled with the store: the UI plots each label as its own line.
        metadata={"store": label, **{f"{k} · {label}": v for k, v in check.figures.items()}},
        severity=AssetCheckSeverity.ERROR if check.blocking else AssetCheckSeverity.WARN,
        blocking=check.blocking,
        partition=partition,
    )


def _synced(result: StoreSync, partition: str, label: str) -> AssetCheckEvaluation:
    """The store's sync in its partition's history: passed with every table check's
    outcome and figures, or failed with the error."""
    checks = {f"{c.table}.{c.name}": {"passed": c.passed, **c.figures} for c in result.checks}
    metadata: dict[str, object] = {"store": label, "checks": MetadataValue.json(checks)}
    if result.error is not None:
        metadata["error"] = MetadataValue.text(result.error)
    return AssetCheckEvaluation(
        asset_key=AssetKey(SNAPSHOT_ASSET),
        check_name="synced",
        passed=result.error is None,
        metadata=metadata,  # type: ignore[arg-type]
        blocking=True,
        partition=partition,
        description=result.error,
    )


# Materializations stored per write to Dagster's storage: PostgreSQL's storage inserts a
# batch in one statement (about 3 ms an event against 10-50 ms one by one, measured);
# SQLite's writes them one by one either way.
MATERIALIZATIONS_PER_WRITE = 500


def log_events(context: OpExecutionContext, events: Sequence[StoreEvents]) -> None:
    """Log the stores' events from the batch step: materializations first, in batches
    (Dagster's own batched writes, as it writes the partitions of a range run), then the
    check results."""
    materializations = [m for store in events for m in store.materializations]
    # Dagster reads it at each event; only events sent with batch metadata are affected.
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", str(MATERIALIZATIONS_PER_WRITE))
    step = context.get_step_execution_context()
    batch = generate_event_batch_id()
    for index, materialization in enumerate(materializations):
        # What `context.log_event` does, with the batch metadata it cannot pass.
        DagsterEvent.asset_materialization(
            step,
            materialization,
            DagsterEventBatchMetadata(batch, index == len(materializations) - 1),
        )
    for store in events:
        for check in store.checks:
            context.log_event(check)  # type: ignore[arg-type]  # checks too, since 1.9
