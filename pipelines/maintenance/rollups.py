"""Rewrite the sales rollups (warehouse.rollups.build) and publish them: rebuilt from the
facts (the rebuild_rollups job), or compacted, each key's rows merged into one (the hourly
maintenance: a sync appends its change as signed rows).

A rewrite commits a snapshot of its own per store. Readers see a store's published
snapshot only, so each rewritten store is published at once where nothing else of it is
waiting: under the lake's write lock (no commit in between), when no commit of the store
came after its published snapshot, the rewrite's snapshot holds exactly what was
published plus the rewritten rollups (and global commits such as exchange rates, which a
sync would publish as well). A store with unpublished commits (a sync under way, or one
that failed before publishing) keeps its published snapshot: publishing would show that
sync's half, and its next sync publishes the rewritten rollups with its own rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from registry.db import Registry
from warehouse.lake import Lake, write_lock
from warehouse.rollups.build import compact, rebuild_store, stores_to_compact, stores_to_rebuild
from warehouse.snapshots import (
    changed_since,
    latest_snapshots,
    record_snapshot,
    stores_changed_since,
)


@dataclass(frozen=True)
class RollupsRebuilt:
    """The stores whose rollups were rewritten (rebuilt from the facts, or compacted);
    those published at once; those that wait for their next sync to be published."""

    rebuilt: tuple[str, ...]
    published: tuple[str, ...]
    waiting: tuple[str, ...]


def rebuild_rollups(
    lake: Lake, registry: Registry, store_ids: Iterable[str] | None = None
) -> RollupsRebuilt:
    """Rebuild the rollups of `store_ids` (every store with facts or rollups when None)
    from the facts, one store at a time, publishing each where that is safe."""
    stores = stores_to_rebuild(lake) if store_ids is None else list(store_ids)
    published, waiting = [], []
    for store_id in stores:
        with write_lock(lake.settings):
            with registry.engine.connect() as connection:
                previous = latest_snapshots(connection, [store_id]).get(store_id)
            clean = previous is not None and not changed_since(lake, store_id, previous, own=True)
            rebuild_store(lake, store_id)
            if clean:
                record_snapshot(registry, store_id, lake.version())
                published.append(store_id)
            else:
                waiting.append(store_id)
    return RollupsRebuilt(tuple(stores), tuple(published), tuple(waiting))


# Stores compacted in one transaction: each set costs the batch three lake statements
# (the statements, not the rows, are what a lake write costs), under the write lock.
COMPACT_BATCH = 200


def compact_rollups(lake: Lake, registry: Registry) -> RollupsRebuilt:
    """Merge the rows of every key held by several (the syncs' appended changes), a batch
    of stores per transaction, publishing each store where that is safe."""
    stores = stores_to_compact(lake)
    published: list[str] = []
    waiting: list[str] = []
    for first in range(0, len(stores), COMPACT_BATCH):
        batch = stores[first : first + COMPACT_BATCH]
        with write_lock(lake.settings):
            with registry.engine.connect() as connection:
                previous = latest_snapshots(connection, batch)
            unclean = stores_changed_since(lake, previous, own=True)
            with lake.transaction(author=batch, message="rollups compacted") as cursor:
                compact(cursor, batch)
            version = lake.version()
            for store_id in batch:
                if store_id in previous and store_id not in unclean:
                    record_snapshot(registry, store_id, version)
                    published.append(store_id)
                else:
                    waiting.append(store_id)
    return RollupsRebuilt(tuple(stores), tuple(published), tuple(waiting))
