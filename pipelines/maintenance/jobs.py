"""The warehouse maintenance job: one op, one pass over the whole lake."""

from dagster import MetadataValue, OpExecutionContext, Output, in_process_executor, job, op

from pipelines.resources import QuarryResource
from pipelines.run_logger import LOGGERS_CONFIG
from warehouse.maintenance import maintain


@op(
    description="Flush inlined rows, merge small files, rewrite files heavy with deletes, "
    "expire snapshots nobody reads, delete unreferenced files."
)
def maintain_warehouse(context: OpExecutionContext, quarry: QuarryResource) -> Output[None]:
    result = maintain(quarry.lake, quarry.registry)
    context.log.info(f"warehouse maintenance: {result}")
    return Output(
        None,
        metadata={
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
    description="Warehouse maintenance (DuckLake): compaction, snapshot expiry, file clean-up. "
    "Never expires a snapshot a store publishes, a request may read or an export pins.",
)
def warehouse_maintenance() -> None:
    maintain_warehouse()
