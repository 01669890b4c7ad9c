"""The reaper: no job stays `queued` or `running` after its run can no longer finish it.

Dagster's run monitoring does not notice a run worker that died under the default run
launcher, so the job row carries its worker ("<role id>:<pid>", QUARRY_ROLE_ID) and a
heartbeat. A running job is failed when:
- its worker is of this role and that process is gone (found at the next pass), or
- its heartbeat is older than QUARRY_HEARTBEAT_TIMEOUT_SECONDS (a worker role or machine
  that died, a frozen process).
A queued job is failed when its Dagster run started longer ago than that timeout without
claiming it: the run's process died before the export began (Dagster's default launcher
does not check a run worker's health, so the run itself would stay STARTED for good).
A job whose run ended without recording a result (failed before the export started,
canceled) is failed with the run's reason. The Dagster run of a dead worker is marked
failed too, its concurrency slots freed, and what the run left in the job's folder (a
partial file, a writer's temporary files) removed.

The housekeeper (pipelines.housekeeping) calls it every 10 s from the orchestrator role, so
the death of a worker role cannot stop it: a killed worker of the same role ends its job
`failed` within about 15 s, one of another role within the timeout + 10 s.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dagster import DagsterInstance, DagsterRunStatus

from exports.files.cleanup import remove_leftovers
from exports.jobs.failure import fail_job
from exports.jobs.lifecycle import QUEUED, RUNNING, unfinished_jobs
from exports.jobs.state import ENDED, RunView, job_state
from pipelines.exports.runs import latest_run
from quarry.settings import Settings
from quarry.workers import stopped_process
from registry.db import Registry
from registry.models import ExportJob, utcnow

AGAIN = "; run the export again"


def dead_worker_reason(
    job: ExportJob,
    now: datetime,
    role_id: str,
    stale_after: timedelta,
    run: RunView | None = None,
) -> str | None:
    """Why the worker of a running job is gone, or None while it may be alive. A queued job
    whose run started longer than `stale_after` ago lost its run before the run claimed it
    (a run claims its job within seconds of starting)."""
    if job.status == QUEUED and run is not None and run.status in ("STARTING", "STARTED"):
        begun = run.started_at
        if begun is not None and now.timestamp() - begun > stale_after.total_seconds():
            seconds = int(now.timestamp() - begun)
            return (
                f"its run {run.run_id} started {seconds} s ago and never began the export "
                f"(its worker stopped){AGAIN}"
            )
        return None
    if job.status != RUNNING:
        return None
    pid = stopped_process(job.worker, role_id)
    if pid is not None:
        return f"the export worker (process {pid} of {role_id}) stopped mid-run{AGAIN}"
    beat = job.heartbeat_at or job.started_at
    if beat is not None and now - beat > stale_after:
        seconds = int((now - beat).total_seconds())
        return f"the export worker {job.worker} sent no heartbeat for {seconds} s{AGAIN}"
    return None


def reap(
    settings: Settings,
    registry: Registry,
    instance: DagsterInstance,
    now: datetime | None = None,
) -> list[str]:
    """Fail every unfinished job that can no longer finish; returns their ids."""
    now = now or utcnow()
    stale_after = timedelta(seconds=settings.heartbeat_timeout_seconds)
    reaped = []
    with registry.session() as session:
        jobs = unfinished_jobs(session)
        session.expunge_all()
    for job in jobs:
        run = latest_run(instance, job.id) if job.dagster_run_id or job.status == RUNNING else None
        # The run's own end, when Dagster saw it, gives the same reason the API shows.
        if run is not None and run.status in ENDED:
            reason = job_state(job, run).error
        else:
            reason = dead_worker_reason(job, now, settings.role_id, stale_after, run)
        if reason is None:
            continue
        failed = fail_job(settings, registry, job.id, reason, now=now)
        if failed is None:
            continue  # it finished meanwhile
        reaped.append(job.id)
        if run is not None:
            _fail_run(instance, run, reason)
        remove_leftovers(settings, job.id, failed.file_path)
    return reaped


def _fail_run(instance: DagsterInstance, run: RunView, reason: str) -> None:
    dagster_run = instance.get_run_by_id(run.run_id)
    if dagster_run is None or dagster_run.is_finished:
        return
    if dagster_run.status in (DagsterRunStatus.STARTED, DagsterRunStatus.STARTING):
        instance.report_run_failed(dagster_run, reason)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
