"""An advance of draft orders: new drafts, drafts completed into this advance's 'Draft Orders'
orders, invoices sent, and a few stale drafts deleted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.assortment import Assortment
from platforms.demo.drafts import (
    OPEN_SHARE_OF_ORDERS,
    completed_drafts,
    draft_table,
    open_drafts,
)
from platforms.demo.merchandise import DRAFT_ORDERS
from platforms.demo.money import money_array
from platforms.demo.profile import StoreProfile
from platforms.demo.rows import change_times, drop_rows, pick, replace_rows
from platforms.demo.state import StoreState
from platforms.demo.timeline import DAY, seconds_of, timestamps

INVOICES_PER_DAY = 0.1
STALE_AGE = 30 * DAY
DELETES_PER_DAY = 0.02


@dataclass(frozen=True)
class DraftChanges:
    drafts: pa.Table
    added: int
    updated: int
    deleted_ids: pa.Array
    deleted_at: np.ndarray


def advance_drafts(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    drafts: pa.Table,
    new_orders: pa.Table,
    customers: pa.Table,
    stock: Assortment,
    old: int,
    new: int,
    expected_orders: float,
) -> DraftChanges:
    """`customers` sorted by created_at; `new_orders` are the orders this advance placed."""
    days = (new - old) / DAY
    digits = profile.digits
    status = drafts["status"].to_numpy(zero_copy_only=False)
    waiting = np.flatnonzero(np.isin(status, ["open", "invoice_sent"]))

    # This advance's 'Draft Orders' orders complete waiting drafts, or new ones if none wait.
    placed = new_orders.filter(pc.equal(new_orders["sales_channel"], DRAFT_ORDERS))
    completing = rng.permutation(waiting)[: placed.num_rows]
    done = completed_drafts(
        placed.slice(0, len(completing)),
        seconds_of(drafts["created_at"])[completing],
        digits,
    )
    drafts = replace_rows(
        drafts,
        completing,
        {
            "status": pa.array(done.status, pa.string()),
            "updated_at": timestamps(done.updated),
            "completed_at": timestamps(done.completed),
            "order_id": done.order_id,
            "customer_id": done.customer_id,
            "customer_name": done.customer_name,
            "email": done.email,
            "subtotal_price": money_array(done.subtotal, digits),
            "total_tax": money_array(done.tax, digits),
            "total_price": money_array(done.total, digits),
            "line_item_count": pa.array(done.line_count, pa.int64()),
        },
    )
    unmatched = placed.slice(len(completing))
    placed_at = seconds_of(unmatched["created_at"])
    started = old + 1 + (rng.random(len(placed_at)) * (placed_at - old - 1)).astype(np.int64)

    still_open = np.setdiff1d(waiting, completing)
    is_open = status[still_open] == "open"
    invoiced = pick(rng, still_open[is_open], min(1.0, INVOICES_PER_DAY * days))
    invoiced_at = change_times(rng, len(invoiced), old, new)
    drafts = replace_rows(
        drafts,
        invoiced,
        {
            "status": pa.array(["invoice_sent"] * len(invoiced)),
            "updated_at": timestamps(invoiced_at),
        },
    )

    untouched = np.setdiff1d(still_open, invoiced)
    created = seconds_of(drafts["created_at"])
    stale = untouched[created[untouched] <= old - STALE_AGE]
    doomed = pick(
        rng, stale if len(stale) else untouched, min(1.0, DELETES_PER_DAY * days), at_least=1
    )
    deleted_ids = drafts["id"].take(pa.array(doomed)).combine_chunks()
    drafts = drop_rows(drafts, doomed)

    count = rng.poisson(expected_orders * OPEN_SHARE_OF_ORDERS)
    open_times = np.sort(change_times(rng, count, old, new))
    fresh = draft_table(
        profile,
        store,
        completed_drafts(unmatched, started, digits),
        open_drafts(rng, profile, open_times, new, customers, stock),
    )
    return DraftChanges(
        drafts=pa.concat_tables([drafts, fresh]),
        added=fresh.num_rows,
        updated=len(completing) + len(invoiced),
        deleted_ids=deleted_ids,
        deleted_at=change_times(rng, len(doomed), old, new),
    )
