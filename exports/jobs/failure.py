"""Ending an export job `failed`, and telling the operators: the one path for its own run
(exports.jobs.execute) and for the reaper (pipelines.exports.reaper).

The row's first writer wins (lifecycle.finish), so a job that its run and the reaper both
fail is recorded, and alerted, once."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from destinations.alerts import Alert, send_alert
from exports.jobs.lifecycle import FAILED, finish
from quarry.settings import Settings
from registry.db import Registry
from registry.models import Account, ExportConfig, ExportJob, utcnow


def fail_job(
    settings: Settings,
    registry: Registry,
    job_id: str,
    reason: str,
    *,
    now: datetime | None = None,
) -> ExportJob | None:
    """Record `reason` as the job's failure unless the job has already ended, then alert
    (destinations.alerts). Returns the failed row, detached; None when it had ended."""
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
    send_alert(
        settings,
        Alert(
            what=f"export {config_name or job.config_id} job {job_id}",
            account=f"{account_name} ({job.account_id})",
            reason=reason,
            at=now,
        ),
    )
    return job
