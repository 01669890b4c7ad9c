"""Ending an export job `failed`, and telling the operators: the one path for its own run
(exports.jobs.execute) and for the reaper (pipelines.exports.reaper).

The row's first writer wins (lifecycle.finish), so a job that its run and the reaper both
fail is recorded, and alerted, once."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from sqlalchemy import select

from destinations.alert_groups import (
    export_subject,
    job_link,
    report_failure,
    report_success,
    run_link,
)
from destinations.alerts import NOTICE, Alert, send_alert
from exports.jobs.lifecycle import FAILED, finish
from quarry.settings import Settings
from registry.db import Registry
from registry.models import Account, ExportConfig, ExportJob, utcnow

logger = logging.getLogger(__name__)


def fail_job(
    settings: Settings,
    registry: Registry,
    job_id: str,
    reason: str,
    *,
    now: datetime | None = None,
) -> ExportJob | None:
    """Record `reason` as the job's failure unless the job has already ended, then alert
    (destinations.alert_groups: one alert per series of failures of the configuration,
    reminders at most every QUARRY_ALERT_REPEAT_MINUTES). Returns the failed row,
    detached; None when it had ended."""
    now = now or utcnow()
    with registry.session() as session:
        if not finish(session, job_id, FAILED, error=reason, now=now):
            return None
        job, config_name, account_name = session.execute(
            select(ExportJob, ExportConfig.name, Account.name)
            .outerjoin(ExportConfig, ExportConfig.id == ExportJob.config_id)
            .outerjoin(Account, Account.id == ExportJob.account_id)
            .where(ExportJob.id == job_id)
        ).one()
        session.expunge(job)
    # After the commit: an alert about a failure that was rolled back would be false.
    # Repeated failures of one configuration are grouped (destinations.alert_groups).
    report_failure(
        settings,
        registry,
        export_subject(job.config_id),
        job_alert(settings, job, config_name, account_name, reason, now),
        now=now,
    )
    return job


def job_alert(
    settings: Settings,
    job: ExportJob,
    config_name: str | None,
    account_name: str | None,
    reason: str,
    at: datetime,
) -> Alert:
    """What an operator reads about job `job`: its configuration and account, and links
    to the job in the API and to its run in the Dagster UI."""
    links = [job_link(settings, job.id)]
    if job.dagster_run_id:
        links.append(run_link(settings, job.dagster_run_id))
    return Alert(
        what=f"export {config_name or job.config_id} job {job.id}",
        account=f"{account_name} ({job.account_id})",
        reason=reason,
        at=at,
        links=tuple(links),
    )


def report_job_success(settings: Settings, registry: Registry, job_id: str) -> None:
    """A completed job ends its configuration's series of failures, if any, with a
    "recovered" alert. Never raises: the job is completed whatever the alert does."""
    if not settings.alerts_enabled:
        return
    try:
        _report_job_success(settings, registry, job_id)
    except Exception as exc:
        logger.warning("export job %s: the recovery alert was not sent: %s", job_id, exc)


def _report_job_success(settings: Settings, registry: Registry, job_id: str) -> None:
    with registry.session() as session:
        job, config_name, account_name = session.execute(
            select(ExportJob, ExportConfig.name, Account.name)
            .outerjoin(ExportConfig, ExportConfig.id == ExportJob.config_id)
            .outerjoin(Account, Account.id == ExportJob.account_id)
            .where(ExportJob.id == job_id)
        ).one()
        session.expunge(job)
    now = utcnow()
    alert = job_alert(settings, job, config_name, account_name, "", now)
    report_success(settings, registry, export_subject(job.config_id), alert, now=now)


def report_start_over(
    settings: Settings, registry: Registry, job_id: str, stores: dict[str, str]
) -> None:
    """Tell the operators that changed-rows job `job_id` delivers every row of `stores`
    (store -> why) because their start was lost: the loud side of the fallback. Never
    raises: the run goes on whatever the alert does."""
    if not settings.alerts_enabled or not stores:
        return
    try:
        _report_start_over(settings, registry, job_id, stores)
    except Exception as exc:
        logger.warning("export job %s: the start-over alert was not sent: %s", job_id, exc)


def _report_start_over(
    settings: Settings, registry: Registry, job_id: str, stores: dict[str, str]
) -> None:
    with registry.session() as session:
        job, config_name, account_name = session.execute(
            select(ExportJob, ExportConfig.name, Account.name)
            .outerjoin(ExportConfig, ExportConfig.id == ExportJob.config_id)
            .outerjoin(Account, Account.id == ExportJob.account_id)
            .where(ExportJob.id == job_id)
        ).one()
        session.expunge(job)
    reason = "; ".join(f"store {store}: {why}" for store, why in sorted(stores.items()))
    alert = job_alert(settings, job, config_name, account_name, reason, utcnow())
    what = f"export {config_name or job.config_id} job {job_id} delivers every row again"
    send_alert(settings, replace(alert, what=what, state=NOTICE))
