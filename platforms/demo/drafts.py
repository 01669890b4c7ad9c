"""Draft orders: open and invoiced drafts, and completed ones that became 'Draft Orders'
channel orders.

A completed draft carries its order's id, customer, subtotal, tax and line count, and its
total_price is the order's total less duties and additional fees (a draft quotes subtotal,
shipping and tax). It was created before its order and completed_at is the order's time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.assortment import Assortment, draw_variants
from platforms.demo.geography import TAX_RATES, country_index, indices_of
from platforms.demo.identifiers import gids, record_ids
from platforms.demo.money import minor_units, money_array, price_points
from platforms.demo.profile import StoreProfile
from platforms.demo.state import StoreState
from platforms.demo.timeline import DAY, HOUR, seconds_of, timestamps
from warehouse.schemas import DRAFT_ORDERS

# Of all drafts, these shares stay open or were invoiced (the rest became orders).
OPEN_SHARE_OF_ORDERS = 0.006
INVOICED_SHARE = 0.4


@dataclass(frozen=True)
class Drafts:
    """Draft rows as arrays, before ids are given."""

    status: np.ndarray
    created: np.ndarray
    updated: np.ndarray
    completed: np.ndarray  # -1 when not completed
    order_id: pa.Array
    customer_id: pa.Array
    customer_name: pa.Array
    email: pa.Array
    subtotal: np.ndarray
    tax: np.ndarray
    total: np.ndarray
    line_count: np.ndarray


def completed_for(rng: np.random.Generator, orders: pa.Table, digits: int) -> Drafts:
    """A completed draft for each of `orders`, created up to ten days before it."""
    n = orders.num_rows
    placed = seconds_of(orders["created_at"])
    created = placed - HOUR - (rng.random(n) * 10 * DAY).astype(np.int64)
    return completed_drafts(orders, created, digits)


def completed_drafts(orders: pa.Table, created: np.ndarray, digits: int) -> Drafts:
    """Drafts created at `created` that became `orders` (completed at each order's time)."""
    placed = seconds_of(orders["created_at"])
    total = (
        minor_units(orders["total_price"], digits)
        - minor_units(orders["total_duties"], digits)
        - minor_units(orders["total_additional_fees"], digits)
    )
    return Drafts(
        status=np.full(orders.num_rows, "completed", dtype=object),
        created=created,
        updated=placed,
        completed=placed,
        order_id=orders["id"].combine_chunks(),
        customer_id=orders["customer_id"].combine_chunks(),
        customer_name=orders["customer_name"].combine_chunks(),
        email=orders["email"].combine_chunks(),
        subtotal=minor_units(orders["subtotal_price"], digits),
        tax=minor_units(orders["total_tax"], digits),
        total=total,
        line_count=orders["line_item_count"].to_numpy(),
    )


def open_drafts(
    rng: np.random.Generator,
    profile: StoreProfile,
    created: np.ndarray,
    clock: int,
    customers: pa.Table,
    stock: Assortment,
) -> Drafts:
    """Drafts not (yet) completed, created at the sorted times `created`, as of `clock`.
    `customers` must be sorted by created_at; a draft's customer signed up before it."""
    n = len(created)
    signed_up = np.searchsorted(seconds_of(customers["created_at"]), created, side="right")
    has = (signed_up > 0) & (rng.random(n) < 0.9)
    row = (rng.random(n) * signed_up).astype(np.int64)
    index = pa.array(np.where(has, row, 0), mask=~has)

    lines = rng.integers(1, 5, n)
    owner = np.repeat(np.arange(n), lines)
    _, variant = draw_variants(rng, stock, created[owner])
    amount = stock.prices[variant] * rng.integers(1, 3, len(owner))
    subtotal = np.bincount(owner, weights=amount, minlength=n).astype(np.int64)
    country = indices_of(customers["country"].take(index))
    rate = np.where(
        country >= 0,
        TAX_RATES[np.maximum(country, 0)],
        TAX_RATES[country_index(profile.template.country)],
    )
    tax = np.rint(subtotal * rate).astype(np.int64)
    shipping = np.where(
        rng.random(n) < 0.6, price_points(np.array([7.99]), profile.per_usd, profile.digits)[0], 0
    )
    touched = np.minimum(created + 7 * DAY, clock)
    return Drafts(
        status=np.where(rng.random(n) < INVOICED_SHARE, "invoice_sent", "open").astype(object),
        created=created,
        updated=created + ((touched - created) * rng.random(n)).astype(np.int64),
        completed=np.full(n, -1),
        order_id=pa.nulls(n, pa.string()),
        customer_id=customers["id"].take(index).combine_chunks(),
        customer_name=customers["customer_name"].take(index).combine_chunks(),
        email=customers["email"].take(index).combine_chunks(),
        subtotal=subtotal,
        tax=tax,
        total=subtotal + tax + shipping,
        line_count=lines.astype(np.int64),
    )


def draft_table(profile: StoreProfile, store: StoreState, *parts: Drafts) -> pa.Table:
    """The draft_orders rows of `parts`, numbered #D1, #D2... in order of creation."""
    created = np.concatenate([p.created for p in parts])
    order = np.argsort(created, kind="stable")
    index = pa.array(order)
    n = len(order)
    local = store.take_ids("DraftOrder", n)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])[order]

    def strings(name: str) -> pa.Array:
        return pa.concat_arrays([getattr(p, name) for p in parts]).take(index)

    completed = cat("completed")
    digits = profile.digits
    return pa.table(
        {
            "id": record_ids(profile.store_id, "DraftOrder", local),
            "store_id": pa.array([profile.store_id] * n),
            "platform_id": gids("DraftOrder", local),
            "draft_order_name": pc.binary_join_element_wise(
                "#D", pc.cast(pa.array(local), pa.string()), ""
            ),
            "status": pa.array(cat("status"), pa.string()),
            "created_at": timestamps(cat("created")),
            "updated_at": timestamps(cat("updated")),
            "completed_at": timestamps(completed, completed >= 0),
            "order_id": strings("order_id"),
            "customer_id": strings("customer_id"),
            "customer_name": strings("customer_name"),
            "email": strings("email"),
            "currency": pa.array([profile.currency] * n),
            "subtotal_price": money_array(cat("subtotal"), digits),
            "total_tax": money_array(cat("tax"), digits),
            "total_price": money_array(cat("total"), digits),
            "line_item_count": pa.array(cat("line_count").astype(np.int64)),
        },
        schema=DRAFT_ORDERS.schema,
    )
