"""The code location loads from workspace.yaml with no setting in the environment, its
table writers sit in their pools, and the instance configuration is what Dagster 1.13
accepts (pools of one slot, queued runs dequeued on threads; SQLite or PostgreSQL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, asset, materialize
from sqlalchemy.engine import make_url

from pipelines.definitions import defs
from pipelines.instance import HEADER, POSTGRES_URL_VARIABLE, open_instance, write_instance_config
from pipelines.partitions import STORES_PARTITIONS, sync_store_partitions
from quarry.errors import ConfigurationError
from quarry.settings import Settings
from warehouse.schemas import SOURCE_DATASETS, TABLES

ROOT = Path(__file__).resolve().parents[2]


def test_workspace_validates_without_any_setting(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster")
    (tmp_path / "dagster").mkdir()
    dagster = Path(sys.executable).parent / "dagster"
    done = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", str(ROOT / "workspace.yaml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation successful for code location quarry" in done.stdout + done.stderr
    # Importing the definitions read no setting: nothing was created in the working dir.
    assert not (tmp_path / ".quarry").exists()


def test_every_table_writer_holds_its_tables_pool() -> None:
    graph = defs.resolve_asset_graph()
    pools = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        pools[key.to_user_string()] = node.pools
    for dataset, tables in SOURCE_DATASETS.items():
        for table in tables:
            # A dataset's child tables are written by its parent's op, in its pool.
            assert pools[table] == {f"warehouse_{tables[0]}"}, (dataset, table)
    assert pools["sales"] == {"warehouse_sales"}
    assert pools["exchange_rates"] == {"warehouse_exchange_rates"}
    # Rollup tables are written by the sales asset, in its pool (warehouse.rollups).
    assert {name for name, spec in TABLES.items() if spec.rollup_of is None} <= set(pools)
    assert {spec.rollup_of for spec in TABLES.values() if spec.rollup_of} == {"sales"}


def test_instance_has_single_slot_pools_and_a_fast_queue(
    settings: Settings, instance: DagsterInstance
) -> None:
    assert (settings.resolved_dagster_home / "dagster.yaml").exists()
    assert instance.event_log_storage.get_pool_config().default_pool_limit == 1
    coordinator = instance.run_coordinator
    assert type(coordinator).__name__ == "QueuedRunCoordinator"
    assert coordinator.dequeue_use_threads and coordinator.dequeue_interval_seconds == 1
    assert type(instance.run_storage).__name__ == "SqliteRunStorage"

    sync_store_partitions(instance, ["st_a", "st_b"])
    sync_store_partitions(instance, ["st_b", "st_c"])
    assert sorted(instance.get_dynamic_partitions(STORES_PARTITIONS)) == ["st_b", "st_c"]


@asset
def noted() -> None:
    """An asset whose run only writes Dagster's own events."""


@pytest.mark.postgres
def test_instance_on_postgres(
    settings: Settings, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    libpq = make_url(postgres_url).set(drivername="postgresql")
    url = libpq.render_as_string(hide_password=False)
    monkeypatch.setenv(POSTGRES_URL_VARIABLE, url)
    settings = settings.model_copy(update={"dagster_postgres_url": url})
    with open_instance(settings) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert instance.event_log_storage.get_pool_config().default_pool_limit == 1
        sync_store_partitions(instance, ["st_a"])
        assert instance.get_dynamic_partitions(STORES_PARTITIONS) == ["st_a"]
        # A run writes its events there (with SQLAlchemy 2.1 every event write failed).
        result = materialize([noted], instance=instance)
        assert result.success
        assert instance.get_latest_materialization_event(AssetKey("noted")) is not None
    # The password stays in the environment, never in DAGSTER_HOME.
    text = (settings.resolved_dagster_home / "dagster.yaml").read_text()
    assert POSTGRES_URL_VARIABLE in text and "@" not in text


def test_a_driver_url_is_refused(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings.model_copy(update={"dagster_postgres_url": "postgresql+psycopg://u@h/db"})
    with pytest.raises(ConfigurationError, match=POSTGRES_URL_VARIABLE):
        open_instance(settings)


def test_an_operator_can_take_the_instance_file_over(settings: Settings) -> None:
    path = write_instance_config(settings)
    assert path.read_text().startswith(HEADER)
    owned = (
        path.read_text()
        .removeprefix(HEADER)
        .replace("dequeue_num_workers: 2", "dequeue_num_workers: 3")
    )
    path.write_text(owned)
    assert write_instance_config(settings).read_text() == owned


def test_loading_the_definitions_warns_nothing() -> None:
    # A fresh interpreter, as a code server starts: Dagster's beta notice about sensors'
    # `owners`, which no sensor of ours sets, used to print twice in `make demo`.
    code = "import pipelines.definitions as d; d.defs.get_repository_def()"
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Warning" not in done.stderr, done.stderr
