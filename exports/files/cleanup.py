"""Removing export files from the export file store (quarry.files): the files that hold a
store's data when the store is fully re-synced or removed (an incremental sync never
removes any), files older than a retention period, and what a run that died left. The job
keeps its status; `file_removed_at` says when its file went, and its download answers 404
from then on. Running the export again makes a new job.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import select

from quarry.files import export_files, staging_dir
from quarry.settings import Settings
from registry.db import Registry
from registry.models import ExportJob, utcnow

# Why a job's file was removed, recorded on the job for its download's 404.
RemovalReason = Literal["retention", "store_resynced", "store_removed"]
REMOVAL_REASONS: dict[str, str] = {
    "retention": "it was older than the retention period (QUARRY_EXPORT_RETENTION_DAYS or "
    "`quarry exports cleanup`)",
    "store_resynced": "a store it holds was fully re-synced",
    "store_removed": "a store it holds was removed",
}


def remove_files_for_store(
    settings: Settings,
    registry: Registry,
    store_id: str,
    reason: Literal["store_resynced", "store_removed"],
) -> list[str]:
    """Remove every export file holding data of `store_id`; returns the jobs' ids.
    Call it after a full re-sync of the store commits, and when the store is removed."""
    return _remove(settings, registry, lambda job: store_id in (job.store_ids or []), reason)


def remove_expired_files(
    settings: Settings, registry: Registry, days: int, now: datetime | None = None
) -> list[str]:
    """Remove export files of jobs created more than `days` days ago that have ended;
    returns the jobs' ids. A job still running has its file while it delivers it (the
    file is recorded before delivery), so with a short retention it is left for a later
    pass."""
    cutoff = (now or utcnow()) - timedelta(days=days)
    return _remove(
        settings,
        registry,
        lambda job: job.created_at < cutoff and job.finished_at is not None,
        "retention",
    )


def _remove(
    settings: Settings,
    registry: Registry,
    wanted: Callable[[ExportJob], bool],
    reason: RemovalReason,
) -> list[str]:
    now = utcnow()
    with registry.session() as session:
        # JSON containment is spelt differently on SQLite and PostgreSQL: filter in Python
        # over the jobs that still have a file, which is a bounded set.
        jobs = session.scalars(
            select(ExportJob).where(
                ExportJob.file_path.is_not(None), ExportJob.file_removed_at.is_(None)
            )
        ).all()
        chosen = [job for job in jobs if wanted(job)]
        for job in chosen:
            job.file_removed_at = now
            job.file_removed_reason = reason
        removed = [job.id for job in chosen]
    # Marked first, deleted after the commit: a download that races the deletion answers
    # 404 either way, never half a file.
    files = export_files(settings)
    for job_id in removed:
        files.remove(job_id)
    return removed


def remove_leftovers(settings: Settings, job_id: str, keep: str | None) -> list[str]:
    """Remove what a run of `job_id` that ended without finishing left behind: every file
    in the job's folder of the store but `keep` (its recorded file, which a failed delivery
    keeps downloadable), and what it staged in this role's home. Returns the keys removed.
    Only for a job that no run works on any more."""
    files = export_files(settings)
    left = [key for key in files.keys(job_id) if key != keep]
    for key in left:
        files.remove(key)
    remove_staging(settings, job_id)
    return left


def remove_staging(settings: Settings, job_id: str) -> None:
    """Remove what a run of `job_id` staged in this role's home (exports.files.produce)."""
    shutil.rmtree(staging_dir(settings) / job_id, ignore_errors=True)
