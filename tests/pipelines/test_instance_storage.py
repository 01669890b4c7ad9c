"""Roles that start at once on a new PostgreSQL database for Dagster's storage: opening the
instance creates Dagster's tables, and processes take turns at it (pipelines.instance)."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.synchronize import Barrier
from pathlib import Path

from sqlalchemy.engine import make_url

_barrier: Barrier | None = None


def _ready(barrier: Barrier) -> None:
    global _barrier
    _barrier = barrier
    # Imported before the start line, so the processes open the instance together.
    import pipelines.instance  # noqa: F401


def _open(home: str, url: str) -> str:
    os.environ["QUARRY_HOME"] = home
    os.environ["QUARRY_DAGSTER_POSTGRES_URL"] = url
    os.environ.pop("DAGSTER_HOME", None)
    from pipelines.instance import open_instance
    from quarry.settings import load_settings

    settings = load_settings()
    assert _barrier is not None
    _barrier.wait(timeout=120)
    with open_instance(settings) as instance:
        storages = (instance.run_storage, instance.event_log_storage, instance.schedule_storage)
        return ",".join(type(storage).__name__ for storage in storages)


def test_roles_opening_a_new_dagster_database_at_once_all_succeed(
    postgres_url: str, tmp_path: Path
) -> None:
    url = make_url(postgres_url).set(drivername="postgresql").render_as_string(False)
    homes = [str(tmp_path / f"role-{n}") for n in range(4)]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(homes))
    with context.Pool(len(homes), initializer=_ready, initargs=(barrier,)) as pool:
        storages = pool.starmap(_open, [(home, url) for home in homes], chunksize=1)
    expected = "PostgresRunStorage,PostgresEventLogStorage,PostgresScheduleStorage"
    assert storages == [expected] * len(homes)
