"""Sync cursors and the sales model's pending orders (registry.cursors)."""

from __future__ import annotations

import pytest

from quarry.settings import Settings
from registry.accounts import create_account, create_store
from registry.cursors import (
    clear_sales_pending,
    get_cursor,
    list_cursors,
    mark_sales_pending,
    pending_sales,
    set_cursor,
)
from registry.db import Registry


@pytest.fixture
def store_id(registry: Registry) -> str:
    with registry.session() as session:
        account = create_account(session, name="A", currency="USD", timezone="UTC")
        store = create_store(
            session, account_id=account.id, name="S", domain="s.test", currency="USD",
            timezone="UTC", platform="demo",
        )  # fmt: skip
        return store.id


def test_cursors_are_saved_per_dataset(registry: Registry, store_id: str) -> None:
    with registry.session() as session:
        assert get_cursor(session, store_id, "orders") is None
        set_cursor(session, store_id, "orders", "c1")
        set_cursor(session, store_id, "orders", "c2")
        set_cursor(session, store_id, "customers", "x")
    with registry.session() as session:
        assert list_cursors(session, store_id) == {"orders": "c2", "customers": "x"}


def test_pending_orders_are_cleared_only_when_built(registry: Registry, store_id: str) -> None:
    with registry.session() as session:
        assert not pending_sales(session, store_id)
        mark_sales_pending(session, store_id, ["o1", "o2"])
        read = pending_sales(session, store_id)
        assert read.order_ids == {"o1", "o2"} and not read.full
        # Marked again while a build of `read` runs: stays pending after it.
        mark_sales_pending(session, store_id, ["o2", "o3"])
        clear_sales_pending(session, store_id, read)
        assert pending_sales(session, store_id).order_ids == {"o2", "o3"}
        clear_sales_pending(session, store_id, pending_sales(session, store_id))
        assert not pending_sales(session, store_id)


def test_full_rebuild_swallows_ids_and_survives_later_marks(
    registry: Registry, store_id: str, settings: Settings
) -> None:
    with registry.session() as session:
        mark_sales_pending(session, store_id, ["o1"])
        mark_sales_pending(session, store_id, full=True)
        read = pending_sales(session, store_id)
        assert read.full and not read.order_ids
        mark_sales_pending(session, store_id, ["o9"])  # during the build
        clear_sales_pending(session, store_id, read)
        assert pending_sales(session, store_id).full  # not knowing o9, it stays full
        clear_sales_pending(session, store_id, pending_sales(session, store_id))
        assert not pending_sales(session, store_id)
