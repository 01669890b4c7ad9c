"""The DuckDB reader: every warehouse table, as one snapshot of the requested stores sees it.

One `WarehouseReader` per process holds one in-memory DuckDB database. A snapshot gets a
schema of views, cached by the snapshot's key, each view created when a cursor first asks
for its table (an export process that reads one table opens that table's Delta logs only);
`connect` hands out a cursor of the shared database whose search_path is that schema, so
queries use plain table names (`orders`, `sales`, ...). search_path is per cursor, so
threads reading different snapshots never see each other's. Delta files are immutable, so
DuckDB may cache Parquet metadata for the life of the process.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import duckdb

from quarry.settings import Settings
from registry.db import Registry
from warehouse.files import FileListCache
from warehouse.schemas import TABLES
from warehouse.snapshots import GLOBAL_TABLES, latest_snapshots
from warehouse.tables import ensure_tables
from warehouse.views import quote_identifier, quote_literal, scan_sql


@dataclass(frozen=True)
class Snapshot:
    """What a read sees: per store the version of each of its tables, and the version of
    each global table (exchange_rates). `key` changes exactly when any of them does."""

    store_ids: tuple[str, ...]
    versions: Mapping[str, Mapping[str, int]] = field(hash=False)
    global_versions: Mapping[str, int] = field(hash=False)
    key: str = ""

    @classmethod
    def of(cls, store_ids: Sequence[str], recorded: Mapping[str, Mapping[str, int]]) -> Snapshot:
        """The snapshot of `store_ids` given their newest recorded versions; stores without
        a snapshot contribute nothing (see warehouse.snapshots for the global tables)."""
        versions = {
            store: {
                t: v for t, v in recorded[store].items() if t in TABLES and t not in GLOBAL_TABLES
            }
            for store in sorted(set(store_ids))
            if store in recorded
        }
        global_versions: dict[str, int] = {}
        for table in GLOBAL_TABLES:
            seen = [recorded[s][table] for s in store_ids if s in recorded and table in recorded[s]]
            if seen:
                global_versions[table] = max(seen)
        triples = sorted((s, t, v) for s, tables in versions.items() for t, v in tables.items())
        payload = json.dumps([triples, sorted(global_versions.items())], separators=(",", ":"))
        key = hashlib.sha256(payload.encode()).hexdigest()[:32]
        return cls(tuple(sorted(set(store_ids))), versions, global_versions, key)


@dataclass
class _Views:
    schema: str
    tables: set[str] = field(default_factory=set)  # the views created so far
    users: int = 0


class WarehouseReader:
    """Reads the warehouse through DuckDB. Thread-safe; one per process."""

    def __init__(
        self, settings: Settings, registry: Registry, *, max_cached_snapshots: int = 64
    ) -> None:
        ensure_tables(settings)
        self.settings = settings
        self.registry = registry
        self._files = FileListCache(settings)
        self._max_views = max_cached_snapshots
        self._views: OrderedDict[str, _Views] = OrderedDict()
        self._lock = threading.Lock()
        self._db = duckdb.connect(
            ":memory:",
            config={
                "threads": settings.duckdb_threads,
                "memory_limit": settings.duckdb_memory_limit,
            },
        )
        # Not in `config`: these belong to the built-in ICU and Parquet extensions, which
        # load only after connect.
        self._db.execute("SET GLOBAL TimeZone = 'UTC'")
        self._db.execute("SET GLOBAL parquet_metadata_cache = true")

    def snapshot(self, store_ids: Sequence[str]) -> Snapshot:
        """The newest recorded snapshot of `store_ids` (one registry query)."""
        with self.registry.session() as session:
            recorded = latest_snapshots(session, store_ids)
        return Snapshot.of(store_ids, recorded)

    @contextmanager
    def connect(
        self, snapshot: Snapshot, tables: Collection[str] | None = None
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor in which every warehouse table name (or only those of `tables`, for a
        reader that knows what it reads) shows exactly `snapshot`. Use it in one thread;
        close nothing yourself."""
        schema = self._acquire(snapshot, set(TABLES) if tables is None else set(tables))
        try:
            with self._lock:
                cursor = self._db.cursor()
            try:
                cursor.execute(f"SET search_path = {quote_literal(schema)}")
                # A long query (a large export) would draw DuckDB's progress bar on stdout.
                cursor.execute("SET enable_progress_bar = false")
                yield cursor
            finally:
                cursor.close()
        finally:
            self._release(snapshot.key)

    @contextmanager
    def read(self, store_ids: Sequence[str]) -> Iterator[duckdb.DuckDBPyConnection]:
        """`connect(snapshot(store_ids))`."""
        with self.connect(self.snapshot(store_ids)) as cursor:
            yield cursor

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _acquire(self, snapshot: Snapshot, tables: set[str]) -> str:
        with self._lock:
            views = self._views.get(snapshot.key)
            if views is not None and tables <= views.tables:
                views.users += 1
                self._views.move_to_end(snapshot.key)
                return views.schema
            missing = tables - (views.tables if views is not None else set())
        # File lists are loaded outside the lock: a new Delta version takes milliseconds
        # to open (each table of each store), and other snapshots' readers should not wait.
        statements = self._view_statements(snapshot, missing)
        with self._lock:
            views = self._views.get(snapshot.key)
            if views is None:
                views = _Views(schema=f"snapshot_{snapshot.key}")
                self._views[snapshot.key] = views
            new = [(name, sql) for name, sql in statements if name not in views.tables]
            self._create(views.schema, new)
            views.tables.update(name for name, _ in new)
            views.users += 1
            self._views.move_to_end(snapshot.key)
            self._evict()
            return views.schema

    def _release(self, key: str) -> None:
        with self._lock:
            views = self._views.get(key)
            if views is not None:
                views.users -= 1
            self._evict()

    def _view_statements(self, snapshot: Snapshot, names: set[str]) -> list[tuple[str, str]]:
        """(table, SELECT) for each table of `names`, over the snapshot's files."""
        statements: list[tuple[str, str]] = []
        for name, table in TABLES.items():
            if name not in names:
                continue
            if table.partitioned:
                wanted: dict[int, list[str]] = {}
                for store, tables in snapshot.versions.items():
                    if name in tables:
                        wanted.setdefault(tables[name], []).append(store)
                files = [
                    path
                    for version, stores in sorted(wanted.items())
                    for paths in self._files.files(name, version, stores).values()
                    for path in paths
                ]
            elif name in snapshot.global_versions:
                version = snapshot.global_versions[name]
                files = list(self._files.files(name, version, [None])[None])
            else:
                files = []
            statements.append((name, scan_sql(table, files)))
        return statements

    def _create(self, schema: str, statements: list[tuple[str, str]]) -> None:
        cursor = self._db.cursor()
        try:
            cursor.execute("BEGIN")
            cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}")
            for name, sql in statements:
                cursor.execute(
                    f"CREATE OR REPLACE VIEW {quote_identifier(schema)}.{quote_identifier(name)}"
                    f" AS {sql}"
                )
            cursor.execute("COMMIT")
        finally:
            cursor.close()

    def _evict(self) -> None:
        """Drop the least recently used idle snapshots beyond the cache size."""
        excess = len(self._views) - self._max_views
        for key in list(self._views):
            if excess <= 0:
                break
            if self._views[key].users == 0:
                schema = self._views.pop(key).schema
                cursor = self._db.cursor()
                try:
                    cursor.execute(f"DROP SCHEMA IF EXISTS {quote_identifier(schema)} CASCADE")
                finally:
                    cursor.close()
                excess -= 1
