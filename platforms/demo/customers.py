"""Customers: who places each order, the customer records, and their order totals.

orders_count counts every current order of the customer; total_spent sums total_price minus
total_refunded over those whose money was taken (paid, partially_refunded, refunded). Both are
recomputed from the orders at the seed and at every advance, so they are exact; a customer's
updated_at moves when one of their orders is added, changed or deleted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.hostile import HostileInjector
from platforms.demo.identifiers import gids, record_ids
from platforms.demo.merchandise import CUSTOMER_TAGS
from platforms.demo.money import minor_units, money_array
from platforms.demo.people import generate_people
from platforms.demo.profile import StoreProfile
from platforms.demo.state import StoreState
from platforms.demo.timeline import seconds_of, timestamps
from platforms.demo.weighted import weighted_choice
from warehouse.schemas import CUSTOMERS

GUEST_SHARE = 0.05
# Share of orders placed by a customer's first order; with GUEST_SHARE and the sign-ups who
# never order (SIGNUP_SHARE of orders) this makes about one customer per five orders.
NEW_SHARE = 0.19
SIGNUP_SHARE = 0.02
# A checkout creates the customer a few minutes before the order.
SIGNUP_LEAD = 600
RECENCY_SKEW = 2.0
SPENDING_STATUSES = pa.array(["paid", "partially_refunded", "refunded"])
_STATES = (("enabled", 55), ("disabled", 40), ("invited", 5))


def assign_customers(
    rng: np.random.Generator, order_times: np.ndarray, existing: int, start: int, end: int
) -> tuple[np.ndarray, np.ndarray]:
    """Who places each order (times sorted): -1 for a guest, else a customer row, where rows
    below `existing` are customers already on file and the others new customers.

    Returns the rows and the sorted creation times of the new customers (in [start, end)):
    those whose first order this is and sign-ups who have not ordered yet.
    """
    n = len(order_times)
    known = rng.random(n) >= GUEST_SHARE
    first = known & (rng.random(n) < NEW_SHARE)
    earlier: np.ndarray = np.cumsum(first) - first
    # A returning buyer needs someone to return: with nobody on file, the first is new.
    first |= known & (existing + earlier == 0)
    earlier = np.cumsum(first) - first
    pool = existing + earlier
    # Returning buyers are mostly recent customers: repeat purchases cluster after the first.
    back = pool - 1 - (rng.random(n) ** RECENCY_SKEW * pool).astype(np.int64)
    rows = np.where(first, pool, np.maximum(back, 0))
    rows = np.where(known, rows, -1)

    firsts = int(first.sum())
    signups = rng.binomial(max(n, 1), SIGNUP_SHARE) if end > start else 0
    created = np.concatenate([
        np.maximum(order_times[first] - rng.integers(0, SIGNUP_LEAD, firsts), start),
        rng.integers(start, max(end, start + 1), signups),
    ])  # fmt: skip
    order = np.argsort(created, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    new = rows >= existing
    rows[new] = existing + rank[rows[new] - existing]
    return rows, created[order]


def build_customers(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    created: np.ndarray,
    injector: HostileInjector,
) -> pa.Table:
    """Customer records created at the sorted times `created`, with no orders yet."""
    n = len(created)
    local = store.take_ids("Customer", n)
    people = generate_people(rng, profile, n, injector)
    return pa.table(
        {
            "id": record_ids(profile.store_id, "Customer", local),
            "store_id": pa.array([profile.store_id] * n),
            "platform_id": gids("Customer", local),
            "first_name": people.first_name,
            "last_name": people.last_name,
            "customer_name": people.name,
            "email": people.email,
            "country": people.country,
            "city": people.city,
            "state": weighted_choice(rng, _STATES, n),
            "accepts_marketing": pa.array(rng.random(n) < 0.35),
            "tags": injector.apply(weighted_choice(rng, CUSTOMER_TAGS, n), allow_long=True),
            "created_at": timestamps(created),
            "updated_at": timestamps(created),
            "currency": pa.array([profile.currency] * n),
            "orders_count": pa.array(np.zeros(n, dtype=np.int64)),
            "total_spent": money_array(np.zeros(n, dtype=np.int64), profile.digits),
        },
        schema=CUSTOMERS.schema,
    )


def order_owner(customers: pa.Table, customer_ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row in `customers` of each customer id (-1 for guests and unknown ids)."""
    found = pc.index_in(customer_ids, value_set=customers["id"])
    return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def with_order_totals(customers: pa.Table, orders: pa.Table, digits: int) -> pa.Table:
    """`customers` with orders_count and total_spent recomputed from `orders`."""
    n = customers.num_rows
    owner = order_owner(customers, orders["customer_id"])
    mine = owner >= 0
    spending = pc.is_in(orders["financial_status"], value_set=SPENDING_STATUSES)
    spending = np.asarray(spending.to_numpy(zero_copy_only=False)) & mine
    net = minor_units(orders["total_price"], digits) - minor_units(orders["total_refunded"], digits)
    count = np.bincount(owner[mine], minlength=n).astype(np.int64)
    # Float sums are exact here: amounts stay far below 2**53 minor units.
    spent = np.rint(np.bincount(owner[spending], weights=net[spending], minlength=n))
    customers = customers.set_column(
        customers.schema.get_field_index("orders_count"), "orders_count", pa.array(count)
    )
    return customers.set_column(
        customers.schema.get_field_index("total_spent"),
        "total_spent",
        money_array(spent.astype(np.int64), digits),
    )


def touch(customers: pa.Table, owners: np.ndarray, times: np.ndarray) -> pa.Table:
    """`customers` with updated_at moved to the latest of `times` of their events (rows
    `owners`, -1 ignored), where that is later than the current value."""
    updated = seconds_of(customers["updated_at"])
    mine = owners >= 0
    np.maximum.at(updated, owners[mine], times[mine])
    return customers.set_column(
        customers.schema.get_field_index("updated_at"), "updated_at", timestamps(updated)
    )
