"""One store's advance of the demo clock from `old` to `new`: every change happens at a
whole-second time in (old, new], so it sorts after everything before it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.assortment import assortment
from platforms.demo.catalog_changes import advance_catalog
from platforms.demo.customer_changes import OrderEvents, advance_customers
from platforms.demo.customers import assign_customers, build_customers
from platforms.demo.draft_changes import advance_drafts
from platforms.demo.hostile import HostileInjector
from platforms.demo.order_changes import OrderTables, advance_orders
from platforms.demo.orders import build_orders, buyers
from platforms.demo.people import generate_people
from platforms.demo.profile import store_profile, streams
from platforms.demo.state import StoreState
from platforms.demo.storage import DELETIONS, DELETIONS_SCHEMA
from platforms.demo.timeline import draw_times, expected_weight, seconds_of, timestamps

STREAMS = (
    "catalog", "times", "customers", "guests", "orders", "changes", "drafts", "profiles", "hostile",
)  # fmt: skip


@dataclass(frozen=True)
class Counts:
    added: int
    updated: int
    deleted: int


@dataclass(frozen=True)
class StoreAdvance:
    # Every table of the store after the advance, deletions included.
    tables: dict[str, pa.Table]
    counts: dict[str, Counts]


def _deletions(dataset: str, ids: pa.Array, at: np.ndarray) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "dataset": pa.array([dataset] * len(ids), pa.string()),
            "deleted_at": timestamps(at),
        },
        schema=DELETIONS_SCHEMA,
    )


def advance_store(
    seed: int,
    step: int,
    anchor: date,
    store: StoreState,
    tables: dict[str, pa.Table],
    old: int,
    new: int,
) -> StoreAdvance:
    """The store's tables after advancing from `old` to `new` (seconds); `step` numbers this
    advance (1 for the first), so the same sequence of advances gives the same data."""
    profile = store_profile(store.id, store.index)
    rng = streams(seed, store.index, step, STREAMS)
    injector = HostileInjector(rng["hostile"], enabled=profile.hostile)

    catalog = advance_catalog(
        rng["catalog"],
        profile,
        store,
        tables["products"],
        tables["product_variants"],
        old,
        new,
        injector,
    )
    stock = assortment(catalog.products, catalog.variants, profile.digits)

    orders = advance_orders(
        rng["changes"],
        profile,
        store,
        OrderTables(
            tables["orders"], tables["order_lines"], tables["refunds"], tables["refund_lines"]
        ),
        old,
        new,
        injector,
    )
    expected = store.orders_per_weight * expected_weight(old + 1, new + 1, profile.timezone, anchor)
    times = draw_times(
        rng["times"],
        int(rng["times"].poisson(expected)),
        old + 1,
        new + 1,
        profile.timezone,
        anchor,
    )
    existing = tables["customers"].num_rows
    rows, signed_up = assign_customers(rng["customers"], times, existing, old + 1, new + 1)
    customers = pa.concat_tables([
        tables["customers"],
        build_customers(rng["customers"], profile, store, signed_up, injector),
    ])  # fmt: skip
    guests = generate_people(rng["guests"], profile, int((rows < 0).sum()), injector)
    placed = build_orders(
        rng["orders"], profile, store, times, buyers(customers, rows, guests), stock, new, injector
    )
    all_orders = pa.concat_tables([orders.tables.orders, placed.orders])

    drafts = advance_drafts(
        rng["drafts"],
        profile,
        store,
        tables["draft_orders"],
        placed.orders,
        customers,
        stock,
        old,
        new,
        expected,
    )

    changed = orders.tables.orders.filter(
        pc.is_in(orders.tables.orders["id"], value_set=orders.changed_ids)
    )
    events = OrderEvents(
        customer_ids=pa.concat_arrays([
            placed.orders["customer_id"].combine_chunks(),
            changed["customer_id"].combine_chunks(),
            orders.deleted_customers,
        ]),
        times=np.concatenate([
            seconds_of(placed.orders["updated_at"]),
            seconds_of(changed["updated_at"]),
            orders.deleted_at,
        ]),
    )  # fmt: skip
    people = advance_customers(
        rng["profiles"],
        customers,
        existing,
        all_orders,
        events,
        drafts.drafts,
        profile.digits,
        old,
        new,
    )

    deletions = pa.concat_tables([
        tables[DELETIONS],
        _deletions("orders", orders.deleted_ids, orders.deleted_at),
        _deletions("customers", people.deleted_ids, people.deleted_at),
        _deletions("products", catalog.deleted_ids, catalog.deleted_at),
        _deletions("draft_orders", drafts.deleted_ids, drafts.deleted_at),
    ])  # fmt: skip
    return StoreAdvance(
        tables={
            "orders": all_orders,
            "order_lines": pa.concat_tables([orders.tables.order_lines, placed.order_lines]),
            "refunds": pa.concat_tables([orders.tables.refunds, placed.refunds]),
            "refund_lines": pa.concat_tables([orders.tables.refund_lines, placed.refund_lines]),
            "customers": people.customers,
            "products": catalog.products,
            "product_variants": catalog.variants,
            "draft_orders": drafts.drafts,
            DELETIONS: deletions,
        },
        counts={
            "orders": Counts(
                placed.orders.num_rows, len(orders.changed_ids), len(orders.deleted_ids)
            ),
            "customers": Counts(
                customers.num_rows - existing, people.updated, len(people.deleted_ids)
            ),
            "products": Counts(catalog.added, catalog.updated, len(catalog.deleted_ids)),
            "draft_orders": Counts(drafts.added, drafts.updated, len(drafts.deleted_ids)),
        },
    )
