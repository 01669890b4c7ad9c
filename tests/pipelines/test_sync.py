"""The sync end to end on the demo platform: the warehouse equals the generator's ground
truth after a first sync, stays untouched by a sync with nothing to do, and follows an
advance of the platform (new, changed and deleted records) exactly."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bench.change import change_orders
from cli.demo_account import advance_demo
from pipelines.runner import RunOutcome, sync_stores
from platforms.demo.storage import load_table
from quarry.settings import Settings
from registry.accounts import get_store
from registry.cursors import list_cursors, pending_sales
from registry.db import Registry
from registry.measures import read_series
from registry.models import Store
from tests.pipelines.helpers import lake_version, sort_rows, warehouse_rows
from warehouse.lake import Lake
from warehouse.modelled.sales import store_sales
from warehouse.schemas import SOURCE_DATASETS
from warehouse.snapshots import latest_snapshots

SYNCED_TABLES = [table for tables in SOURCE_DATASETS.values() for table in tables]

pytestmark = pytest.mark.slow


def _assert_matches_platform(settings: Settings, account_id: str, store_ids: list[str]) -> None:
    for store_id in store_ids:
        for table in SYNCED_TABLES:
            truth = sort_rows(table, load_table(settings, account_id, store_id, table))
            assert warehouse_rows(settings, table, store_id).equals(truth), (store_id, table)


def _assert_sales_reconcile(settings: Settings, registry: Registry, store_id: str) -> pa.Table:
    """Every order's sale events add up to what it charged less what it refunded (zero for
    a cancelled order, whose cancellation reverses the rest: issue 31), and the
    incremental result is exactly a rebuild from scratch. Returns the sales rows."""
    sales = warehouse_rows(settings, "sales", store_id)
    with registry.session() as session:
        store = get_store(session, store_id)
        zones = {"store_timezone": store.timezone, "account_timezone": store.account.timezone}
    lake = Lake(settings)
    try:
        rebuilt = store_sales(lake, store_id, **zones)
    finally:
        lake.close()
    assert sales.equals(sort_rows("sales", rebuilt))
    orders = warehouse_rows(settings, "orders", store_id)
    totals = sales.group_by("order_id").aggregate([("total_sales", "sum")])
    expected = orders.select(["id", "total_price", "total_refunded", "cancelled_at"]).join(
        totals, keys="id", right_keys="order_id", join_type="left outer"
    )
    owed = pc.subtract(expected["total_price"], expected["total_refunded"])
    owed = pc.if_else(pc.is_null(expected["cancelled_at"]), owed, pa.scalar(0, owed.type))
    got = pc.fill_null(expected["total_sales_sum"], 0).cast(owed.type)
    assert pc.all(pc.equal(owed, got)).as_py()
    return sales


def _assert_measured(registry: Registry, account_id: str, outcomes: list[RunOutcome]) -> None:
    """/metrics' counters (quarry.measures) have each store's rows and time per dataset, and
    the lake's write-lock waits."""
    with registry.session() as session:
        series = read_series(session)
    rows = {(labels["store_id"], labels["dataset"]): value
            for name, labels, value in series if name == "quarry_sync_rows_total"}  # fmt: skip
    timed = {(labels["store_id"], labels["dataset"]): value
             for name, labels, value in series
             if name == "quarry_sync_duration_seconds_count"}  # fmt: skip
    for outcome in outcomes:
        for dataset, tables in SOURCE_DATASETS.items():
            assert rows[outcome.label, dataset] == sum(outcome.rows[t] for t in tables)
            assert timed[outcome.label, dataset] == 1
        assert rows[outcome.label, "sales"] == outcome.rows["sales"]
    assert {labels["account_id"] for name, labels, _ in series if "sync" in name} == {account_id}
    assert any(name == "quarry_lake_write_lock_wait_seconds_count" and value > 0
               for name, _, value in series)  # fmt: skip


def test_sync_follows_the_platform_exactly(
    settings: Settings, registry: Registry, demo_account: str, store_ids: list[str]
) -> None:
    outcomes = sync_stores(settings, registry)
    assert [o.label for o in outcomes] == ["exchange_rates", *store_ids]
    assert all(o.success for o in outcomes), [(o.failed_step, o.error) for o in outcomes]
    _assert_matches_platform(settings, demo_account, store_ids)
    for store_id in store_ids:
        sales = _assert_sales_reconcile(settings, registry, store_id)
        assert set(pc.unique(sales["event_type"]).to_pylist()) == {"order", "return"}
    with registry.session() as session:
        snapshots = latest_snapshots(session, store_ids)
        for store_id in store_ids:
            store = session.get(Store, store_id)
            assert store is not None and store.status == "active" and store.last_synced_at
            assert set(list_cursors(session, store_id)) >= set(SOURCE_DATASETS)
            assert not pending_sales(session, store_id)
    assert set(snapshots) == set(store_ids)
    # The store synced last published the lake's newest snapshot.
    assert max(snapshots.values()) == lake_version(settings)
    _assert_measured(registry, demo_account, outcomes[1:])

    # Nothing changed on the platform: nothing is written, no snapshot is added (and the
    # day's exchange rates are there already).
    version = lake_version(settings)
    again = sync_stores(settings, registry)
    assert [o.label for o in again] == store_ids
    assert all(o.success for o in again)
    assert all(not any(o.rows.values()) for o in again)
    assert lake_version(settings) == version
    with registry.session() as session:
        assert latest_snapshots(session, store_ids) == snapshots

    # The platform moves on: new orders, changes, deletions. Only those are written.
    advance_demo(settings, registry, demo_account, days=3)
    changed = sync_stores(settings, registry)
    assert all(o.success for o in changed), [(o.failed_step, o.error) for o in changed]
    _assert_matches_platform(settings, demo_account, store_ids)
    for outcome in changed:
        sales = _assert_sales_reconcile(settings, registry, outcome.label)
        assert (
            0 < outcome.rows["orders"] < warehouse_rows(settings, "orders", outcome.label).num_rows
        )
        # Only the changed orders' events were rewritten.
        assert 0 < outcome.rows["sales"] < sales.num_rows
    with registry.session() as session:
        newer = latest_snapshots(session, store_ids)
    assert all(newer[s] > snapshots[s] for s in store_ids)

    # The bench's fixed-size change (6 updates, 2 deletes and 2 new orders of every 10):
    # exactly those orders are written, and the warehouse follows the platform.
    before = {s: load_table(settings, demo_account, s, "orders").num_rows for s in store_ids}
    change = change_orders(settings, registry, demo_account, store_ids, 50, seed=3)
    assert (change.updated, change.deleted, change.added) == (30, 10, 10)
    fixed = sync_stores(settings, registry)
    assert all(o.success for o in fixed), [(o.failed_step, o.error) for o in fixed]
    _assert_matches_platform(settings, demo_account, store_ids)
    # Deleted orders count as rows written (warehouse.writer).
    assert sum(o.rows["orders"] for o in fixed) == change.orders
    assert sum(load_table(settings, demo_account, s, "orders").num_rows for s in store_ids) == (
        sum(before.values()) + change.added - change.deleted
    )
    for outcome in fixed:
        _assert_sales_reconcile(settings, registry, outcome.label)
