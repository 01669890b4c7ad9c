"""Records of a seeded demo account, hostile store included, read through the API and
compared value by value with the warehouse read directly (rendered here in Python, not by
the API's DuckDB JSON): hostile text byte-exact, money with its digits, UTC timestamps.

The stores are loaded the way a sync loads them (the demo connector's pages through
StoreWriter, then a snapshot) without Dagster, whose orchestration tests/pipelines covers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal

from api.main import create_app
from cli.demo_account import seed_demo
from platforms.demo.connector import DemoConnector
from platforms.demo.hostile import HOSTILE_VALUES, LONG_VALUES
from platforms.demo.seed import DemoStore, demo_stores
from quarry.settings import load_settings
from registry.db import Registry
from registry.keys import create_key
from tests.api.conftest import Client, isolated_env
from warehouse.catalog import RECORD_DATASETS, dataset
from warehouse.lake import Lake
from warehouse.schemas import SOURCE_DATASETS
from warehouse.snapshots import record_snapshot
from warehouse.writer import StoreWriter


@dataclass
class Demo:
    client: Client
    key: str
    stores: list[DemoStore]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, portal: BlockingPortal) -> Iterator[Demo]:
    home = tmp_path_factory.mktemp("demo") / "quarry-home"
    with isolated_env(str(home)):
        settings = load_settings()
    registry = Registry(settings)
    account_id = seed_demo(
        settings, registry, orders=900, stores=3, seed=3, anchor=date(2024, 6, 1)
    )
    stores = demo_stores(settings, account_id)
    lake = Lake(settings)
    for store in stores:
        connector = DemoConnector(settings, account_id, store.id)
        writer = StoreWriter(lake, store.id)
        for name in SOURCE_DATASETS:
            for number, page in enumerate(connector.changes(name, None)):
                writer.apply(page, full=True, first=number == 0)
        record_snapshot(registry, store.id, lake.version())
    lake.close()
    with registry.session() as session:
        key = create_key(session, account_id=account_id, scopes=["read_data"]).secret
    app = create_app(settings)
    client = Client(app, portal)
    yield Demo(client, key, stores)
    client.close()
    app.state.reader.close()
    app.state.registry.dispose()
    registry.dispose()


def _api_records(demo: Demo, name: str, store_id: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    page = 1
    while True:
        response = demo.client.get(
            f"/v1/{name}",
            key=demo.key,
            params={"store_ids": store_id, "page": page, "page_size": 250},
        )
        assert response.status_code == 200, response.text
        body = json.loads(response.text, parse_float=Decimal)
        records += body["data"]
        if not body["has_more"]:
            return records
        page += 1


def _expected(demo: Demo, name: str, store_id: str) -> list[dict[str, Any]]:
    """The store's rows straight from the warehouse, rendered by the documented rules."""
    ds = dataset(name)
    assert ds is not None
    columns = ", ".join(f'"{f.source}"' for f in ds.record_fields)
    with demo.client.app.state.reader.read([store_id]) as cursor:
        rows = cursor.execute(
            f'SELECT {columns} FROM "{ds.table}" ORDER BY created_at, id'
        ).fetchall()
    expected = []
    for row in rows:
        record = {}
        for field, value in zip(ds.record_fields, row, strict=True):
            if isinstance(value, datetime):
                value = value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            record[field.name] = value
        expected.append(record)
    return expected


def _exact(records: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    """Records as (field, repr) pairs in order: Decimal('12.30') differs from 12.3."""
    return [[(k, repr(v)) for k, v in r.items()] for r in records]


@pytest.mark.parametrize("name", RECORD_DATASETS)
def test_every_demo_record_comes_back_exactly(demo: Demo, name: str) -> None:
    for store in demo.stores:
        api = _api_records(demo, name, store.id)
        assert api, f"{store.name} has no {name}"
        assert _exact(api) == _exact(_expected(demo, name, store.id))


def test_the_hostile_store_shows_its_hostile_values(demo: Demo) -> None:
    hostile_store = demo.stores[2]
    texts: set[str] = set()
    for name in RECORD_DATASETS:
        for record in _api_records(demo, name, hostile_store.id):
            texts.update(v for v in record.values() if isinstance(v, str))
    kinds = {v.kind for v in HOSTILE_VALUES + LONG_VALUES if v.text in texts}
    expected = {v.kind for v in HOSTILE_VALUES + LONG_VALUES}
    assert kinds == expected, sorted(expected - kinds)


def test_every_order_record_carries_the_components_of_its_total(demo: Demo) -> None:
    """subtotal + shipping + duties + additional fees + tax = total_price, from the order
    records alone: the sales model's total_sales of an order (its total_price less what was
    refunded) can be reconciled from its record, fees included (issue 19)."""
    with_fees = 0
    for store in demo.stores:
        for order in _api_records(demo, "orders", store.id):
            parts = ("subtotal_price", "total_shipping", "total_duties", "total_tax")
            fees = order["total_additional_fees"]
            assert sum(order[p] for p in parts) + fees == order["total_price"], order["id"]
            with_fees += fees > 0
    assert with_fees > 0
