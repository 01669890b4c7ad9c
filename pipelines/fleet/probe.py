"""Which stores have anything to sync: one cheap look per store, before any run.

Each store's platform is asked whether records changed after the store's cursors
(platforms.base.Connector.changed: a footer read on the demo platform, one small GraphQL
request on Shopify), many stores at once on threads. The registry and the lake say the rest
in one query each: a store never published, one with commits its published snapshot does
not cover (a run that failed half-way), or with sales still to rebuild needs a sync too. A
store whose only news is global (exchange rates) needs no sync, only a new published
snapshot so that readers see the new rates.

Plain Python: the fleet job (pipelines.fleet.jobs) and the CLI call it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sqlalchemy import select

from platforms.base import Connector
from platforms.connectors import connector_for
from quarry.settings import Settings
from registry.accounts import list_stores
from registry.cursors import SALES_DATASET, sales_work_left
from registry.db import Registry
from registry.models import Store, SyncCursor
from warehouse.lake import AUTHORS, GLOBAL_AUTHOR, LAKE, Lake
from warehouse.schemas import SOURCE_DATASETS
from warehouse.snapshots import latest_snapshots

log = logging.getLogger(__name__)

# Stores asked at once: the platforms answer in parallel, the threads mostly wait.
PROBE_THREADS = 16


@dataclass(frozen=True)
class StoreProbe:
    """What one store needs. `reasons` is why it must sync (empty: nothing to do);
    `republish`: only global data changed since its snapshot."""

    store_id: str
    name: str
    reasons: tuple[str, ...] = ()
    # The datasets its sync must read: those with changes, or all of them.
    datasets: tuple[str, ...] = ()
    republish: bool = False
    first_sync: bool = False
    # Orders a first sync will read (the platform's count); 0 otherwise.
    backlog: int = 0

    @property
    def needs_sync(self) -> bool:
        return bool(self.reasons)

    @property
    def outcome(self) -> str:
        """One line for the tick's log: what the probe found."""
        if self.reasons:
            return "; ".join(self.reasons)
        return "republished (exchange rates changed)" if self.republish else "unchanged"


@dataclass(frozen=True)
class _RegistryView:
    stores: dict[str, Store]
    cursors: dict[str, dict[str, str | None]] = field(default_factory=dict)
    published: dict[str, int] = field(default_factory=dict)


def probe_stores(
    settings: Settings,
    registry: Registry,
    lake: Lake,
    store_ids: Sequence[str] | None = None,
    *,
    threads: int = PROBE_THREADS,
) -> list[StoreProbe]:
    """Probe every store of the registry (or `store_ids`, unknown ones ignored), in the
    order of the registry."""
    view = _registry_view(registry, store_ids)
    authored = _newest_commits(lake)
    global_commit = authored.get(GLOBAL_AUTHOR, -1)

    def probe(store: Store) -> StoreProbe:
        cursors = view.cursors.get(store.id, {})
        published = view.published.get(store.id)
        reasons: list[str] = []
        if published is None:
            reasons.append("first sync")
        elif authored.get(store.id, -1) > published:
            reasons.append("commits not yet published (an earlier sync failed)")
        if sales_work_left(cursors.get(SALES_DATASET)):
            reasons.append("sales to rebuild")
        every = tuple(SOURCE_DATASETS)
        connector = connector_for(settings, store)
        try:
            changed = tuple(connector.changed(cursors))
        except Exception as exc:  # the sync will meet the same problem and fail loudly
            log.warning("probe of store %s failed: %s", store.id, exc)
            reasons.append(f"probe failed: {type(exc).__name__}: {exc}")
            changed = every
        else:
            if changed and published is not None:
                reasons.append(f"changes in {', '.join(changed)}")
        if not reasons:
            republish = published is not None and global_commit > published
            return StoreProbe(store.id, store.name, republish=republish)
        # Only a plain change can skip the datasets without news; after a failure or on a
        # first sync every dataset is read (each resumes from its own cursor).
        plain = published is not None and len(reasons) == 1 and reasons[0].startswith("changes")
        datasets = changed if plain else every
        backlog = _backlog(connector) if published is None else 0
        return StoreProbe(
            store.id, store.name, tuple(reasons), datasets, False, published is None, backlog
        )

    stores = list(view.stores.values())
    if not stores:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(stores)))) as pool:
        return list(pool.map(probe, stores))


def _backlog(connector: Connector) -> int:
    try:
        return connector.count("orders")
    except Exception:  # a size for packing batches only; the sync reports real problems
        return 0


def _registry_view(registry: Registry, store_ids: Sequence[str] | None) -> _RegistryView:
    with registry.session() as session:
        every = list(list_stores(session))
        wanted = None if store_ids is None else set(store_ids)
        stores = {s.id: s for s in every if wanted is None or s.id in wanted}
        for store in stores.values():
            session.expunge(store)
        cursors: dict[str, dict[str, str | None]] = {}
        for row in session.scalars(select(SyncCursor)):
            if row.store_id in stores:
                cursors.setdefault(row.store_id, {})[row.dataset] = row.cursor
        published = latest_snapshots(session, list(stores))
    return _RegistryView(stores, cursors, published)


def _newest_commits(lake: Lake) -> dict[str, int]:
    """The newest snapshot each author (a store id, or "global") committed."""
    cursor = lake.cursor()
    try:
        rows = cursor.execute(
            f"SELECT a, max(snapshot_id) FROM {LAKE}.snapshots(), unnest({AUTHORS}) AS u(a) "
            "GROUP BY a"
        ).fetchall()
    finally:
        cursor.close()
    return {str(author): int(newest) for author, newest in rows}


def counts(probes: Iterable[StoreProbe]) -> Mapping[str, int]:
    """How many stores the tick synced, republished and left alone."""
    result = {"probed": 0, "to_sync": 0, "republished": 0, "unchanged": 0}
    for p in probes:
        result["probed"] += 1
        key = "to_sync" if p.needs_sync else "republished" if p.republish else "unchanged"
        result[key] += 1
    return result
