"""Configurations and jobs as the API and `quarry exports list` show them, with each job's
state from the one state function (the run is read only for unfinished rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from exports.configs.saved import (
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


def job_view(job: ExportJob, config: ExportConfig, runs: RunSource) -> dict[str, Any]:
    """The Export job object of the contract, plus the additive `file_removed_at`,
    `started_at` and `finished_at` (docs/exports.md)."""
    state = state_of(job, runs)
    return {
        "job_id": job.id,
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
