"""The Dagster instance: DAGSTER_HOME/dagster.yaml, written from Quarry's settings.

Quarry rewrites the file while it starts with HEADER; delete that line to manage the file
yourself (another run launcher, say). Storage is SQLite under DAGSTER_HOME, or PostgreSQL
through dagster-postgres when QUARRY_DAGSTER_POSTGRES_URL is set (a libpq URL,
`postgresql://user:password@host/db`; the file refers to the variable, so the password is
never written to disk, and every process that opens the instance needs it set). Runs go
through the queued run coordinator, dequeued on threads every second instead of one launch
every 5 s. Every concurrency pool defaults to one slot, so the writers of one warehouse
table (pool `warehouse_<table>`) never commit at once, whether a schedule, `quarry sync` or
a full re-sync started them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from quarry.errors import ConfigurationError
from quarry.locks import advisory_lock
from quarry.settings import Settings
from quarry.workers import stopped_process

POSTGRES_URL_VARIABLE = "QUARRY_DAGSTER_POSTGRES_URL"
# Runs that may be in progress at once: a sync per store and exports share two cores.
MAX_CONCURRENT_RUNS = 4
# While the file starts with this line Quarry keeps it in step with the settings; an
# operator who deletes the line (say, to use another run launcher) owns the file from then.
HEADER = "# Managed by Quarry (pipelines/instance.py): rewritten from its settings.\n"
# Run tag naming the store a sync run works on, so queued runs of one store go one by one.
STORE_TAG = "quarry/store"
# And its name, so that people reading the runs in the UI can tell the stores apart.
STORE_NAME_TAG = "quarry/store_name"
# Run tag of a changed-rows export run: its configuration, one run of it at a time.
CHANGED_ROWS_TAG = "quarry/changed_rows"
_MAX_TAG_NAME = 100


def store_tags(store_id: str, name: str | None) -> dict[str, str]:
    """The run tags of a sync run of one store: its id, and its name when known."""
    tags = {STORE_TAG: store_id}
    if name:
        tags[STORE_NAME_TAG] = name[:_MAX_TAG_NAME]
    return tags


# "<role id>:<pid>" of the process executing a run (quarry.workers).
WORKER_TAG = "quarry/worker"


def release_abandoned_runs(instance: DagsterInstance, role_id: str) -> list[str]:
    """Fail the runs a process of role `role_id` started and never finished (it was
    killed), and free the pool slots they held. Returns their run ids."""
    runs = instance.get_runs(
        RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING])
    )
    released = []
    for run in runs:
        pid = stopped_process(run.tags.get(WORKER_TAG), role_id)
        if pid is not None:
            instance.report_run_failed(run, f"the process {pid} that ran it ended mid-run")
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            released.append(run.run_id)
    return released


# With the storage in PostgreSQL the instance spans hosts, and Dagster hands the
# orchestrator's instance settings to the run workers on the worker host. Its local folders
# (compute logs, artifacts) are then named by these variables, which each role sets to a
# folder of its own home (role_environment), so no role writes under another's.
COMPUTE_LOGS_VARIABLE = "QUARRY_DAGSTER_COMPUTE_LOGS_DIR"
ARTIFACTS_VARIABLE = "QUARRY_DAGSTER_ARTIFACTS_DIR"
# Processes opening the instance on PostgreSQL take turns (open_instance).
STORAGE_LOCK = "quarry.dagster-storage"
STORAGE_LOCK_SECONDS = 120


def role_environment(settings: Settings) -> dict[str, str]:
    """Variables every process of this role needs to open the instance: its homes, and its
    own folders for what the instance keeps on local disk."""
    dagster_home = settings.resolved_dagster_home
    return {
        "QUARRY_HOME": str(settings.home),
        "DAGSTER_HOME": str(dagster_home),
        COMPUTE_LOGS_VARIABLE: str(dagster_home / "compute_logs"),
        ARTIFACTS_VARIABLE: str(dagster_home / "artifacts"),
    }


def instance_config(settings: Settings) -> dict[str, Any]:
    """The content of dagster.yaml for `settings`."""
    return {
        "storage": _storage(settings),
        **_local_folders(settings),
        "run_coordinator": {
            "module": "dagster.core.run_coordinator",
            "class": "QueuedRunCoordinator",
            "config": {
                "dequeue_interval_seconds": 1,
                "dequeue_use_threads": True,
                "dequeue_num_workers": 2,
            },
        },
        "concurrency": {
            "pools": {"default_limit": 1},
            "runs": {
                "max_concurrent_runs": MAX_CONCURRENT_RUNS,
                "tag_concurrency_limits": [
                    {"key": STORE_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1},
                    # One run at a time of each changed-rows export (pipelines.exports.runs).
                    {
                        "key": CHANGED_ROWS_TAG,
                        "value": {"applyLimitPerUniqueValue": True},
                        "limit": 1,
                    },
                ],
            },
        },
        "telemetry": {"enabled": False},
    }


def _storage(settings: Settings) -> dict[str, Any]:
    # The file names the variable rather than holding the URL, so no password lands on disk;
    # the webserver and daemon read it from their environment.
    url = settings.dagster_postgres_url
    if not url:
        return {"sqlite": {"base_dir": str(settings.resolved_dagster_home)}}
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigurationError(
            f"{POSTGRES_URL_VARIABLE} must be a postgresql://user:password@host:port/db URL "
            "(dagster-postgres connects with psycopg2; no +driver suffix)"
        )
    return {"postgres": {"postgres_url": {"env": POSTGRES_URL_VARIABLE}}}


def _local_folders(settings: Settings) -> dict[str, Any]:
    if not settings.dagster_postgres_url:
        return {}  # one host: Dagster's defaults under DAGSTER_HOME
    return {
        "compute_logs": {
            "module": "dagster.core.storage.local_compute_log_manager",
            "class": "LocalComputeLogManager",
            "config": {"base_dir": {"env": COMPUTE_LOGS_VARIABLE}},
        },
        "local_artifact_storage": {
            "module": "dagster.core.storage.root",
            "class": "LocalArtifactStorage",
            "config": {"base_dir": {"env": ARTIFACTS_VARIABLE}},
        },
    }


def write_instance_config(settings: Settings) -> Path:
    """Write DAGSTER_HOME/dagster.yaml when its content changes, unless an operator took
    the file over (removed HEADER), and return its path."""
    settings.ensure_home()
    path = settings.resolved_dagster_home / "dagster.yaml"
    current = path.read_text() if path.exists() else None
    if current is not None and not current.startswith(HEADER):
        return path
    text = HEADER + yaml.safe_dump(instance_config(settings), sort_keys=False)
    if current != text:
        # Written aside then renamed: a daemon or webserver starting now never reads half.
        temporary = path.with_suffix(f".yaml.{os.getpid()}")
        temporary.write_text(text)
        temporary.replace(path)
    return path


def open_instance(settings: Settings) -> DagsterInstance:
    """The Dagster instance of DAGSTER_HOME, its configuration written first. The caller
    disposes of it (it is a context manager)."""
    write_instance_config(settings)
    url = settings.dagster_postgres_url
    if not url:
        return DagsterInstance.from_config(str(settings.resolved_dagster_home))
    environment = role_environment(settings)
    for name in (COMPUTE_LOGS_VARIABLE, ARTIFACTS_VARIABLE):
        os.environ.setdefault(name, environment[name])
    # Opening the instance creates Dagster's tables on a new database, and two roles
    # starting at once both tried ("type ... already exists"): they take turns.
    with advisory_lock(url, STORAGE_LOCK, STORAGE_LOCK_SECONDS):
        return DagsterInstance.from_config(str(settings.resolved_dagster_home))
