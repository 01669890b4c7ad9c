"""What a Dagster run worker process does before its code location is imported.

Dagster's default launcher starts each run in a new process (multiprocessing's spawn, from
the code server), which imports this code location (about 2 s) before the run's first
step. Almost every run reads or writes the lake, and opening it costs each process about
0.3 s (docs/benchmark.md, Session 17): started in a thread at the top of the import, it
is done by the time a step asks for it (warehouse.lake.open_early). Every other process
that imports the location (the code server, the webserver, the daemon, the CLI, the
fleet's workers, tests) was not started by multiprocessing and opens nothing here.
"""

from __future__ import annotations

import multiprocessing


def open_the_lake_early() -> None:
    """In a run worker, start opening the lake of the environment's settings."""
    if multiprocessing.parent_process() is None:
        return
    from quarry.errors import ConfigurationError
    from quarry.settings import load_settings
    from warehouse.lake import open_early

    try:
        settings = load_settings()
    except ConfigurationError:
        return  # the run's own resources report a bad setting
    open_early(settings)
