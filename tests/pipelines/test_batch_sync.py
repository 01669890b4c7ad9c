"""A fleet batch syncs its stores together, and a store's failure stays its own: a store
whose rows the lake refuses fails the batch's statement, and the batch's stores are then
synced alone, so the good store is published and the bad one is not."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa
import pytest

from cli.demo_account import advance_demo
from pipelines.fleet.batch_sync import sync_stores_together
from platforms.base import Connector
from platforms.connectors import connector_for
from quarry.settings import Settings
from registry.accounts import get_store
from registry.cursors import list_cursors
from registry.db import Registry
from warehouse.lake import Lake
from warehouse.pages import ChangePage
from warehouse.schemas import SOURCE_DATASETS
from warehouse.snapshots import latest_snapshots

pytestmark = pytest.mark.slow


class _Mislabelled(Connector):
    """The store's platform, except that its orders claim another store's id."""

    def __init__(self, inner: Connector, other: str) -> None:
        self.inner, self.other = inner, other
        self.store_id = inner.store_id

    def changes(self, dataset: str, cursor: str | None) -> Iterator[ChangePage]:
        for page in self.inner.changes(dataset, cursor):
            if "orders" in page.tables:
                orders = page.tables["orders"]
                wrong = pa.array([self.other] * orders.num_rows, pa.string())
                index = orders.schema.get_field_index("store_id")
                page.tables["orders"] = orders.set_column(index, "store_id", wrong)
            yield page

    def changed(self, cursors: Mapping[str, str | None]) -> list[str]:
        return self.inner.changed(cursors)

    def count(self, dataset: str) -> int:
        return self.inner.count(dataset)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_a_batch_writes_its_stores_together_and_isolates_a_bad_one(
    settings: Settings, registry: Registry, demo_account: str, store_ids: list[str]
) -> None:
    good, bad = store_ids
    with registry.session() as session:
        connectors = {s: connector_for(settings, get_store(session, s)) for s in store_ids}
    lake = Lake(settings)
    try:
        every = tuple(SOURCE_DATASETS)
        results = sync_stores_together(
            lake,
            registry,
            [(connectors[good], every), (_Mislabelled(connectors[bad], good), every)],
            report=lambda _store: lambda *_args: None,
        )
        by_store = {r.store_id: r for r in results}
        assert by_store[good].error is None and by_store[good].snapshot is not None
        assert by_store[bad].error is not None and "orders" in by_store[bad].error
        assert by_store[bad].snapshot is None
        with registry.session() as session:
            published = latest_snapshots(session, store_ids)
            bad_cursors = list_cursors(session, bad)
        assert good in published and bad not in published
        # The bad store's orders were never written, so its orders cursor did not move.
        assert bad_cursors.get("orders") is None
        counts = _orders(lake)
        assert counts.get(good) == connectors[good].count("orders")
        assert bad not in counts

        # Together again, both well: nothing new for the good store, the bad one whole.
        results = sync_stores_together(
            lake,
            registry,
            [(connectors[good], every), (connectors[bad], every)],
            report=lambda _store: lambda *_args: None,
        )
        assert all(r.error is None and r.snapshot is not None for r in results)
        assert _orders(lake) == {s: connectors[s].count("orders") for s in store_ids}

        # A day later both changed: their changes go in commits that name both stores.
        before = lake.version()
        advance_demo(settings, registry, demo_account, days=1)
        results = sync_stores_together(
            lake,
            registry,
            [(connectors[good], every), (connectors[bad], every)],
            report=lambda _store: lambda *_args: None,
        )
        assert all(r.error is None and r.snapshot is not None for r in results)
        assert all(r.snapshot is not None and r.snapshot.recorded for r in results)
        cursor = lake.cursor()
        try:
            authors = [
                row[0]
                for row in cursor.execute(
                    "SELECT author FROM lake.snapshots() WHERE snapshot_id > ?", [before]
                ).fetchall()
            ]
        finally:
            cursor.close()
        assert authors and all(a == ",".join(sorted(store_ids)) for a in authors)
        assert _orders(lake) == {s: connectors[s].count("orders") for s in store_ids}
    finally:
        lake.close()


def _orders(lake: Lake) -> dict[str, int]:
    cursor = lake.cursor()
    try:
        rows = cursor.execute("SELECT store_id, count(*) FROM lake.orders GROUP BY store_id")
        return {str(store): int(count) for store, count in rows.fetchall()}
    finally:
        cursor.close()
