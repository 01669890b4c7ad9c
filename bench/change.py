"""A change of a fixed number of orders, whatever the dataset's size: the figure that shows
whether an incremental sync costs what changed or what the table holds.

The demo platform's own advance (`quarry demo advance`) changes a share of the orders a day,
so a day at 10M orders changes ten times what a day at 1M does. This change has the shape
of the issue that asked for it instead: of every 10 orders changed, 6 recent orders are
updated, 2 orders of any age are deleted and 2 new orders are placed (with their lines),
split over the stores by their size. It edits the demo platform's files the way an advance
does (new files renamed into place), at times after everything the last sync saw (in the
files, and in the store's sync cursor: a bench run puts the files back afterwards,
bench.dataset.demo_files_restored, leaving the store synced past them, and a change timed
before the cursor would never be synced).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import select

from platforms.demo.cursor import decode
from platforms.demo.rows import drop_rows, replace_rows, without_parents
from platforms.demo.storage import (
    DELETIONS,
    DELETIONS_SCHEMA,
    Folder,
    publish,
    read_store_table,
    stage_tables,
    store_dir,
)
from platforms.demo.timeline import seconds_of, timestamps
from quarry.settings import Settings
from registry.db import Registry
from registry.models import SyncCursor
from warehouse.schemas import SOURCE_DATASETS

UPDATED_SHARE = 0.6
DELETED_SHARE = 0.2
# Updates pick among this many of a store's newest orders per update: "recent rows".
RECENT_POOL = 5
# Marks an inserted copy's ids apart from the platform's own (a bench run never keeps them).
COPY_SUFFIX = "-bench-copy"


@dataclass(frozen=True)
class FixedChange:
    updated: int
    deleted: int
    added: int

    @property
    def orders(self) -> int:
        return self.updated + self.deleted + self.added


def split(total: int, sizes: list[int]) -> list[int]:
    """`total` spread over stores in proportion to `sizes` (largest remainders)."""
    whole = sum(sizes)
    if whole == 0:
        return [0] * len(sizes)
    exact = [total * s / whole for s in sizes]
    shares = [int(x) for x in exact]
    by_remainder = sorted(range(len(sizes)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in by_remainder[: total - sum(shares)]:
        shares[i] += 1
    return shares


def change_orders(
    settings: Settings,
    registry: Registry,
    account_id: str,
    store_ids: list[str],
    total: int,
    seed: int,
    round_: int = 0,
) -> FixedChange:
    """Change `total` orders over the stores' demo files; returns what changed. Each
    `round_` of one home picks its own orders and gives its new orders ids of its own, so
    rounds can follow each other (round 0 is the change every earlier bench made)."""
    directories = [store_dir(settings, account_id, s) for s in store_ids]
    sizes = [read_store_table(d, "orders").num_rows for d in directories]
    synced = synced_through(registry, store_ids)
    done = FixedChange(0, 0, 0)
    shares = split(total, sizes)
    for index, (store, directory, share) in enumerate(
        zip(store_ids, directories, shares, strict=True)
    ):
        rng = np.random.default_rng([seed, index, round_] if round_ else [seed, index])
        suffix = f"{COPY_SUFFIX}{round_}" if round_ else COPY_SUFFIX
        one = _change_store(directory, share, rng, synced.get(store), suffix)
        done = FixedChange(
            done.updated + one.updated, done.deleted + one.deleted, done.added + one.added
        )
    return done


def synced_through(registry: Registry, store_ids: list[str]) -> Mapping[str, int]:
    """Per store, the latest change time (seconds since the epoch) of the orders its sync
    cursor has passed: updated rows or deletions, whichever is later."""
    with registry.session() as session:
        cursors = session.execute(
            select(SyncCursor.store_id, SyncCursor.cursor).where(
                SyncCursor.store_id.in_(store_ids), SyncCursor.dataset == "orders"
            )
        ).all()
    out: dict[str, int] = {}
    for store, cursor in cursors:
        position = decode(cursor)
        times = (
            [t for t in (position.updated, position.deleted) if t is not None] if position else []
        )
        if times:
            out[store] = max(times) // 1_000_000
    return out


def _change_store(
    directory: Folder, share: int, rng: np.random.Generator, synced: int | None, suffix: str
) -> FixedChange:
    tables = {name: read_store_table(directory, name) for name in SOURCE_DATASETS["orders"]}
    deletions = read_store_table(directory, DELETIONS)
    orders = tables["orders"]
    updated_n = round(share * UPDATED_SHARE)
    deleted_n = round(share * DELETED_SHARE)
    added_n = share - updated_n - deleted_n
    if orders.num_rows < updated_n + deleted_n + added_n:
        raise ValueError(f"{directory.name} has too few orders for a change of {share}")

    # After everything the last sync saw: changed rows and deletions alike.
    seen = [seconds_of(orders["updated_at"]).max(), *([synced] if synced is not None else [])]
    if deletions.num_rows:
        seen.append(seconds_of(deletions["deleted_at"]).max())
    start = int(max(seen)) + 1
    newest_first = np.argsort(-seconds_of(orders["created_at"]), kind="stable")
    recent = newest_first[: min(orders.num_rows, RECENT_POOL * (updated_n + added_n))]
    updated = np.sort(rng.choice(recent, size=updated_n, replace=False))
    others = np.setdiff1d(np.arange(orders.num_rows), updated, assume_unique=True)
    deleted = np.sort(rng.choice(others, size=deleted_n, replace=False))
    copied = np.sort(rng.choice(recent, size=added_n, replace=False))

    update_times = start + rng.integers(0, 3600, updated_n)
    changed = replace_rows(
        orders,
        updated,
        {
            "updated_at": timestamps(update_times),
            "tags": pa.array(["bench-change"] * updated_n, pa.string()),
        },
    )
    deleted_ids = orders["id"].take(pa.array(deleted))
    copies = _copies(
        tables, orders.take(pa.array(copied)), start + 3600 + np.arange(added_n), suffix
    )

    result: dict[str, pa.Table] = {
        "orders": pa.concat_tables([drop_rows(changed, deleted), copies["orders"]])
    }
    for name in SOURCE_DATASETS["orders"][1:]:
        kept = without_parents(tables[name], "order_id", deleted_ids)
        result[name] = pa.concat_tables([kept, copies[name]]) if name in copies else kept
    result[DELETIONS] = pa.concat_tables([
        deletions,
        pa.table(
            {
                "id": deleted_ids,
                "dataset": pa.array(["orders"] * deleted_n, pa.string()),
                "deleted_at": timestamps(start + 3600 + added_n + np.arange(deleted_n)),
            },
            schema=DELETIONS_SCHEMA,
        ),
    ])  # fmt: skip
    publish(stage_tables(directory, result))
    return FixedChange(updated_n, deleted_n, added_n)


def _copies(
    tables: dict[str, pa.Table], originals: pa.Table, at: np.ndarray, suffix: str
) -> dict[str, pa.Table]:
    """New orders placed at `at`: copies of `originals` and their lines under new ids
    (their own with `suffix`; no refunds: a new order has none yet)."""

    def suffixed(column: pa.ChunkedArray | pa.Array) -> pa.Array:
        return pc.binary_join_element_wise(column, suffix, "")

    when = timestamps(at)
    orders = originals
    for name, value in (
        ("id", suffixed(originals["id"])),
        ("platform_id", suffixed(originals["platform_id"])),
        ("created_at", when),
        ("updated_at", when),
        ("processed_at", when),
        ("total_refunded", pa.array([0] * len(at), orders.schema.field("total_refunded").type)),
    ):
        orders = orders.set_column(orders.schema.get_field_index(name), name, value)
    lines = tables["order_lines"].filter(
        pc.is_in(tables["order_lines"]["order_id"], value_set=originals["id"].combine_chunks())
    )
    for name in ("id", "order_id"):
        lines = lines.set_column(lines.schema.get_field_index(name), name, suffixed(lines[name]))
    return {"orders": orders, "order_lines": lines}
