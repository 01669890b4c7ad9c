"""The lake in each place it can live: catalog in SQLite or PostgreSQL, data in a folder or
in S3 (moto's server). Each one takes full and incremental writes, publishes, serves the
reader exact figures, and survives maintenance."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy

from quarry.settings import Settings, load_settings
from registry.db import Registry
from tests.destinations.servers import S3Server
from tests.warehouse.conftest import add_stores, orders_page, publish
from warehouse import lake as lake_module
from warehouse.lake import Lake
from warehouse.maintenance import maintain
from warehouse.reader import WarehouseReader
from warehouse.writer import StoreWriter

PLACES = [
    pytest.param(("sqlite", "folder"), id="sqlite-folder"),
    pytest.param(("postgresql", "folder"), id="postgresql-folder", marks=pytest.mark.postgres),
    pytest.param(("sqlite", "s3"), id="sqlite-s3"),
    pytest.param(("postgresql", "s3"), id="postgresql-s3", marks=pytest.mark.postgres),
]


@pytest.fixture
def placed(
    request: pytest.FixtureRequest, quarry_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    catalog, data = request.param
    overrides: dict[str, object] = {}
    if catalog == "postgresql":
        overrides["catalog_url"] = request.getfixturevalue("postgres_url")
    if data == "s3":
        s3: S3Server = request.getfixturevalue("s3_server")
        bucket = f"lake-{uuid.uuid4().hex[:10]}"
        s3.admin_client().create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.admin["access_key_id"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.admin["secret_access_key"])
        overrides |= {
            "data_url": f"s3://{bucket}/warehouse",
            "s3_endpoint_url": s3.endpoint_url,
            "s3_region": "us-east-1",
        }
    yield load_settings(**overrides)


def _s3_keys(settings: Settings, s3: S3Server) -> list[str]:
    bucket = settings.resolved_data_url.removeprefix("s3://").split("/", 1)[0]
    listed = s3.admin_client().list_objects_v2(Bucket=bucket)  # type: ignore[attr-defined]
    return [item["Key"] for item in listed.get("Contents", [])]


@pytest.mark.parametrize("placed", PLACES, indirect=True)
def test_the_lake_works_wherever_it_lives(placed: Settings, request: pytest.FixtureRequest) -> None:
    registry = Registry(placed)
    add_stores(registry)
    lake = Lake(placed)
    reader = WarehouseReader(placed, registry)
    try:
        StoreWriter(lake, "st_a").apply(orders_page("st_a", range(3000)), full=True, first=True)
        StoreWriter(lake, "st_b").apply(orders_page("st_b", range(10)), full=True, first=True)
        publish(lake, registry, "st_a", "st_b")
        # An incremental change: two orders updated, one deleted, one added.
        StoreWriter(lake, "st_a").apply(
            orders_page("st_a", [5, 6, 3000], 1, deleted=[7]), full=False, first=False
        )
        publish(lake, registry, "st_a")

        expected = {
            "st_a": (3000, sum(range(3001)) - 7 + Decimal("0.03")),
            "st_b": (10, Decimal(sum(range(10)))),
        }

        def figures() -> dict[str, tuple[int, Decimal]]:
            with reader.read(["st_a", "st_b"]) as cursor:
                rows = cursor.execute(
                    "SELECT store_id, count(*), sum(total_price) FROM orders GROUP BY 1"
                ).fetchall()
            return {store: (count, total) for store, count, total in rows}

        assert figures() == expected
        maintain(lake, registry, retention=timedelta(0))
        assert figures() == expected

        catalog, data = request.node.callspec.params["placed"]
        if data == "s3":
            keys = _s3_keys(placed, request.getfixturevalue("s3_server"))
            assert any(k.startswith("warehouse/") and k.endswith(".parquet") for k in keys)
            assert not list(Path(placed.home).rglob("*.parquet"))
        else:
            assert list(Path(placed.resolved_data_url).rglob("*.parquet"))
        if catalog == "postgresql":
            engine = sqlalchemy.create_engine(placed.resolved_catalog_url)
            with engine.connect() as connection:
                tables = sqlalchemy.inspect(connection).get_table_names()
            engine.dispose()
            assert "ducklake_snapshot" in tables
            assert not (Path(placed.home) / "warehouse" / "catalog.sqlite").exists()
    finally:
        reader.close()
        lake.close()
        registry.dispose()


@pytest.mark.parametrize("placed", PLACES[:2], indirect=True)
def test_maintenance_can_be_the_first_to_open_a_new_lake(
    placed: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hourly maintenance run of a home nobody has synced yet takes the write lock, then
    # opens its process's lake connection, which takes the lock to create the catalog: the
    # thread must not wait for itself (it used to, until the lock's timeout).
    monkeypatch.setattr(lake_module, "LOCK_TIMEOUT_SECONDS", 5.0)
    registry = Registry(placed)
    lake = Lake(placed)
    try:
        result = maintain(lake, registry)
        assert (result.files_merged, result.snapshots_expired, result.files_deleted) == (0, 0, 0)
        cursor = lake.cursor()
        try:
            assert cursor.execute("SELECT count(*) FROM lake.orders").fetchone() == (0,)
        finally:
            cursor.close()
    finally:
        lake.close()
        registry.dispose()
