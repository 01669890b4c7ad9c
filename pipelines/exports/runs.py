"""Reading export runs from the Dagster instance on the shared storage: the latest run
tagged with a job id (a retry is a new run with the same tags) and why it failed."""

from __future__ import annotations

import logging
import threading

from dagster import DagsterEventType, DagsterInstance, RunsFilter
from sqlalchemy import select

from exports.jobs.state import RunView
from pipelines.instance import CHANGED_ROWS_TAG
from quarry.settings import Settings
from registry.db import Registry
from registry.models import ExportConfig, ExportJob

JOB_TAG = "quarry/export_job"
CONFIG_TAG = "quarry/export_config"
MAX_REASON = 1000

logger = logging.getLogger(__name__)


def latest_run(instance: DagsterInstance, job_id: str) -> RunView | None:
    """The newest run tagged with `job_id`, or None when there is none."""
    records = instance.get_run_records(RunsFilter(tags={JOB_TAG: job_id}), limit=1)
    if not records:
        return None
    run = records[0].dagster_run
    status = run.status.value
    failure = failure_reason(instance, run.run_id) if status in ("FAILURE", "CANCELED") else None
    return RunView(run.run_id, status, failure, records[0].start_time)


def failure_reason(instance: DagsterInstance, run_id: str) -> str | None:
    """The first failed step's innermost error, else the run failure's message."""
    for record in instance.all_logs(run_id, of_type=DagsterEventType.STEP_FAILURE):
        event = record.dagster_event
        data = event.step_failure_data if event else None
        if data is not None and data.error is not None:
            error = data.error
            while error.cause is not None:
                error = error.cause
            if data.user_failure_data is not None and data.user_failure_data.description:
                return data.user_failure_data.description[:MAX_REASON]
            return error.message.strip()[:MAX_REASON]
    for record in instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE):
        if record.dagster_event is not None and record.dagster_event.message:
            return record.dagster_event.message[:MAX_REASON]
    return None


class RunLookup:
    """Latest runs of jobs for a long-lived process (the API): the instance is opened on
    first use and kept. When the Dagster storage cannot be opened, `latest` answers None
    and the row alone decides the state."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._instance: DagsterInstance | None = None
        self._lock = threading.Lock()

    def instance(self) -> DagsterInstance:
        with self._lock:
            if self._instance is None:
                from pipelines.instance import open_instance

                self._instance = open_instance(self._settings)
            return self._instance

    def latest(self, job_id: str) -> RunView | None:
        try:
            return latest_run(self.instance(), job_id)
        except Exception as exc:  # a storage that cannot be read must not fail a poll
            logger.warning("cannot read the Dagster run of job %s: %s", job_id, exc)
            return None

    def close(self) -> None:
        with self._lock:
            if self._instance is not None:
                self._instance.dispose()
                self._instance = None


def run_tags(
    job_id: str, config_name: str, changed_rows_config: str | None = None
) -> dict[str, str]:
    """Tags of an export run: the job id (how runs are found) and the configuration's name
    (what a person looks for in the Dagster UI); for a changed-rows configuration, its id
    under CHANGED_ROWS_TAG, which the run queue limits to one run per value
    (pipelines.instance): a second run waits queued behind the first."""
    tags = {JOB_TAG: job_id, CONFIG_TAG: config_name[:200]}
    if changed_rows_config is not None:
        tags[CHANGED_ROWS_TAG] = changed_rows_config
    return tags


def changed_rows_config(registry: Registry, job_id: str) -> str | None:
    """The configuration of `job_id` when it is a changed-rows one (its runs go one at a
    time), else None."""
    with registry.session() as session:
        found = session.execute(
            select(ExportConfig.id, ExportConfig.definition)
            .join(ExportJob, ExportJob.config_id == ExportConfig.id)
            .where(ExportJob.id == job_id)
        ).one_or_none()
    if found is None:
        return None
    config_id, definition = found
    return str(config_id) if (definition or {}).get("rows") == "changed" else None
