"""Per-store snapshots: which Delta version of each table a reader may see for a store.

A sync commits to each table separately; only when all of a store's tables are written does
the pipeline record a snapshot, and readers open exactly the recorded versions. So nobody
sees orders from one sync and order lines or sales from another, and a failed sync is
invisible until a later one succeeds.

A snapshot row carries every table the store has: `record_snapshot` starts from the
store's previous snapshot and overrides the tables just written, so a customers sync does
not hide the orders recorded by an earlier orders sync. Record the versions of every table
that must be seen together in one call (orders with their sales, for example).

exchange_rates is global. Each snapshot may carry the version of it that its store's data
was modelled with; a reader of several stores uses the highest version among them (rates
are reference data, so the newest rates consistent with some reader-visible store win).
When no snapshot in question records it, the table reads empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from registry.db import Registry
from registry.models import Store, WarehouseSnapshot
from warehouse.schemas import TABLES

GLOBAL_TABLES: tuple[str, ...] = tuple(n for n, s in TABLES.items() if not s.partitioned)


def record_snapshot(
    registry: Registry, store_id: str, versions: Mapping[str, int]
) -> WarehouseSnapshot:
    """Record that `store_id` is now to be read at `versions` (table -> Delta version),
    on top of the tables of its previous snapshot. Returns the new row."""
    unknown = sorted(set(versions) - set(TABLES))
    if unknown:
        raise ValueError(f"not warehouse tables: {unknown}")
    if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in versions.values()):
        raise ValueError(f"versions must be non-negative integers: {dict(versions)}")
    with registry.session() as session:
        # Taking the store row's write lock first serialises two syncs of one store that
        # finish together (on SQLite too, where it takes the database write lock), so
        # neither drops the other's tables.
        locked = session.execute(
            update(Store).where(Store.id == store_id).values(status=Store.status)
        )
        if not locked.rowcount:  # type: ignore[attr-defined]
            raise ValueError(f"store {store_id!r} does not exist")
        previous = latest_snapshots(session, [store_id]).get(store_id, {})
        snapshot = WarehouseSnapshot(store_id=store_id, versions={**previous, **versions})
        session.add(snapshot)
        session.flush()
        return snapshot


def latest_snapshots(
    session: Session, store_ids: Iterable[str] | None = None
) -> dict[str, dict[str, int]]:
    """The newest snapshot of each store (of every store when `store_ids` is None), in one
    query: store id -> table -> version. Stores never synced are absent."""
    newest = select(func.max(WarehouseSnapshot.id)).group_by(WarehouseSnapshot.store_id)
    if store_ids is not None:
        wanted = list(store_ids)
        if not wanted:
            return {}
        newest = newest.where(WarehouseSnapshot.store_id.in_(wanted))
    rows = session.execute(
        select(WarehouseSnapshot.store_id, WarehouseSnapshot.versions).where(
            WarehouseSnapshot.id.in_(newest)
        )
    )
    return {store: {t: int(v) for t, v in versions.items()} for store, versions in rows}


def referenced_versions(session: Session, table: str) -> set[int]:
    """The versions of `table` that some store's newest snapshot points at: the versions
    whose files vacuum must keep."""
    return {versions[table] for versions in latest_snapshots(session).values() if table in versions}
