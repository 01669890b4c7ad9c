"""The connector interface the sync depends on, and nothing more.

Per store and source dataset (warehouse.schemas.SOURCE_DATASETS), a connector yields the
records changed since a cursor as pages. A page carries parent records and the complete
child records of those parents (an order with all its lines and refunds), the ids of parents
deleted since the cursor, and the cursor to resume from once the page is committed. Cursors
are opaque strings only the connector reads; None means "from the beginning" (a full sync).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from quarry.errors import QuarryError
from warehouse.pages import ChangePage


@dataclass
class IncompleteSync(QuarryError):
    """The platform reported more (or other) records for a window than the connector read,
    even after reading it again. Raised before the page that would move the cursor past
    that window: the sync fails and its blocking `complete` asset check fails with it."""

    status: int = 502
    title: str = "Incomplete sync"


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

    def changed(self, cursors: Mapping[str, str | None]) -> list[str]:
        """The datasets with records changed or deleted after their cursor in `cursors`
        (dataset -> cursor; a dataset missing there has everything to sync). Cheap: one
        look at the platform's metadata or one small request, never the records
        themselves. It may name a dataset with nothing new (a sync then finds nothing), and
        never leaves out one with changes."""
        ...
