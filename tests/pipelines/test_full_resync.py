"""A full re-sync ignores the cursors, shows the store `syncing` while it runs and `active`
after it, also when it fails, and removes the export files holding the store's data; what
a failed run committed is in the next snapshot."""

from __future__ import annotations

import pytest

from pipelines.runner import sync_stores
from platforms.base import Connector
from platforms.demo.storage import load_table
from quarry.settings import Settings
from registry.db import Registry
from registry.models import ExportConfig, ExportJob, Store
from tests.pipelines.helpers import (
    FailingConnector,
    ObservedConnector,
    PlatformResource,
    sort_rows,
    warehouse_rows,
)
from warehouse.snapshots import latest_snapshots

pytestmark = pytest.mark.slow

# (dataset, cursor asked for, store status at that moment)
SEEN: list[tuple[str, str | None, str]] = []


class WatchedPlatform(PlatformResource):
    """Notes the cursor each sync asks for and the store's status at that moment."""

    def wrap(self, connector: Connector) -> Connector:
        def observe(dataset: str, cursor: str | None) -> None:
            with self.registry.session() as session:
                store = session.get(Store, connector.store_id)
                SEEN.append((dataset, cursor, store.status if store else "gone"))

        return ObservedConnector(connector, observe)


class DownPlatform(PlatformResource):
    def wrap(self, connector: Connector) -> Connector:
        return FailingConnector(connector, "products", pages=0)


def _exported_file(settings: Settings, registry: Registry, account_id: str, store_id: str) -> str:
    """An export job whose file holds the store's data; returns the job id."""
    with registry.session() as session:
        config = ExportConfig(
            id="cfg_resync", account_id=account_id, name="All orders", entity_type="orders",
            format="csv", definition={},
        )  # fmt: skip
        job = ExportJob(
            id="job_resync", config_id=config.id, account_id=account_id, status="completed",
            file_path="orders.csv", file_name="orders.csv", store_ids=[store_id],
        )  # fmt: skip
        session.add_all([config, job])
    folder = settings.exports_dir / "job_resync"
    folder.mkdir(parents=True)
    (folder / "orders.csv").write_text("id\n")
    return "job_resync"


def _status(registry: Registry, store_id: str) -> str:
    with registry.session() as session:
        store = session.get(Store, store_id)
        assert store is not None
        return store.status


def test_full_resync_ignores_cursors_and_shows_syncing(
    settings: Settings, registry: Registry, demo_account: str, store_ids: list[str]
) -> None:
    store_id = store_ids[0]
    SEEN.clear()
    [_, first] = sync_stores(
        settings, registry, [store_id], resources={"quarry": WatchedPlatform()}
    )
    assert first.success
    assert {status for _, _, status in SEEN} == {"active"}

    export_job = _exported_file(settings, registry, demo_account, store_id)
    SEEN.clear()
    [full] = sync_stores(
        settings, registry, [store_id], full=True, resources={"quarry": WatchedPlatform()}
    )
    assert full.success, (full.failed_step, full.error)
    assert sorted(SEEN) == sorted(
        (dataset, None, "syncing")
        for dataset in ("orders", "customers", "products", "draft_orders")
    )
    assert _status(registry, store_id) == "active"
    orders = load_table(settings, demo_account, store_id, "orders")
    assert full.rows["orders"] == orders.num_rows  # everything rewritten
    assert warehouse_rows(settings, "orders", store_id).equals(sort_rows("orders", orders))
    assert warehouse_rows(settings, "sales", store_id).num_rows == full.rows["sales"]
    # The export file held the store's data from before the re-sync: it is gone.
    with registry.session() as session:
        job = session.get(ExportJob, export_job)
        assert job is not None and job.file_removed_at is not None
    assert not (settings.exports_dir / export_job).exists()

    with registry.session() as session:
        before = latest_snapshots(session, [store_id])
    outcomes = sync_stores(
        settings, registry, [store_id], full=True, resources={"quarry": DownPlatform()}
    )
    assert not outcomes[-1].success and outcomes[-1].failed_step == "sync_products"
    assert _status(registry, store_id) == "active"
    with registry.session() as session:
        assert latest_snapshots(session, [store_id]) == before

    # The failed run rewrote orders before products failed: the next sync has nothing to
    # fetch, yet records a snapshot so readers see those commits.
    [after] = sync_stores(settings, registry, [store_id])
    assert after.success and not any(after.rows.values())
    with registry.session() as session:
        assert latest_snapshots(session, [store_id]) != before
