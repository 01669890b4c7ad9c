"""An advance of existing orders: payments captured or voided, shipments, new refunds booked
now, and a few cancelled orders deleted. Each order changes at most once per advance, at a
time in (old clock, new clock] that becomes its updated_at."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.hostile import HostileInjector
from platforms.demo.lifecycle import FULL_REFUND, PARTIAL_REFUND
from platforms.demo.merchandise import DRAFT_ORDERS
from platforms.demo.money import minor_units, money_array
from platforms.demo.profile import StoreProfile
from platforms.demo.refunds import RefundedOrders, build_refunds
from platforms.demo.rows import change_times, drop_rows, pick, replace_rows, without_parents
from platforms.demo.state import StoreState
from platforms.demo.timeline import DAY, seconds_of, timestamps

# Orders older than this no longer move (a stuck payment or shipment stays stuck); refunds
# come within their own window.
ACTIVE_WINDOW = 30 * DAY
REFUND_WINDOW = 60 * DAY
FULL_REFUNDS_PER_DAY = 0.003
PARTIAL_REFUNDS_PER_DAY = 0.005
DELETES_PER_DAY = 0.005


@dataclass(frozen=True)
class OrderTables:
    orders: pa.Table
    order_lines: pa.Table
    refunds: pa.Table
    refund_lines: pa.Table


@dataclass(frozen=True)
class OrderChanges:
    tables: OrderTables
    changed_ids: pa.Array
    changed_at: np.ndarray
    deleted_ids: pa.Array
    deleted_customers: pa.Array  # customer of each deleted order (null for guests)
    deleted_at: np.ndarray


def _settled(days: float, per_day_stay: float) -> float:
    """Chance that something pending at `per_day_stay` a day left its state within `days`."""
    return 1.0 - per_day_stay**days


def advance_orders(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    tables: OrderTables,
    old: int,
    new: int,
    injector: HostileInjector,
) -> OrderChanges:
    orders = tables.orders
    days = (new - old) / DAY
    digits = profile.digits
    financial = orders["financial_status"].to_numpy(zero_copy_only=False).astype(object)
    fulfillment = orders["fulfillment_status"].to_numpy(zero_copy_only=False).astype(object)
    cancelled = seconds_of(orders["cancelled_at"])
    created = seconds_of(orders["created_at"])
    free = np.ones(orders.num_rows, dtype=bool)
    active = created > old - ACTIVE_WINDOW

    def claim(rows: np.ndarray) -> np.ndarray:
        free[rows] = False
        return rows

    authorized = claim(
        pick(rng, np.flatnonzero(active & (financial == "authorized")), _settled(days, 0.3))
    )
    pending = claim(
        pick(rng, np.flatnonzero(active & (financial == "pending")), _settled(days, 0.5))
    )
    paid_up = np.concatenate([authorized, pending])
    voided = paid_up[rng.random(len(paid_up)) < 0.15]
    financial[paid_up] = "paid"
    financial[voided] = "voided"
    shippable = (
        np.isin(fulfillment, ["unfulfilled", "partial"])
        & np.isin(financial, ["paid", "partially_refunded"])
        & (cancelled < 0)
        & free
        & active
    )
    shipped = claim(pick(rng, np.flatnonzero(shippable), _settled(days, 0.4)))
    fulfillment[shipped] = "fulfilled"

    refundable = (financial == "paid") & free & (cancelled < 0) & (created > old - REFUND_WINDOW)
    candidates = np.flatnonzero(refundable)
    refunded = claim(
        pick(
            rng,
            candidates,
            min(1.0, (FULL_REFUNDS_PER_DAY + PARTIAL_REFUNDS_PER_DAY) * days),
            at_least=1,
        )
    )
    changed = np.sort(np.concatenate([paid_up, shipped, refunded]))
    changed_at = change_times(rng, len(changed), old, new)

    def at(rows: np.ndarray) -> np.ndarray:
        return changed_at[np.searchsorted(changed, rows)]

    cancelled[voided] = at(voided)
    refund_tables, refund_total, cancelled_too = _refund(
        rng, profile, store, tables, refunded, at(refunded), injector
    )
    financial[refunded] = np.where(
        refund_total.kind == FULL_REFUND, "refunded", "partially_refunded"
    )
    cancelled[refunded[cancelled_too]] = at(refunded[cancelled_too])

    orders = replace_rows(
        orders,
        changed,
        {
            "financial_status": pa.array(financial[changed], pa.string()),
            "fulfillment_status": pa.array(fulfillment[changed], pa.string()),
            "cancelled_at": timestamps(cancelled[changed], cancelled[changed] >= 0),
            "updated_at": timestamps(changed_at),
        },
    )
    orders = replace_rows(
        orders,
        refunded,
        {"total_refunded": money_array(refund_total.amount, digits)},
    )
    refunds = pa.concat_tables([tables.refunds, refund_tables[0]])
    refund_lines = pa.concat_tables([tables.refund_lines, refund_tables[1]])

    # Only cancelled orders are deleted, as a platform allows; orders from drafts stay linked.
    channel = orders["sales_channel"].to_numpy(zero_copy_only=False)
    deletable = free & (cancelled >= 0) & (channel != DRAFT_ORDERS)
    doomed = pick(rng, np.flatnonzero(deletable), min(1.0, DELETES_PER_DAY * days), at_least=1)
    deleted_ids = orders["id"].take(pa.array(doomed)).combine_chunks()
    deleted_customers = orders["customer_id"].take(pa.array(doomed)).combine_chunks()
    changed_ids = orders["id"].take(pa.array(changed)).combine_chunks()
    orders = drop_rows(orders, doomed)
    return OrderChanges(
        tables=OrderTables(
            orders=orders,
            order_lines=without_parents(tables.order_lines, "order_id", deleted_ids),
            refunds=without_parents(refunds, "order_id", deleted_ids),
            refund_lines=without_parents(refund_lines, "order_id", deleted_ids),
        ),
        changed_ids=changed_ids,
        changed_at=changed_at,
        deleted_ids=deleted_ids,
        deleted_customers=deleted_customers,
        deleted_at=change_times(rng, len(doomed), old, new),
    )


@dataclass(frozen=True)
class _Refunded:
    kind: np.ndarray
    amount: np.ndarray


def _refund(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    tables: OrderTables,
    rows: np.ndarray,
    at: np.ndarray,
    injector: HostileInjector,
) -> tuple[tuple[pa.Table, pa.Table], _Refunded, np.ndarray]:
    """Refunds booked at `at` for the never-refunded orders `rows`; which of them were
    cancelled with it (refunded in full before shipping)."""
    digits = profile.digits
    orders = tables.orders.take(pa.array(rows))
    ids = orders["id"].combine_chunks()
    lines = tables.order_lines
    position = pc.fill_null(pc.index_in(lines["order_id"], value_set=ids), -1)
    position = np.asarray(position.to_numpy(zero_copy_only=False), dtype=np.int64)
    mine = np.flatnonzero(position >= 0)
    mine = mine[np.argsort(position[mine], kind="stable")]
    lines = lines.take(pa.array(mine))
    line_order = position[mine]
    quantity = lines["quantity"].to_numpy()
    net = minor_units(lines["price"], digits) * quantity - minor_units(lines["discount"], digits)
    line_tax = minor_units(lines["tax"], digits)
    tax_of_lines = np.bincount(line_order, weights=line_tax, minlength=len(rows)).astype(np.int64)

    shipping = minor_units(orders["total_shipping"], digits)
    shipping_tax = minor_units(orders["total_tax"], digits) - tax_of_lines
    duties = minor_units(orders["total_duties"], digits)
    fees = minor_units(orders["total_additional_fees"], digits)
    count = orders["line_item_count"].to_numpy()
    units = orders["item_quantity"].to_numpy()
    partial_ok = ~((count == 1) & (units == 1) & (shipping + duties + fees == 0))
    full = rng.random(len(rows)) < FULL_REFUNDS_PER_DAY / (
        FULL_REFUNDS_PER_DAY + PARTIAL_REFUNDS_PER_DAY
    )
    kind = np.where((full & (fees == 0)) | ~partial_ok, FULL_REFUND, PARTIAL_REFUND)
    batch = build_refunds(
        rng,
        profile,
        store,
        RefundedOrders(
            order_ids=ids,
            kind=kind,
            two_refunds=np.zeros(len(rows), dtype=bool),
            first_at=at,
            second_at=at,
            shipping=shipping,
            shipping_tax=shipping_tax,
            duties=duties,
            line_order=line_order,
            line_ids=lines["id"].combine_chunks(),
            quantity=quantity,
            net=net,
            tax=line_tax,
        ),
        injector,
    )
    unshipped = orders["fulfillment_status"].to_numpy(zero_copy_only=False) == "unfulfilled"
    return (
        (batch.refunds, batch.refund_lines),
        _Refunded(kind, batch.refunded),
        (kind == FULL_REFUND) & unshipped,
    )
