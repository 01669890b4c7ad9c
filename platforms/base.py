"""The connector interface the sync depends on, and nothing more.

Per store and source dataset (warehouse.schemas.SOURCE_DATASETS), a connector yields the
records changed since a cursor as pages. A page carries parent records and the complete
child records of those parents (an order with all its lines and refunds), the ids of parents
deleted since the cursor, and the cursor to resume from once the page is committed. Cursors
are opaque strings only the connector reads; None means "from the beginning" (a full sync).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa


@dataclass(frozen=True)
class ChangePage:
    """One committed unit of a sync.

    `tables` maps a table name of the dataset to rows in that table's Arrow schema
    (warehouse.schemas.TABLES[name].schema). Child rows are complete for every parent
    listed in the parent table: the sync replaces a parent's children with exactly these.
    `deleted_ids` are parent ids removed on the platform; their children go with them.
    """

    tables: dict[str, pa.Table]
    deleted_ids: list[str] = field(default_factory=list)
    cursor: str | None = None


class Connector(Protocol):
    """A commerce platform seen from one store."""

    store_id: str

    def changes(self, dataset: str, cursor: str | None) -> Iterator[ChangePage]:
        """Pages of records of `dataset` changed after `cursor` (all of them when None),
        in a stable order, each ending with the cursor to resume from."""
        ...

    def count(self, dataset: str) -> int:
        """How many parent records of `dataset` the platform holds now (for reconciliation)."""
        ...
