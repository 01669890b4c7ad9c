"""A lake from before the rollups: attaching it creates them filled from the facts, and a
snapshot published before they existed is answered from the facts until the next one."""

from __future__ import annotations

import pytest

from quarry.settings import Settings
from registry.db import Registry
from tests.warehouse.rollups.shops import ACCOUNT_CURRENCY, ACCOUNT_ZONE, NOW, Shop, load_rates
from warehouse import tables
from warehouse.lake import Lake
from warehouse.query import Limits, QueryResult, StoreInfo, run_query
from warehouse.reader import WarehouseReader
from warehouse.rollups import build
from warehouse.schemas import TABLES
from warehouse.snapshots import record_snapshot

STORE = "st_a"  # a store of tests/warehouse/conftest.py's registry
INFO = StoreInfo("A", "USD", "America/New_York")
QUERY = "FROM sales SHOW total_sales, orders TIMESERIES month SINCE 2024-09-01 UNTIL 2025-04-30"


def _answer(reader: WarehouseReader, rollups: bool) -> QueryResult:
    with reader.read([STORE]) as cursor:
        return run_query(
            cursor,
            QUERY,
            stores={STORE: INFO},
            account_currency=ACCOUNT_CURRENCY,
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
            limits=Limits(rollups=rollups),
        )


def test_a_lake_from_before_the_rollups(
    quarry_env: Settings, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as before:
        # The lake as it was: the same tables, no rollups, sales written without them.
        before.setattr(tables, "TABLES", {n: s for n, s in TABLES.items() if s.rollup_of is None})
        before.setattr(build, "SETS", ())
        lake = Lake(quarry_env)
        load_rates(lake)
        Shop(STORE, seed=3, count=60, info=INFO).sync_full(lake)
        record_snapshot(registry, STORE, lake.version())
        lake.close()

    lake = Lake(quarry_env)  # attaching creates the rollups, filled from the facts
    reader = WarehouseReader(quarry_env, registry)
    try:
        old = _answer(reader, rollups=True)
        assert old.source == "facts"  # its snapshot has no rollup tables
        record_snapshot(registry, STORE, lake.version())
        new = _answer(reader, rollups=True)
        assert new.source_table == "sales_rollup_days"  # the store's own zone
        assert new.public() == old.public() == _answer(reader, rollups=False).public()
        assert sum(r["orders"] for r in new.rows) > 0
    finally:
        reader.close()
        lake.close()
