"""Export jobs in the registry: creating one (idempotently), finding one a key may see,
and the few transitions a run writes. The row is written before any run exists, so an
accepted job is never lost."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from exports.configs.saved import account_store_ids
from quarry.errors import InvalidRequest, NotFound
from registry.ids import new_id
from registry.models import ExportConfig, ExportJob, utcnow
from registry.principals import Principal, config_store_ids

IDEMPOTENCY_WINDOW = timedelta(hours=24)
MAX_IDEMPOTENCY_KEY = 255
_PRINTABLE = re.compile(r"^[\x21-\x7e][\x20-\x7e]*$")
QUEUED, RUNNING, COMPLETED, FAILED = "queued", "running", "completed", "failed"
TERMINAL = (COMPLETED, FAILED)
# How often a running job's worker refreshes its heartbeat (exports.jobs.execute).
HEARTBEAT_SECONDS = 5.0
JOB_STATUSES = (QUEUED, RUNNING, COMPLETED, FAILED)


def check_idempotency_key(value: str | None) -> str | None:
    """The header's value, or InvalidRequest naming it when it is empty or too long."""
    if value is None:
        return None
    if len(value) > MAX_IDEMPOTENCY_KEY or not _PRINTABLE.match(value):
        message = f"must be 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters"
        raise InvalidRequest(
            f"Idempotency-Key: {message}", errors=[{"field": "Idempotency-Key", "message": message}]
        )
    return value


def create_job(
    session: Session,
    config: ExportConfig,
    *,
    idempotency_key: str | None = None,
    api_key_id: str | None = None,
    now: datetime | None = None,
) -> tuple[ExportJob, bool]:
    """A new queued job of `config`, or (with an idempotency key seen for this
    configuration in the last 24 hours) that earlier job. Returns (job, created)."""
    now = now or utcnow()
    if idempotency_key is not None:
        # Locks the configuration row (SQLite: the database) first, so two requests with
        # one key cannot both miss the other's job and create two.
        session.execute(
            update(ExportConfig)
            .where(ExportConfig.id == config.id)
            .values(updated_at=ExportConfig.updated_at)
        )
        earlier = session.scalar(
            select(ExportJob)
            .where(
                ExportJob.config_id == config.id,
                ExportJob.idempotency_key == idempotency_key,
                ExportJob.created_at >= now - IDEMPOTENCY_WINDOW,
            )
            .order_by(ExportJob.created_at.desc())
            .limit(1)
        )
        if earlier is not None:
            return earlier, False
    stores = config_store_ids(config, account_store_ids(session, config.account_id))
    job = ExportJob(
        id=new_id("job"),
        config_id=config.id,
        account_id=config.account_id,
        status=QUEUED,
        created_at=now,
        idempotency_key=idempotency_key,
        api_key_id=api_key_id,
        store_ids=sorted(stores),
    )
    session.add(job)
    session.flush()
    return job, True


def get_visible_job(session: Session, principal: Principal, job_id: str) -> ExportJob:
    """The job, or the same NotFound whether it is unknown, another account's, or holds
    data of a store the key cannot read."""
    job = session.get(ExportJob, job_id)
    if job is None or not principal.sees_job(job):
        raise NotFound("there is no export job with this id")
    return job


def unfinished_jobs(session: Session) -> list[ExportJob]:
    """Jobs not yet completed or failed, oldest first."""
    query = select(ExportJob).where(ExportJob.status.in_((QUEUED, RUNNING)))
    return list(session.scalars(query.order_by(ExportJob.created_at, ExportJob.id)))


def finish(
    session: Session,
    job_id: str,
    status: str,
    *,
    error: str | None = None,
    now: datetime | None = None,
) -> bool:
    """Record a final state, unless the job already has one (the first writer wins)."""
    result = session.execute(
        update(ExportJob)
        .where(ExportJob.id == job_id, ExportJob.status.not_in(TERMINAL))
        .values(status=status, error=error, finished_at=now or utcnow())
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]
