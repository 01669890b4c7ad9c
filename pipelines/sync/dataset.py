"""Sync one source dataset of one store: connector pages -> lake tables -> cursor.

Plain Python, so the loop is the same whoever runs it. Pages are folded into commits of
about `batch_rows` parent rows (warehouse.pages.batched); after each commit the cursor is
saved, so an interrupted sync resumes from the last committed page, and re-applying a page
is harmless (parents are upserted by id, children replaced). For `orders`, the same
transaction marks the changed and deleted orders for the sales model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from platforms.base import Connector
from quarry.read_ahead import read_ahead
from registry.cursors import get_cursor, mark_sales_pending, set_cursor
from registry.db import Registry
from warehouse.lake import Lake
from warehouse.pages import ChangePage, batched
from warehouse.schemas import SOURCE_DATASETS, TABLES
from warehouse.writer import StoreWriter


@dataclass
class DatasetSync:
    """What a dataset sync did: rows written per table, page batches applied (each saved
    its cursor), parents deleted, and the cursor it stopped at."""

    dataset: str
    full: bool
    rows: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    deleted: int = 0
    cursor: str | None = None


def sync_dataset(
    lake: Lake,
    registry: Registry,
    connector: Connector,
    dataset: str,
    *,
    full: bool,
    batch_rows: int = 50_000,
    log: Callable[[str], None] | None = None,
) -> DatasetSync:
    """Bring `dataset` of the connector's store up to date; from the beginning when `full`
    or when it never synced (no saved cursor)."""
    store_id = connector.store_id
    tables = SOURCE_DATASETS[dataset]
    with registry.session() as session:
        cursor = None if full else get_cursor(session, store_id, dataset)
        full = cursor is None
        if full and dataset == "orders":
            # Before the first commit: a crash after it must still rebuild every sale.
            mark_sales_pending(session, store_id, full=True)
    result = DatasetSync(dataset, full, rows=dict.fromkeys(tables, 0), cursor=cursor)
    writer = StoreWriter(lake, store_id)
    # The platform's next pages are read while this one is written.
    with read_ahead(batched(connector.changes(dataset, cursor), batch_rows)) as pages:
        for page in pages:
            written = writer.apply(page, full=full, first=result.batches == 0)
            with registry.session() as session:
                set_cursor(session, store_id, dataset, page.cursor)
                if dataset == "orders" and not full:
                    changed = (
                        page.tables["orders"]["id"].to_pylist() if "orders" in page.tables else []
                    )
                    if changed or page.deleted_ids:
                        mark_sales_pending(session, store_id, [*changed, *page.deleted_ids])
            result.batches += 1
            result.deleted += len(page.deleted_ids)
            result.cursor = page.cursor
            for name, count in written.items():
                result.rows[name] = result.rows.get(name, 0) + count
            if log:
                log(f"{dataset}: committed {written} (cursor {page.cursor})")
    if full and result.batches == 0:
        # The platform has no such records any more: a full sync still empties the
        # store's tables (a transaction that deletes nothing makes no snapshot).
        empty = ChangePage({tables[0]: TABLES[tables[0]].schema.empty_table()})
        writer.apply(empty, full=True, first=True)
        result.batches = 1
    return result
