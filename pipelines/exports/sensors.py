"""Sensors of exports: scheduled exports, the reconciler of jobs no run has taken, and the
reaper of jobs whose run can no longer finish them (with file retention)."""

from datetime import datetime

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from exports.cleanup import remove_expired_files
from exports.configs import require_config
from exports.jobs import create_job
from exports.reaper import reap
from exports.reconciler import unlaunched_jobs
from exports.runs import run_tags
from exports.schedules import due_exports
from pipelines.exports.jobs import export
from pipelines.resources import QuarryResource
from registry.models import utcnow


@sensor(
    job=export,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Runs each configuration on its cron and zone, read from the registry at "
    "every tick; run key = configuration + scheduled time.",
)
def scheduled_exports(context: SensorEvaluationContext, quarry: QuarryResource) -> SensorResult:
    now = utcnow()
    # The first tick starts the clock: schedules do not backfill from before the sensor ran.
    since = datetime.fromisoformat(context.cursor) if context.cursor else now
    requests = []
    for due in due_exports(quarry.registry, since, now):
        with quarry.registry.session() as session:
            # The same idempotency key for the same tick: a re-evaluated tick finds its job.
            job, _ = create_job(
                session,
                require_config(session, due.config_id),
                idempotency_key=f"schedule:{due.scheduled_at.isoformat()}",
            )
            job_id = job.id
        requests.append(RunRequest(run_key=due.run_key, tags=run_tags(job_id, due.config_name)))
    return SensorResult(run_requests=requests, cursor=now.isoformat())


@sensor(
    job=export,
    minimum_interval_seconds=10,
    default_status=DefaultSensorStatus.RUNNING,
    description="Submits export jobs that were accepted while Dagster could not take them.",
)
def reconcile_exports(
    context: SensorEvaluationContext, quarry: QuarryResource
) -> SensorResult | SkipReason:
    waiting = unlaunched_jobs(quarry.registry, context.instance)
    if not waiting:
        return SkipReason("every accepted export job has a run")
    return SensorResult(
        run_requests=[
            RunRequest(run_key=f"export-job:{w.job_id}", tags=run_tags(w.job_id, w.config_name))
            for w in waiting
        ]
    )


@sensor(
    minimum_interval_seconds=10,
    default_status=DefaultSensorStatus.RUNNING,
    description="Fails export jobs whose worker died or whose run ended without a result; "
    "removes files past QUARRY_EXPORT_RETENTION_DAYS.",
)
def reap_exports(context: SensorEvaluationContext, quarry: QuarryResource) -> SkipReason:
    reaped = reap(quarry.registry, context.instance)
    days = quarry.settings.export_retention_days
    removed = remove_expired_files(quarry.settings, quarry.registry, days) if days else []
    return SkipReason(f"failed {len(reaped)} stuck jobs, removed {len(removed)} expired files")


SENSORS = [scheduled_exports, reconcile_exports, reap_exports]
