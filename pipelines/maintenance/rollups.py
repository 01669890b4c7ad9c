"""Rebuild the sales rollups from the facts (warehouse.rollups.build), and publish them.

A rebuild commits a snapshot of its own per store. Readers see a store's published
snapshot only, so each rebuilt store is published at once where nothing else of it is
waiting: under the lake's write lock (no commit in between), when no commit of the store
came after its published snapshot, the rebuild's snapshot holds exactly what was
published plus the rebuilt rollups (and global commits such as exchange rates, which a
sync would publish as well). A store with unpublished commits (a sync under way, or one
that failed before publishing) keeps its published snapshot: publishing would show that
sync's half, and its next sync publishes the rebuilt rollups with its own rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from registry.db import Registry
from warehouse.lake import Lake, write_lock
from warehouse.rollups.build import rebuild_store, stores_to_rebuild
from warehouse.snapshots import changed_since, latest_snapshots, record_snapshot


@dataclass(frozen=True)
class RollupsRebuilt:
    """The stores whose rollups were rebuilt; those published at once; those that wait
    for their next sync to be published."""

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
