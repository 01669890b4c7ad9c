"""Configurations and jobs as the API and `quarry exports list` show them, with each job's
state from the one state function (the run is read only for unfinished rows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from exports.configs.saved import (
    config_detail,
    config_summary,
    list_configs,
    run_statistics,
)
from exports.jobs.state import JobState, RunView, job_state, needs_run_status
from registry.models import ExportConfig, ExportJob
from registry.principals import Principal

# The run of a job by its id; None when it has none (or Dagster cannot be read).
RunSource = Callable[[str], RunView | None]


def state_of(job: ExportJob, runs: RunSource) -> JobState:
    return job_state(job, runs(job.id) if needs_run_status(job) else None)


def job_view(
    job: ExportJob, config: ExportConfig, runs: RunSource, state: JobState | None = None
) -> dict[str, Any]:
    """The Export job object of the contract, plus the additive `export_id`,
    `file_removed_at`, `started_at` and `finished_at` (docs/exports.md). `state`, when the
    caller has it already, saves a look at the run."""
    state = state or state_of(job, runs)
    return {
        "job_id": job.id,
        "export_id": job.config_id,
        "status": state.status,
        "name": config.name,
        "entity_type": config.entity_type,
        "created_at": job.created_at,
        "file_name": job.file_name,
        "error": state.error,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "file_removed_at": job.file_removed_at,
    }


def config_views(
    session: Session,
    account_id: str,
    runs: RunSource,
    principal: Principal | None = None,
) -> list[dict[str, Any]]:
    """Every configuration of the account the caller sees (`principal`: a key's view;
    None: all of them, as the CLI shows them), as GET /v1/exports lists them."""
    configs = list_configs(session, account_id)
    if principal is not None:
        configs = [c for c in configs if principal.sees_config(c)]
    statistics = run_statistics(session, [c.id for c in configs])
    views = []
    for config in configs:
        total, newest = statistics[config.id]
        status = state_of(newest, runs).status if newest is not None else None
        views.append(config_summary(config, total, newest.created_at if newest else None, status))
    return views


def config_view(
    session: Session, config: ExportConfig, runs: RunSource, store_ids: list[str]
) -> dict[str, Any]:
    """One configuration as GET /v1/exports/{id} shows it (`store_ids`: what it reads)."""
    total, newest = run_statistics(session, [config.id])[config.id]
    status = state_of(newest, runs).status if newest is not None else None
    last_run_at = newest.created_at if newest is not None else None
    return config_detail(config, total, last_run_at, status, store_ids)


@dataclass(frozen=True)
class JobPage:
    """A page of the run history, as record lists page: no total, `has_more` instead."""

    data: list[dict[str, Any]]
    page: int
    page_size: int
    has_more: bool


def job_history(
    session: Session,
    principal: Principal,
    runs: RunSource,
    *,
    export_id: str | None = None,
    status: str | None = None,
    page: int = 1,
    page_size: int = 50,
) -> JobPage:
    """The jobs of the principal's account it may see, newest first, optionally of one
    configuration and in one state (the state the API shows, not the row's)."""
    query = select(ExportJob).where(ExportJob.account_id == principal.account_id)
    if export_id is not None:
        query = query.where(ExportJob.config_id == export_id)
    query = query.order_by(ExportJob.created_at.desc(), ExportJob.id.desc())
    skip = (page - 1) * page_size
    kept: list[tuple[ExportJob, JobState]] = []
    has_more = False
    # Visibility and the shown state are decided per row (a job's stores, its run), so
    # rows are filtered here rather than in SQL; the scan stops one job past the page.
    for job in session.scalars(query.execution_options(yield_per=500)):
        if not principal.sees_job(job):
            continue
        state = state_of(job, runs)
        if status is not None and state.status != status:
            continue
        if skip:
            skip -= 1
            continue
        if len(kept) == page_size:
            has_more = True
            break
        kept.append((job, state))
    views = [
        job_view(job, session.get_one(ExportConfig, job.config_id), runs, state)
        for job, state in kept
    ]
    return JobPage(views, page, page_size, has_more)
