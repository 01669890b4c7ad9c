"""Writes a store's change pages into the lake: one transaction per page, spanning every
table the page touches.

A full sync's first page deletes the store's rows of each of its dataset's tables and
inserts the page (DuckLake drops outright a file whose rows are all the store's, and writes
delete files for the store's rows in files shared with other stores). Every other page
deletes its parents by primary key with their children, and inserts the page's rows (a
child table of the dataset missing from a page means none), so a page applied twice (a
resumed sync) leaves the tables as applying it once. Deletes are DuckLake delete files (or
inlined deletions), never file rewrites: an incremental sync costs what changed, whatever
the size of the table. While one writer carries a full sync from its first page, later
pages whose parents it has not written yet are only inserted: nothing of theirs can exist
among the store's rows it emptied itself.

Readers never see a half-applied sync: they read the snapshot published for the store
(warehouse.snapshots), not the newest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.lake import GLOBAL_AUTHOR, Lake
from warehouse.pages import (
    ChangePage,
    child_specs,
    conform,
    dataset_tables,
    normalize,
    parent_table,
)
from warehouse.schemas import TABLES
from warehouse.tables import (
    STORE_COLUMN,
    qualified,
    quote_identifier,
    select_columns,
    spec,
    store_predicate,
)

# Rows handed to DuckDB per registered Arrow table name.
_ROWS = "quarry_rows"
_KEYS = "quarry_keys"


class StoreWriter:
    """Applies one store's pages. One instance per sync run: it remembers which parents it
    wrote since a full sync's first page, to insert rather than replace what is new."""

    def __init__(self, lake: Lake, store_id: str) -> None:
        store_predicate(store_id)  # refuses a malformed id before anything is written
        self.lake = lake
        self.store_id = store_id
        # Hashes of parent ids written since this writer emptied the partition. A hash
        # collision only sends a page down the (correct, slower) replace path.
        self._fresh: dict[str, set[int]] = {}

    def apply(self, page: ChangePage, *, full: bool, first: bool) -> dict[str, int]:
        """Apply `page`; `full` for a sync from the beginning, `first` for its first page.
        Returns the rows written per table (deleted parents count under the parent)."""
        page = ChangePage(
            {n: conform(n, rows, self.store_id) for n, rows in page.tables.items()},
            list(page.deleted_ids),
            page.cursor,
        )
        parent = parent_table(page)
        if full and first:
            return self._replace_partition(page, parent)
        if parent is None:
            return self._replace_present_parents(page)
        page = normalize(page)
        fresh = self._fresh.get(parent)
        ids = _id_hashes(page.tables[parent])
        if full and fresh is not None and not page.deleted_ids and fresh.isdisjoint(ids):
            written = self._insert_only(page)
        else:
            written = self._replace_parents(page, parent)
        if fresh is not None:
            fresh.update(ids)
        return written

    def _replace_partition(self, page: ChangePage, parent: str | None) -> dict[str, int]:
        written: dict[str, int] = {}
        with self.lake.transaction(author=self.store_id, message="full") as cursor:
            for name in dataset_tables(parent, page.tables):
                rows = page.tables.get(name, spec(name).schema.empty_table())
                cursor.execute(
                    f"DELETE FROM {qualified(name)} WHERE {store_predicate(self.store_id)}"
                )
                _insert(cursor, name, rows)
                written[name] = rows.num_rows
        if parent is not None:
            self._fresh[parent] = _id_hashes(page.tables[parent])
        return written

    def _insert_only(self, page: ChangePage) -> dict[str, int]:
        with self.lake.transaction(author=self.store_id, message="full") as cursor:
            for name, rows in page.tables.items():
                _insert(cursor, name, rows)
        return {name: rows.num_rows for name, rows in page.tables.items()}

    def _replace_present_parents(self, page: ChangePage) -> dict[str, int]:
        """A page of child tables only (a model's output such as sales): each table's rows
        replace the rows of the parents they name. A parent left with no rows at all needs
        replace_children with its id."""
        written: dict[str, int] = {}
        with self.lake.transaction(author=self.store_id, message="replace_children") as cursor:
            for name, rows in page.tables.items():
                key = spec(name).parent_key
                if key is None:
                    raise ValueError(f"{name} is not a child table")
                self._delete_keys(cursor, name, key, pc.unique(rows[key]))
                _insert(cursor, name, rows)
                written[name] = rows.num_rows
        return written

    def _replace_parents(self, page: ChangePage, parent: str) -> dict[str, int]:
        rows = page.tables[parent]
        deleted = pa.array(page.deleted_ids, pa.string())
        replaced = pa.concat_arrays([rows["id"].combine_chunks(), deleted])
        written = {parent: rows.num_rows + len(deleted)}
        if not len(replaced):
            return written
        # Only the page's own dataset: derived tables (sales) are their model's to rewrite.
        # A child table the page does not carry means its parents have no such children,
        # as on a full sync's first page.
        children: dict[str, tuple[str, pa.Table]] = {}
        for child in child_specs(parent, dataset_tables(parent, page.tables)):
            assert child.parent_key is not None
            child_rows = page.tables.get(child.name, child.schema.empty_table())
            _check_parents(child.name, child_rows[child.parent_key], replaced)
            children[child.name] = (child.parent_key, child_rows)
        with self.lake.transaction(author=self.store_id, message="merge") as cursor:
            self._delete_keys(cursor, parent, "id", replaced)
            _insert(cursor, parent, rows)
            for name, (key, child_rows) in children.items():
                self._delete_keys(cursor, name, key, replaced)
                _insert(cursor, name, child_rows)
                written[name] = child_rows.num_rows
        return written

    def _delete_keys(
        self, cursor: duckdb.DuckDBPyConnection, table: str, key: str, keys: pa.Array
    ) -> None:
        """Delete the store's rows of `table` whose `key` is one of `keys`."""
        if not len(keys):
            return
        cursor.register(_KEYS, pa.table({"key": pc.unique(keys.cast(pa.string()))}))
        try:
            cursor.execute(
                f"DELETE FROM {qualified(table)} WHERE {store_predicate(self.store_id)} "
                f"AND {quote_identifier(key)} IN (SELECT key FROM {_KEYS})"
            )
        finally:
            cursor.unregister(_KEYS)


def _insert(cursor: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    """Insert `rows` (in the table's schema) into `table` in the cursor's transaction."""
    if not rows.num_rows:
        return
    cursor.register(_ROWS, rows)
    try:
        cursor.execute(
            f"INSERT INTO {qualified(table)} ({select_columns(table)}) "
            f"SELECT {select_columns(table)} FROM {_ROWS}"
        )
    finally:
        cursor.unregister(_ROWS)


def _id_hashes(rows: pa.Table) -> set[int]:
    return set(map(hash, rows["id"].to_pylist()))


def _check_parents(table: str, keys: pa.ChunkedArray, parents: pa.Array) -> None:
    """Children of a parent not being replaced would be added next to its old children."""
    if len(keys) and not pc.all(pc.is_in(keys, value_set=parents.cast(pa.string()))).as_py():
        raise ValueError(f"{table}: rows of parents that are not being replaced")


def upsert_rows(lake: Lake, table: str, rows: pa.Table) -> int:
    """Upsert `rows` into `table` by primary key (and store, for a per-store table), in
    one transaction; for tables written outside a store's sync such as exchange_rates.
    Returns the rows given."""
    table_spec = spec(table)
    rows = conform(table, rows, None)
    if not rows.num_rows:
        return 0
    keys = list(table_spec.primary_key)
    if table_spec.per_store:
        keys.insert(0, STORE_COLUMN)
    match = " AND ".join(f"t.{quote_identifier(k)} = s.{quote_identifier(k)}" for k in keys)
    with lake.transaction(author=GLOBAL_AUTHOR, message=f"upsert {table}") as cursor:
        cursor.register(_KEYS, rows.select(keys))
        try:
            cursor.execute(
                f"DELETE FROM {qualified(table)} t WHERE EXISTS "
                f"(SELECT 1 FROM {_KEYS} s WHERE {match})"
            )
        finally:
            cursor.unregister(_KEYS)
        _insert(cursor, table, rows)
    return rows.num_rows


def delete_store(lake: Lake, store_id: str) -> dict[str, int]:
    """Remove every row of `store_id` from every per-store table, in one transaction.
    Returns the rows deleted per table that held any. DuckLake drops the files holding the
    store's rows alone and writes delete files for the rest; maintenance rewrites and
    deletes them."""
    deleted: dict[str, int] = {}
    with lake.transaction(author=store_id, message="delete_store") as cursor:
        for name, table_spec in TABLES.items():
            if not table_spec.per_store:
                continue
            row = cursor.execute(
                f"DELETE FROM {qualified(name)} WHERE {store_predicate(store_id)}"
            ).fetchone()
            if row and row[0]:
                deleted[name] = int(row[0])
    return deleted


@dataclass(frozen=True)
class StoreChange:
    """A store's whole change of one dataset, as one page: `full` replaces the store's rows
    of every table of the dataset (a first sync), else the page's parents are upserted and
    its deleted ids removed, with their children."""

    page: ChangePage
    full: bool


def apply_changes(
    lake: Lake, tables: tuple[str, ...], changes: Mapping[str, StoreChange]
) -> dict[str, dict[str, int]]:
    """Apply the changes of many stores to one dataset's `tables` (parent first) in one
    transaction whose commit names every store: a fleet batch pays one commit and one
    statement per table for all of its stores, instead of one of each per store. Returns
    the rows written per store and table (deleted parents count under the parent)."""
    parent = tables[0]
    written: dict[str, dict[str, int]] = {}
    inserts: dict[str, list[pa.Table]] = {name: [] for name in tables}
    emptied: list[str] = []
    replaced: list[pa.Table] = []
    for store_id, change in changes.items():
        store_predicate(store_id)  # refuses a malformed id before anything is written
        page = normalize(
            ChangePage(
                {n: conform(n, rows, store_id) for n, rows in change.page.tables.items()},
                list(change.page.deleted_ids),
            )
        )
        outside = sorted(set(page.tables) - set(tables))
        if outside:
            raise ValueError(f"{outside} are not tables of the {parent} dataset")
        counts = written[store_id] = {}
        if change.full:
            emptied.append(store_id)
            for name, rows in page.tables.items():
                inserts[name].append(rows)
                counts[name] = rows.num_rows
            continue
        rows = page.tables.get(parent, spec(parent).schema.empty_table())
        ids = pa.concat_arrays(
            [rows["id"].combine_chunks(), pa.array(page.deleted_ids, pa.string())]
        )
        counts[parent] = len(ids)
        if not len(ids):
            continue
        inserts[parent].append(rows)
        for child in child_specs(parent, tables):
            assert child.parent_key is not None
            child_rows = page.tables.get(child.name, child.schema.empty_table())
            _check_parents(child.name, child_rows[child.parent_key], ids)
            inserts[child.name].append(child_rows)
            counts[child.name] = child_rows.num_rows
        replaced.append(pa.table({STORE_COLUMN: pa.array([store_id] * len(ids)), "key": ids}))
    keys = pa.concat_tables(replaced) if replaced else None
    with lake.transaction(author=list(changes), message="fleet batch") as cursor:
        if keys is not None:
            cursor.register(_KEYS, keys)
            kept = store_predicate(pc.unique(keys[STORE_COLUMN]).to_pylist())
        try:
            for name in tables:
                if emptied:
                    where = store_predicate(emptied)
                    cursor.execute(f"DELETE FROM {qualified(name)} WHERE {where}")
                if keys is not None:
                    key = f"({STORE_COLUMN}, {quote_identifier(spec(name).parent_key or 'id')})"
                    cursor.execute(
                        f"DELETE FROM {qualified(name)} WHERE {kept} "
                        f"AND {key} IN (SELECT {STORE_COLUMN}, key FROM {_KEYS})"
                    )
                if inserts[name]:
                    _insert(cursor, name, pa.concat_tables(inserts[name]))
        finally:
            if keys is not None:
                cursor.unregister(_KEYS)
    return written
