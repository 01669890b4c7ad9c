"""What a run of Quarry's code server starts with (pipelines.code_server): imported once by
the forkserver, before it forks any run. The code location and its repository (built here,
so no run builds it again), and the modules that execute a run."""

from __future__ import annotations

import dagster._grpc.impl  # noqa: F401  (start_run_in_subprocess: each run's entry point)

from pipelines.definitions import defs

defs.get_repository_def()
