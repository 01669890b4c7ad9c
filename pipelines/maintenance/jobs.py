"""The maintenance jobs: one pass over the whole lake; the sales rollups rebuilt from the
facts; Dagster's old runs pruned."""

from datetime import timedelta

from dagster import (
    Config,
    MetadataValue,
    OpExecutionContext,
    Output,
    in_process_executor,
    job,
    op,
)

from pipelines.maintenance.rollups import compact_rollups, rebuild_rollups
from pipelines.maintenance.run_retention import prune_runs, runs_holding_latest_events
from pipelines.resources import QuarryResource
from pipelines.run_logger import LOGGERS_CONFIG
from quarry.files import run_files
from registry.models import utcnow
from warehouse.maintenance import maintain


@op(
    description="Compact the sales rollups (merge the rows the syncs appended), flush "
    "inlined rows, merge small files, rewrite files heavy with deletes, expire snapshots "
    "nobody reads, delete unreferenced files."
)
def maintain_warehouse(context: OpExecutionContext, quarry: QuarryResource) -> Output[None]:
    # Before the lake pass, so that the files the compaction writes are merged with the rest.
    compacted = compact_rollups(quarry.lake, quarry.registry)
    result = maintain(quarry.lake, quarry.registry)
    context.log.info(
        f"warehouse maintenance: rollups compacted for {len(compacted.rebuilt)} store(s) "
        f"({len(compacted.waiting)} waiting for their next sync); {result}"
    )
    return Output(
        None,
        metadata={
            "rollup_stores_compacted": len(compacted.rebuilt),
            "inlined_rows_flushed": result.inlined_rows_flushed,
            "files_merged": result.files_merged,
            "files_rewritten": result.files_rewritten,
            "snapshots_expired": result.snapshots_expired,
            "files_deleted": result.files_deleted,
            "versions_kept": MetadataValue.json(list(result.versions_kept)),
        },
    )


@job(
    executor_def=in_process_executor,
    config=LOGGERS_CONFIG,
    description="Warehouse maintenance (DuckLake): rollup and file compaction, snapshot expiry, "
    "file clean-up. "
    "Never expires a snapshot a store publishes, a request may read or an export pins.",
)
def warehouse_maintenance() -> None:
    maintain_warehouse()


@op(
    description="Delete finished runs older than QUARRY_RUN_RETENTION_DAYS, except those "
    "holding a partition's latest materialization or check result."
)
def prune_old_runs(context: OpExecutionContext, quarry: QuarryResource) -> Output[None]:
    graph = context.repository_def.asset_graph
    protected = runs_holding_latest_events(
        context.instance, graph.get_all_asset_keys(), list(graph.asset_check_keys)
    )
    protected.add(context.run_id)
    before = utcnow() - timedelta(days=quarry.settings.run_retention_days)
    result = prune_runs(context.instance, before, protected, run_files(quarry.settings))
    return Output(
        None,
        metadata={
            "runs_deleted": result.deleted,
            "runs_kept_for_history": result.kept_for_history,
            "older_than": before.isoformat(),
        },
    )


@job(
    executor_def=in_process_executor,
    config=LOGGERS_CONFIG,
    description="Dagster's runs and events older than QUARRY_RUN_RETENTION_DAYS, deleted; "
    "never a run holding a store partition's latest materialization or check result.",
)
def dagster_run_retention() -> None:
    prune_old_runs()


class RebuildRollupsConfig(Config):
    """Which stores' rollups to rebuild: every store with sales facts when unset."""

    store_ids: list[str] | None = None


@op(
    description="Rebuild the sales rollups from the sales facts, one store per transaction; "
    "publish each store whose published snapshot has no commit of it waiting."
)
def rebuild_sales_rollups(
    context: OpExecutionContext, config: RebuildRollupsConfig, quarry: QuarryResource
) -> Output[None]:
    result = rebuild_rollups(quarry.lake, quarry.registry, config.store_ids)
    context.log.info(
        f"rollups rebuilt for {len(result.rebuilt)} store(s), {len(result.published)} "
        f"published, {len(result.waiting)} waiting for their next sync"
    )
    return Output(
        None,
        metadata={
            "stores_rebuilt": len(result.rebuilt),
            "stores_published": MetadataValue.json(list(result.published)),
            "stores_waiting_for_sync": MetadataValue.json(list(result.waiting)),
        },
    )


@job(
    name="rebuild_rollups",
    executor_def=in_process_executor,
    config=LOGGERS_CONFIG,
    description="The sales rollups rebuilt from the sales facts (every store, or the "
    "configured ones), e.g. after a fix to how they are built. Not scheduled: a sync keeps "
    "them with the facts.",
)
def rebuild_rollups_job() -> None:
    rebuild_sales_rollups()
