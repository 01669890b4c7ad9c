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

Not thread-safe by itself: the reader calls it under its own lock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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


class ResidentRollups:
    """The slices of one reader's DuckDB, within `max_rows` rows."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._slices: dict[SliceKey, _Slice] = {}
        self._next = 1
        self._deleted: dict[str, int] = {}  # table -> rows deleted since its last rewrite
        # Slices a load refused for want of room: not tried again until some are freed.
        self._refused: set[SliceKey] = set()
        self._created: set[str] = set()

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

    def view_sql(
        self,
        cursor: duckdb.DuckDBPyConnection,
        table: str,
        published: Mapping[str, int],
        scan: Mapping[str, int],
    ) -> tuple[str, list[SliceKey]] | None:
        """The SELECT of `table` for a snapshot whose stores are published at `published`
        and read at `scan` (warehouse.reader.scan_versions: the same rows), from memory,
        and the slices it uses (each counted as used once more: give them back with
        `release`). None when the rows do not fit in `max_rows`, or the lake's table at
        a store's version differs from the copy's columns: read the lake then."""
        keys = {store: (table, store, int(published[store])) for store in scan}
        missing = [store for store, key in keys.items() if key not in self._slices]
        if any(keys[store] in self._refused for store in missing):
            return None
        if missing and not self._load(cursor, table, missing, keys, scan):
            return None
        used = [keys[store] for store in sorted(keys)]
        for key in used:
            self._slices[key].users += 1
        numbers = ", ".join(str(self._slices[key].number) for key in used) or "NULL"
        sql = (
            f"SELECT * EXCLUDE ({SLICE_COLUMN}) FROM {_resident(table)} "
            f"WHERE {SLICE_COLUMN} IN ({numbers})"
        )
        return sql, used

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

    def _load(
        self,
        cursor: duckdb.DuckDBPyConnection,
        table: str,
        stores: list[str],
        keys: Mapping[str, SliceKey],
        scan: Mapping[str, int],
    ) -> bool:
        numbers = {store: self._number() for store in stores}
        by_version: dict[int, list[str]] = {}
        for store in sorted(stores):
            by_version.setdefault(int(scan[store]), []).append(store)
        try:
            self._create(cursor, table)
            for version, group in sorted(by_version.items()):
                cases = " ".join(f"WHEN {store_literal(s)} THEN {numbers[s]}" for s in group)
                cursor.execute(
                    f"INSERT INTO {_resident(table)} "
                    f"SELECT *, CASE store_id {cases} END FROM {qualified(table)} "
                    f"AT (VERSION => {version}) "
                    f"WHERE store_id IN ({', '.join(store_literal(s) for s in group)})"
                )
        except BaseException as exc:
            self._discard(cursor, table, list(numbers.values()))
            if not isinstance(exc, (duckdb.BinderException, duckdb.CatalogException)):
                raise
            # The copy has the lake table's newest columns: a store read at a version
            # before a column was added (or before the table existed) is read from the
            # lake, which answers it as it always has.
            logger.info("rollup %s read from the lake: %s", table, exc)
            return False
        counted = dict(
            cursor.execute(
                f"SELECT {SLICE_COLUMN}, count(*) FROM {_resident(table)} "
                f"WHERE {SLICE_COLUMN} IN ({', '.join(map(str, numbers.values()))}) "
                "GROUP BY ALL"
            ).fetchall()
        )
        loaded = sum(counted.values())
        if self.rows + loaded > self.max_rows:
            logger.info(
                "rollup %s read from the lake: %d more rows would pass the %d held in memory",
                table,
                loaded,
                self.max_rows,
            )
            self._discard(cursor, table, list(numbers.values()))
            self._refused.update(keys[store] for store in stores)
            return False
        for store, number in numbers.items():
            self._slices[keys[store]] = _Slice(number, int(counted.get(number, 0)))
        return True

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
        if self._deleted[table] > live:
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
