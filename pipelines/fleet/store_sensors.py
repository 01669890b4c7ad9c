"""Keep the `stores` partitions in step with the registry, and sync new stores soon (one
fleet run); alert the operators when a sync run fails."""

import hashlib
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
from pipelines.fleet.jobs import sync_fleet
from pipelines.fleet.run_config import FLEET_TAG, fleet_run_config
from pipelines.partitions import partition_changes
from pipelines.resources import PARTITION_TAG, QuarryResource
from pipelines.sync.jobs import JOBS, full_resync
from registry.accounts import list_stores
from registry.db import Registry
from registry.models import Account, AlertState, Store, utcnow

SYNC_JOB_NAMES = frozenset(job.name for job in JOBS) | {sync_fleet.name}


@sensor(
    job=sync_fleet,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
    description="Adds a partition for each new store and removes those of removed stores; "
    "requests one fleet run for the first sync of the stores that never synced.",
)
def store_partitions(context: SensorEvaluationContext, quarry: QuarryResource) -> SensorResult:
    with quarry.registry.session() as session:
        stores = list(list_stores(session))
    changes = partition_changes(context.instance, [store.id for store in stores])
    new = sorted(s.id for s in stores if s.last_synced_at is None)
    first_syncs = []
    if new:
        # The run key makes this once per set of new stores, however many ticks see them.
        digest = hashlib.sha256(",".join(new).encode()).hexdigest()[:16]
        first_syncs.append(
            RunRequest(
                run_key=f"first-sync:{digest}",
                run_config=fleet_run_config(quarry.settings, new),
                tags={FLEET_TAG: "first-sync"},
            )
        )
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
    if run.job_name == sync_fleet.name:
        _fleet_recoveries(quarry, context.instance, run)
        return
    alert = sync_alert(quarry.registry, run, "", utcnow())
    alert = replace(alert, links=(run_link(quarry.settings, run.run_id),))
    report_success(
        quarry.settings, quarry.registry, sync_subject(run.tags.get(PARTITION_TAG)), alert
    )


def _fleet_recoveries(quarry: QuarryResource, instance: DagsterInstance, run: DagsterRun) -> None:
    """A 'recovered' alert for each store whose failing syncs a fleet run ended: the
    subjects failing now are read once, not a look per store of the fleet."""
    from pipelines.fleet.sensors import fleet_outcomes

    with quarry.registry.session() as session:
        failing = set(
            session.scalars(select(AlertState.subject).where(AlertState.failing_since.is_not(None)))
        )
    for store_id, outcome in fleet_outcomes(instance, run.run_id).items():
        if outcome.success and sync_subject(store_id) in failing:
            alert = _store_alert(quarry.registry, "sync", store_id, "", utcnow())
            alert = replace(alert, links=(run_link(quarry.settings, run.run_id),))
            report_success(quarry.settings, quarry.registry, sync_subject(store_id), alert)


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
    if run.job_name == sync_fleet.name:
        # A store's own failure never fails a fleet run (it is retried alone): this is the
        # run itself (its probe, or a step lost with its worker).
        return Alert(what=f"fleet sync run {run.run_id}", account=None, reason=reason, at=at)
    if store_id is None:
        return Alert(what="sync of exchange rates", account=None, reason=reason, at=at)
    kind = "full re-sync" if run.job_name == full_resync.name else "sync"
    return _store_alert(registry, kind, store_id, reason, at)


def _store_alert(registry: Registry, kind: str, store_id: str, reason: str, at: datetime) -> Alert:
    """An alert about a `kind` of store `store_id`, naming the store and its account."""
    with registry.session() as session:
        found = session.execute(
            select(Store.name, Account.id, Account.name)
            .join(Account, Account.id == Store.account_id)
            .where(Store.id == store_id)
        ).one_or_none()
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
