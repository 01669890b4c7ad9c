"""A Shopify store synced into the warehouse through the real pipelines: the warehouse
equals the fixtures, the sales model reconciles, and a second sync follows an update and a
deletion on the shop."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.compute as pc
import pytest
from dagster import AssetKey

from pipelines.runner import sync_stores
from platforms.shopify.cursor import iso
from platforms.shopify.settings import ShopConnection
from quarry.crypto import SecretBox
from quarry.settings import Settings, load_settings
from registry.accounts import create_account, create_store
from registry.db import Registry
from tests.pipelines.helpers import warehouse_rows
from tests.platforms.shopify.conftest import DOMAIN, STORE_ID, expected, plain
from tests.platforms.shopify.fake_shopify import TOKEN
from tests.platforms.shopify.test_child_changes import REFUND
from warehouse.schemas import SOURCE_DATASETS

pytestmark = pytest.mark.slow
SHM = Path("/dev/shm")


@pytest.fixture
def settings(quarry_env: Settings, fake, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """quarry_env with a throwaway DAGSTER_HOME (tmpfs when there is one) and Shopify
    settings pointing at the fake shop."""
    fast = SHM.is_dir() and os.access(SHM, os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="quarry-dagster-", dir=SHM if fast else None))
    monkeypatch.setenv("DAGSTER_HOME", str(base))
    monkeypatch.setenv("QUARRY_SHOPIFY_BASE_URL", fake.url)
    monkeypatch.setenv("QUARRY_SHOPIFY_BULK_POLL_SECONDS", "0.01")
    try:
        yield load_settings()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def registry(settings: Settings) -> Iterator[Registry]:
    reg = Registry(settings)
    with reg.session() as session:
        account = create_account(session, name="Acme", currency="EUR", timezone="UTC")
        create_store(
            session,
            account_id=account.id,
            name="Quarry Test Shop",
            domain=DOMAIN,
            currency="EUR",
            timezone="Europe/Berlin",
            platform="shopify",
            connection_secret=ShopConnection(DOMAIN, TOKEN, "2025-10").seal(
                SecretBox(settings.fernet_keys)
            ),
            store_id=STORE_ID,
        )
    yield reg
    reg.dispose()


def warehouse(settings: Settings, table: str) -> list[dict[str, object]]:
    rows = warehouse_rows(settings, table, STORE_ID).to_pylist()
    return sorted(({k: plain(v) for k, v in r.items()} for r in rows), key=lambda r: r["id"])


def test_a_shopify_store_syncs_into_the_warehouse(settings, registry, fake):
    outcomes = sync_stores(settings, registry, [STORE_ID])
    assert all(o.success for o in outcomes), [(o.failed_step, o.error) for o in outcomes]

    for tables in SOURCE_DATASETS.values():
        for table in tables:
            assert warehouse(settings, table) == expected(table), table
    # Every order's sale events add up to what it charged less what it refunded, and a
    # cancelled order's to zero (Shopify's sales reports reverse a cancellation: issue 31).
    sales = warehouse_rows(settings, "sales", STORE_ID)
    totals = {
        r["order_id"]: r["total_sales_sum"]
        for r in sales.group_by("order_id").aggregate([("total_sales", "sum")]).to_pylist()
    }
    for order in warehouse_rows(settings, "orders", STORE_ID).to_pylist():
        owed = order["total_price"] - order["total_refunded"]
        assert totals[order["id"]] == (0 if order["cancelled_at"] else owed)
    assert set(pc.unique(sales["event_type"]).to_pylist()) == {"order", "return"}

    now = iso(datetime.now(UTC))
    fake.shop.update("gid://shopify/Customer/503", now, firstName="Lea", lastName="Meyer")
    fake.shop.delete("gid://shopify/Order/1003", now)
    # A refund that leaves the order's updatedAt alone (found through its Order event).
    fake.shop.refund("gid://shopify/Order/1001", REFUND, now)
    again = sync_stores(settings, registry, [STORE_ID])
    assert all(o.success for o in again), [(o.failed_step, o.error) for o in again]

    customers = {r["id"]: r for r in warehouse(settings, "customers")}
    assert customers["st_testshop01-c503"]["customer_name"] == "Lea Meyer"
    assert [r["id"] for r in warehouse(settings, "orders")] == [
        "st_testshop01-o1001",
        "st_testshop01-o1002",
    ]
    assert all(r["order_id"] != "st_testshop01-o1003" for r in warehouse(settings, "order_lines"))
    assert "st_testshop01-r7900" in {r["id"] for r in warehouse(settings, "refunds")}
    assert any(r["refund_id"] == "st_testshop01-r7900" for r in warehouse(settings, "refund_lines"))
    returns = warehouse_rows(settings, "sales", STORE_ID).to_pylist()
    assert any(
        r["order_id"] == "st_testshop01-o1001" and r["event_type"] == "return" for r in returns
    )


def test_an_incomplete_window_fails_the_sync_as_a_blocking_check(settings, registry, fake):
    """Shopify counts an order no export returns: the orders step fails on its blocking
    `complete` check, no cursor is saved past the window, and the sales model and the
    store's snapshot wait."""
    from dagster import AssetCheckKey

    from pipelines.instance import open_instance
    from registry.cursors import get_cursor

    fake.shop.hidden_from_bulk = {"gid://shopify/Order/1002"}
    outcomes = sync_stores(settings, registry, [STORE_ID])

    (store_run,) = [o for o in outcomes if o.name != "exchange rates"]
    assert not store_run.success
    assert store_run.failed_step == "sync_orders"
    with registry.session() as session:
        assert get_cursor(session, STORE_ID, "orders") is None
        # Other datasets are not held back by the orders window.
        assert get_cursor(session, STORE_ID, "customers") is not None
    with open_instance(settings) as instance:
        record = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("orders"), "complete")]
        )[AssetCheckKey(AssetKey("orders"), "complete")]
        evaluation = record.event.dagster_event.event_specific_data  # type: ignore[union-attr]
        assert evaluation.passed is False
        assert "Shopify counts" in evaluation.description
        sales = instance.get_latest_materialization_event(AssetKey("sales"))
    assert sales is None
    assert warehouse(settings, "orders") == []  # nothing published for readers
