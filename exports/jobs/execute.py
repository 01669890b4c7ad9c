"""One export job, start to end, as its Dagster run executes it (plain Python, so tests run
it without Dagster): claim the job, keep a heartbeat, produce the file, record it,
deliver it, record the outcome.

A failed delivery ends the job `failed` with its file kept and downloadable. Every failure
is recorded on the row with a reason a person can act on (and alerted, exports.jobs.failure)
before ExportFailed is raised, so the run fails too and shows the same reason in the Dagster
UI.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import or_, update

from destinations.base import Delivery, DeliveryError
from destinations.kinds import FOLDER_KINDS, destination_for
from exports.configs.change_starts import (
    Starts,
    load_starts,
    record_starts,
    wait_for_earlier_runs,
)
from exports.configs.definition import StoredConfig
from exports.configs.naming import render_file_name
from exports.files.cleanup import remove_staging
from exports.files.formats import CONTENT_TYPES
from exports.files.manifest import (
    MANIFEST_CONTENT_TYPE,
    MANIFEST_FILE,
    MANIFEST_SUFFIX,
    FileSummary,
    manifest_body,
    manifest_text,
)
from exports.files.produce import (
    Account,
    file_key,
    manifest_key,
    produce,
    staging_path,
)
from exports.files.xlsx_writer import MAX_DATA_ROWS
from exports.jobs.failure import fail_job, report_job_success, report_start_over
from exports.jobs.lifecycle import COMPLETED, FAILED, HEARTBEAT_SECONDS, QUEUED, RUNNING, finish
from exports.jobs.measured import record_export
from quarry.crypto import SecretBox
from quarry.errors import QuarryError
from quarry.files import export_files
from quarry.periodic import repeating
from quarry.settings import Settings
from quarry.workers import worker_identity
from registry.accounts import get_account, list_stores
from registry.db import Registry
from registry.models import ExportConfig, ExportJob, utcnow
from warehouse.query import StoreInfo
from warehouse.reader import WarehouseReader

logger = logging.getLogger(__name__)


class ExportFailed(Exception):
    """The job ended `failed`; `reason` is what its row says."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeliveryFailed(ExportFailed):
    """The file was made; its destination refused it."""


@dataclass(frozen=True)
class Outcome:
    job_id: str
    file_name: str
    rows: int
    cut_cells: int
    location: str


def claim(
    registry: Registry, job_id: str, run_id: str, *, worker: str, rerun: bool = False
) -> bool:
    """Mark the job running in this process, if it is still waiting for a run (or, for a
    re-execution from the Dagster UI, if it failed). False when another run has it."""
    waiting = ExportJob.status == QUEUED
    if rerun:
        waiting = or_(waiting, ExportJob.status == FAILED)
    now = utcnow()
    with registry.session() as session:
        result = session.execute(
            update(ExportJob)
            .where(ExportJob.id == job_id, waiting)
            .values(
                status=RUNNING,
                started_at=now,
                heartbeat_at=now,
                finished_at=None,
                error=None,
                dagster_run_id=run_id,
                worker=worker,
            )
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]


def heartbeat(
    registry: Registry, job_id: str, every: float = HEARTBEAT_SECONDS
) -> AbstractContextManager[None]:
    """Refresh the job's heartbeat every `every` seconds while the block runs."""

    def beat() -> None:
        try:
            with registry.session() as session:
                session.execute(
                    update(ExportJob)
                    .where(ExportJob.id == job_id, ExportJob.status == RUNNING)
                    .values(heartbeat_at=utcnow())
                )
        except Exception as exc:  # a missed beat is retried; the job goes on
            logger.warning("export job %s: heartbeat failed: %s", job_id, exc)

    return repeating(every, beat, name=f"heartbeat-{job_id}")


def execute_job(
    settings: Settings,
    registry: Registry,
    job_id: str,
    run_id: str,
    *,
    rerun: bool = False,
    environ: Mapping[str, str] | None = None,
    max_rows_per_sheet: int = MAX_DATA_ROWS,
) -> Outcome:
    """Run job `job_id` in this process; raises ExportFailed (after recording it)."""
    if not claim(registry, job_id, run_id, worker=worker_identity(settings.role_id), rerun=rerun):
        raise ExportFailed(f"export job {job_id} is not waiting for a run (another run has it)")
    started = time.perf_counter()
    failure: str | None = "export"
    try:
        with heartbeat(registry, job_id):
            try:
                outcome = _run(settings, registry, job_id, environ, max_rows_per_sheet)
                failure = None
                return outcome
            except ExportFailed as exc:
                if isinstance(exc, DeliveryFailed):
                    failure = "export_delivery"
                fail_job(settings, registry, job_id, exc.reason)
                raise
            except QuarryError as exc:
                fail_job(settings, registry, job_id, exc.detail)
                raise ExportFailed(exc.detail) from exc
            except Exception as exc:
                logger.exception("export job %s failed", job_id)
                reason = (
                    f"the export failed unexpectedly ({type(exc).__name__}: {exc}; run {run_id})"
                )
                fail_job(settings, registry, job_id, reason)
                raise ExportFailed(reason) from exc
    finally:
        record_export(registry, job_id, time.perf_counter() - started, failure)


def _run(
    settings: Settings,
    registry: Registry,
    job_id: str,
    environ: Mapping[str, str] | None,
    max_rows_per_sheet: int,
) -> Outcome:
    with registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None
        row = session.get(ExportConfig, job.config_id)
        if row is None:
            raise ExportFailed("its export configuration was removed")
        config = StoredConfig.of(row)
        account_row = get_account(session, job.account_id)
        stores = {s.id: s for s in list_stores(session, job.account_id)}
        store_ids = [s for s in job.store_ids if s in stores]
        created_at = job.created_at
        infos = {s: StoreInfo(stores[s].name, stores[s].currency, stores[s].timezone)
                 for s in store_ids}  # fmt: skip
        account = Account(account_row.currency, account_row.timezone, infos)
    file_name = render_file_name(
        config.file_name,
        name=config.name,
        job_id=job_id,
        created_at=created_at,
        zone=account.timezone,
        store_names=[account.stores[s].name for s in store_ids],
        file_format=config.format,
    )
    files = export_files(settings)
    key = file_key(job_id, config.format)
    target = staging_path(settings, files, key)
    # On S3 the run writes in its home's staging folder and uploads; locally it writes in
    # the store's own folder and there is nothing to upload.
    staged = files.local_path(key) != target
    # This process reads the export alone: its DuckDB gets the export's memory limit.
    limited = settings.model_copy(
        update={"duckdb_memory_limit": settings.export_duckdb_memory_limit}
    )
    reader = WarehouseReader(limited, registry)
    starts: Starts | None = None
    if config.changed_rows:
        # One run of a changed-rows configuration at a time: each starts where the last
        # completed one ended (exports.configs.change_starts).
        wait_for_earlier_runs(registry, job_id, config.id)
        starts = load_starts(settings, registry, config.id)

    def describe(summary: FileSummary, path: Path | None = None) -> dict[str, Any]:
        return manifest_body(
            summary,
            job_id=job_id,
            export_id=config.id,
            name=config.name,
            file_format=config.format,
            file_name=file_name,
            written_at=utcnow(),
            path=path,
        )

    try:
        produced = produce(
            reader,
            config,
            account,
            store_ids,
            target,
            max_rows_per_sheet=max_rows_per_sheet,
            starts=starts.versions if starts is not None else None,
            restarted=starts.restarted if starts is not None else None,
            describe=describe,
        )
        manifest = describe(produced.summary, target)
        lost = {s.store_id: s.reason or "" for s in produced.summary.stores if s.start_lost}
        report_start_over(settings, registry, job_id, lost)
        # Beside the file: in the store's own folder when it is local, else staged with it.
        manifest_path = target.with_name(MANIFEST_FILE)
        manifest_path.unlink(missing_ok=True)  # a re-execution's: read-only, replaced
        manifest_path.write_text(manifest_text(manifest), encoding="utf-8")
        manifest_path.chmod(0o444)
        if staged:
            files.put_file(manifest_path, manifest_key(job_id))
            files.put_file(target, key)
        with registry.session() as session:
            job = session.get(ExportJob, job_id)
            assert job is not None
            job.file_path = key
            job.file_name = file_name
            job.manifest = manifest
        location = _deliver(settings, config, job_id, target, file_name, environ)
        if config.destination_kind in FOLDER_KINDS:
            # After the file: a loader that waits for the manifest finds the file complete.
            _deliver(
                settings,
                config,
                job_id,
                manifest_path,
                f"{file_name}{MANIFEST_SUFFIX}",
                environ,
                content_type=MANIFEST_CONTENT_TYPE,
            )
        with registry.session() as session:
            completed = finish(session, job_id, COMPLETED)
            if completed and config.changed_rows:
                ends = {s.store_id: s.snapshot for s in produced.summary.stores
                        if s.snapshot is not None}  # fmt: skip
                record_starts(session, settings, config.id, job_id, ends)
        report_job_success(settings, registry, job_id)
    finally:
        if staged:
            # The store holds the file now (or the run failed): the staged copy goes.
            remove_staging(settings, job_id)
        # Closed last: freeing DuckDB's memory of a large export takes a noticeable time
        # that the job's completion need not wait for.
        reader.close()
    return Outcome(job_id, file_name, produced.rows, produced.cut_cells, location)


def _deliver(
    settings: Settings,
    config: StoredConfig,
    job_id: str,
    path: os.PathLike[str],
    file_name: str,
    environ: Mapping[str, str] | None,
    *,
    content_type: str | None = None,
) -> str:
    credentials = (
        SecretBox(settings.fernet_keys).open(config.credentials_secret)
        if config.credentials_secret
        else {}
    )
    delivery = Delivery(
        path=path,  # type: ignore[arg-type]
        file_name=file_name,
        job_id=job_id,
        content_type=content_type or CONTENT_TYPES[config.format],
    )
    try:
        destination = destination_for(
            config.destination_kind,
            config.destination_settings,
            credentials,
            settings,
            environ=environ,
        )
        return destination.deliver(delivery).location
    except DeliveryError as exc:
        raise DeliveryFailed(f"the file was written but its delivery failed: {exc.reason}") from exc
