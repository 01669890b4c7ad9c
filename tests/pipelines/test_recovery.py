"""A sync interrupted by the platform resumes from the last committed page, without
duplicates, and a failed sync records no snapshot."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from pipelines.runner import sync_stores
from platforms.base import Connector
from platforms.demo.connector import DemoConnector
from platforms.demo.storage import load_table
from quarry.settings import Settings
from registry.cursors import get_cursor, pending_sales
from registry.db import Registry
from tests.pipelines.helpers import (
    FailingConnector,
    ObservedConnector,
    PlatformResource,
    sort_rows,
    warehouse_rows,
)
from warehouse.snapshots import latest_snapshots

pytestmark = pytest.mark.slow

PAGE = 200
CALLS: list[tuple[str, str | None]] = []


class FailingPlatform(PlatformResource):
    """Pages of 200 orders, each its own commit; the platform fails on the fourth."""

    page_size: int = PAGE
    batch_rows: int = PAGE

    def wrap(self, connector: Connector) -> Connector:
        return FailingConnector(connector, "orders", pages=3)


class ObservedPlatform(PlatformResource):
    def wrap(self, connector: Connector) -> Connector:
        return ObservedConnector(connector, lambda dataset, cursor: CALLS.append((dataset, cursor)))


def test_interrupted_sync_resumes_from_the_saved_cursor(
    settings: Settings, registry: Registry, demo_account: str, store_ids: list[str]
) -> None:
    store_id = store_ids[0]
    [rates, failed] = sync_stores(
        settings, registry, [store_id], resources={"quarry": FailingPlatform()}
    )
    assert rates.success and not failed.success
    assert failed.failed_step == "sync_orders"
    assert failed.error and "platform down after 3 pages of orders" in failed.error

    # Three pages were committed, and the cursor of the third saved with them.
    pages = DemoConnector(settings, demo_account, store_id, page_size=PAGE).changes("orders", None)
    third = [page for _, page in zip(range(3), pages, strict=False)][-1]
    with registry.session() as session:
        assert get_cursor(session, store_id, "orders") == third.cursor
        assert latest_snapshots(session, [store_id]) == {}
        assert pending_sales(session, store_id).full
    assert warehouse_rows(settings, "orders", store_id).num_rows == 3 * PAGE

    CALLS.clear()
    [resumed] = sync_stores(
        settings, registry, [store_id], resources={"quarry": ObservedPlatform()}
    )
    assert resumed.success, (resumed.failed_step, resumed.error)
    assert ("orders", third.cursor) in CALLS
    assert resumed.rows["orders"] < load_table(settings, demo_account, store_id, "orders").num_rows
    for table in ("orders", "order_lines", "refunds", "refund_lines"):
        rows = warehouse_rows(settings, table, store_id)
        truth = sort_rows(table, load_table(settings, demo_account, store_id, table))
        assert pc.count_distinct(rows["id"]).as_py() == rows.num_rows
        assert rows.equals(truth), table
    with registry.session() as session:
        assert set(latest_snapshots(session, [store_id])) == {store_id}
        assert not pending_sales(session, store_id)
    # The sales were rebuilt for every order (the interrupted sync was a first, full one).
    sales_orders = pc.unique(warehouse_rows(settings, "sales", store_id)["order_id"])
    assert len(sales_orders) == load_table(settings, demo_account, store_id, "orders").num_rows
