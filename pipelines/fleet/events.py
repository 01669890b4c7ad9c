"""A store's sync as Dagster events, logged by the batch step that synced it: the
materializations of the tables it wrote and the results of its checks, each for the store's
partition, so that the UI shows every store's history as a run per store did.

Tables the sync did not touch get no event: their partition's last materialization is still
true. That keeps a small change at a few events per store instead of the 30 of a run.
"""

from __future__ import annotations

from collections.abc import Iterator

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetMaterialization,
    MetadataValue,
)

from pipelines.fleet.store_sync import StoreSync

SNAPSHOT_ASSET = "warehouse_snapshot"


def store_events(
    result: StoreSync, label: str
) -> Iterator[AssetMaterialization | AssetCheckEvaluation]:
    """The events of `result` (a store labelled `label`, "Name (id)" in metadata)."""
    partition = result.store_id
    for table, rows in result.rows.items():
        if not result.touched(table):
            continue
        yield AssetMaterialization(
            asset_key=table,
            partition=partition,
            metadata={"store": label, "rows_written": rows},
        )
    for check in result.checks:
        yield AssetCheckEvaluation(
            asset_key=AssetKey(check.table),
            check_name=check.name,
            passed=check.passed,
            # Figures labelled with the store: the UI plots each label as its own line.
            metadata={"store": label, **{f"{k} · {label}": v for k, v in check.figures.items()}},
            severity=AssetCheckSeverity.ERROR if check.blocking else AssetCheckSeverity.WARN,
            blocking=check.blocking,
            partition=partition,
        )
    if result.snapshot is not None:
        yield AssetMaterialization(
            asset_key=SNAPSHOT_ASSET,
            partition=partition,
            metadata={
                "store": label,
                "lake_version": result.snapshot.version,
                "new_snapshot": result.snapshot.recorded,
            },
        )
    elif result.error is not None:
        # The failure in the store's own history, where the UI shows its partition.
        yield AssetCheckEvaluation(
            asset_key=AssetKey(SNAPSHOT_ASSET),
            check_name="synced",
            passed=False,
            metadata={"store": label, "error": MetadataValue.text(result.error)},
            blocking=True,
            partition=partition,
            description=result.error,
        )
