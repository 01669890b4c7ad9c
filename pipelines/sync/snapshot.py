"""Record a store's consistent view once a run has written all of its tables."""

from __future__ import annotations

from dataclasses import dataclass

from quarry.settings import Settings
from registry.db import Registry
from registry.models import Store, utcnow
from warehouse.schemas import TABLES
from warehouse.snapshots import latest_snapshots, record_snapshot
from warehouse.tables import STORE_COLUMN, current_versions, open_table


@dataclass(frozen=True)
class SnapshotTaken:
    """The versions readers of the store now see, and whether they are new."""

    versions: dict[str, int]
    recorded: bool


def take_snapshot(settings: Settings, registry: Registry, store_id: str) -> SnapshotTaken:
    """Record the current version of every table (exchange_rates included) as the store's
    snapshot, and set the store's last_synced_at. Call it only after every writer of the
    run succeeded: readers switch to these versions at once.

    When none of the store's data changed since its previous snapshot (other stores' writes
    only moved the version numbers on), the previous snapshot stays: a sync with nothing to
    do leaves what readers cached for the store valid. Changes committed by an earlier run
    that failed before its snapshot count as changes."""
    versions = current_versions(settings, TABLES)
    with registry.session() as session:
        previous = latest_snapshots(session, [store_id]).get(store_id)
    recorded = previous is None or any(
        _changed(settings, table, store_id, previous.get(table), version)
        for table, version in versions.items()
    )
    if recorded:
        record_snapshot(registry, store_id, versions)
    with registry.session() as session:
        store = session.get(Store, store_id)
        if store is not None:
            store.last_synced_at = utcnow()
    return SnapshotTaken(versions if recorded or previous is None else previous, recorded)


def _changed(settings: Settings, table: str, store_id: str, before: int | None, now: int) -> bool:
    """Whether the store's rows of `table` may differ between versions `before` and `now`:
    the files of its partition are the same set exactly when nothing of it was written."""
    if before is None:
        return True
    if before == now:
        return False
    if not TABLES[table].partitioned:
        return True
    partition = [(STORE_COLUMN, "=", store_id)]
    files = [
        set(open_table(settings, table, v).file_uris(file_pruning_predicate=partition))
        for v in (before, now)
    ]
    return files[0] != files[1]
