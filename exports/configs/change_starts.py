"""Where each run of a changed-rows configuration starts: per store, the published snapshot
its last completed job read (ExportChangeStart rows), kept from maintenance by a snapshot
pin (holder `changes:<configuration id>`) until QUARRY_CHANGED_ROWS_RETENTION_DAYS after
it was recorded. A start older than that is dropped, and that store's next run delivers
every row again, loudly (the log and the manifest say why).

Runs of one changed-rows configuration go one at a time: Dagster queues them behind each
other (a run tag limited to one per configuration, pipelines.instance), and a run that
finds an earlier job of the configuration still running waits for it here, so each run
starts where the last completed one ended. The starts move only when a job completes:
after a failed run the next one covers both ranges.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from quarry.settings import Settings
from registry.db import Registry
from registry.models import ExportChangeStart, ExportJob, SnapshotPin, utcnow

logger = logging.getLogger(__name__)
WAIT_SECONDS = 2.0


def pin_holder(config_id: str) -> str:
    return f"changes:{config_id}"


@dataclass(frozen=True)
class Starts:
    """Per store, the version a run starts from; `restarted` names the stores that start
    over from everything, and why."""

    versions: dict[str, int] = field(default_factory=dict)
    restarted: dict[str, str] = field(default_factory=dict)


def load_starts(
    settings: Settings, registry: Registry, config_id: str, now: datetime | None = None
) -> Starts:
    """The configuration's start per store; those older than the retention are dropped
    (with their pins) and named in `restarted`."""
    now = now or utcnow()
    days = settings.changed_rows_retention_days
    limit = now - timedelta(days=days)
    versions: dict[str, int] = {}
    restarted: dict[str, str] = {}
    with registry.session() as session:
        rows = list(
            session.scalars(
                select(ExportChangeStart).where(ExportChangeStart.config_id == config_id)
            )
        )
        for row in rows:
            if row.recorded_at < limit:
                restarted[row.store_id] = (
                    f"its start (snapshot {row.version}, {row.recorded_at:%Y-%m-%d}) was older "
                    f"than QUARRY_CHANGED_ROWS_RETENTION_DAYS ({days:g})"
                )
                session.delete(row)
                logger.warning(
                    "changed-rows export %s, store %s: %s; this run delivers every row",
                    config_id, row.store_id, restarted[row.store_id],
                )  # fmt: skip
            else:
                versions[row.store_id] = int(row.version)
        if restarted:
            _repin(session, settings, config_id)
    return Starts(versions, restarted)


def record_starts(
    session: Session,
    settings: Settings,
    config_id: str,
    job_id: str,
    ends: Mapping[str, int],
    now: datetime | None = None,
) -> None:
    """The job completed having read `ends` (store -> version): the next run starts there.
    In the caller's transaction, with the job's completion."""
    now = now or utcnow()
    for store_id, version in ends.items():
        row = session.get(ExportChangeStart, (config_id, store_id))
        if row is None:
            row = ExportChangeStart(config_id=config_id, store_id=store_id)
            session.add(row)
        row.version, row.job_id, row.recorded_at = int(version), job_id, now
    session.flush()
    _repin(session, settings, config_id)


def reset_starts(session: Session, config_id: str) -> int:
    """Forget the configuration's starts (and release their snapshots): its next run
    delivers every row. Returns how many stores had one."""
    removed = session.execute(
        delete(ExportChangeStart).where(ExportChangeStart.config_id == config_id)
    )
    session.execute(delete(SnapshotPin).where(SnapshotPin.holder == pin_holder(config_id)))
    return int(removed.rowcount or 0)  # type: ignore[attr-defined]


def _repin(session: Session, settings: Settings, config_id: str) -> None:
    """One pin per start, expiring with its retention: maintenance keeps each start."""
    holder = pin_holder(config_id)
    session.execute(delete(SnapshotPin).where(SnapshotPin.holder == holder))
    retention = timedelta(days=settings.changed_rows_retention_days)
    for row in session.scalars(
        select(ExportChangeStart).where(ExportChangeStart.config_id == config_id)
    ):
        session.add(
            SnapshotPin(version=row.version, holder=holder, expires_at=row.recorded_at + retention)
        )


def wait_for_earlier_runs(
    registry: Registry, job_id: str, config_id: str, *, poll: float = WAIT_SECONDS
) -> None:
    """Wait while an earlier job of the configuration (started before this one, or at the
    same time with a smaller id) is running: changed-rows runs go one at a time. A job
    whose worker died is failed by the housekeeper, which ends the wait."""
    with registry.session() as session:
        mine = session.get(ExportJob, job_id)
        assert mine is not None and mine.started_at is not None
        started = mine.started_at
    waited = False
    while True:
        with registry.session() as session:
            earlier = session.scalars(
                select(ExportJob.id).where(
                    ExportJob.config_id == config_id,
                    ExportJob.status == "running",
                    ExportJob.id != job_id,
                    (ExportJob.started_at < started)
                    | ((ExportJob.started_at == started) & (ExportJob.id < job_id)),
                )
            ).first()
        if earlier is None:
            return
        if not waited:
            logger.info("export job %s waits for job %s of the same configuration", job_id, earlier)
            waited = True
        time.sleep(poll)
