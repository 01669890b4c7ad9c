"""Exchange-rate factor sets kept as tables of the reader's own DuckDB.

A money query joins its factors (per currency and day, warehouse.query.rates) to the rows
it sums. Registered per query as an Arrow table, the factors cost a small query about 2 ms
of its 5-7 (the registration, and a scan of Arrow data in place of a native table: at 1M
orders, a DST week by hour from the rollup 7.1 ms on registered Arrow, 5.2 ms on a native
table). A factor set depends only on the rates version, the currencies, the query currency
and the days, and a dashboard asks the same windows again and again, so each set is
written once into the reader's in-memory catalog and read by name until it is dropped.

One `FactorTables` per DuckDB database (a reader's; the rates source that keys a set names
its reader). A set in use by a query is never dropped; beyond `size` sets, the least
recently used idle ones are. Creating and dropping happen under one lock per database, so
a set is never created twice nor dropped while being handed out.
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

SCHEMA = "quarry_factors"
# Idle sets kept per database: a year of five currencies is about 1,800 rows (some 50 KB).
KEPT_SETS = 128


@dataclass
class _Set:
    name: str
    users: int = 0


class FactorTables:
    """The factor sets held in one DuckDB database."""

    def __init__(self, size: int = KEPT_SETS) -> None:
        self.size = size
        self._sets: OrderedDict[Hashable, _Set] = OrderedDict()
        self._lock = threading.Lock()
        self._schema_created = False

    def __len__(self) -> int:
        return len(self._sets)

    @contextmanager
    def held(
        self, cursor: duckdb.DuckDBPyConnection, key: Hashable, make: Callable[[], pa.Table]
    ) -> Iterator[str]:
        """The qualified name of the table of `key`'s factors (made with `make` when this
        database has none yet), kept from being dropped inside the block."""
        found = self._acquire(cursor, key, make)
        try:
            yield found.name
        finally:
            self._release(cursor, found)

    def _acquire(
        self, cursor: duckdb.DuckDBPyConnection, key: Hashable, make: Callable[[], pa.Table]
    ) -> _Set:
        with self._lock:
            found = self._sets.get(key)
            if found is None:
                found = _Set(self._create(cursor, make()))
                self._sets[key] = found
            found.users += 1
            self._sets.move_to_end(key)
            return found

    def _release(self, cursor: duckdb.DuckDBPyConnection, found: _Set) -> None:
        with self._lock:
            found.users -= 1
            excess = len(self._sets) - self.size
            for key in [k for k, s in self._sets.items() if s.users == 0][: max(excess, 0)]:
                # An interrupted cursor refuses more work: the next release drops it.
                try:
                    cursor.execute(f"DROP TABLE IF EXISTS {self._sets[key].name}")
                except duckdb.Error:
                    break
                del self._sets[key]

    def _create(self, cursor: duckdb.DuckDBPyConnection, table: pa.Table) -> str:
        if not self._schema_created:
            cursor.execute(f"CREATE SCHEMA IF NOT EXISTS memory.{SCHEMA}")
            self._schema_created = True
        name = f"memory.{SCHEMA}.f_{uuid.uuid4().hex[:16]}"
        staged = f"quarry_factors_{uuid.uuid4().hex[:12]}"
        cursor.register(staged, table)
        try:
            cursor.execute(f"CREATE TABLE {name} AS SELECT * FROM {staged}")
        finally:
            cursor.unregister(staged)
        return name


_databases: dict[str, FactorTables] = {}
_databases_lock = threading.Lock()


def of_database(database: str) -> FactorTables:
    """The factor sets of the database `database` names (a reader's token)."""
    with _databases_lock:
        return _databases.setdefault(database, FactorTables())
