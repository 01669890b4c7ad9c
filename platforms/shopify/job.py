"""What one sync of one dataset works with, and how it turns records into a ChangePage."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from platforms.shopify.children import attach_refund_details
from platforms.shopify.client import ShopifyClient
from platforms.shopify.cursor import Cursor, encode
from platforms.shopify.mapping import MappingContext, dataset_rows, to_tables
from platforms.shopify.queries import DatasetQueries
from platforms.shopify.settings import ShopifySettings
from warehouse.pages import ChangePage


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class SyncJob:
    client: ShopifyClient
    queries: DatasetQueries
    mapping: MappingContext
    settings: ShopifySettings
    now: Callable[[], datetime] = utcnow
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = field(default=time.monotonic)

    def page(
        self, records: list[dict[str, Any]], cursor: Cursor, deleted: Iterable[str] = ()
    ) -> ChangePage:
        """A ChangePage of complete `records` (refund details fetched for orders), the
        platform ids in `deleted` as Quarry ids, ending at `cursor`."""
        if self.queries.dataset == "orders" and records:
            attach_refund_details(self.client, records)
        tables = to_tables(dataset_rows(self.mapping, self.queries.dataset, records))
        deleted_ids = [str(self.mapping.rid(gid)) for gid in deleted]
        return ChangePage(tables=tables, deleted_ids=deleted_ids, cursor=encode(cursor))
