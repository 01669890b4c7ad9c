"""Helpers of the pipeline tests: reading the warehouse, running syncs, stand-in platforms.

The connectors here wrap the real demo connector and only add a fault or an observation:
fakes of an external platform, not of our code."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from pipelines.resources import QuarryResource
from platforms.base import Connector
from platforms.demo.connector import DemoConnector
from quarry.settings import Settings
from registry.models import Store
from warehouse.lake import Lake
from warehouse.pages import ChangePage
from warehouse.schemas import TABLES
from warehouse.tables import qualified, store_predicate


def warehouse_rows(settings: Settings, table: str, store_id: str) -> pa.Table:
    """The store's rows of `table` in the lake's newest snapshot, sorted by primary key."""
    lake = Lake(settings)
    try:
        cursor = lake.cursor()
        rows = cursor.execute(
            f"SELECT * FROM {qualified(table)} WHERE {store_predicate(store_id)}"
        ).to_arrow_table()
        cursor.close()
    finally:
        lake.close()
    return sort_rows(table, rows)


def sort_rows(table: str, rows: pa.Table) -> pa.Table:
    spec = TABLES[table]
    keys = [(k, "ascending") for k in spec.primary_key]
    return rows.select(spec.schema.names).cast(spec.schema).sort_by(keys).combine_chunks()


def lake_version(settings: Settings) -> int:
    """The lake's newest snapshot id."""
    lake = Lake(settings)
    try:
        return lake.version()
    finally:
        lake.close()


class PlatformDown(RuntimeError):
    """The platform failing mid-sync."""


class FailingConnector:
    """The demo store, but the platform fails after `pages` pages of `dataset`."""

    def __init__(self, inner: Connector, dataset: str, pages: int) -> None:
        self.inner, self.dataset, self.pages = inner, dataset, pages
        self.store_id = inner.store_id

    def changes(self, dataset: str, cursor: str | None) -> Iterator[ChangePage]:
        for number, page in enumerate(self.inner.changes(dataset, cursor)):
            if dataset == self.dataset and number >= self.pages:
                raise PlatformDown(f"platform down after {self.pages} pages of {dataset}")
            yield page

    def count(self, dataset: str) -> int:
        return self.inner.count(dataset)


class ObservedConnector:
    """The demo store, calling `observe(dataset, cursor)` when a sync asks for changes."""

    def __init__(self, inner: Connector, observe: Callable[[str, str | None], None]) -> None:
        self.inner, self.observe = inner, observe
        self.store_id = inner.store_id

    def changes(self, dataset: str, cursor: str | None) -> Iterator[ChangePage]:
        self.observe(dataset, cursor)
        return self.inner.changes(dataset, cursor)

    def count(self, dataset: str) -> int:
        return self.inner.count(dataset)


class PlatformResource(QuarryResource):
    """QuarryResource whose connectors are wrapped by `wrap` (a test's platform)."""

    page_size: int = 50_000

    def connector(self, store: Store) -> Connector:
        demo = DemoConnector(self.settings, store.account_id, store.id, page_size=self.page_size)
        return self.wrap(demo)

    def wrap(self, connector: Connector) -> Connector:
        return connector
