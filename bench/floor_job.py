"""The orchestration floor: a Dagster job that does nothing, run the way export runs are
(queued, launched by the daemon in a process forked from its code server's warm process,
in-process executor). Its time from submit to success is what any export pays before and
after writing a file.

It imports the project's code location's modules, as the export code location does, so
its process holds the same modules; it defines nothing else (no sensors, no schedules)."""

from __future__ import annotations

from dagster import Definitions, in_process_executor, job, op

import pipelines.definitions  # noqa: F401  (the same imports as the export run's process)

FLOOR_JOB = "bench_floor"


@op
def nothing() -> None:
    """Returns None: the default I/O manager stores nothing."""


@job(name=FLOOR_JOB, executor_def=in_process_executor)
def bench_floor() -> None:
    nothing()


defs = Definitions(jobs=[bench_floor])
