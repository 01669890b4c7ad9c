"""Small hand-made pages in the warehouse schemas, a registry with two stores, a reader.

Order `n` of a store has id `<store>-o<n>`; its lines are `<store>-l<n>-<k>`. `version`
marks which sync wrote a row: it lands in `tags` (orders) and `sku` (lines) and shifts the
amounts, so a test can tell old rows from new ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from quarry.settings import Settings
from registry.accounts import create_account, create_store
from registry.db import Registry
from tests.destinations.servers import use_servers
from warehouse.lake import Lake
from warehouse.pages import ChangePage
from warehouse.query.plan import StoreInfo
from warehouse.reader import WarehouseReader
from warehouse.schemas import TABLES
from warehouse.snapshots import record_snapshot
from warehouse.tables import qualified

STORES = ("st_a", "st_b")
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def rows_table(name: str, rows: Iterable[dict[str, Any]]) -> pa.Table:
    """`rows` (dicts naming some columns) as a table in `name`'s exact schema."""
    schema = TABLES[name].schema
    return pa.Table.from_pylist(
        [{f.name: row.get(f.name) for f in schema} for row in rows], schema=schema
    )


def order_rows(store: str, numbers: Iterable[int], version: int = 0) -> pa.Table:
    return rows_table(
        "orders",
        (
            {
                "id": f"{store}-o{n}",
                "store_id": store,
                "order_name": f"#{n}",
                "created_at": EPOCH + timedelta(minutes=n),
                "updated_at": EPOCH + timedelta(days=version, minutes=n),
                "currency": "USD",
                "tags": f"v{version}",
                "total_price": Decimal(n) + Decimal("0.01") * version,
                "line_item_count": 2,
            }
            for n in numbers
        ),
    )


def line_rows(store: str, numbers: Iterable[int], version: int = 0, per_order: int = 2) -> pa.Table:
    return rows_table(
        "order_lines",
        (
            {
                "id": f"{store}-l{n}-{k}",
                "store_id": store,
                "order_id": f"{store}-o{n}",
                "sku": f"v{version}",
                "quantity": k + 1,
                "price": Decimal("9.99") + Decimal(version),
            }
            for n in numbers
            for k in range(per_order)
        ),
    )


def orders_page(
    store: str,
    numbers: Iterable[int],
    version: int = 0,
    deleted: Iterable[int] = (),
    per_order: int = 2,
) -> ChangePage:
    numbers = list(numbers)
    return ChangePage(
        {
            "orders": order_rows(store, numbers, version),
            "order_lines": line_rows(store, numbers, version, per_order),
        },
        [f"{store}-o{n}" for n in deleted],
        cursor=f"{store}:{version}",
    )


Row = dict[str, Any]


def current_rows(
    lake: Lake, table: str, store: str | None = None, version: int | None = None
) -> list[Row]:
    """Every row of `table` at lake `version` (the newest when None), sorted, read with
    DuckDB straight from the lake (not through the reader under test)."""
    sql = f"SELECT * FROM {qualified(table)}"
    if version is not None:
        sql += f" AT (VERSION => {int(version)})"
    if store is not None:
        sql += f" WHERE store_id = '{store}'"
    cursor = lake.cursor()
    try:
        return fetch_dicts(cursor, sql)
    finally:
        cursor.close()


def publish(lake: Lake, registry: Registry, *stores: str) -> int:
    """Publish the lake's newest snapshot for `stores`, as a sync's last step does."""
    version = lake.version()
    for store in stores:
        record_snapshot(registry, store, version)
    return version


def fetch_dicts(connection: duckdb.DuckDBPyConnection, sql: str) -> list[Row]:
    """The rows of `sql` as dicts, in a stable order."""
    cursor = connection.execute(sql)
    names = [d[0] for d in cursor.description]
    return sorted((dict(zip(names, row, strict=True)) for row in cursor.fetchall()), key=repr)


def ids(rows: list[Row]) -> list[str]:
    return sorted(row["id"] for row in rows)


def add_stores(registry: Registry, stores: Mapping[str, StoreInfo] | None = None) -> None:
    """One account owning `stores` (id -> name, currency, zone): by default STORES, in USD
    and UTC, each named by its id."""
    wanted = stores or {store: StoreInfo(store, "USD", "UTC") for store in STORES}
    with registry.session() as session:
        account = create_account(session, name="Acme", currency="USD", timezone="UTC")
        for store, info in wanted.items():
            create_store(
                session,
                account_id=account.id,
                name=info.name,
                domain=f"{store}.example",
                currency=info.currency,
                timezone=info.timezone,
                platform="demo",
                store_id=store,
            )


@pytest.fixture
def registry(quarry_env: Settings) -> Iterator[Registry]:
    """The SQLite registry of the test's home, with the stores STORES."""
    reg = Registry(quarry_env)
    add_stores(reg)
    yield reg
    reg.dispose()


@pytest.fixture
def reader(quarry_env: Settings, registry: Registry) -> Iterator[WarehouseReader]:
    warehouse_reader = WarehouseReader(quarry_env, registry)
    yield warehouse_reader
    warehouse_reader.close()


def pytest_configure(config: pytest.Config) -> None:
    # moto's S3 server (tests/destinations/servers.py) for a lake whose data is in S3.
    use_servers(config)
