"""Bring a store's sales up to date with its orders: the orders marked pending by the sync
are rebuilt (all of them after a full sync), then unmarked."""

from __future__ import annotations

from dataclasses import dataclass

from registry.accounts import get_store
from registry.cursors import clear_sales_pending, pending_sales
from registry.db import Registry
from warehouse.lake import Lake
from warehouse.modelled.sales import write_store_sales
from warehouse.snapshots import latest_snapshots


@dataclass(frozen=True)
class SalesBuild:
    """Sale events written, orders rebuilt (0 when the whole store was), and whether the
    whole store was rebuilt."""

    rows: int
    orders: int
    full: bool


def build_sales(lake: Lake, registry: Registry, store_id: str) -> SalesBuild:
    """Rebuild the sales of the store's pending orders in one commit; none when nothing is
    pending. Incremental: the events of changed and deleted orders are replaced (deleted
    ones by nothing), so a small sync stays cheap; full: the partition is rewritten."""
    with registry.session() as session:
        store = get_store(session, store_id)
        zones = {"store_timezone": store.timezone, "account_timezone": store.account.timezone}
        pending = pending_sales(session, store_id)
        # Orders are marked pending after the store's published snapshot (a run that
        # publishes has rebuilt them first), so their rows are all newer than it.
        since = latest_snapshots(session, [store_id]).get(store_id)
    if not pending:
        return SalesBuild(0, 0, False)
    order_ids = None if pending.full else sorted(pending.order_ids)
    rows = write_store_sales(lake, store_id, order_ids=order_ids, since=since, **zones)
    orders = len(order_ids) if order_ids is not None else 0
    with registry.session() as session:
        clear_sales_pending(session, store_id, pending)
    return SalesBuild(rows, orders, pending.full)
