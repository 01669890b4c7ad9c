"""Launching a job's run through Dagster's GraphQL API (QUARRY_DAGSTER_URL).

The API calls this right after the job row is committed. When Dagster does not answer, the
job simply stays queued: the housekeeper's reconciler submits it once Dagster is up.
A GraphQL client is made per call; it is not thread-safe.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

# Imported with the module (the API imports it at start), not at the first launch: it
# takes about a second, which the first POST .../run would otherwise wait for.
from dagster_graphql import DagsterGraphQLClient
from sqlalchemy import update

from exports.jobs.lifecycle import QUEUED
from pipelines.exports.runs import changed_rows_config, run_tags
from quarry.settings import Settings
from registry.db import Registry
from registry.models import ExportJob

EXPORT_JOB_NAME = "export"
LOCATION_NAME = "quarry"  # workspace.yaml
REPOSITORY_NAME = "__repository__"  # what Dagster calls the repository of a Definitions
LAUNCH_TIMEOUT_SECONDS = 10

logger = logging.getLogger(__name__)


def dagster_client(settings: Settings) -> DagsterGraphQLClient:
    """A client of the Dagster webserver at QUARRY_DAGSTER_URL (connects on first use)."""
    address = urlsplit(settings.dagster_url)
    return DagsterGraphQLClient(
        address.hostname or "127.0.0.1",
        port_number=address.port,
        use_https=address.scheme == "https",
        timeout=LAUNCH_TIMEOUT_SECONDS,
        path_prefix=address.path.rstrip("/"),
    )


def submit(
    settings: Settings,
    job_name: str,
    tags: dict[str, str],
    run_config: dict[str, Any] | None = None,
) -> str:
    """Submit a run of `job_name` of Quarry's code location (with `run_config`, else the
    job's default); its run id. Raises what the client raises when Dagster does not take
    it."""
    return dagster_client(settings).submit_job_execution(
        job_name,
        repository_location_name=LOCATION_NAME,
        repository_name=REPOSITORY_NAME,
        tags=tags,
        run_config=run_config,
    )


def submit_run(
    settings: Settings, job_id: str, config_name: str, changed_rows: str | None = None
) -> str | None:
    """Submit the export run of `job_id`; its run id, or None when Dagster cannot take it
    now (unreachable, or the code location is not loaded). `changed_rows`: the job's
    configuration when it is a changed-rows one (its runs queue one at a time)."""
    try:
        return submit(settings, EXPORT_JOB_NAME, run_tags(job_id, config_name, changed_rows))
    except Exception as exc:
        # Anything from the client or its transport (refused, timed out, the location not
        # loaded, a proxy's HTML page) means "not now": the reconciler tries again.
        logger.warning("export job %s stays queued: Dagster did not take it (%s)", job_id, exc)
        return None


def record_run(registry: Registry, job_id: str, run_id: str) -> None:
    """Remember the run of a job that is still waiting (a run that started already wrote
    its own id)."""
    with registry.session() as session:
        session.execute(
            update(ExportJob)
            .where(ExportJob.id == job_id, ExportJob.status == QUEUED)
            .values(dagster_run_id=run_id)
        )


def launch(settings: Settings, registry: Registry, job_id: str, config_name: str) -> str | None:
    """Submit and record; the run id, or None when the job waits for the reconciler."""
    run_id = submit_run(settings, job_id, config_name, changed_rows_config(registry, job_id))
    if run_id is not None:
        record_run(registry, job_id, run_id)
    return run_id
