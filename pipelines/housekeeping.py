"""The housekeeper: the reaper, the reconciler, file retention, the webhook-triggered
syncs and the deletion of ended console sessions, every PASS_SECONDS, in a process of the
orchestrator role (`quarry housekeeper`, started by `quarry orchestrator` and `quarry up`).

They used to be Dagster sensors, but sensors execute in the code server, which is the worker
role: a dead worker could not end its own jobs. Run one housekeeper per deployment (it
submits runs for jobs no run has taken, and two would race to submit the same job; pending
syncs are claimed row by row, so those at least are never submitted twice).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from dagster import DagsterInstance

from exports.files.cleanup import remove_expired_files
from pipelines.exports.launcher import launch
from pipelines.exports.reaper import reap
from pipelines.exports.reconciler import unlaunched_jobs
from pipelines.sync.triggers import submit_due_syncs
from quarry.settings import Settings
from registry.console_sessions import delete_ended_sessions
from registry.db import Registry

PASS_SECONDS = 10.0
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassResult:
    """Job ids failed, job ids submitted, job ids whose expired files were removed, run ids
    of the pending syncs submitted, the number of ended console sessions deleted."""

    reaped: list[str]
    launched: list[str]
    expired: list[str]
    syncs: list[str]
    console_sessions: int = 0


def housekeeping_pass(
    settings: Settings, registry: Registry, instance: DagsterInstance
) -> PassResult:
    """One pass: fail jobs that can no longer finish, submit jobs no run has taken, remove
    files past QUARRY_EXPORT_RETENTION_DAYS, submit the pending syncs that are due, delete
    console sessions that expired or were revoked (and the form secrets they kept)."""
    reaped = reap(settings, registry, instance)
    launched = [
        waiting.job_id
        for waiting in unlaunched_jobs(registry, instance)
        if launch(settings, registry, waiting.job_id, waiting.config_name) is not None
    ]
    days = settings.export_retention_days
    # 0 is a retention too (files go once their job ends), not "unset".
    expired = remove_expired_files(settings, registry, days) if days is not None else []
    syncs = submit_due_syncs(settings, registry, instance)
    with registry.session() as session:
        console_sessions = delete_ended_sessions(session)
    return PassResult(reaped, launched, expired, syncs, console_sessions)


def run_housekeeper(settings: Settings, stop: threading.Event, every: float = PASS_SECONDS) -> None:
    """Pass every `every` seconds until `stop` is set; a failed pass is logged and retried."""
    from pipelines.instance import open_instance

    registry = Registry(settings)
    try:
        with open_instance(settings) as instance:
            logger.info(
                "housekeeper of %s: a pass every %.0f s (heartbeat timeout %.0f s)",
                settings.role_id,
                every,
                settings.heartbeat_timeout_seconds,
            )
            while True:
                try:
                    done = housekeeping_pass(settings, registry, instance)
                    for job_id in done.reaped:
                        logger.info("export job %s failed: its run can no longer finish", job_id)
                    for job_id in done.launched:
                        logger.info("export job %s submitted (no run had taken it)", job_id)
                except Exception:
                    logger.exception("housekeeping pass failed; the next one tries again")
                if stop.wait(every):
                    return
    finally:
        registry.dispose()
