"""Query results kept in the API process, keyed by everything an answer depends on.

A result is a function of the data one snapshot shows and of the request: the query text,
the stores it may name and read, the account's currency and zone, the requested zone and
the windows resolved at the time of asking. The snapshot key changes with every recorded
sync (and with the exchange rates the snapshot reads), so a new sync is never answered from
an older entry; the resolved windows are in the key, so `SINCE -7d` asked tomorrow is a new
entry while `SINCE 2024-01-01 UNTIL 2024-01-31` stays one. The TTL and the size bounds
limit only the memory held by entries nobody asks for again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from fastapi import FastAPI

from warehouse.query import Limits, QueryResult, StoreInfo
from warehouse.query.plan import Plan

DEFAULT_MAX_ENTRIES = 256
# Cells (rows times columns) across every entry: a result has at most 10,000 rows, so a few wide
# ones must not pin hundreds of megabytes.
DEFAULT_MAX_CELLS = 500_000


@dataclass(frozen=True)
class QueryKey:
    snapshot: str  # Snapshot.key of the stores read
    query: str
    # The key's readable stores: names resolve `store` conditions and fill the `store`
    # dimension, and a renamed store changes them without a new snapshot.
    stores: tuple[tuple[str, StoreInfo], ...]
    store_ids: tuple[str, ...]  # the stores read, after the body's store_ids
    account_currency: str
    account_timezone: str
    time_zone: str | None  # the body's
    windows: tuple[tuple[datetime, datetime], ...]  # main window, then each comparison's
    limits: Limits

    @classmethod
    def of(
        cls,
        *,
        snapshot: str,
        query: str,
        stores: Mapping[str, StoreInfo],
        store_ids: Sequence[str],
        account_currency: str,
        account_timezone: str,
        time_zone: str | None,
        plan: Plan,
        limits: Limits,
    ) -> QueryKey:
        """The key of a query whose checked `plan` resolved its windows at the time of
        asking (the only way the current time enters a result)."""
        windows = [plan.window, *(c.window for c in plan.comparisons)]
        return cls(
            snapshot=snapshot,
            query=query,
            stores=tuple(sorted(stores.items())),
            store_ids=tuple(sorted(store_ids)),
            account_currency=account_currency,
            account_timezone=account_timezone,
            time_zone=time_zone,
            windows=tuple((w.gte, w.lt) for w in windows),
            limits=limits,
        )


@dataclass
class _Entry:
    result: QueryResult
    cells: int
    expires: float


def result_cells(result: QueryResult) -> int:
    """What an entry weighs: its values, and one per row and column for the containers."""
    width = len(result.columns)
    return (len(result.rows) + 1) * (width + 1) + len(result.totals or ())


class QueryCache:
    """A least-recently-used map from QueryKey to QueryResult with a TTL. Thread-safe.
    Results are shared between requests: nobody may modify one taken from here."""

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_cells: int = DEFAULT_MAX_CELLS,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.max_cells = max_cells
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._cells = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> QueryResult | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.expires <= self._clock():
                self._drop(key)
                entry = None
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry.result

    def put(self, key: Hashable, result: QueryResult) -> None:
        """Keep `result` unless caching is off or it alone is over the size bound."""
        cells = result_cells(result)
        if self.ttl_seconds <= 0 or self.max_entries <= 0 or cells > self.max_cells:
            return
        with self._lock:
            now = self._clock()
            for stale in [k for k, e in self._entries.items() if e.expires <= now or k == key]:
                self._drop(stale)
            self._entries[key] = _Entry(result, cells, now + self.ttl_seconds)
            self._cells += cells
            while len(self._entries) > self.max_entries or self._cells > self.max_cells:
                self._drop(next(iter(self._entries)))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._cells = 0

    def _drop(self, key: Hashable) -> None:
        self._cells -= self._entries.pop(key).cells


def app_query_cache(app: FastAPI) -> QueryCache:
    """The app's cache, made on first use. One per app, not per process: snapshot keys are
    unique within one warehouse only, and two apps (tests) may read two warehouses."""
    cache: QueryCache | None = getattr(app.state, "query_cache", None)
    if cache is None:
        cache = app.state.query_cache = QueryCache(
            ttl_seconds=app.state.settings.query_cache_seconds
        )
    return cache
