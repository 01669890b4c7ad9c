"""Rollup rows held in the reader's own DuckDB memory, so a query a rollup answers reads no
lake files and asks DuckLake's catalog nothing.

Reading a rollup table through the lake costs each statement DuckLake's catalog look-ups
and the Parquet decode (about 20 ms per scan at 1M orders, docs/benchmark.md Session 17),
more than the aggregate itself. Rollup tables are small (a few percent of the facts), so
the API's reader copies a store's rows of a rollup table into memory once per published
version of that store and serves every later snapshot that reads that version from the
copy.

A copy is a *slice*: the rows of one rollup table for one store at one published version,
in the in-memory table `memory.quarry_resident.<table>` with the slice's number in an
extra column. A slice's rows never change (the store's rows at a published version are
fixed), so a snapshot's view is a filter on the slices of its stores. The reader counts
the snapshots using each slice; a slice no cached snapshot uses is deleted, and a table
whose deleted rows outnumber its live ones is rewritten (DuckDB frees an in-memory table's
memory only then). `max_rows` caps the rows held (about 430 bytes a row at 1M orders): a
load that would pass it is undone, not tried again until some rows are freed, and that
snapshot reads the table from the lake, as without residency.

Not thread-safe by itself: the reader calls it under its own lock, but for the copy of a
store's rows (`ResidentRollups.copy`), which it makes without it, so that the first query
after a publish does not hold up every other request of the process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import duckdb

from warehouse.tables import qualified, quote_identifier, store_literal

SCHEMA = "quarry_resident"
SLICE_COLUMN = "quarry_slice"

logger = logging.getLogger(__name__)


@dataclass
class _Slice:
    number: int
    rows: int
    users: int = 0


SliceKey = tuple[str, str, int]  # (table, store, the store's published version)


@dataclass(eq=False)
class Load:
    """Slices of one rollup table that one thread copies outside the reader's lock
    (ResidentRollups.prepare, copy, settle); `done` is set once they are settled. Kept
    slices start with one use, the loader's, which it gives back (`release`) once its
    snapshot's view holds them: until then no release by another snapshot frees them."""

    table: str
    keys: dict[str, SliceKey]  # store -> the slice it fills
    numbers: dict[str, int]  # store -> the slice's number
    scan: dict[str, int]  # store -> the lake version its rows are read at
    done: threading.Event = field(default_factory=threading.Event)
    kept: bool = False


class ResidentRollups:
    """The slices of one reader's DuckDB, within `max_rows` rows.

    A copy is made in three steps, so that the reader's lock is not held while a store's
    rows are read from the lake (every request of the process takes that lock): `prepare`
    (under the lock) names the slices the caller copies and the copies of other threads
    it waits for; `copy` (without it) reads the rows; `settle` (under it) keeps them, or
    discards them when they would pass `max_rows`."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._slices: dict[SliceKey, _Slice] = {}
        self._next = 1
        self._deleted: dict[str, int] = {}  # table -> rows deleted since its last rewrite
        # Slices a load refused for want of room: not tried again until some are freed.
        self._refused: set[SliceKey] = set()
        self._created: set[str] = set()
        self._loading: dict[SliceKey, Load] = {}
        self._copying: dict[str, int] = {}  # table -> copies under way: no rewrite meanwhile

    @property
    def rows(self) -> int:
        """Rows held now, over every table."""
        return sum(s.rows for s in self._slices.values())

    def held(self) -> dict[tuple[str, str], list[int]]:
        """(table, store) -> the published versions whose rows are held, oldest first."""
        out: dict[tuple[str, str], list[int]] = {}
        for table, store, version in sorted(self._slices):
            out.setdefault((table, store), []).append(version)
        return out

    def prepare(
        self,
        cursor: duckdb.DuckDBPyConnection,
        table: str,
        published: Mapping[str, int],
        scan: Mapping[str, int],
    ) -> tuple[Load | None, list[threading.Event]] | None:
        """For a snapshot whose stores are published at `published` and read at `scan`
        (warehouse.reader.scan_versions: the same rows): the slices of `table` the caller
        copies (None when every one is held or being copied), and the copies of other
        threads to wait for. None when a slice was refused for want of room: read the
        lake."""
        keys = {store: (table, store, int(published[store])) for store in scan}
        missing = [store for store, key in keys.items() if key not in self._slices]
        if any(keys[store] in self._refused for store in missing):
            return None
        waits = {id(load): load.done for s in missing if (load := self._loading.get(keys[s]))}
        mine = [store for store in missing if keys[store] not in self._loading]
        if not mine:
            return None, list(waits.values())
        try:
            self._create(cursor, table)
        except (duckdb.BinderException, duckdb.CatalogException) as exc:
            logger.info("rollup %s read from the lake: %s", table, exc)
            return None
        load = Load(
            table,
            {store: keys[store] for store in mine},
            {store: self._number() for store in mine},
            {store: int(scan[store]) for store in mine},
        )
        for key in load.keys.values():
            self._loading[key] = load
        self._copying[table] = self._copying.get(table, 0) + 1
        return load, list(waits.values())

    @staticmethod
    def copy(cursor: duckdb.DuckDBPyConnection, load: Load) -> dict[int, int] | None:
        """The load's rows copied from the lake (no lock needed: appends to one table do
        not conflict in DuckDB): rows per slice number. None when the lake's table at a
        store's version differs from the copy's columns (or did not exist yet): that
        snapshot reads the lake, which answers it as it always has."""
        by_version: dict[int, list[str]] = {}
        for store in sorted(load.keys):
            by_version.setdefault(load.scan[store], []).append(store)
        try:
            for version, group in sorted(by_version.items()):
                cases = " ".join(f"WHEN {store_literal(s)} THEN {load.numbers[s]}" for s in group)
                cursor.execute(
                    f"INSERT INTO {_resident(load.table)} "
                    f"SELECT *, CASE store_id {cases} END FROM {qualified(load.table)} "
                    f"AT (VERSION => {version}) "
                    f"WHERE store_id IN ({', '.join(store_literal(s) for s in group)})"
                )
        except (duckdb.BinderException, duckdb.CatalogException) as exc:
            logger.info("rollup %s read from the lake: %s", load.table, exc)
            return None
        return dict(
            cursor.execute(
                f"SELECT {SLICE_COLUMN}, count(*) FROM {_resident(load.table)} "
                f"WHERE {SLICE_COLUMN} IN ({', '.join(map(str, load.numbers.values()))}) "
                "GROUP BY ALL"
            ).fetchall()
        )

    def settle(
        self, cursor: duckdb.DuckDBPyConnection, load: Load, counted: dict[int, int] | None
    ) -> None:
        """Keep the copied slices (`counted`: rows per slice number), with the loader's
        use (see Load), unless they would pass `max_rows` or the copy failed (None): then
        they are discarded, and a slice refused for want of room is not tried again until
        some rows are freed."""
        try:
            for key in load.keys.values():
                self._loading.pop(key, None)
            self._copying[load.table] -= 1
            numbers = list(load.numbers.values())
            if counted is None:
                self._discard(cursor, load.table, numbers)
                return
            loaded = sum(counted.values())
            if self.rows + loaded > self.max_rows:
                logger.info(
                    "rollup %s read from the lake: %d more rows would pass the %d held in "
                    "memory",
                    load.table, loaded, self.max_rows,
                )  # fmt: skip
                self._discard(cursor, load.table, numbers)
                self._refused.update(load.keys.values())
                return
            for store, number in load.numbers.items():
                self._slices[load.keys[store]] = _Slice(number, int(counted.get(number, 0)), 1)
            load.kept = True
        finally:
            load.done.set()

    def view_sql(
        self, table: str, published: Mapping[str, int], scan: Mapping[str, int]
    ) -> tuple[str, list[SliceKey]] | None:
        """The SELECT of `table` for a snapshot (as `prepare`) from memory, once its
        slices are settled, and the slices it uses (each counted as used once more: give
        them back with `release`). None when a slice is not held: read the lake then."""
        keys = [(table, store, int(published[store])) for store in sorted(scan)]
        if any(key not in self._slices for key in keys):
            return None
        for key in keys:
            self._slices[key].users += 1
        numbers = ", ".join(str(self._slices[key].number) for key in keys) or "NULL"
        sql = (
            f"SELECT * EXCLUDE ({SLICE_COLUMN}) FROM {_resident(table)} "
            f"WHERE {SLICE_COLUMN} IN ({numbers})"
        )
        return sql, keys

    def release(self, cursor: duckdb.DuckDBPyConnection, keys: Iterable[SliceKey]) -> None:
        """One use fewer of each of `keys`; a slice left unused is deleted."""
        unused: dict[str, list[SliceKey]] = {}
        for key in keys:
            found = self._slices.get(key)
            if found is None:
                continue
            found.users -= 1
            if found.users <= 0:
                unused.setdefault(key[0], []).append(key)
        for table, dropped in unused.items():
            self._delete(cursor, table, dropped)

    def _create(self, cursor: duckdb.DuckDBPyConnection, table: str) -> None:
        if table in self._created:
            return
        cursor.execute(f"CREATE SCHEMA IF NOT EXISTS memory.{SCHEMA}")
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {_resident(table)} AS "
            f"SELECT *, 0::BIGINT AS {SLICE_COLUMN} FROM {qualified(table)} LIMIT 0"
        )
        self._created.add(table)

    def _delete(self, cursor: duckdb.DuckDBPyConnection, table: str, keys: list[SliceKey]) -> None:
        slices = [self._slices.pop(key) for key in keys]
        self._refused.clear()
        self._discard(cursor, table, [s.number for s in slices])
        self._deleted[table] = self._deleted.get(table, 0) + sum(s.rows for s in slices)
        live = sum(s.rows for key, s in self._slices.items() if key[0] == table)
        # Not while a copy appends to the table: the rewrite would replace the table under
        # it (the next delete rewrites instead).
        if self._deleted[table] > live and not self._copying.get(table):
            # In place: views name the table, not a version of it.
            cursor.execute(
                f"CREATE OR REPLACE TABLE {_resident(table)} AS SELECT * FROM {_resident(table)}"
            )
            self._deleted[table] = 0

    def _discard(self, cursor: duckdb.DuckDBPyConnection, table: str, numbers: list[int]) -> None:
        if table in self._created and numbers:
            cursor.execute(
                f"DELETE FROM {_resident(table)} "
                f"WHERE {SLICE_COLUMN} IN ({', '.join(map(str, numbers))})"
            )

    def _number(self) -> int:
        number = self._next
        self._next += 1
        return number


def _resident(table: str) -> str:
    return f"memory.{SCHEMA}.{quote_identifier(table)}"
