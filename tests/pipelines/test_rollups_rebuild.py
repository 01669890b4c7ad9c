"""The rebuild_rollups job: rollups that disagree with the facts are rebuilt from them and
published at once, unless a commit of the store awaits publication (a sync under way or
failed), which keeps the store's snapshot until its next sync publishes. The hourly
maintenance compacts the rows the syncs appended, published the same way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dagster import DagsterInstance

from pipelines.definitions import defs
from pipelines.maintenance.rollups import rebuild_rollups
from quarry.settings import Settings
from registry.db import Registry
from tests.warehouse.rollups.shops import ACCOUNT_CURRENCY, ACCOUNT_ZONE, NOW, Shop, load_rates
from warehouse.lake import Lake
from warehouse.query import Limits, QueryResult, StoreInfo, run_query
from warehouse.reader import WarehouseReader
from warehouse.rollups.build import stores_to_compact
from warehouse.rollups.definitions import SETS
from warehouse.snapshots import latest_snapshots, record_snapshot
from warehouse.tables import qualified

INFO = StoreInfo("New York", "USD", "America/New_York")
QUERY = "FROM sales SHOW total_sales, orders TIMESERIES month SINCE 2024-09-01 UNTIL 2025-04-30"


@pytest.fixture
def lake(settings: Settings) -> Iterator[Lake]:
    opened = Lake(settings)
    yield opened
    opened.close()


def _answer(settings: Settings, registry: Registry, store: str, rollups: bool) -> QueryResult:
    reader = WarehouseReader(settings, registry)
    try:
        with reader.read([store]) as cursor:
            return run_query(
                cursor,
                QUERY,
                stores={store: INFO},
                account_currency=ACCOUNT_CURRENCY,
                account_timezone=ACCOUNT_ZONE,
                now=NOW,
                limits=Limits(rollups=rollups),
            )
    finally:
        reader.close()


def _published(registry: Registry, store: str) -> int:
    with registry.session() as session:
        return latest_snapshots(session, [store])[store]


def _synced(lake: Lake, registry: Registry, store: str) -> Shop:
    load_rates(lake)
    shop = Shop(store, seed=7, count=80, info=INFO)
    shop.sync_full(lake)
    record_snapshot(registry, store, lake.version())
    return shop


def _spoil_rollups(lake: Lake, store: str) -> None:
    """Drop half the store's rows of every rollup set (a commit of nobody's store)."""
    with lake.transaction(author="global", message="test: spoiled rollups") as cursor:
        for rollup in SETS:
            cursor.execute(
                f"DELETE FROM {qualified(rollup.table)} WHERE store_id = ? "
                "AND hash(store_date) % 2 = 0",
                [store],
            )


def test_the_job_rebuilds_spoiled_rollups_and_publishes_them(
    settings: Settings,
    registry: Registry,
    instance: DagsterInstance,
    store_ids: list[str],
    lake: Lake,
) -> None:
    store = store_ids[0]
    _synced(lake, registry, store)
    facts = _answer(settings, registry, store, rollups=False)
    _spoil_rollups(lake, store)
    record_snapshot(registry, store, lake.version())
    spoiled = _answer(settings, registry, store, rollups=True)
    assert spoiled.source_table == "sales_rollup_days"
    assert spoiled.public() != facts.public()  # the test's premise: the rollups are wrong
    before = _published(registry, store)

    result = defs.get_job_def("rebuild_rollups").execute_in_process(
        instance=instance,
        run_config={"ops": {"rebuild_sales_rollups": {"config": {"store_ids": [store]}}}},
    )

    assert result.success
    assert _published(registry, store) > before
    rebuilt = _answer(settings, registry, store, rollups=True)
    assert rebuilt.source_table == "sales_rollup_days"
    assert rebuilt.public() == facts.public()


def test_a_store_with_unpublished_commits_waits_for_its_next_sync(
    settings: Settings, registry: Registry, store_ids: list[str], lake: Lake
) -> None:
    store, other = store_ids[0], store_ids[1]
    shop = _synced(lake, registry, store)
    _spoil_rollups(lake, store)
    record_snapshot(registry, store, lake.version())
    before = _published(registry, store)
    shop.sync_change(lake, 6)  # a sync's commits, not yet published

    result = rebuild_rollups(lake, registry)  # every store with facts: only `store` has any

    assert (result.rebuilt, result.published, result.waiting) == ((store,), (), (store,))
    assert other not in result.rebuilt
    assert _published(registry, store) == before  # readers still see what they saw
    record_snapshot(registry, store, lake.version())  # the sync publishes
    answer = _answer(settings, registry, store, rollups=True)
    assert answer.source_table == "sales_rollup_days"
    assert answer.public() == _answer(settings, registry, store, rollups=False).public()


def test_hourly_maintenance_compacts_what_the_syncs_appended(
    settings: Settings,
    registry: Registry,
    instance: DagsterInstance,
    store_ids: list[str],
    lake: Lake,
) -> None:
    """A sync appends its change to the rollups as signed rows; the hourly maintenance
    merges each key's rows into one and publishes, and the answers do not move."""
    store, busy = store_ids[0], store_ids[1]
    shop = _synced(lake, registry, store)
    shop.sync_change(lake, 12)
    record_snapshot(registry, store, lake.version())
    other = Shop(busy, seed=8, count=40, info=INFO)
    other.sync_full(lake)
    record_snapshot(registry, busy, lake.version())
    busy_before = _published(registry, busy)
    other.sync_change(lake, 6)  # a sync of `busy` under way: committed, not yet published
    assert stores_to_compact(lake) == sorted([store, busy])
    appended = _answer(settings, registry, store, rollups=True)
    assert appended.source_table == "sales_rollup_days"
    assert appended.public() == _answer(settings, registry, store, rollups=False).public()
    rows_before = _rollup_row_count(lake)
    before = _published(registry, store)

    result = defs.get_job_def("warehouse_maintenance").execute_in_process(instance=instance)

    assert result.success
    assert stores_to_compact(lake) == []
    assert _published(registry, busy) == busy_before  # its sync publishes it
    assert _rollup_row_count(lake) < rows_before
    assert _published(registry, store) > before
    assert _answer(settings, registry, store, rollups=True).public() == appended.public()


def _rollup_row_count(lake: Lake) -> int:
    cursor = lake.cursor()
    try:
        return sum(
            cursor.execute(f"SELECT count(*) FROM {qualified(r.table)}").fetchone()[0] for r in SETS
        )
    finally:
        cursor.close()
