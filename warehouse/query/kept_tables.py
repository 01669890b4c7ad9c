"""Small relations a query joins, kept as tables of the reader's own DuckDB.

A query joins small relations of its own: the exchange-rate factors (per currency and day,
warehouse.query.rates) and the readable stores (for a store's name or zone). Registered per
query as Arrow tables they cost a small query milliseconds (the registration, and a scan of
Arrow data in place of a native table: at 1M orders, a DST week by hour from the rollup 7.1
ms joining registered factors, 5.2 ms a native table; the monthly total by store's
statement 24.4 ms joining registered stores, 18.7 ms a native table). Each depends only on
what keys it (the rates version, currencies, query currency and days; the stores' names,
currencies and zones), and a dashboard asks the same again and again, so each is written
once into the reader's in-memory catalog and read by name until it is dropped.

One `KeptTables` per reader's DuckDB database (`of_reader`). A table in use by a query is
never dropped; beyond `size` idle ones, the least recently used are. Creating and dropping
happen under one lock per database, so a table is never created twice nor dropped while
being handed out.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import duckdb
import pyarrow as pa

SCHEMA = "quarry_kept"
# Idle tables kept per database: a year of factors for five currencies is about 1,800 rows
# (some 50 KB); the stores of an account, one row each.
KEPT_TABLES = 128


@dataclass
class _Kept:
    name: str
    users: int = 0


class KeptTables:
    """The tables kept in one DuckDB database."""

    def __init__(self, size: int = KEPT_TABLES) -> None:
        self.size = size
        self._tables: OrderedDict[Hashable, _Kept] = OrderedDict()
        self._lock = threading.Lock()
        self._schema_created = False

    def __len__(self) -> int:
        return len(self._tables)

    @contextmanager
    def held(
        self, cursor: duckdb.DuckDBPyConnection, key: Hashable, make: Callable[[], pa.Table]
    ) -> Iterator[str]:
        """The qualified name of the table of `key` (made with `make` when this database has
        none yet), kept from being dropped inside the block."""
        found = self._acquire(cursor, key, make)
        try:
            yield found.name
        finally:
            self._release(cursor, found)

    def _acquire(
        self, cursor: duckdb.DuckDBPyConnection, key: Hashable, make: Callable[[], pa.Table]
    ) -> _Kept:
        with self._lock:
            found = self._tables.get(key)
            if found is None:
                found = _Kept(self._create(cursor, make()))
                self._tables[key] = found
            found.users += 1
            self._tables.move_to_end(key)
            return found

    def _release(self, cursor: duckdb.DuckDBPyConnection, found: _Kept) -> None:
        with self._lock:
            found.users -= 1
            excess = len(self._tables) - self.size
            for key in [k for k, s in self._tables.items() if s.users == 0][: max(excess, 0)]:
                # An interrupted cursor refuses more work: the next release drops it.
                try:
                    cursor.execute(f"DROP TABLE IF EXISTS {self._tables[key].name}")
                except duckdb.Error:
                    break
                del self._tables[key]

    def _create(self, cursor: duckdb.DuckDBPyConnection, table: pa.Table) -> str:
        if not self._schema_created:
            cursor.execute(f"CREATE SCHEMA IF NOT EXISTS memory.{SCHEMA}")
            self._schema_created = True
        name = f"memory.{SCHEMA}.t_{uuid.uuid4().hex[:16]}"
        staged = f"quarry_kept_{uuid.uuid4().hex[:12]}"
        cursor.register(staged, table)
        try:
            cursor.execute(f"CREATE TABLE {name} AS SELECT * FROM {staged}")
        finally:
            cursor.unregister(staged)
        return name


_databases: dict[str, KeptTables] = {}
_databases_lock = threading.Lock()


def of_reader(reader: str | None) -> KeptTables | None:
    """The kept tables of the reader `reader` names (its cursors' READER_VARIABLE,
    warehouse.reader.cursor_variables), or None for a cursor that is not a reader's."""
    if reader is None:
        return None
    with _databases_lock:
        return _databases.setdefault(reader, KeptTables())
