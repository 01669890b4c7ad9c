"""The export job: one Dagster run per export job, in one process (in_process_executor).

The run finds its job by the `quarry/export_job` tag; everything else is in the job row and
its configuration, so a run launched through GraphQL, by the reconciler or by the schedule
sensor is the same run. The op returns nothing (the default I/O manager would pickle it).
"""

from dagster import Failure, OpExecutionContext, in_process_executor, job, op

from exports.jobs.execute import ExportFailed, execute_job
from pipelines.exports.runs import JOB_TAG
from pipelines.resources import QuarryResource
from pipelines.run_logger import LOGGERS_CONFIG


@op(description="Produce the export job's file from one warehouse snapshot and deliver it.")
def run_export(context: OpExecutionContext, quarry: QuarryResource) -> None:
    job_id = context.run.tags.get(JOB_TAG)
    if not job_id:
        raise Failure(description=f"an export run needs the {JOB_TAG} tag naming its job")
    try:
        outcome = execute_job(
            quarry.settings,
            quarry.registry,
            job_id,
            context.run_id,
            rerun=context.run.parent_run_id is not None,
        )
    except ExportFailed as exc:
        raise Failure(description=exc.reason) from None
    cut = f"; {outcome.cut_cells} XLSX cells cut to fit" if outcome.cut_cells else ""
    context.log.info(
        f"export job {job_id}: {outcome.rows:,} rows in {outcome.file_name!r}, "
        f"delivered to {outcome.location}{cut}"
    )


@job(
    name="export",
    executor_def=in_process_executor,
    config=LOGGERS_CONFIG,
    description="One export job: read a snapshot, write the file, deliver it. Tagged with "
    "the job id (quarry/export_job) and the configuration's name (quarry/export_config).",
)
def export() -> None:
    run_export()
