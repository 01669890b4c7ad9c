"""The reconciler: accepted jobs that no run has taken get one.

A job can wait without a run when Dagster was unreachable as it was accepted (`quarry
serve` alone, a restart), or when a process died between committing the job and
submitting its run. Jobs younger than GRACE are left to the API's own launch, and a job
whose run exists (found by its tag) only gets that run's id recorded, so one job never
gets two runs from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from dagster import DagsterInstance
from sqlalchemy import select

from exports.jobs.lifecycle import QUEUED
from pipelines.exports.launcher import record_run
from pipelines.exports.runs import latest_run
from registry.db import Registry
from registry.models import ExportConfig, ExportJob, utcnow

GRACE = timedelta(seconds=15)


@dataclass(frozen=True)
class Unlaunched:
    job_id: str
    config_name: str


def unlaunched_jobs(
    registry: Registry, instance: DagsterInstance, now: datetime | None = None
) -> list[Unlaunched]:
    """Queued jobs older than GRACE that have no run yet, oldest first."""
    cutoff = (now or utcnow()) - GRACE
    with registry.session() as session:
        rows = session.execute(
            select(ExportJob.id, ExportConfig.name)
            .join(ExportConfig, ExportConfig.id == ExportJob.config_id)
            .where(
                ExportJob.status == QUEUED,
                ExportJob.dagster_run_id.is_(None),
                ExportJob.created_at <= cutoff,
            )
            .order_by(ExportJob.created_at, ExportJob.id)
        ).all()
    waiting = []
    for job_id, name in rows:
        run = latest_run(instance, job_id)
        if run is not None:
            record_run(registry, job_id, run.run_id)
        else:
            waiting.append(Unlaunched(job_id, name))
    return waiting
