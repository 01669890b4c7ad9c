"""The DuckDB reader: every warehouse table, as one snapshot of the requested stores sees it.

One `WarehouseReader` per process holds one DuckDB connection with the lake attached.
A `Snapshot` names, per store, the lake version published for it (warehouse.snapshots).
Each snapshot gets a schema of views, cached by the snapshot's key, each view created
when a cursor first asks for its table: a store's rows at its version, `lake.<table> AT
(VERSION => n)`, one scan per distinct version; exchange_rates, which is global, at the
newest version among the stores. scan_versions reads a store at a newer version than its
own when nothing of it changed in between, so most reads scan one version. `connect`
hands out a cursor whose search_path is that schema, so queries use plain table names
(`orders`, `sales`, ...); search_path is per cursor, so threads reading different
snapshots never see each other's. A snapshot never changes, so a query run twice on one
snapshot gives the same answer however many syncs committed meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import uuid
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from threading import Event

import duckdb
import pyarrow as pa

from quarry.settings import Settings
from registry.db import Registry
from warehouse.lake import AUTHORS, LAKE
from warehouse.lake import connect as connect_lake
from warehouse.resident import Load, ResidentRollups, SliceKey
from warehouse.schemas import TABLES, TableSpec
from warehouse.snapshots import latest_snapshots, pin, release
from warehouse.tables import (
    STORE_COLUMN,
    qualified,
    quote_identifier,
    quote_literal,
    store_literal,
)

# How long a pin outlives a reader that died without releasing it.
PIN_TTL = timedelta(hours=24)
# A cursor variable naming what exchange_rates reads in the cursor's snapshot (this reader
# and the rates' lake version; NULL for no rates): warehouse.query.rates keeps a currency's
# history per source. Set with the search_path, so that knowing it costs no catalog query
# (asking duckdb_views() for the view's definition cost a money query 7-8 ms).
RATES_SOURCE_VARIABLE = "quarry_rates_source"
# A cursor variable naming the reader whose cursor it is: warehouse.query.kept_tables keeps
# small relations per reader's database.
READER_VARIABLE = "quarry_reader"


# The variables of the cursors `WarehouseReader.connect` has handed out and not closed yet,
# by the cursor's id: knowing them costs a query no statement (about 0.2 ms each).
_HANDED_OUT: dict[int, tuple[str | None, str | None]] = {}


def cursor_variables(cursor: duckdb.DuckDBPyConnection) -> tuple[str | None, str | None]:
    """(READER_VARIABLE, RATES_SOURCE_VARIABLE) of `cursor`: (None, None) on a cursor that
    is not a reader's."""
    known = _HANDED_OUT.get(id(cursor))
    if known is not None:
        return known
    row = cursor.execute(
        f"SELECT getvariable('{READER_VARIABLE}'), getvariable('{RATES_SOURCE_VARIABLE}')"
    ).fetchone()
    if row is None:
        return None, None
    return (None if row[0] is None else str(row[0])), (None if row[1] is None else str(row[1]))


@dataclass(frozen=True)
class Snapshot:
    """What a read sees: per store, the lake version of all its tables. Global tables
    (exchange_rates) are read at the newest of them: the newest rates consistent with some
    store's published sync. `key` changes exactly when any of them does."""

    store_ids: tuple[str, ...]
    versions: Mapping[str, int] = field(hash=False)
    key: str = ""

    @classmethod
    def of(cls, store_ids: Sequence[str], recorded: Mapping[str, int]) -> Snapshot:
        """The snapshot of `store_ids` given their published versions; stores never
        published contribute nothing."""
        stores = tuple(sorted(set(store_ids)))
        versions = {s: int(recorded[s]) for s in stores if s in recorded}
        payload = json.dumps(sorted(versions.items()), separators=(",", ":"))
        key = hashlib.sha256(payload.encode()).hexdigest()[:32]
        return cls(stores, versions, key)


def scan_versions(cursor: duckdb.DuckDBPyConnection, snapshot: Snapshot) -> dict[str, int]:
    """The version to read each store of `snapshot` at: its published one, moved up to the
    snapshot's newest when no commit of that store came in between (the same rows, and
    one scan of the table for all such stores instead of one per version).

    Every write of a store's rows names the store among its commit's authors
    (warehouse.lake.commit_author), and snapshot ids are consecutive: a gap means an
    expired snapshot whose authors are unknown, and the store keeps its own version."""
    versions = dict(snapshot.versions)
    if len(set(versions.values())) <= 1:
        return versions
    newest = max(versions.values())
    quiet = unchanged_until(cursor, {s: (v, newest) for s, v in versions.items()})
    return {s: newest if quiet[s] == newest else v for s, v in versions.items()}


def unchanged_until(
    cursor: duckdb.DuckDBPyConnection, ranges: Mapping[str, tuple[int, int]]
) -> dict[str, int]:
    """Per store of `ranges` (store -> (start, end)), the newest version v in [start, end]
    at which the store's rows are still those of `start`: no commit between them names the
    store (warehouse.lake.commit_author) and none is missing (an expired snapshot's authors
    are unknown). scan_versions reads a store at the newest version when its rows are
    still those; a reader of what changed since `start` reads from v on, and skips the
    other stores' writes in between."""
    spans = {s: (int(a), int(b)) for s, (a, b) in ranges.items() if b > a}
    found = {s: int(a) for s, (a, _) in ranges.items()}
    if not spans:
        return found
    first = min(a for a, _ in spans.values())
    last = max(b for _, b in spans.values())
    commits = dict(
        cursor.execute(
            f"SELECT snapshot_id, {AUTHORS} FROM {LAKE}.snapshots() "
            f"WHERE snapshot_id > {first} AND snapshot_id <= {last}"
        ).fetchall()
    )
    for store, (start, end) in spans.items():
        for version in range(start + 1, end + 1):
            if version not in commits or store in commits[version]:
                break
            found[store] = version
    return found


def table_sql(table: TableSpec, versions: Mapping[str, int]) -> str:
    """SELECT of `table`'s rows with each store of `versions` at its version, in schema
    order; a global table at the newest of them (empty when there is none)."""
    name = qualified(table.name)
    if not versions:
        return f"SELECT * FROM {name} WHERE false"
    if not table.per_store:
        return f"SELECT * FROM {name} AT (VERSION => {max(versions.values())})"
    by_version: dict[int, list[str]] = {}
    for store, version in sorted(versions.items()):
        by_version.setdefault(version, []).append(store_literal(store))
    column = quote_identifier(STORE_COLUMN)
    return " UNION ALL ".join(
        f"SELECT * FROM {name} AT (VERSION => {version}) WHERE {column} IN ({', '.join(stores)})"
        for version, stores in sorted(by_version.items())
    )


@dataclass
class _Views:
    schema: str
    versions: dict[str, int]  # what each store is read at (scan_versions)
    rates_source: str | None  # RATES_SOURCE_VARIABLE's value for this snapshot
    published: dict[str, int]  # each store's published version (the snapshot's)
    tables: set[str] = field(default_factory=set)  # the views created so far
    # Rollup tables whose residency was settled: read from memory, or refused (too many
    # rows, a version the copy does not match) and read from the lake.
    resident: set[str] = field(default_factory=set)
    slices: list[SliceKey] = field(default_factory=list)  # the memory those views use
    users: int = 0


class WarehouseReader:
    """Reads the warehouse through DuckDB. Thread-safe; one per process."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        *,
        max_cached_snapshots: int = 64,
        resident_rollup_rows: int = 0,
    ) -> None:
        """`resident_rollup_rows`: rollup rows this reader may hold in memory for cursors
        that ask for them (warehouse.resident); 0 reads them from the lake always."""
        self.settings = settings
        self.registry = registry
        self._max_views = max_cached_snapshots
        self._resident = ResidentRollups(resident_rollup_rows) if resident_rollup_rows else None
        self._views: OrderedDict[str, _Views] = OrderedDict()
        self._lock = threading.Lock()
        self._db = connect_lake(settings)
        # Tells this reader's rate sources from another's (tests open several lakes whose
        # version numbers coincide).
        self._token = uuid.uuid4().hex[:12]

    @classmethod
    def serving(cls, settings: Settings, registry: Registry) -> WarehouseReader:
        """The reader the API answers with: keeping rollup rows in memory as `settings`
        say (QUARRY_RESIDENT_ROLLUP_ROWS, none with QUARRY_ROLLUPS=off)."""
        rows = settings.resident_rollup_rows if settings.rollups else 0
        # pyarrow imports pandas the first time it turns Python values into an array (the
        # stores and exchange-rate factors every query registers): about 0.2 s that the
        # first request paid; paid here, at the API's start, instead.
        pa.array([], pa.string())
        return cls(settings, registry, resident_rollup_rows=rows)

    def snapshot(self, store_ids: Sequence[str]) -> Snapshot:
        """The published snapshot of `store_ids` (one registry query)."""
        with self.registry.engine.connect() as connection:
            recorded = latest_snapshots(connection, store_ids)
        return Snapshot.of(store_ids, recorded)

    @contextmanager
    def connect(
        self,
        snapshot: Snapshot,
        tables: Collection[str] | None = None,
        *,
        resident: Collection[str] = (),
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor in which every warehouse table name (or only those of `tables`, for a
        reader that knows what it reads) shows exactly `snapshot`. The rollup tables of
        `resident` are read from this reader's memory where it keeps rollups (the same
        rows; the query engine names the source it will read, and any name other than a
        rollup table's, the facts', is ignored). Use it in one thread; close nothing
        yourself."""
        views = self._acquire(
            snapshot, set(TABLES) if tables is None else set(tables), set(resident)
        )
        try:
            with self._lock:
                cursor = self._db.cursor()
            try:
                source = "NULL" if views.rates_source is None else quote_literal(views.rates_source)
                # One statement for the cursor's settings: each execute costs a round trip.
                # No progress bar (quiet_cursor's reason: a long export would draw it).
                cursor.execute(
                    "SET enable_progress_bar = false; "
                    f"SET search_path = {quote_literal('memory.' + views.schema)}; "
                    f"SET VARIABLE {RATES_SOURCE_VARIABLE} = {source}; "
                    f"SET VARIABLE {READER_VARIABLE} = {quote_literal(self._token)}"
                )
                _HANDED_OUT[id(cursor)] = (self._token, views.rates_source)
                yield cursor
            finally:
                _HANDED_OUT.pop(id(cursor), None)
                cursor.close()
        finally:
            self._release(snapshot.key)

    @contextmanager
    def pinned(self, store_ids: Sequence[str]) -> Iterator[Snapshot]:
        """The published snapshot of `store_ids`, kept from maintenance's expiry for the
        block (or PIN_TTL at most, should this process die): for a long reader such as an
        export, which must see one snapshot from its first row to its last."""
        snapshot = self.snapshot(store_ids)
        with self.kept(snapshot.versions.values()):
            yield snapshot

    @contextmanager
    def kept(self, versions: Iterable[int]) -> Iterator[None]:
        """`versions` kept from maintenance's expiry for the block (PIN_TTL at most)."""
        holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        pin(self.registry, holder, versions, PIN_TTL)
        try:
            yield
        finally:
            release(self.registry, holder)

    @contextmanager
    def read(self, store_ids: Sequence[str]) -> Iterator[duckdb.DuckDBPyConnection]:
        """`connect(snapshot(store_ids))`."""
        with self.connect(self.snapshot(store_ids)) as cursor:
            yield cursor

    @property
    def resident_rows(self) -> int:
        """Rollup rows this reader holds in memory now."""
        with self._lock:
            return 0 if self._resident is None else self._resident.rows

    def resident_versions(self) -> dict[tuple[str, str], list[int]]:
        """(rollup table, store) -> the published versions of the store held in memory."""
        with self._lock:
            return {} if self._resident is None else self._resident.held()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _acquire(self, snapshot: Snapshot, tables: set[str], resident: set[str]) -> _Views:
        """The snapshot's views, with those of `tables` created, and the rollup tables of
        `resident` read from memory where this reader keeps them. A store's rows are
        copied into memory without the reader's lock (warehouse.resident), which every
        request takes: the first query after a publish does not hold the others up."""
        with self._lock:
            views = self._views.get(snapshot.key)
            if views is None:
                cursor = self._db.cursor()
                try:
                    versions = scan_versions(cursor, snapshot)
                finally:
                    cursor.close()
                rates = f"{self._token}:{max(versions.values())}" if versions else None
                views = _Views(f"snapshot_{snapshot.key}", versions, rates, dict(snapshot.versions))
                self._views[snapshot.key] = views
            wanted = self._unsettled(views, resident & tables)
            loads, waits = self._prepare(views, wanted)
            # A user from here on: not evicted while its copies are made.
            views.users += 1
        try:
            self._copy(loads)
            for event in waits:
                event.wait()
            with self._lock:
                in_memory = self._resident_views(views, wanted, loads)
                missing = [
                    (n, table_sql(TABLES[n], views.versions))
                    for n in tables - views.tables - {name for name, _ in in_memory}
                ]
                if missing or in_memory:
                    self._create(views.schema, missing + in_memory)
                    views.tables.update(name for name, _ in missing + in_memory)
                self._views.move_to_end(snapshot.key)
                self._evict()
        except BaseException:
            self._release(snapshot.key)
            raise
        return views

    def _unsettled(self, views: _Views, tables: set[str]) -> list[str]:
        """The rollup tables of `tables` that this reader can hold in memory and whose
        residency `views` has not settled yet."""
        if self._resident is None or not views.versions:
            return []
        return sorted(n for n in tables - views.resident if TABLES[n].rollup_of is not None)

    def _prepare(self, views: _Views, wanted: list[str]) -> tuple[list[Load], list[Event]]:
        """Under the lock: the copies this thread makes for `wanted`, and those of other
        threads it waits for."""
        loads: list[Load] = []
        waits: list[Event] = []
        if self._resident is None or not wanted:
            return loads, waits
        cursor = self._db.cursor()
        try:
            for name in wanted:
                prepared = self._resident.prepare(cursor, name, views.published, views.versions)
                if prepared is None:
                    continue
                load, others = prepared
                if load is not None:
                    loads.append(load)
                waits.extend(others)
        except BaseException:
            # No copy is left announced that nobody makes: threads would wait for it.
            for load in loads:
                self._resident.settle(cursor, load, None)
            raise
        finally:
            cursor.close()
        return loads, waits

    def _copy(self, loads: list[Load]) -> None:
        """Without the lock: each load's rows copied from the lake; then each load settled
        (_settle), whatever happened: a copy that failed, or was not made, is discarded,
        and threads waiting for it read the lake."""
        counted: dict[Load, dict[int, int] | None] = dict.fromkeys(loads)
        try:
            if loads:
                with self._lock:
                    cursor = self._db.cursor()
                with closing(cursor):
                    for load in loads:
                        counted[load] = ResidentRollups.copy(cursor, load)
        finally:
            self._settle(counted)

    def _settle(self, counted: Mapping[Load, dict[int, int] | None]) -> None:
        """Under the lock, each load kept or discarded (warehouse.resident); its waiters
        are let go even if that fails."""
        try:
            if counted and self._resident is not None:
                with self._lock, closing(self._db.cursor()) as cursor:
                    for load, rows in counted.items():
                        self._resident.settle(cursor, load, rows)
        finally:
            for load in counted:
                load.done.set()

    def _release(self, key: str) -> None:
        with self._lock:
            views = self._views.get(key)
            if views is not None:
                views.users -= 1
            self._evict()

    def _resident_views(
        self, views: _Views, wanted: list[str], loads: list[Load]
    ) -> list[tuple[str, str]]:
        """Under the lock, once the copies are settled: (table, SELECT from memory) for
        each table of `wanted` that no other thread settled for `views` meanwhile and whose
        slices are all held (the others read the lake); then the loader's use of the
        slices of `loads` is given back (warehouse.resident.Load)."""
        if self._resident is None:
            return []
        found = []
        for name in wanted:
            if name in views.resident:
                continue
            views.resident.add(name)
            held = self._resident.view_sql(name, views.published, views.versions)
            if held is not None:
                found.append((name, held[0]))
                views.slices.extend(held[1])
        kept = [key for load in loads if load.kept for key in load.keys.values()]
        if kept:
            cursor = self._db.cursor()
            try:
                self._resident.release(cursor, kept)
            finally:
                cursor.close()
        return found

    def _create(self, schema: str, statements: list[tuple[str, str]]) -> None:
        cursor = self._db.cursor()
        try:
            target = f"memory.{quote_identifier(schema)}"
            cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {target}")
            for name, sql in statements:
                try:
                    cursor.execute(
                        f"CREATE OR REPLACE VIEW {target}.{quote_identifier(name)} AS {sql}"
                    )
                except duckdb.CatalogException:
                    # A rollup table newer than the snapshot (a lake from before the
                    # rollups, not re-synced since): no view, and the query engine,
                    # finding none, answers from the facts.
                    if TABLES[name].rollup_of is None:
                        raise
        finally:
            cursor.close()

    def _evict(self) -> None:
        """Drop the least recently used idle snapshots beyond the cache size."""
        excess = len(self._views) - self._max_views
        for key in list(self._views):
            if excess <= 0:
                break
            if self._views[key].users == 0:
                views = self._views.pop(key)
                cursor = self._db.cursor()
                try:
                    cursor.execute(
                        f"DROP SCHEMA IF EXISTS memory.{quote_identifier(views.schema)} CASCADE"
                    )
                    if self._resident is not None:
                        self._resident.release(cursor, views.slices)
                finally:
                    cursor.close()
                excess -= 1
