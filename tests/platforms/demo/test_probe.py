"""The demo platform's probe (platforms/demo/probe.py): from the files' footers, which
datasets have records changed or deleted after a store's cursors. It may never leave out a
dataset with changes, and says nothing for a store read to its end."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq

from cli.demo_account import advance_demo, seed_demo
from platforms.demo.connector import DemoConnector
from platforms.demo.cursor import decode, encode
from platforms.demo.seed import demo_stores
from platforms.demo.storage import NEWEST_KEY, store_dir
from registry.db import Registry
from tests.platforms.demo.conftest import settings_in
from warehouse.schemas import SOURCE_DATASETS


def _read_to_end(connector: DemoConnector, cursors: dict[str, str | None]) -> dict[str, str | None]:
    """Every dataset read from its cursor to the end, as a sync would: the new cursors."""
    ended = dict(cursors)
    for dataset in SOURCE_DATASETS:
        for page in connector.changes(dataset, cursors.get(dataset)):
            ended[dataset] = page.cursor
    return ended


def test_the_probe_names_exactly_what_a_sync_would_find(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    registry = Registry(settings)
    try:
        account = seed_demo(
            settings, registry, orders=800, stores=1, seed=3, anchor=date(2025, 6, 1)
        )
        [store] = demo_stores(settings, account)
        connector = DemoConnector(settings, account, store.id)

        # Never synced: everything to read.
        assert connector.changed({}) == list(SOURCE_DATASETS)
        cursors = _read_to_end(connector, {})
        assert connector.changed(cursors) == []

        # The platform moves on: the probe names each dataset whose read finds records.
        advance_demo(settings, registry, account, days=2)
        changed = connector.changed(cursors)
        found = {
            dataset
            for dataset in SOURCE_DATASETS
            for page in connector.changes(dataset, cursors[dataset])
            if any(t.num_rows for t in page.tables.values()) or page.deleted_ids
        }
        assert found and found <= set(changed)
        cursors = _read_to_end(connector, cursors)
        assert connector.changed(cursors) == []

        # A cursor on the newest record's timestamp but before its id: a tie the footers
        # cannot settle, read from the file. Deletions the cursor has not seen count too.
        orders = decode(cursors["orders"])
        assert orders is not None and orders.updated is not None
        before_tie = encode(replace(orders, id=""))
        assert connector.changed({**cursors, "orders": before_tie}) == ["orders"]
        if orders.deleted is not None:
            unseen = encode(replace(orders, deleted=orders.deleted - 1))
            assert connector.changed({**cursors, "orders": unseen}) == ["orders"]
    finally:
        registry.dispose()


def test_files_without_a_recorded_newest_record_are_settled_by_statistics(
    tmp_path: Path,
) -> None:
    """Files written before footers named their newest record (or by another writer): the
    row groups' statistics decide, and a tie on the cursor's own updated_at is read."""
    settings = settings_in(tmp_path)
    registry = Registry(settings)
    try:
        account = seed_demo(
            settings, registry, orders=800, stores=1, seed=5, anchor=date(2025, 6, 1)
        )
        [store] = demo_stores(settings, account)
        connector = DemoConnector(settings, account, store.id)
        cursors = _read_to_end(connector, {})
        folder = store_dir(settings, account, store.id)
        for dataset, tables in SOURCE_DATASETS.items():
            path = Path(folder.path(f"{tables[0]}.parquet"))
            table = pq.read_table(path)
            assert NEWEST_KEY in (table.schema.metadata or {}), dataset
            # Several row groups, so that only some of them hold the cursor's instant.
            pq.write_table(table.replace_schema_metadata(None), path, row_group_size=50)
            assert NEWEST_KEY not in (pq.read_metadata(path).metadata or {})

        assert connector.changed(cursors) == []
        orders = decode(cursors["orders"])
        assert orders is not None and orders.updated is not None and orders.id
        assert connector.changed({**cursors, "orders": encode(replace(orders, id=""))}) == [
            "orders"
        ]
        later = replace(orders, updated=orders.updated + 1)
        assert connector.changed({**cursors, "orders": encode(later)}) == []
        earlier = replace(orders, updated=orders.updated - 1)
        assert connector.changed({**cursors, "orders": encode(earlier)}) == ["orders"]
    finally:
        registry.dispose()
