"""What a run of Quarry's code server starts with (pipelines.code_server): imported once by
the forkserver, before it forks any run. The code location and its repository (built here,
so no run builds it again), and the modules of Dagster's that executing a run imports:
its storage (SQLite, or PostgreSQL through dagster-postgres), its compute-log capture, the
in-process executor. Without them a forked run still imported about 185 modules, 0.5 s.

Only imports: no Python thread, connection or file is opened here, so forking stays safe."""

from __future__ import annotations

import importlib

from pipelines.definitions import defs

# Imported by a run's process after the code location (measured on Dagster 1.13 by running
# a job with the code location loaded). A module an upgrade renamed is skipped: it costs a
# run its import, never the run itself.
RUN_MODULES = (
    "dagster._grpc.impl",
    "dagster._core.execution.api",
    "dagster._core.execution.plan.active",
    "dagster._core.execution.plan.resume_retry",
    "dagster._core.execution.stats",
    "dagster._core.executor.in_process",
    "dagster._core.instance.factory",
    "dagster._core.instance.runs.run_domain",
    "dagster._core.secrets.env_file",
    "dagster._core.storage.root",
    "dagster._core.storage.sqlite_storage",
    "dagster._core.storage.local_compute_log_manager",
    "dagster._core.storage.migration.utils",
    "dagster._core.system_config.composite_descent",
    "dagster._core.workspace.autodiscovery",
    "dagster._core.workspace.context",
    "dagster._daemon.controller",
    "dagster._utils.test.definitions",
    "dagster_postgres",
    "upath.implementations.local",  # a run's local paths (fsspec's)
)


def _import_run_modules() -> None:
    for name in RUN_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue


_import_run_modules()
defs.get_repository_def()
