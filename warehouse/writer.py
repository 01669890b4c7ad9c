"""Writes a store's change pages into the Delta tables, one commit per table per page.

A full sync's first page replaces the store's partition of each of its dataset's tables.
Every other page upserts its parents by primary key and replaces their children (a child
table of the dataset missing from a page means none), so a page applied twice (a resumed
sync) leaves the tables as applying it once. While one writer
carries a full sync from its first page, later pages whose parents it has not written yet
are appended instead: nothing of theirs can exist in a partition it emptied itself.

Writers of one table must not run concurrently (the pipelines share a concurrency pool
per table); readers never see a half-applied sync because they read the versions of a
recorded snapshot (warehouse.snapshots), not the latest.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable

from platforms.base import ChangePage
from quarry.settings import Settings
from warehouse.pages import child_specs, conform, dataset_tables, normalize, parent_table
from warehouse.rewrite import replace_by_key, write_partition
from warehouse.tables import (
    STORE_COLUMN,
    ensure_tables,
    open_table,
    spec,
    store_predicate,
    table_path,
)


class StoreWriter:
    """Applies one store's pages. One instance per sync run: it remembers which parents it
    wrote since a full sync's first page, to append rather than merge what is new."""

    def __init__(self, settings: Settings, store_id: str) -> None:
        store_predicate(store_id)  # refuses a malformed id before anything is written
        ensure_tables(settings)
        self.settings = settings
        self.store_id = store_id
        self._tables: dict[str, DeltaTable] = {}
        # Hashes of parent ids written since this writer emptied the partition. A hash
        # collision only sends a page down the (correct, slower) merge path.
        self._fresh: dict[str, set[int]] = {}

    def table(self, name: str) -> DeltaTable:
        """The writer's handle on table `name`, brought up to the latest version."""
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = open_table(self.settings, name)
        else:
            table.update_incremental()
        return table

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
            written = self._append(page)
        else:
            written = self._merge(page, parent)
        if fresh is not None:
            fresh.update(ids)
        return written

    def replace_children(
        self, table: str, parent_ids: Sequence[str] | pa.Array, rows: pa.Table
    ) -> int:
        """Replace every row of `table` whose parent is in `parent_ids` with `rows` (the
        complete children of those parents), in one commit. Returns the rows inserted."""
        child = spec(table)
        if child.parent_key is None:
            raise ValueError(f"{table} is not a child table")
        rows = conform(table, rows, self.store_id)
        parents = parent_ids if isinstance(parent_ids, pa.Array) else pa.array(parent_ids)
        _check_parents(table, rows[child.parent_key], parents)
        self._replace(table, child.parent_key, parents, rows, "replace_children")
        return rows.num_rows

    def _replace(self, name: str, key: str, keys: pa.Array, rows: pa.Table, op: str) -> None:
        replace_by_key(
            self.table(name),
            table_path(self.settings, name),
            spec(name),
            self.store_id,
            key,
            keys,
            rows,
            self._commit(op),
        )

    def _replace_partition(self, page: ChangePage, parent: str | None) -> dict[str, int]:
        written: dict[str, int] = {}
        for name in dataset_tables(parent, page.tables):
            rows = page.tables.get(name, spec(name).schema.empty_table())
            self._write(name, rows, replace=True)
            written[name] = rows.num_rows
        if parent is not None:
            self._fresh[parent] = _id_hashes(page.tables[parent])
        return written

    def _append(self, page: ChangePage) -> dict[str, int]:
        written: dict[str, int] = {}
        for name, rows in page.tables.items():
            self._write(name, rows, replace=False)
            written[name] = rows.num_rows
        return written

    def _write(self, name: str, rows: pa.Table, *, replace: bool) -> None:
        # Written sorted, so that compaction (which sorts the partition's small files)
        # mostly finds runs already in order.
        write_partition(
            self.table(name),
            table_path(self.settings, name),
            spec(name),
            self.store_id,
            rows,
            replace=replace,
            commit_properties=self._commit("full"),
        )

    def _replace_present_parents(self, page: ChangePage) -> dict[str, int]:
        """A page of child tables only (a model's output such as sales): each table's rows
        replace the rows of the parents they name. A parent left with no rows at all needs
        replace_children with its id."""
        written: dict[str, int] = {}
        for name, rows in page.tables.items():
            key = spec(name).parent_key
            if key is None:
                raise ValueError(f"{name} is not a child table")
            written[name] = self.replace_children(name, pc.unique(rows[key]), rows)
        return written

    def _merge(self, page: ChangePage, parent: str) -> dict[str, int]:
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
        self._replace(parent, "id", replaced, rows, "merge")
        for name, (key, child_rows) in children.items():
            self._replace(name, key, replaced, child_rows, "merge")
            written[name] = child_rows.num_rows
        return written

    def _commit(self, operation: str) -> CommitProperties:
        return CommitProperties(
            custom_metadata={"quarry.store_id": self.store_id, "quarry.operation": operation}
        )


def _id_hashes(rows: pa.Table) -> set[int]:
    return set(map(hash, rows["id"].to_pylist()))


def _check_parents(table: str, keys: pa.ChunkedArray, parents: pa.Array) -> None:
    """Children of a parent not being replaced would be added next to its old children."""
    if len(keys) and not pc.all(pc.is_in(keys, value_set=parents.cast(pa.string()))).as_py():
        raise ValueError(f"{table}: rows of parents that are not being replaced")


def replace_children(
    settings: Settings, table: str, store_id: str, parent_ids: Sequence[str], rows: pa.Table
) -> int:
    """Replace the children of `parent_ids` in `table` for `store_id` with `rows`, in one
    commit (e.g. the sales model rebuilding the sales of changed orders)."""
    return StoreWriter(settings, store_id).replace_children(table, parent_ids, rows)


def upsert_rows(settings: Settings, table: str, rows: pa.Table) -> int:
    """Upsert `rows` into `table` by primary key, in one commit; for tables written outside
    a store's sync such as exchange_rates. Returns the rows given."""
    table_spec = spec(table)
    rows = conform(table, rows, None)
    if not rows.num_rows:
        return 0
    keys = list(table_spec.primary_key)
    if table_spec.partitioned:
        keys.insert(0, STORE_COLUMN)
    ensure_tables(settings)
    (
        open_table(settings, table)
        .merge(
            rows,
            " AND ".join(f"t.{k} = s.{k}" for k in keys),
            source_alias="s",
            target_alias="t",
            streamed_exec=False,
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    return rows.num_rows
