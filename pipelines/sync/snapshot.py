"""Publish a store's view of the lake once a run has written all of its tables."""

from __future__ import annotations

from dataclasses import dataclass

from registry.db import Registry
from registry.models import Store, utcnow
from warehouse.lake import Lake
from warehouse.snapshots import changed_since, latest_snapshots, record_snapshot

__all__ = ["SnapshotTaken", "changed_since", "take_snapshot"]


@dataclass(frozen=True)
class SnapshotTaken:
    """The lake version readers of the store now see, and whether it is new."""

    version: int
    recorded: bool


def take_snapshot(lake: Lake, registry: Registry, store_id: str) -> SnapshotTaken:
    """Publish the lake's newest snapshot as the store's, and set the store's
    last_synced_at. Call it only after every writer of the run succeeded: readers switch to
    it at once.

    When nothing of the store (and nothing global, such as exchange rates) was committed
    since its published snapshot, that snapshot stays: a sync with nothing to do leaves
    what readers cached for the store valid. Commits of an earlier run that failed before
    publishing count as changes. Every commit names its store as the snapshot's author
    (warehouse.writer), which is what is looked up here."""
    version = lake.version()
    with registry.session() as session:
        previous = latest_snapshots(session, [store_id]).get(store_id)
    recorded = previous is None or changed_since(lake, store_id, previous)
    if recorded:
        record_snapshot(registry, store_id, version)
    with registry.session() as session:
        store = session.get(Store, store_id)
        if store is not None:
            store.last_synced_at = utcnow()
    return SnapshotTaken(version if recorded or previous is None else previous, recorded)
