"""Keep the `stores` partitions in step with the registry, and sync new stores soon; alert
the operators when a sync run fails."""

from dataclasses import replace
from datetime import UTC, datetime

from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunFailureSensorContext,
    RunRequest,
    RunStatusSensorContext,
    SensorEvaluationContext,
    SensorResult,
    run_failure_sensor,
    run_status_sensor,
    sensor,
)
from sqlalchemy import select

from destinations.alert_groups import report_failure, report_success, run_link, sync_subject
from destinations.alerts import Alert
from pipelines.exports.runs import failure_reason
from pipelines.instance import store_tags
from pipelines.partitions import partition_changes
from pipelines.resources import PARTITION_TAG, QuarryResource
from pipelines.sync.jobs import JOBS, full_resync, sync_stores
from registry.accounts import list_stores
from registry.db import Registry
from registry.models import Account, Store, utcnow

SYNC_JOB_NAMES = frozenset(job.name for job in JOBS)


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


@run_failure_sensor(
    # Every code location: `quarry sync` executes its runs in its own process, outside the
    # code location, and only this matches them. Export runs are left out below.
    monitor_all_code_locations=True,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Alerts the operators (QUARRY_ALERT_EMAIL, QUARRY_ALERT_WEBHOOK_URL) when a "
    "sync run fails; the sensor's cursor sends each failure once.",
)
def sync_failure_alerts(context: RunFailureSensorContext, quarry: QuarryResource) -> None:
    # Returns nothing: a run status sensor that returns a result stops its tick there, and
    # the failures after it would wait for the next tick.
    run = context.dagster_run
    if run.job_name not in SYNC_JOB_NAMES or not quarry.settings.alerts_enabled:
        return  # an export run alerts through its job's row (exports.jobs.failure)
    alert = failed_sync(quarry.registry, context.instance, run)
    alert = replace(alert, links=(run_link(quarry.settings, run.run_id),))
    # One store's repeated failures make one alert and reminders (destinations.alert_groups).
    subject = sync_subject(run.tags.get(PARTITION_TAG))
    report_failure(quarry.settings, quarry.registry, subject, alert, now=alert.at)


@run_status_sensor(
    run_status=DagsterRunStatus.SUCCESS,
    monitor_all_code_locations=True,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Sends a 'recovered' alert when a store whose syncs were failing syncs "
    "again (only after failures, and only with alerts configured).",
)
def sync_recovery_alerts(context: RunStatusSensorContext, quarry: QuarryResource) -> None:
    run = context.dagster_run
    if run.job_name not in SYNC_JOB_NAMES or not quarry.settings.alerts_enabled:
        return
    alert = sync_alert(quarry.registry, run, "", utcnow())
    alert = replace(alert, links=(run_link(quarry.settings, run.run_id),))
    report_success(
        quarry.settings, quarry.registry, sync_subject(run.tags.get(PARTITION_TAG)), alert
    )


def failed_sync(registry: Registry, instance: DagsterInstance, run: DagsterRun) -> Alert:
    """The alert about the failed sync run `run`: its store and account, its reason."""
    reason = failure_reason(instance, run.run_id) or "the run failed"
    record = instance.get_run_record_by_id(run.run_id)
    ended = record.end_time if record is not None else None
    at = datetime.fromtimestamp(ended, UTC) if ended else utcnow()
    return sync_alert(registry, run, reason, at)


def sync_alert(registry: Registry, run: DagsterRun, reason: str, at: datetime) -> Alert:
    """An alert about sync run `run`, naming its store and account."""
    store_id = run.tags.get(PARTITION_TAG)
    if store_id is None:
        return Alert(what="sync of exchange rates", account=None, reason=reason, at=at)
    with registry.session() as session:
        found = session.execute(
            select(Store.name, Account.id, Account.name)
            .join(Account, Account.id == Store.account_id)
            .where(Store.id == store_id)
        ).one_or_none()
    kind = "full re-sync" if run.job_name == full_resync.name else "sync"
    if found is None:  # removed since
        return Alert(f"{kind} of store {store_id} (removed)", None, reason, at)
    store_name, account_id, account_name = found
    return Alert(
        what=f"{kind} of store {store_name} ({store_id})",
        account=f"{account_name} ({account_id})",
        reason=reason,
        at=at,
    )


SENSORS = [store_partitions, sync_failure_alerts, sync_recovery_alerts]
