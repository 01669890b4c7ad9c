"""How an order's life has gone by the demo clock: payment (financial_status), fulfilment,
cancellation and the times of its refunds. Refunded amounts are refunds.py's job."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from platforms.demo.timeline import DAY, HOUR

NO_REFUND, PARTIAL_REFUND, FULL_REFUND = 0, 1, 2


@dataclass(frozen=True)
class Lifecycle:
    financial: np.ndarray
    fulfillment: np.ndarray
    # Seconds; -1 where the event did not happen.
    cancelled: np.ndarray
    refund: np.ndarray  # NO_REFUND, PARTIAL_REFUND or FULL_REFUND
    two_refunds: np.ndarray  # a full refund booked in two parts
    first_refund_at: np.ndarray
    second_refund_at: np.ndarray
    updated: np.ndarray


def _within(
    rng: np.random.Generator, start: np.ndarray, end: np.ndarray, low: float, high: float
) -> np.ndarray:
    """A time between `start` and `end` (seconds), at a fraction in [low, high) of the way,
    and at least one second after `start` when there is room."""
    fraction = low + (high - low) * rng.random(len(start))
    step = ((end - start) * fraction).astype(np.int64)
    return start + np.clip(step, 1, np.maximum(end - start, 1))


def settle(
    rng: np.random.Generator,
    created: np.ndarray,
    clock: int,
    *,
    at_counter: np.ndarray,
    line_count: np.ndarray,
    partial_refundable: np.ndarray,
    fully_refundable: np.ndarray,
) -> Lifecycle:
    """The state at `clock` of orders created at `created` (all before it).

    `partial_refundable` is False where refunding part would refund everything (one unit,
    nothing else charged); `fully_refundable` is False where a charge cannot be refunded
    (additional fees), so such orders are refunded in part only.
    """
    n = len(created)
    age = clock - created
    ramp = np.clip(age / (14 * DAY), 0.0, 1.0)
    online = ~at_counter
    p_void = np.full(n, 0.012)
    p_pending = (0.003 + 0.05 * (age < 2 * DAY)) * online
    p_authorized = (0.003 + 0.10 * (age < 3 * DAY)) * online
    p_full = 0.03 * ramp
    p_partial = 0.05 * ramp
    edges = np.cumsum(np.stack([p_void, p_pending, p_authorized, p_full, p_partial]), axis=0)
    draw = rng.random(n)
    outcome = (draw[None, :] >= edges).sum(axis=0)  # 0 void .. 4 partial, 5 paid
    refund = np.where(outcome == 3, FULL_REFUND, np.where(outcome == 4, PARTIAL_REFUND, NO_REFUND))
    refund = np.where((refund == FULL_REFUND) & ~fully_refundable, PARTIAL_REFUND, refund)
    refund = np.where((refund == PARTIAL_REFUND) & ~partial_refundable, FULL_REFUND, refund)
    financial = np.select(
        [outcome == 0, outcome == 1, outcome == 2, refund == FULL_REFUND, refund == PARTIAL_REFUND],
        ["voided", "pending", "authorized", "refunded", "partially_refunded"],
        "paid",
    ).astype(object)

    refunded = refund != NO_REFUND
    first = created + HOUR + rng.exponential(6 * DAY, n).astype(np.int64)
    first = np.where(first <= clock, first, _within(rng, created, np.full(n, clock), 0.2, 1.0))
    two = (refund == FULL_REFUND) & (line_count >= 2) & (rng.random(n) < 0.25)
    second = np.minimum(first + ((clock - first) * 0.5 * rng.random(n)).astype(np.int64), clock)
    last_refund = np.where(two, second, first)

    # Fulfilment: at once at the counter, otherwise after a day or so; before any refund.
    fulfilled_at = np.where(
        at_counter, created, created + 2 * HOUR + rng.exponential(1.2 * DAY, n).astype(np.int64)
    )
    fulfilled_at = np.where(
        refunded & (fulfilled_at >= first), _within(rng, created, first, 0.1, 0.9), fulfilled_at
    )
    shipped = (fulfilled_at <= clock) & np.isin(
        financial, ["paid", "partially_refunded", "refunded"]
    )
    cancelled_unshipped = (refund == FULL_REFUND) & ~at_counter & (rng.random(n) < 0.4)
    shipped &= ~cancelled_unshipped
    stuck = (line_count >= 2) & (rng.random(n) < 0.02)
    partly_at = created + (fulfilled_at - created) // 2
    in_progress = ~shipped & (line_count >= 2) & (partly_at <= clock) & (rng.random(n) < 0.15)
    in_progress &= np.isin(financial, ["paid", "partially_refunded"])
    fulfillment = np.where(
        shipped,
        np.where(stuck, "partial", "fulfilled"),
        np.where(in_progress, "partial", "unfulfilled"),
    ).astype(object)
    fulfilled_time = np.where(shipped, fulfilled_at, np.where(in_progress, partly_at, -1))

    voided = financial == "voided"
    cancelled = np.where(voided, _within(rng, created, np.full(n, clock), 0.0, 1.0), -1)
    cancelled = np.minimum(cancelled, created + 2 * DAY)
    cancelled = np.where(voided, np.maximum(cancelled, created + 1), cancelled)
    cancelled = np.minimum(cancelled, clock)
    cancelled = np.where(cancelled_unshipped, last_refund, cancelled)

    updated = np.maximum.reduce([
        created, fulfilled_time, cancelled, np.where(refunded, last_refund, -1),
    ])  # fmt: skip
    return Lifecycle(
        financial=financial,
        fulfillment=fulfillment,
        cancelled=cancelled,
        refund=refund,
        two_refunds=two,
        first_refund_at=np.where(refunded, first, -1),
        second_refund_at=np.where(two, second, -1),
        updated=updated,
    )
