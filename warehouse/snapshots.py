"""Which DuckLake snapshot readers see for each store, and which snapshots are in use.

A sync commits to the lake as it goes (page batches, the sales model), so the lake's newest
snapshot may hold half of a store's run. Once the run has written every table, the
pipeline publishes the lake's snapshot id for that store, and readers read the store's
tables `AT (VERSION => id)`: nobody sees orders of one sync and sales of another, and a
failed sync stays invisible until a later one succeeds. One id covers every table, so
there is no per-table manifest: exchange_rates, which is global, is read at the newest of
the ids of the stores read.

Snapshots in use, which maintenance must not expire: each store's published snapshot; one
it replaced less than the retention ago (a request may still be reading it: API requests
take no pin, their lease is this grace period); and the snapshots pinned by long readers
(an export run pins what it reads until it ends).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.orm import Session, aliased

from registry.db import Registry
from registry.models import SnapshotPin, Store, WarehouseSnapshot, utcnow
from warehouse.lake import AUTHORS, GLOBAL_AUTHOR, LAKE, Lake


def record_snapshot(registry: Registry, store_id: str, version: int) -> WarehouseSnapshot:
    """Publish lake snapshot `version` as what readers of `store_id` see. Returns the row."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ValueError(f"a snapshot version is a non-negative integer, got {version!r}")
    with registry.session() as session:
        # The store row's write lock orders two publications of one store (on SQLite too,
        # where it takes the database's write lock): ids grow with versions.
        locked = session.execute(
            update(Store).where(Store.id == store_id).values(status=Store.status)
        )
        if not locked.rowcount:  # type: ignore[attr-defined]
            raise ValueError(f"store {store_id!r} does not exist")
        snapshot = WarehouseSnapshot(store_id=store_id, version=version)
        session.add(snapshot)
        session.flush()
        return snapshot


def changed_since(lake: Lake, store_id: str, version: int, *, own: bool = False) -> bool:
    """Whether the store (or, unless `own`, anything global) committed after `version`."""
    return store_id in stores_changed_since(lake, {store_id: version}, own=own)


def stores_changed_since(lake: Lake, versions: Mapping[str, int], *, own: bool = False) -> set[str]:
    """The stores of `versions` (store -> lake version) that committed after their version,
    or all of them when anything global did (unless `own`): one look at the snapshots."""
    if not versions:
        return set()
    cursor = lake.cursor()
    try:
        rows = cursor.execute(
            f"SELECT a, max(snapshot_id) FROM {LAKE}.snapshots(), "
            f"unnest({AUTHORS}) AS u(a) WHERE snapshot_id > {int(min(versions.values()))} "
            "GROUP BY a"
        ).fetchall()
    finally:
        cursor.close()
    newest = {str(author): int(snapshot) for author, snapshot in rows}
    global_commit = -1 if own else newest.get(GLOBAL_AUTHOR, -1)
    return {
        store
        for store, version in versions.items()
        if max(newest.get(store, -1), global_commit) > version
    }


def latest_snapshots(
    session: Session | Connection, store_ids: Iterable[str] | None = None
) -> dict[str, int]:
    """The published snapshot of each store (of every store when `store_ids` is None), in
    one query: store id -> lake version. Stores never synced are absent. A Core
    connection serves as well as a session, at a fraction of its cost (the API asks it
    on every read)."""
    newest = select(func.max(WarehouseSnapshot.id)).group_by(WarehouseSnapshot.store_id)
    if store_ids is not None:
        wanted = list(store_ids)
        if not wanted:
            return {}
        newest = newest.where(WarehouseSnapshot.store_id.in_(wanted))
    rows = session.execute(
        select(WarehouseSnapshot.store_id, WarehouseSnapshot.version).where(
            WarehouseSnapshot.id.in_(newest)
        )
    )
    return {store: int(version) for store, version in rows}


def versions_in_use(session: Session, grace: timedelta, now: datetime | None = None) -> set[int]:
    """The lake versions maintenance must keep: every store's published one, those
    replaced within `grace` of `now`, and those pinned by a pin that has not expired."""
    now = now or utcnow()
    keep = set(latest_snapshots(session).values())
    # A row's version was replaced when the store's next row was written.
    published = aliased(WarehouseSnapshot)
    replaced_at = (
        select(func.min(WarehouseSnapshot.created_at))
        .where(
            WarehouseSnapshot.store_id == published.store_id, WarehouseSnapshot.id > published.id
        )
        .scalar_subquery()
    )
    recent = select(published.version).where(replaced_at >= now - grace)
    keep.update(int(v) for v in session.scalars(recent))
    pinned = select(SnapshotPin.version).where(SnapshotPin.expires_at > now)
    keep.update(int(v) for v in session.scalars(pinned))
    return keep


def pin(registry: Registry, holder: str, versions: Iterable[int], ttl: timedelta) -> None:
    """Keep `versions` from expiry for `holder` until released, or for `ttl` at most (a
    holder that died without releasing them lets them go then)."""
    expires = utcnow() + ttl
    with registry.session() as session:
        session.add_all(
            SnapshotPin(version=v, holder=holder, expires_at=expires) for v in sorted(set(versions))
        )


def release(registry: Registry, holder: str) -> None:
    """Drop every pin of `holder`."""
    with registry.session() as session:
        session.execute(delete(SnapshotPin).where(SnapshotPin.holder == holder))


def forget_expired_pins(session: Session) -> None:
    """Drop the pins whose holders never released them (they count for nothing already)."""
    session.execute(delete(SnapshotPin).where(SnapshotPin.expires_at <= utcnow()))
