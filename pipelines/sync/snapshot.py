"""Publish a store's view of the lake once a run has written all of its tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import update

from registry.db import Registry
from registry.models import Store, utcnow
from warehouse.lake import Lake
from warehouse.snapshots import (
    changed_since,
    latest_snapshots,
    record_snapshot,
    stores_changed_since,
)

__all__ = ["SnapshotTaken", "changed_since", "publish_snapshots", "take_snapshot"]


@dataclass(frozen=True)
class SnapshotTaken:
    """The lake version readers of the store now see, and whether it is new."""

    version: int
    recorded: bool


def take_snapshot(lake: Lake, registry: Registry, store_id: str) -> SnapshotTaken:
    """Publish the lake's newest snapshot as the store's (publish_snapshots)."""
    return publish_snapshots(lake, registry, [store_id])[store_id]


def publish_snapshots(
    lake: Lake,
    registry: Registry,
    store_ids: Sequence[str],
    previous: Mapping[str, int] | None = None,
) -> dict[str, SnapshotTaken]:
    """Publish the lake's newest snapshot as each store's, and set their last_synced_at.
    Call it only after every writer of their sync succeeded: readers switch to it at once.
    `previous`: their published snapshots, when the caller has them.

    When nothing of a store (and nothing global, such as exchange rates) was committed
    since its published snapshot, that snapshot stays: a sync with nothing to do leaves
    what readers cached for the store valid. Commits of an earlier run that failed before
    publishing count as changes. Every commit names the stores it wrote as its authors
    (warehouse.lake.commit_author), which is what is looked up here."""
    version = lake.version()
    if previous is None:
        with registry.session() as session:
            previous = latest_snapshots(session, store_ids)
    changed = stores_changed_since(lake, {s: previous[s] for s in store_ids if s in previous})
    taken = {}
    for store_id in store_ids:
        recorded = store_id not in previous or store_id in changed
        if recorded:
            record_snapshot(registry, store_id, version)
        taken[store_id] = SnapshotTaken(version if recorded else previous[store_id], recorded)
    with registry.session() as session:
        session.execute(
            update(Store).where(Store.id.in_(list(store_ids))).values(last_synced_at=utcnow())
        )
    return taken
