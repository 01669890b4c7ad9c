"""A run worker (a process Dagster's launcher spawns) starts opening the lake as it imports
the code location, and its first `connect` takes that connection; other processes open
nothing early."""

from __future__ import annotations

import multiprocessing
from multiprocessing.queues import Queue

from quarry.settings import Settings
from warehouse import lake
from warehouse.lake import Lake


def _import_location(queue: Queue[tuple[bool, int]]) -> None:
    import pipelines  # noqa: F401 - what a run worker imports first
    from quarry.settings import load_settings

    settings = load_settings()
    waiting = lake.opening_early(settings)
    con = lake.connect(settings)
    try:
        tables = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lake'"
        ).fetchone()
        queue.put((waiting, int(tables[0]) if tables else 0))
    finally:
        con.close()


def _spawned(queue: Queue[tuple[bool, int]]) -> tuple[bool, int]:
    process = multiprocessing.get_context("spawn").Process(target=_import_location, args=(queue,))
    process.start()
    result = queue.get(timeout=120)
    process.join(timeout=60)
    assert process.exitcode == 0
    return result


def test_a_spawned_run_worker_opens_the_lake_while_it_imports(quarry_env: Settings) -> None:
    # No catalog yet: nothing is opened early (creating one is a writer's job), and the
    # worker's own connect creates it.
    context = multiprocessing.get_context("spawn")
    waiting, tables = _spawned(context.Queue())
    assert tables > 0

    Lake(quarry_env).close()
    waiting, tables = _spawned(context.Queue())
    assert waiting
    assert tables > 0


def test_the_early_connection_is_taken_once_with_the_callers_limits(
    quarry_env: Settings,
) -> None:
    Lake(quarry_env).close()
    limited = quarry_env.model_copy(update={"duckdb_memory_limit": "300MB", "duckdb_threads": 1})
    lake.open_early(quarry_env)
    assert lake.opening_early(quarry_env)
    first = lake.connect(limited)
    try:
        assert not lake.opening_early(quarry_env)
        assert first.execute("SELECT current_setting('threads')").fetchone() == (1,)
        limit = first.execute("SELECT current_setting('memory_limit')").fetchone()
        assert limit is not None and limit[0].startswith("286")  # 300 MB in MiB
        second = lake.connect(quarry_env)
        assert second is not first
        second.close()
    finally:
        first.close()


def test_a_process_not_spawned_opens_nothing_early(quarry_env: Settings) -> None:
    from pipelines.run_worker import open_the_lake_early

    Lake(quarry_env).close()
    open_the_lake_early()
    assert not lake.opening_early(quarry_env)
