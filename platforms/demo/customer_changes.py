"""An advance of customers: order totals and updated_at follow their orders' changes, a few
edit their profile, and a few who never ordered are deleted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.customers import order_owner, touch, with_order_totals
from platforms.demo.rows import change_times, drop_rows, pick, replace_rows
from platforms.demo.timeline import DAY, seconds_of, timestamps

PROFILE_EDITS_PER_DAY = 0.005
DELETES_PER_DAY = 0.01


@dataclass(frozen=True)
class OrderEvents:
    """Changes to orders this advance, by customer id (null for guests) and time."""

    customer_ids: pa.Array
    times: np.ndarray


@dataclass(frozen=True)
class CustomerChanges:
    customers: pa.Table
    updated: int
    deleted_ids: pa.Array
    deleted_at: np.ndarray


def advance_customers(
    rng: np.random.Generator,
    customers: pa.Table,
    existing: int,
    orders: pa.Table,
    events: OrderEvents,
    drafts: pa.Table,
    digits: int,
    old: int,
    new: int,
) -> CustomerChanges:
    """`customers`: the `existing` ones first, then those new in this advance."""
    days = (new - old) / DAY
    on_file = np.arange(existing)
    edited = pick(rng, on_file, min(1.0, PROFILE_EDITS_PER_DAY * days), at_least=1)
    marketing = customers["accepts_marketing"].to_numpy(zero_copy_only=False)[edited]
    customers = replace_rows(
        customers,
        edited,
        {
            "accepts_marketing": pa.array(~marketing.astype(bool)),
            "updated_at": timestamps(change_times(rng, len(edited), old, new)),
        },
    )
    customers = with_order_totals(customers, orders, digits)
    customers = touch(customers, order_owner(customers, events.customer_ids), events.times)

    # Only customers without orders or drafts can be deleted, as on a real platform.
    updated = seconds_of(customers["updated_at"])
    idle = customers["orders_count"].to_numpy() == 0
    drafted = np.asarray(
        pc.is_in(customers["id"], value_set=drafts["customer_id"]).to_numpy(zero_copy_only=False)
    )
    candidates = np.flatnonzero(idle & ~drafted & (updated <= old))
    candidates = candidates[candidates < existing]
    doomed = pick(rng, candidates, min(1.0, DELETES_PER_DAY * days), at_least=1)
    deleted_ids = customers["id"].take(pa.array(doomed)).combine_chunks()
    # New customers count as added, not updated; the deleted ones were not touched.
    changed = int((updated[:existing] > old).sum())
    return CustomerChanges(
        customers=drop_rows(customers, doomed),
        updated=changed,
        deleted_ids=deleted_ids,
        deleted_at=change_times(rng, len(doomed), old, new),
    )
