"""One store's seeded data: the two years of history before the anchor, as Arrow tables.

A pure function of (seed, store index, store id, order count, anchor): the same arguments give
identical tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.assortment import assortment
from platforms.demo.customers import (
    assign_customers,
    build_customers,
    order_owner,
    touch,
    with_order_totals,
)
from platforms.demo.drafts import OPEN_SHARE_OF_ORDERS, completed_for, draft_table, open_drafts
from platforms.demo.hostile import HostileInjector
from platforms.demo.merchandise import DRAFT_ORDERS
from platforms.demo.orders import build_orders, buyers
from platforms.demo.people import generate_people
from platforms.demo.products import generate_products
from platforms.demo.profile import store_profile, streams
from platforms.demo.state import StoreState
from platforms.demo.templates import store_name
from platforms.demo.timeline import (
    DAY,
    SPAN_DAYS,
    day_seconds,
    draw_times,
    expected_weight,
    seconds_of,
)

STREAMS = ("products", "times", "customers", "guests", "orders", "drafts", "hostile")
# Most products were on sale before the history starts; the rest arrive during it.
CATALOG_HEAD_START = 500 * DAY
OLD_PRODUCT_SHARE = 0.6


def product_count(orders: int) -> int:
    return min(10_000, max(50, orders // 100))


@dataclass(frozen=True)
class SeededStore:
    tables: dict[str, pa.Table]
    state: StoreState


def generate_store(seed: int, index: int, store_id: str, orders: int, anchor: date) -> SeededStore:
    """The store's tables (every SOURCE_DATASETS table) for `orders` orders placed in the
    SPAN_DAYS days before 00:00 UTC of `anchor`, and its state after seeding."""
    profile = store_profile(store_id, index)
    clock = day_seconds(anchor)
    start = clock - SPAN_DAYS * DAY
    weight = expected_weight(start, clock, profile.timezone, anchor)
    store = StoreState(
        id=store_id,
        index=index,
        name=store_name(index),
        currency=profile.currency,
        timezone=profile.timezone,
        orders_per_weight=orders / weight,
    )
    rng = streams(seed, index, 0, STREAMS)
    injector = HostileInjector(rng["hostile"], enabled=profile.hostile)

    products_n = product_count(orders)
    old = round(products_n * OLD_PRODUCT_SHARE)
    product_times = np.sort(np.concatenate([
        rng["products"].integers(start - CATALOG_HEAD_START, start, old),
        rng["products"].integers(start, clock, products_n - old),
    ]))  # fmt: skip
    products, variants = generate_products(
        rng["products"], profile, store, product_times, clock, injector
    )
    stock = assortment(products, variants, profile.digits)

    times = draw_times(rng["times"], orders, start, clock, profile.timezone, anchor)
    rows, signed_up = assign_customers(rng["customers"], times, 0, start, clock)
    customers = build_customers(rng["customers"], profile, store, signed_up, injector)
    guests = generate_people(rng["guests"], profile, int((rows < 0).sum()), injector)
    batch = build_orders(
        rng["orders"],
        profile,
        store,
        times,
        buyers(customers, rows, guests),
        stock,
        clock,
        injector,
    )
    customers = with_order_totals(customers, batch.orders, profile.digits)
    customers = touch(
        customers,
        order_owner(customers, batch.orders["customer_id"]),
        seconds_of(batch.orders["updated_at"]),
    )

    from_drafts = batch.orders.filter(pc.equal(batch.orders["sales_channel"], DRAFT_ORDERS))
    open_times = draw_times(
        rng["drafts"], round(orders * OPEN_SHARE_OF_ORDERS), start, clock, profile.timezone, anchor
    )
    drafts = draft_table(
        profile,
        store,
        completed_for(rng["drafts"], from_drafts, profile.digits),
        open_drafts(rng["drafts"], profile, open_times, clock, customers, stock),
    )
    return SeededStore(
        tables={
            "orders": batch.orders,
            "order_lines": batch.order_lines,
            "refunds": batch.refunds,
            "refund_lines": batch.refund_lines,
            "customers": customers,
            "products": products,
            "product_variants": variants,
            "draft_orders": drafts,
        },
        state=store,
    )
