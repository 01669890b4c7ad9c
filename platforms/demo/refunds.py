"""Refunds and refund lines of orders that have not been refunded before.

A full refund returns every unit of every line with its tax, plus shipping, shipping tax and
duties (in the last refund when it is booked in two parts), so total_refunded equals
total_price. A partial refund returns some units of one line, never everything. Line
amounts are shared pro rata to the units returned, rounded half up in minor units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from platforms.demo.hostile import HostileInjector
from platforms.demo.identifiers import record_ids
from platforms.demo.lifecycle import FULL_REFUND, PARTIAL_REFUND
from platforms.demo.merchandise import REFUND_NOTES
from platforms.demo.money import money_array, share
from platforms.demo.profile import StoreProfile
from platforms.demo.state import StoreState
from platforms.demo.timeline import timestamps
from platforms.demo.weighted import weighted_choice
from warehouse.schemas import REFUND_LINES, REFUNDS


@dataclass(frozen=True)
class RefundedOrders:
    """The orders to refund (k of them) and their lines (grouped by order, in line order)."""

    order_ids: pa.Array
    kind: np.ndarray  # PARTIAL_REFUND or FULL_REFUND
    two_refunds: np.ndarray
    first_at: np.ndarray
    second_at: np.ndarray
    shipping: np.ndarray
    shipping_tax: np.ndarray
    duties: np.ndarray
    line_order: np.ndarray  # 0..k-1
    line_ids: pa.Array
    quantity: np.ndarray
    net: np.ndarray  # price * quantity - discount
    tax: np.ndarray


@dataclass(frozen=True)
class RefundBatch:
    refunds: pa.Table
    refund_lines: pa.Table
    refunded: np.ndarray  # per order, minor units


def build_refunds(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    todo: RefundedOrders,
    injector: HostileInjector,
) -> RefundBatch:
    k = len(todo.kind)
    lines = np.bincount(todo.line_order, minlength=k)
    start = np.cumsum(lines) - lines
    position = np.arange(len(todo.line_order)) - start[todo.line_order]
    extras = todo.shipping + todo.shipping_tax + todo.duties

    # Partial: some units of one line; all of them only when something else stays unrefunded.
    picked = (rng.random(k) * lines).astype(np.int64)
    q = todo.quantity
    units = np.where(
        (lines == 1)[todo.line_order] & (extras == 0)[todo.line_order],
        1 + (rng.random(len(q)) * (q - 1)).astype(np.int64),
        1 + (rng.random(len(q)) * q).astype(np.int64),
    )
    full = (todo.kind == FULL_REFUND)[todo.line_order]
    partial_line = ((todo.kind == PARTIAL_REFUND)[todo.line_order]) & (
        position == picked[todo.line_order]
    )
    returned = np.where(full, q, np.where(partial_line, units, 0))

    # A two-part full refund returns the lines before `split` first, the rest later.
    split = 1 + (rng.random(k) * np.maximum(lines - 1, 1)).astype(np.int64)
    in_second = todo.two_refunds[todo.line_order] & (position >= split[todo.line_order])
    seconds = np.flatnonzero(todo.two_refunds)
    second_index = np.full(k, -1)
    second_index[seconds] = k + np.arange(len(seconds))
    refund_of_line = np.where(in_second, second_index[todo.line_order], todo.line_order)

    refund_order = np.concatenate([np.arange(k), seconds])
    refund_at = np.concatenate([todo.first_at, todo.second_at[seconds]])
    extras_here = np.concatenate(
        [(todo.kind == FULL_REFUND) & ~todo.two_refunds, np.ones(len(seconds), bool)]
    )
    booked = np.argsort(refund_at, kind="stable")
    slot = np.empty_like(booked)
    slot[booked] = np.arange(len(booked))
    refund_ids = record_ids(profile.store_id, "Refund", store.take_ids("Refund", len(booked)))

    def per_refund(values: np.ndarray) -> np.ndarray:
        return np.where(extras_here, values[refund_order], 0)[booked]

    refunds = pa.table(
        {
            "id": refund_ids,
            "store_id": pa.array([profile.store_id] * len(booked)),
            "order_id": todo.order_ids.take(pa.array(refund_order[booked])),
            "created_at": timestamps(refund_at[booked]),
            "shipping": money_array(per_refund(todo.shipping), profile.digits),
            "shipping_tax": money_array(per_refund(todo.shipping_tax), profile.digits),
            "duties": money_array(per_refund(todo.duties), profile.digits),
            "note": injector.apply(
                weighted_choice(rng, REFUND_NOTES, len(booked)), allow_long=True
            ),
        },
        schema=REFUNDS.schema,
    )

    rows = np.flatnonzero(returned > 0)
    subtotal = share(todo.net[rows], returned[rows], q[rows])
    tax = share(todo.tax[rows], returned[rows], q[rows])
    refund_lines = pa.table(
        {
            "id": record_ids(
                profile.store_id, "RefundLineItem", store.take_ids("RefundLineItem", len(rows))
            ),
            "store_id": pa.array([profile.store_id] * len(rows)),
            "order_id": todo.order_ids.take(pa.array(todo.line_order[rows])),
            "refund_id": refund_ids.take(pa.array(slot[refund_of_line[rows]])),
            "line_id": todo.line_ids.take(pa.array(rows)),
            "quantity": pa.array(returned[rows], pa.int64()),
            "subtotal": money_array(subtotal, profile.digits),
            "tax": money_array(tax, profile.digits),
        },
        schema=REFUND_LINES.schema,
    )
    refunded = np.zeros(k, dtype=np.int64)
    np.add.at(refunded, todo.line_order[rows], subtotal + tax)
    refunded += np.where(todo.kind == FULL_REFUND, extras, 0)
    return RefundBatch(refunds, refund_lines, refunded)
