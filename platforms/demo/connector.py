"""The demo platform seen from one store, through the connector interface (platforms.base).

Records come in (updated_at, id) order; a page holds at most `page_size` parents with all
their children. The first page of a sync carries the ids of parents deleted since the
cursor's deletion watermark (none for a full sync, whose tables no longer hold them).

Deletions are read before the tables, parents before their children, the opposite of the
order in which an advance publishes them (platforms.demo.storage): a sync that races
`quarry demo advance` may miss that advance's changes, never a deletion nor a child of a
parent it saw, and the next sync picks up what it missed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from platforms.demo.cursor import Position, decode, encode
from platforms.demo.probe import changed_since
from platforms.demo.storage import (
    DELETIONS,
    Folder,
    read_children,
    read_store_table,
    store_dir,
)
from quarry.errors import InvalidRequest, NotFound
from quarry.settings import Settings
from warehouse.pages import ChangePage
from warehouse.schemas import SOURCE_DATASETS, TABLES, TS

DEFAULT_PAGE_SIZE = 50_000


def _datasets_tables(dataset: str) -> tuple[str, ...]:
    try:
        return SOURCE_DATASETS[dataset]
    except KeyError:
        raise InvalidRequest(
            f"dataset: {dataset!r} is not one of {', '.join(SOURCE_DATASETS)}",
            errors=[{"field": "dataset", "message": "unknown dataset"}],
        ) from None


def _micros(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


class DemoConnector:
    """Reads one demo store's Parquet files as a commerce platform would serve them."""

    def __init__(
        self,
        settings: Settings,
        account_id: str,
        store_id: str,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.settings = settings
        self.account_id = account_id
        self.store_id = store_id
        self.page_size = page_size

    @property
    def _directory(self) -> Folder:
        directory = store_dir(self.settings, self.account_id, self.store_id)
        if not directory.exists():
            raise NotFound(f"no demo data for store {self.store_id!r}")
        return directory

    def count(self, dataset: str) -> int:
        parent = _datasets_tables(dataset)[0]
        folder = self._directory
        path = folder.path(f"{parent}.parquet")
        return int(pq.read_metadata(path, filesystem=folder.files.filesystem).num_rows)

    def changed(self, cursors: Mapping[str, str | None]) -> list[str]:
        return changed_since(self._directory, cursors)

    def changes(self, dataset: str, cursor: str | None) -> Iterator[ChangePage]:
        tables = _datasets_tables(dataset)
        position = decode(cursor)
        return self._pages(tables, dataset, position)

    def _pages(
        self, tables: tuple[str, ...], dataset: str, position: Position | None
    ) -> Iterator[ChangePage]:
        directory = self._directory
        deletions = read_store_table(directory, DELETIONS)
        deleted_at = _micros(deletions["deleted_at"])
        seen = None if position is None else position.deleted
        watermark = int(deleted_at.max()) if len(deleted_at) else seen
        if seen is not None and watermark is not None:
            watermark = max(watermark, seen)
        deleted_ids: list[str] = []
        if position is not None:
            fresh = (deletions["dataset"].to_numpy(zero_copy_only=False) == dataset) & (
                deleted_at > (seen if seen is not None else -1)
            )
            deleted_ids = deletions["id"].filter(pa.array(fresh)).to_pylist()

        since = None if position is None else position.updated
        # Rows changed since the cursor, and their children, are all a sync reads: the
        # files' row groups make that cost what changed, not what the store holds.
        candidates = read_store_table(
            directory,
            tables[0],
            None if since is None else [("updated_at", ">=", pa.scalar(since, TS))],
        )
        parents = _changed_parents(candidates, position)
        parent_ids = parents["id"].combine_chunks()
        children = {
            name: _children_by_parent(
                read_store_table(directory, name)
                if since is None
                else read_children(directory, name, str(TABLES[name].parent_key), parent_ids),
                str(TABLES[name].parent_key),
                parent_ids,
            )
            for name in tables[1:]
        }

        start = Position(
            None if position is None else position.updated,
            None if position is None else position.id,
            watermark,
        )
        updated = _micros(parents["updated_at"])
        for first in range(0, max(parents.num_rows, 1), self.page_size):
            last = min(first + self.page_size, parents.num_rows)
            page_tables = {tables[0]: parents.slice(first, last - first)}
            for name, (rows, order, rank) in children.items():
                lo, hi = np.searchsorted(rank, [first, last], side="left")
                page_tables[name] = rows.take(pa.array(order[lo:hi]))
            if last > first:
                start = start.after(int(updated[last - 1]), parent_ids[last - 1].as_py())
            yield ChangePage(tables=page_tables, deleted_ids=deleted_ids, cursor=encode(start))
            deleted_ids = []


def _changed_parents(table: pa.Table, position: Position | None) -> pa.Table:
    """Rows after `position` in (updated_at, id) order, sorted that way."""
    if position is not None and position.updated is not None:
        updated = table["updated_at"].cast(pa.int64())
        later = pc.greater(updated, position.updated)
        tie = pc.and_(pc.equal(updated, position.updated), pc.greater(table["id"], position.id))
        table = table.filter(pc.or_(later, tie))
    return table.sort_by([("updated_at", "ascending"), ("id", "ascending")]).combine_chunks()


def _children_by_parent(
    table: pa.Table, parent_key: str, parent_ids: pa.Array
) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """`table`, the positions of its rows whose parent is in `parent_ids` ordered by that
    parent's position there (rows of one parent in file order), and each such row's parent
    position. Each page takes its own rows: the first page comes out before the rows of
    all pages are copied, and the sync writes it meanwhile (quarry.read_ahead)."""
    rank = pc.fill_null(pc.index_in(table[parent_key], value_set=parent_ids), -1)
    ranks = np.asarray(rank.to_numpy(zero_copy_only=False), dtype=np.int64)
    mine = np.flatnonzero(ranks >= 0)
    order = mine[np.argsort(ranks[mine], kind="stable")]
    return table, order, ranks[order]
